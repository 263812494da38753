"""The regulatory log (``signals.ndjson``) folded into what the instance owes and has asked.

One ``RegulatoryLog`` follows the file with an incremental reader and folds only what was
appended since its last refresh (upstream-core §2.7): messages, obligations with their history
and deliveries, interactions with their answers, and which messages routing has cited. Writers
never update this state directly; they append, and the next refresh folds what they wrote, so
every process sees the same state through the same code.

Unlike the original, one bad line does not make the log unreadable: it is a problem
(``file:line: message``), and so is an event for an obligation the log never opened.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from regulator.protocol.entry import RegulatoryEntry, parse_signal_line
from regulator.protocol.interaction import (
    InteractionAnswered,
    InteractionRequest,
    InteractionRequested,
)
from regulator.protocol.messages import VsmMessage
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
from regulator.store.ndjson import Problem, TailReader


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
            "answers": [_answer_json(a) for a in self.answers],
        }


def _answer_json(answer: Answer) -> dict[str, object]:
    out: dict[str, object] = {
        "at": answer.at,
        "by": answer.by,
        "outcome": answer.outcome,
        "channel": answer.channel,
    }
    if answer.answer is not None:
        out["answer"] = answer.answer
    return out


class RegulatoryLog:
    """The folded state of one instance's ``signals.ndjson``, kept current by ``refresh()``."""

    def __init__(self, layout: Layout, *, path: Path | None = None) -> None:
        self.layout = layout
        self.path = path if path is not None else layout.signals
        self._reader: TailReader[tuple[int, RegulatoryEntry]] = TailReader(
            self.path, self._parse, label=layout.label(self.path)
        )
        self._line = 0
        self._restarts_seen = 0
        self._reset()

    def _parse(self, raw: bytes) -> tuple[int, RegulatoryEntry]:
        # The reader hands over every physical line in order, bad ones included, so counting
        # calls gives each entry its line number for problems found while folding.
        if self._reader.restarts != self._restarts_seen:
            self._restarts_seen = self._reader.restarts
            self._line = 0
        self._line += 1
        return self._line, parse_signal_line(raw)

    def _reset(self) -> None:
        self.messages: dict[str, VsmMessage] = {}
        self.obligations: dict[str, ObligationState] = {}
        self.interactions: dict[str, InteractionState] = {}
        self._by_obligation: dict[str, str] = {}  # obligation id → interaction request id
        self.cited: set[str] = set()
        self.fold_problems: list[Problem] = []
        self.lines = 0

    # -- reading ---------------------------------------------------------------------------

    def refresh(self) -> list[RegulatoryEntry]:
        """Fold what was appended since the last refresh; return the new entries."""
        new: list[RegulatoryEntry] = []
        while True:
            batch = self._reader.refresh()
            if batch.restarted:
                self._reset()
                new.clear()
            for line, entry in batch.items:
                self._fold(line, entry)
                new.append(entry)
            if not batch.more:
                return new

    @property
    def problems(self) -> list[Problem]:
        """Every bad line and every event the fold could not place, in the order found."""
        return sorted([*self._reader.problems, *self.fold_problems], key=lambda p: p.line or 0)

    def _problem(self, line: int, message: str) -> None:
        self.fold_problems.append(Problem(self._reader.label, line, message))

    def _fold(self, line: int, entry: RegulatoryEntry) -> None:
        self.lines = max(self.lines, line)
        match entry:
            case ObligationOpened():
                ob = entry.obligation
                if ob.id in self.obligations:
                    self._problem(line, f"obligation {ob.id} is opened a second time")
                    return
                self.obligations[ob.id] = ObligationState.from_opened(entry)
                self.cited.update(ob.sources)
            case MessageNoted():
                self.cited.add(entry.message)
            case (
                ObligationAcknowledged()
                | ObligationResolved()
                | ObligationEscalated()
                | ObligationSuperseded()
                | ObligationDelivered()
            ):
                state = self.obligations.get(entry.obligation_id)
                if state is None:
                    self._problem(
                        line, f"{entry.type} for an unknown obligation {entry.obligation_id}"
                    )
                    return
                state.history.append(entry)
                _apply(state, entry)
            case InteractionRequested():
                request = entry.request
                self.interactions[request.id] = InteractionState(request)
                self._by_obligation[request.obligation_id] = request.id
            case InteractionAnswered():
                interaction = self.interactions.get(entry.request_id)
                # The original ignores an answer to an unknown request; we say so.
                if interaction is None:
                    self._problem(
                        line, f"interaction-answered for an unknown request {entry.request_id}"
                    )
                    return
                interaction.answers.append(
                    Answer(entry.at, entry.by, entry.outcome, entry.channel, entry.answer)
                )
            case _:
                self.messages[entry.id] = entry

    # -- questions the folded state answers ------------------------------------------------

    def unrouted(self) -> list[VsmMessage]:
        """Messages no routing event cites yet, in log order."""
        return [m for mid, m in self.messages.items() if mid not in self.cited]

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


def _apply(state: ObligationState, event: object) -> None:
    match event:
        case ObligationDelivered():
            state.deliveries.append(Delivery.from_event(event))
        case ObligationAcknowledged():
            state.acknowledged_by.append(event.by)
            if state.status == "open":
                state.status = "acknowledged"
        case ObligationResolved():
            state.status = "resolved"
            state.closed_at, state.closed_by = event.at, event.by
            state.rationale, state.disposition = event.rationale, event.disposition
        case ObligationEscalated() | ObligationSuperseded():
            state.status = "escalated" if isinstance(event, ObligationEscalated) else "superseded"
            state.closed_at, state.closed_by = event.at, event.by
            state.rationale, state.successor = event.rationale, event.successor
