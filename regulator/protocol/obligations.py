"""Obligations and the routing events that open and close them (upstream-core §2.4, §2.6–§2.7).

An obligation is never edited: its state is the fold of the events appended to the regulatory
log. The events here are the original's ``ObligationEvent`` union (``message-noted`` included,
although it names a message rather than an obligation). ``ObligationState`` is the folded
state; the fold itself belongs to the ledger.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from regulator.protocol.base import Record
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
    sources: Annotated[list[NonEmptyStr], Field(min_length=1)]
    # The router's effective severity, never the emitter's claim.
    severity: Severity
    consumer: Consumer
    blocks: bool
    question: NonEmptyStr | None = None
    opened_at: NonEmptyStr
    opened_by: VsmSystem


class Obligation(_ObligationFields):
    """Something the metasystem owes: carried whole by ``obligation-opened``."""


class ObligationOpened(Record):
    type: Literal["obligation-opened"] = "obligation-opened"
    id: NonEmptyStr
    at: NonEmptyStr
    # The obligation's ``openedBy``.
    by: NonEmptyStr
    obligation: Obligation


class ObligationAcknowledged(Record):
    type: Literal["obligation-acknowledged"] = "obligation-acknowledged"
    id: NonEmptyStr
    at: NonEmptyStr
    by: NonEmptyStr
    obligation_id: NonEmptyStr
    note: NonEmptyStr | None = None


class ObligationResolved(Record):
    type: Literal["obligation-resolved"] = "obligation-resolved"
    id: NonEmptyStr
    at: NonEmptyStr
    by: NonEmptyStr
    obligation_id: NonEmptyStr
    disposition: Disposition
    rationale: NonEmptyStr


class ObligationEscalated(Record):
    """Valid only with a successor: "someone else should look" is not an escalation."""

    type: Literal["obligation-escalated"] = "obligation-escalated"
    id: NonEmptyStr
    at: NonEmptyStr
    by: NonEmptyStr
    obligation_id: NonEmptyStr
    successor: NonEmptyStr
    rationale: NonEmptyStr


class ObligationSuperseded(Record):
    type: Literal["obligation-superseded"] = "obligation-superseded"
    id: NonEmptyStr
    at: NonEmptyStr
    by: NonEmptyStr
    obligation_id: NonEmptyStr
    successor: NonEmptyStr
    rationale: NonEmptyStr


class MessageNoted(Record):
    """A message routed as trace only: cited, deliberately not an obligation."""

    type: Literal["message-noted"] = "message-noted"
    id: NonEmptyStr
    at: NonEmptyStr
    by: NonEmptyStr
    # The id of the message noted.
    message: NonEmptyStr
    reason: NonEmptyStr


class ObligationDelivered(Record):
    """The obligation was put in front of its consumer. Not a disposition: status is unchanged."""

    type: Literal["obligation-delivered"] = "obligation-delivered"
    id: NonEmptyStr
    at: NonEmptyStr
    by: NonEmptyStr
    obligation_id: NonEmptyStr
    channel: DeliveryChannel
    reminder: bool
    target: NonEmptyStr | None = None


ObligationEvent = Annotated[
    ObligationOpened
    | ObligationAcknowledged
    | ObligationResolved
    | ObligationEscalated
    | ObligationSuperseded
    | MessageNoted
    | ObligationDelivered,
    Field(discriminator="type"),
]

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


class ObligationState(_ObligationFields):
    """An obligation folded from its events: the obligation's fields plus what happened to it.

    Not frozen: the fold updates it in place as events arrive, one at a time.
    """

    model_config = ConfigDict(frozen=False)

    status: ObligationStatus = "open"
    acknowledged_by: list[str] = Field(default_factory=list)
    deliveries: list[Delivery] = Field(default_factory=list)
    disposition: Disposition | None = None
    rationale: str | None = None
    successor: str | None = None
    closed_at: str | None = None
    closed_by: str | None = None
    # Every event of this obligation, in log order, the opening first.
    history: list[ObligationEvent] = Field(default_factory=list)

    @classmethod
    def from_opened(cls, event: ObligationOpened) -> ObligationState:
        """The state right after ``event``: open, unacknowledged, undelivered."""
        fields = {name: getattr(event.obligation, name) for name in Obligation.model_fields}
        # The obligation was validated when the event was; don't pay for it twice.
        return cls.model_construct(
            **fields, status="open", acknowledged_by=[], deliveries=[], history=[event]
        )

    def as_obligation(self) -> Obligation:
        """The obligation as it was opened, without the folded fields."""
        fields = {name: getattr(self, name) for name in Obligation.model_fields}
        return Obligation.model_construct(**fields)

    # -- a history built when first read ----------------------------------------------------
    #
    # A fold restored from its snapshot knows each obligation's folded fields at once, but
    # builds its history and deliveries (most of what a large log holds) only when something
    # reads them: ``__dict__`` holds one ``Unbuilt`` for both until then. Reading either field
    # builds both (the properties below); so does everything pydantic does from ``__dict__``
    # directly (dumps, comparison, copies, pickling, repr), through ``settle``.

    def settle(self) -> None:
        """Build the history and deliveries now, if they were not built yet."""
        if type(self.__dict__["history"]) is not list:
            _build(self)

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        self.settle()
        return super().model_dump(**kwargs)

    def model_dump_json(self, **kwargs: Any) -> str:
        self.settle()
        return super().model_dump_json(**kwargs)

    def __eq__(self, other: object) -> bool:
        self.settle()
        if isinstance(other, ObligationState):
            other.settle()
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]  # its fields hold lists: never hashable

    def __copy__(self) -> ObligationState:
        self.settle()
        return super().__copy__()

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> ObligationState:
        self.settle()
        return super().__deepcopy__(memo)

    def __getstate__(self) -> dict[Any, Any]:
        self.settle()
        return super().__getstate__()

    def __iter__(self) -> Any:
        self.settle()
        return super().__iter__()

    def __repr_args__(self) -> Any:
        self.settle()
        return super().__repr_args__()


class Unbuilt(ABC):
    """An obligation's history and deliveries, not built yet (see ``ObligationState``)."""

    __slots__ = ()

    @abstractmethod
    def build(self) -> tuple[list[Any], list[Delivery]]:
        """The history (the opening first) and the deliveries, in log order."""


# Locks for the builds, a state's chosen by its identity: two threads reading one unbuilt
# state build it once. Not one lock for all: a thread building many states one after another
# (the room's warm-up) takes a lock again the moment it lets it go, and a thread waiting on
# the same lock (the UI thread drawing one row's deliveries) waited for all of them.
_BUILDING = tuple(threading.Lock() for _ in range(64))


def _build(state: ObligationState) -> None:
    with _BUILDING[(id(state) >> 4) % len(_BUILDING)]:
        d = state.__dict__
        pending = d["history"]
        if type(pending) is list:
            return  # built by another thread meanwhile
        history, deliveries = pending.build()
        d["deliveries"] = deliveries
        d["history"] = history


def _built_field(name: str) -> property:
    def get(self: ObligationState) -> Any:
        value = self.__dict__[name]
        if type(value) is not list:
            _build(self)
            value = self.__dict__[name]
        return value

    def set_(self: ObligationState, value: Any) -> None:
        # What pydantic does for a plain field; the other field is built first, so that a
        # history set by hand is never overwritten by a build that was still to come.
        self.settle()
        self.__dict__[name] = value
        self.__pydantic_fields_set__.add(name)

    return property(get, set_, doc=f"The state's {name}, built on first read.")


ObligationState.history = _built_field("history")  # type: ignore[assignment]
ObligationState.deliveries = _built_field("deliveries")  # type: ignore[assignment]
