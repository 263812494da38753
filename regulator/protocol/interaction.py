"""Questions asked of a person (docs/design.md#asking-a-person).

The rule that matters is a protocol constant, not a policy field, because no policy may relax
it: silence, timeout and cancellation are never consent. Only a recap continues without an
answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated

import msgspec

from regulator.protocol.base import Record, TypedRecord
from regulator.protocol.evidence import EvidenceRef, NonEmptyStr
from regulator.protocol.vocab import (
    InteractionChannel,
    InteractionKind,
    InteractionOutcome,
    Severity,
    VsmSystem,
)

# Read-only at run time, so that nothing (a policy loader, a test) can flip a kind to True.
CONTINUES_WITHOUT_ANSWER: Mapping[InteractionKind, bool] = MappingProxyType(
    {"recap": True, "choice": False, "clarification": False, "consent": False, "uat": False}
)


def severity_for_kind(kind: InteractionKind) -> Severity:
    """``advisory`` for a question work does not wait on (a recap), ``blocking`` for the rest."""
    return "advisory" if CONTINUES_WITHOUT_ANSWER[kind] else "blocking"


class InteractionRequest(Record):
    """What was asked, of whom, under which contract. Provenance is the host's."""

    id: NonEmptyStr
    kind: InteractionKind
    subject: NonEmptyStr
    question: NonEmptyStr
    options: Annotated[list[NonEmptyStr], msgspec.Meta(min_length=2)] | None = None
    # For consent: what would be done on a yes.
    action: NonEmptyStr | None = None
    severity: Severity
    unit: NonEmptyStr | None = None
    attempt: Annotated[int, msgspec.Meta(ge=1)] | None = None
    # The obligation the request opened (or resolved on the spot).
    obligation_id: NonEmptyStr
    evidence: list[EvidenceRef]
    raised_by: VsmSystem
    raised_at: NonEmptyStr
    # 0 = no policy was loaded: nobody is asked.
    timeout_ms: Annotated[int, msgspec.Meta(ge=0)]
    channel: InteractionChannel


class InteractionRequested(TypedRecord, tag="interaction-requested"):
    id: NonEmptyStr
    at: NonEmptyStr
    by: NonEmptyStr
    request: InteractionRequest


class InteractionAnswered(TypedRecord, tag="interaction-answered"):
    """How a request ended. Only ``outcome: answered`` carries an answer a person gave."""

    id: NonEmptyStr
    at: NonEmptyStr
    by: NonEmptyStr
    request_id: NonEmptyStr
    outcome: InteractionOutcome
    answer: NonEmptyStr | None = None
    channel: InteractionChannel


InteractionEvent = InteractionRequested | InteractionAnswered

INTERACTION_EVENT_MODELS: tuple[type[Record], ...] = (InteractionRequested, InteractionAnswered)
