"""Obligations and the routing events that open and close them
(docs/design.md#obligations-and-the-fold).

An obligation is never edited: its state is the fold of the events appended to the regulatory
log. The events here are the original's ``ObligationEvent`` union (``message-noted`` included,
although it names a message rather than an obligation). ``ObligationState`` is the folded
state; the fold itself belongs to the ledger.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from regulator.protocol.base import Record, TypedRecord
from regulator.protocol.evidence import NonEmptyStr
from regulator.protocol.vocab import (
    Concern,
    Consumer,
    DeliveryChannel,
    Disposition,
    ObligationStatus,
    Severity,
    VsmSystem,
)


class _ObligationFields(Record):
    """The obligation's own fields, shared by the record and its folded state."""

    id: NonEmptyStr
    subject: NonEmptyStr
    # Absent = an obligation on the instance itself.
    unit: NonEmptyStr | None = None
    concern: Concern
    # Message ids, decision ids, predecessor obligation ids, or ``ask:<uuid>``.
    sources: Annotated[list[NonEmptyStr], msgspec.Meta(min_length=1)]
    # The router's effective severity, never the emitter's claim.
    severity: Severity
    consumer: Consumer
    blocks: bool
    question: NonEmptyStr | None = None
    opened_at: NonEmptyStr
    opened_by: VsmSystem


class Obligation(_ObligationFields):
    """Something the metasystem owes: carried whole by ``obligation-opened``."""


class ObligationOpened(TypedRecord, tag="obligation-opened"):
    id: NonEmptyStr
    at: NonEmptyStr
    # The obligation's ``openedBy``.
    by: NonEmptyStr
    obligation: Obligation


class ObligationAcknowledged(TypedRecord, tag="obligation-acknowledged"):
    id: NonEmptyStr
    at: NonEmptyStr
    by: NonEmptyStr
    obligation_id: NonEmptyStr
    note: NonEmptyStr | None = None


class ObligationResolved(TypedRecord, tag="obligation-resolved"):
    id: NonEmptyStr
    at: NonEmptyStr
    by: NonEmptyStr
    obligation_id: NonEmptyStr
    disposition: Disposition
    rationale: NonEmptyStr


class ObligationEscalated(TypedRecord, tag="obligation-escalated"):
    """Valid only with a successor: "someone else should look" is not an escalation."""

    id: NonEmptyStr
    at: NonEmptyStr
    by: NonEmptyStr
    obligation_id: NonEmptyStr
    successor: NonEmptyStr
    rationale: NonEmptyStr


class ObligationSuperseded(TypedRecord, tag="obligation-superseded"):
    id: NonEmptyStr
    at: NonEmptyStr
    by: NonEmptyStr
    obligation_id: NonEmptyStr
    successor: NonEmptyStr
    rationale: NonEmptyStr


class MessageNoted(TypedRecord, tag="message-noted"):
    """A message routed as trace only: cited, deliberately not an obligation."""

    id: NonEmptyStr
    at: NonEmptyStr
    by: NonEmptyStr
    # The id of the message noted.
    message: NonEmptyStr
    reason: NonEmptyStr


class ObligationDelivered(TypedRecord, tag="obligation-delivered"):
    """The obligation was put in front of its consumer. Not a disposition: status is unchanged."""

    id: NonEmptyStr
    at: NonEmptyStr
    by: NonEmptyStr
    obligation_id: NonEmptyStr
    channel: DeliveryChannel
    reminder: bool
    target: NonEmptyStr | None = None


ObligationEvent = (
    ObligationOpened
    | ObligationAcknowledged
    | ObligationResolved
    | ObligationEscalated
    | ObligationSuperseded
    | MessageNoted
    | ObligationDelivered
)

OBLIGATION_EVENT_MODELS: tuple[type[Record], ...] = (
    ObligationOpened,
    ObligationAcknowledged,
    ObligationResolved,
    ObligationEscalated,
    ObligationSuperseded,
    MessageNoted,
    ObligationDelivered,
)

# The events that close an obligation for good.
TerminalEvent = ObligationResolved | ObligationEscalated | ObligationSuperseded


class Delivery(Record):
    """One delivery of an obligation, as the fold keeps it."""

    at: NonEmptyStr
    channel: DeliveryChannel
    reminder: bool
    target: NonEmptyStr | None = None

    @classmethod
    def from_event(cls, event: ObligationDelivered) -> Delivery:
        return cls(at=event.at, channel=event.channel, reminder=event.reminder, target=event.target)


_OBLIGATION_FIELDS = Obligation.__struct_fields__


class ObligationState(_ObligationFields, frozen=False):  # type: ignore[misc]
    """An obligation folded from its events: the obligation's fields plus what happened to it.

    Not frozen: the fold updates it in place as events arrive, one at a time. Not a line of
    any log (the commands print it): every field is written, the empty lists too, but for
    the optional ones left at ``None``. So the fields always written have no default, and
    encoding the struct (``omit_defaults``, as every record) gives that shape by itself.
    """

    status: ObligationStatus
    acknowledged_by: list[str]
    deliveries: list[Delivery]
    disposition: Disposition | None = None
    rationale: str | None = None
    successor: str | None = None
    closed_at: str | None = None
    closed_by: str | None = None
    # Every event of this obligation, in log order, the opening first.
    history: list[ObligationEvent]

    @classmethod
    def from_opened(cls, event: ObligationOpened) -> ObligationState:
        """The state right after ``event``: open, unacknowledged, undelivered."""
        ob = event.obligation
        return cls(
            id=ob.id,
            subject=ob.subject,
            unit=ob.unit,
            concern=ob.concern,
            sources=ob.sources,
            severity=ob.severity,
            consumer=ob.consumer,
            blocks=ob.blocks,
            question=ob.question,
            opened_at=ob.opened_at,
            opened_by=ob.opened_by,
            status="open",
            acknowledged_by=[],
            deliveries=[],
            history=[event],
        )

    def as_obligation(self) -> Obligation:
        """The obligation as it was opened, without the folded fields."""
        return Obligation(**{name: getattr(self, name) for name in _OBLIGATION_FIELDS})
