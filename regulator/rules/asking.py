"""Asking a person: the first half of ``ask_human`` (docs/design.md#asking-a-person, its first four
steps).

The obligation comes first: before anything is asked, an ``interaction`` obligation owed to a
person is opened and the request recorded, in one transaction, so the question exists on the
record whatever happens next. It blocks for every kind that waits and is advisory for a recap.
What happens after — a person present answering, a timeout, a pause — belongs to the caller.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from regulator.protocol.interaction import (
    CONTINUES_WITHOUT_ANSWER,
    InteractionRequest,
    severity_for_kind,
)
from regulator.protocol.obligations import ObligationState
from regulator.protocol.policies import InteractionPolicy
from regulator.rules.ledger import Ledger, LedgerError, Transaction


class AskRefused(LedgerError):
    """The question was not asked (a missing action or options, or the attention budget)."""


@dataclass(frozen=True)
class Asked:
    obligation: ObligationState
    request: InteractionRequest

    @property
    def waits(self) -> bool:
        return not CONTINUES_WITHOUT_ANSWER[self.request.kind]


def check_question(kind: str, options: list[str] | None, action: str | None) -> None:
    if kind == "consent" and not action:
        raise AskRefused(
            "a consent question must state the action a yes authorizes (action), concretely"
        )
    if kind == "choice" and not (options and 2 <= len(options) <= 6):
        raise AskRefused("a choice question must offer two to six options")


def ask_in(
    txn: Transaction,
    policy: InteractionPolicy | None,
    *,
    kind: str,
    subject: str,
    question: str,
    options: list[str] | None = None,
    action: str | None = None,
    evidence: list[dict[str, Any]] | None = None,
    unit: str | None = None,
    attempt: int | None = None,
    channel: str = "none",
    raised_by: str = "S1",
) -> Asked:
    """Open the obligation and record the request inside an open transaction.

    ``raised_by``: S1 when the unit asks (``ask_human``); S3 when the host asks a person about
    one of the agent's own tool calls (a hook), which neither pauses the unit nor spends its
    attention budget (:mod:`regulator.rules.pause`).
    """
    check_question(kind, options, action)
    severity = severity_for_kind(kind)  # type: ignore[arg-type]
    obligation = txn.open(
        subject=f"{kind}: {subject}",
        unit=unit,
        concern="interaction",
        sources=[f"ask:{uuid.uuid4()}"],
        severity=severity,
        consumer="human",
        blocks=not CONTINUES_WITHOUT_ANSWER[kind],  # type: ignore[index]
        question=question,
        opened_by=raised_by,
    )
    request = InteractionRequest.from_json_dict(
        {
            "id": str(uuid.uuid4()),
            "kind": kind,
            "subject": subject,
            "question": question,
            "options": options,
            "action": action,
            "severity": severity,
            "unit": unit,
            "attempt": attempt,
            "obligationId": obligation.id,
            "evidence": evidence or [],
            "raisedBy": raised_by,
            "raisedAt": txn.now,
            # Without a policy nobody is asked: the original records 0.
            "timeoutMs": policy.timeouts_ms.for_kind(kind) if policy is not None else 0,
            "channel": channel,
        }
    )
    txn.request_interaction(request, by=raised_by)
    return Asked(obligation, request)


def ask(ledger: Ledger, policy: InteractionPolicy | None, **question: Any) -> Asked:
    with ledger.transaction() as txn:
        return ask_in(txn, policy, **question)
