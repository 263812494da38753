"""The regulatory log (``signals.ndjson``) folded into what the instance owes and has asked.

One ``RegulatoryLog`` follows the file with an incremental reader and folds only what was
appended since its last refresh (docs/design.md#obligations-and-the-fold): messages, obligations
with their history and deliveries, interactions with their answers, and which messages routing has
cited. Writers never update this state directly; they append, and the next refresh folds what they
wrote, so every process sees the same state through the same code.

Unlike the original, one bad line does not make the log unreadable: it is a problem
(``file:line: message``), and so is an event for an obligation the log never opened.

A cold start reads the whole log: each line is one checked ``msgspec`` decode into its record
(``entry.parse_signal_line``), cheaper than parsing it into dicts, and the fold keeps what it
needs by reference. The cycle collector is kept out of the way of a large fold (``refresh``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, cast

import msgspec

from regulator.protocol.entry import RegulatoryEntry, parse_signal_line
from regulator.protocol.entry import _decode_event as _decode_event
from regulator.protocol.entry import _decode_message as _decode_message
from regulator.protocol.interaction import (
    InteractionAnswered,
    InteractionRequest,
    InteractionRequested,
)
from regulator.protocol.messages import IntelligenceSignal, VsmMessage
from regulator.protocol.obligations import (
    Delivery,
    MessageNoted,
    ObligationAcknowledged,
    ObligationDelivered,
    ObligationEscalated,
    ObligationOpened,
    ObligationResolved,
    ObligationState,
    ObligationSuperseded,
)
from regulator.protocol.vocab import TERMINAL_STATUSES
from regulator.store import Layout
from regulator.store.collector import collector_paused
from regulator.store.ndjson import BadLine, ChunkReader, Problem

#: How much a refresh reads before it folds what it read (1 byte: one reader chunk, 1 MiB),
#: so that the lines parsed and not yet folded stay few.
SLICE_BYTES = 1
#: A refresh that folded this many lines built enough to move out of the collector's sight.
FREEZE_AFTER = 50_000


@dataclass(frozen=True, slots=True)
class Answer:
    at: str
    by: str
    outcome: str
    channel: str
    answer: str | None = None


@dataclass(slots=True)
class InteractionState:
    """A question a unit asked, and every way it ended (oldest first)."""

    request: InteractionRequest
    answers: list[Answer] = field(default_factory=list)

    @property
    def answered(self) -> bool:
        return any(a.outcome == "answered" for a in self.answers)

    def to_json(self) -> dict[str, object]:
        return {
            "request": self.request.to_json_dict(),
            "answers": [answer_json(a) for a in self.answers],
        }


def answer_json(answer: Answer) -> dict[str, object]:
    out: dict[str, object] = {
        "at": answer.at,
        "by": answer.by,
        "outcome": answer.outcome,
        "channel": answer.channel,
    }
    if answer.answer is not None:
        out["answer"] = answer.answer
    return out


class FoldedLog(Protocol):
    """What a reader of the folded state asks of it: a ``RegulatoryLog``, or the same state
    folded on another host and streamed here (the remote room's ``tui.remote.RemoteLog``)."""

    @property
    def obligations(self) -> dict[str, ObligationState]: ...
    @property
    def interactions(self) -> dict[str, InteractionState]: ...
    @property
    def lines(self) -> int: ...
    def message(self, message_id: str) -> VsmMessage | None: ...
    def unrouted_count(self) -> int: ...
    def open_obligations(self, unit: str | None = None) -> list[ObligationState]: ...
    def interaction_for(self, obligation_id: str) -> InteractionState | None: ...


class FoldedState:
    """The folded state's maps and the questions every reader asks of them, whoever folded
    it: a ``RegulatoryLog`` here, or a remote host (the remote room's ``tui.remote.RemoteLog``).
    """

    obligations: dict[str, ObligationState]
    interactions: dict[str, InteractionState]
    messages: dict[str, VsmMessage]
    cited: set[str]  # message ids a routing event (an obligation's sources) cites
    _by_obligation: dict[str, str]  # obligation id → the interaction request's id

    def message(self, message_id: str) -> VsmMessage | None:
        """The message ``message_id`` (the last with that id), if the log holds one."""
        return self.messages.get(message_id)

    def unrouted(self) -> list[VsmMessage]:
        """Messages no routing event cites yet, in log order (a message's id where it first
        appears, its last message as ``messages`` holds it)."""
        return [m for mid, m in self.messages.items() if mid not in self.cited]

    def unrouted_count(self) -> int:
        """``len(unrouted())``."""
        return sum(mid not in self.cited for mid in self.messages)

    def open_obligations(self, unit: str | None = None) -> list[ObligationState]:
        """Obligations not yet terminal, optionally only those naming ``unit``."""
        return [
            o
            for o in self.obligations.values()
            if o.status not in TERMINAL_STATUSES and (unit is None or o.unit == unit)
        ]

    def interaction_for(self, obligation_id: str) -> InteractionState | None:
        request_id = self._by_obligation.get(obligation_id)
        return self.interactions.get(request_id) if request_id is not None else None


class RegulatoryLog(FoldedState):
    """The folded state of one instance's ``signals.ndjson``, kept current by ``refresh()``.

    ``slice_bytes`` and ``freeze_after`` tune a large refresh (see ``SLICE_BYTES`` and
    ``FREEZE_AFTER``); the defaults suit every reader.
    """

    lines: int  # the number of the last line folded into an entry

    def __init__(
        self,
        layout: Layout,
        *,
        path: Path | None = None,
        slice_bytes: int = SLICE_BYTES,
        freeze_after: int = FREEZE_AFTER,
    ) -> None:
        self.layout = layout
        self.path = path if path is not None else layout.signals
        self._slice_bytes = slice_bytes
        self._freeze_after = freeze_after
        self._reader = ChunkReader(
            self.path,
            label=layout.label(self.path),
            take=self._take,
            on_restart=self._reset,
        )
        # Where the lines being read land: the list ``refresh`` returns.
        self._sink: list[RegulatoryEntry] = []
        self._reset()

    def _take(self, lines: list[bytes], number: int, bad: BadLine) -> int:
        """Parse and fold ``lines`` (the first is line ``number``); the next line's number.

        One loop per chunk instead of a call per line and another per entry: on a cold load
        this runs a million times. The decoder a line most likely needs is tried first (see
        ``parse_signal_line``, which says why a line neither takes).
        """
        decode_event, decode_message = _decode_event, _decode_message
        fold = self._fold
        keep = self._sink.append
        last = 0
        for raw in lines:
            entry: Any
            try:
                # What we write starts with its tag; a message of the original's, with its id.
                decode = decode_event if raw[:8] == b'{"type":' else decode_message
                entry = decode(raw)
            except msgspec.DecodeError:
                try:
                    entry = parse_signal_line(raw)
                except Exception as error:
                    bad(number, raw, error)
                    number += 1
                    continue
            fold(number, entry)
            keep(entry)
            last = number
            number += 1
        if last > self.lines:
            self.lines = last
        return number

    def _reset(self) -> None:
        self.messages: dict[str, VsmMessage] = {}
        self.obligations: dict[str, ObligationState] = {}
        self.interactions: dict[str, InteractionState] = {}
        self._by_obligation: dict[str, str] = {}  # obligation id → interaction request id
        self.cited: set[str] = set()
        self.fold_problems: list[Problem] = []
        self.lines = 0
        self._sink.clear()
        # The per-unit lists of ``obligations_of`` and the like, each ``None`` until first
        # asked for (a cold load builds none of them), then kept by the fold; ``None`` again
        # when an id seen again replaces its value in place.
        self._unit_obligations: dict[str | None, list[ObligationState]] | None = None
        self._unit_messages: dict[str | None, list[VsmMessage]] | None = None
        self._unit_interactions: dict[str | None, list[InteractionState]] | None = None

    # -- reading ---------------------------------------------------------------------------

    def refresh(self) -> Sequence[RegulatoryEntry]:
        """Fold what was appended since the last refresh; return the new entries."""
        new: list[RegulatoryEntry] = []
        # The fold makes a few long-lived objects per line and no reference cycles. Left on,
        # the cycle collector would walk everything folded so far again and again while a
        # large log loads; it is off for the refresh, and what a large refresh built is moved
        # out of its sight afterwards (``gc.freeze``), so that it is not walked again on the
        # first collections after either. Reference counting still frees all of it when the
        # fold is dropped.
        with collector_paused(freeze=lambda: len(new) >= self._freeze_after):
            self._sink = new
            try:
                while True:
                    # A restart (the log truncated or replaced) resets the fold and ``new``.
                    batch = self._reader.refresh(max_bytes=self._slice_bytes)
                    if not batch.more:
                        break
            finally:
                self._sink = []
        return new

    @property
    def problems(self) -> list[Problem]:
        """Every bad line and every event the fold could not place, in the order found."""
        return sorted([*self._reader.problems, *self.fold_problems], key=lambda p: p.line or 0)

    def _problem(self, line: int, message: str) -> None:
        self.fold_problems.append(Problem(self._reader.label, line, message))

    def _fold(self, line: int, entry: RegulatoryEntry) -> None:
        # One look-up by exact type instead of a chain of isinstance tests: the fold runs once
        # per line, a million times on a cold load. Records are never subclassed; anything
        # else (a message) is whatever the table does not name.
        kind = type(entry)
        if kind in _OBLIGATION_EVENTS:
            event: Any = entry  # one of _OBLIGATION_EVENTS; typed loosely, at no cost per line
            state = self.obligations.get(event.obligation_id)
            if state is None:
                self._problem(line, f"{event.type} for an unknown obligation {event.obligation_id}")
                return
            state.history.append(event)
            _apply(state, event)
        elif kind is ObligationOpened:
            opened = cast(ObligationOpened, entry)
            ob = opened.obligation
            if ob.id in self.obligations:
                self._problem(line, f"obligation {ob.id} is opened a second time")
                return
            state = ObligationState.from_opened(opened)
            self.obligations[ob.id] = state
            self.cited.update(ob.sources)
            if self._unit_obligations is not None:
                _add(self._unit_obligations, ob.unit, state)
        elif kind is MessageNoted:
            self.cited.add(cast(MessageNoted, entry).message)
        elif kind is InteractionRequested:
            request = cast(InteractionRequested, entry).request
            asked = InteractionState(request)
            if request.id in self.interactions:
                self._unit_interactions = None  # replaced in place: its list is rebuilt
            elif self._unit_interactions is not None:
                _add(self._unit_interactions, request.unit, asked)
            self.interactions[request.id] = asked
            self._by_obligation[request.obligation_id] = request.id
        elif kind is InteractionAnswered:
            answered = cast(InteractionAnswered, entry)
            interaction = self.interactions.get(answered.request_id)
            # The original ignores an answer to an unknown request; we say so.
            if interaction is None:
                self._problem(
                    line, f"interaction-answered for an unknown request {answered.request_id}"
                )
                return
            interaction.answers.append(
                Answer(
                    answered.at, answered.by, answered.outcome, answered.channel, answered.answer
                )
            )
        else:
            message = cast(VsmMessage, entry)
            if message.id in self.messages:
                self._unit_messages = None  # replaced in place: its lists are rebuilt
            elif self._unit_messages is not None:
                _index_message(self._unit_messages, message)
            self.messages[message.id] = message

    # -- questions the folded state answers (FoldedState's, and these) ---------------------

    def obligations_of(self, unit_id: str) -> list[ObligationState]:
        """The obligations naming ``unit_id``, in the order they were opened."""
        index = self._unit_obligations
        if index is None:
            index = {}
            for state in self.obligations.values():
                _add(index, state.unit, state)
            self._unit_obligations = index
        return list(index.get(unit_id, ()))

    def messages_of(self, unit_id: str) -> list[VsmMessage]:
        """The messages naming ``unit_id`` (as their unit, or an intelligence signal's
        affected unit), in ``messages`` order."""
        index = self._unit_messages
        if index is None:
            index = {}
            for message in self.messages.values():
                _index_message(index, message)
            self._unit_messages = index
        return list(index.get(unit_id, ()))

    def interactions_of(self, unit_id: str) -> list[InteractionState]:
        """The questions ``unit_id`` asked, in ``interactions`` order."""
        index = self._unit_interactions
        if index is None:
            index = {}
            for interaction in self.interactions.values():
                _add(index, interaction.request.unit, interaction)
            self._unit_interactions = index
        return list(index.get(unit_id, ()))


def _add(index: dict[str | None, list[Any]], unit: str | None, value: Any) -> None:
    found = index.get(unit)
    if found is None:
        index[unit] = [value]
    else:
        found.append(value)


def _index_message(index: dict[str | None, list[VsmMessage]], message: VsmMessage) -> None:
    unit = message.unit
    _add(index, unit, message)
    if isinstance(message, IntelligenceSignal) and message.affected_units:
        for other in dict.fromkeys(message.affected_units):
            if other != unit:
                _add(index, other, message)


def _apply(state: ObligationState, event: Any) -> None:
    """Fold ``event`` into ``state``."""
    kind = type(event)
    if kind is ObligationDelivered:
        state.deliveries.append(
            Delivery(
                at=event.at, channel=event.channel, reminder=event.reminder, target=event.target
            )
        )
    elif kind is ObligationAcknowledged:
        state.acknowledged_by.append(event.by)
        if state.status == "open":
            state.status = "acknowledged"
    elif kind is ObligationResolved:
        state.status = "resolved"
        state.closed_at = event.at
        state.closed_by = event.by
        state.rationale = event.rationale
        state.disposition = event.disposition
    elif kind is ObligationEscalated or kind is ObligationSuperseded:
        state.status = "escalated" if kind is ObligationEscalated else "superseded"
        state.closed_at = event.at
        state.closed_by = event.by
        state.rationale = event.rationale
        state.successor = event.successor


# The events that name an obligation by ``obligationId`` and land in its history.
_OBLIGATION_EVENTS: frozenset[type] = frozenset(
    {
        ObligationAcknowledged,
        ObligationResolved,
        ObligationEscalated,
        ObligationSuperseded,
        ObligationDelivered,
    }
)
