"""A unit's replay: every record that names it, in time order, placed in the attempt it belongs to.

The original projects its stores into spans and flattens them into a table with the time of day
only, ungrouped (upstream-operator-surface §4). This module builds the same merge as plain rows,
for the control room's unit inspector and anything else that wants the story of one unit:

* the unit record (created, and its current status at its last write), every contract version
  with what changed from the version it replans (:func:`contract_versions` gives them whole);
* attempts (a row when each starts and when it ends; a budget ledger without an attempt line is
  an attempt still running, or one whose session died), each attempt's budget ledger;
* recovery decisions and failure observations;
* every event of every obligation naming the unit (deliveries included), the unit's questions
  and how each ended, the regulatory-log messages naming it;
* audit evidence, verdicts and acceptances; memory the unit recorded (and its retraction);
  effect-journal entries of the unit.

Rows keep the full ISO timestamp, and the whole record in its on-disk camelCase shape, so that a
row can be expanded. Text is redacted (the instance's canaries, credential shapes) and titles
and details are single lines with control characters escaped, ready to show.

The readers the room already holds can be passed in, so that a refresh costs what was appended;
a reader passed in is used as it stands (its owner keeps it current), one made here is read to
the end. Nothing here imports Textual.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, TypeVar, get_args

from regulator.protocol.clock import parse_iso
from regulator.protocol.execution import AttemptRecord, BudgetLedger, WorkContract
from regulator.protocol.messages import (
    AlgedonicSignal,
    AuditFinding,
    Constraint,
    CoordinationSignal,
    IntelligenceSignal,
    OperationalSignal,
    PolicyProposal,
    UncertaintySignal,
    VsmMessage,
)
from regulator.protocol.obligations import (
    ObligationAcknowledged,
    ObligationDelivered,
    ObligationEscalated,
    ObligationEvent,
    ObligationOpened,
    ObligationResolved,
    ObligationState,
    ObligationSuperseded,
)
from regulator.protocol.text import visible
from regulator.rules.audit_log import AuditLog, summarize_verdict
from regulator.rules.budget import summary as budget_summary
from regulator.rules.effect_journal import EffectJournal
from regulator.rules.execution import ExecutionStore, contract_changes
from regulator.rules.memory_store import MemoryStore
from regulator.rules.regulatory_log import Answer, RegulatoryLog
from regulator.store import CorruptRecord, Layout, StoreError, check_unit_id
from regulator.views.redaction import Redactor

TimelineKind = Literal[
    "unit",
    "contract",
    "attempt",
    "budget",
    "decision",
    "obligation",
    "interaction",
    "delivery",
    "memory",
    "message",
    "evidence",
    "verdict",
    "acceptance",
    "effect",
    "observation",
]
T = TypeVar("T")

#: Every row kind, in the order a filter offers them.
KINDS: tuple[TimelineKind, ...] = get_args(TimelineKind)

# A detail is one line of a table: the record itself holds the rest.
DETAIL_CHARS = 400

# Where a row goes among rows with the same timestamp: the unit and its contract before
# everything, an attempt's start before its contents, its end after them.
_RANK_UNIT, _RANK_CONTRACT, _RANK_START, _RANK_CONTENT, _RANK_END, _RANK_STATUS = range(-2, 4)


@dataclass(frozen=True, slots=True)
class TimelineRow:
    """One record (or one moment of one, such as an attempt's end) on the unit's timeline."""

    at: str  # the full ISO timestamp, as stored
    kind: TimelineKind
    title: str  # short: "attempt 2: check-failure", "obligation-resolved by alice (fixed)"
    detail: str  # one line
    attempt: int | None  # the attempt it belongs to (from the record, else from time)
    record: dict[str, Any] = field(hash=False)  # the whole record, camelCase, redacted
    ref: str  # stable across refreshes: "obligation-event:<event id>", "attempt-end:2"
    redacted: bool = False  # whether a secret was removed from the title, detail or record


@dataclass(frozen=True, slots=True)
class AttemptGroup:
    """The rows of one attempt (``attempt`` None: after the last attempt, or before any)."""

    attempt: int | None
    label: str
    rows: tuple[TimelineRow, ...]


class Replay(Mapping[str, TimelineRow]):
    """A unit's timeline whose rows are made when first read.

    Every row's ref, kind and attempt is known at once (``refs``, ``kinds``, ``attempts``, in
    time order): enough to order, group and filter the whole timeline. A row's title, detail
    and record are built and redacted the first time it is read, by position (:meth:`row`) or
    by ref (``replay[ref]``), then kept: showing a screenful of a unit's 50,000 records makes
    a screenful of rows. Iterating yields the refs in time order. Not for two threads at once.
    """

    __slots__ = ("_done", "_index", "_order", "_redactor", "_rows", "attempts", "kinds", "refs")

    def __init__(
        self, rows: _Rows, order: list[int], attempts: list[int | None], redactor: Redactor
    ) -> None:
        # Tuples of strings and numbers (see ``_Sealed``).
        self._rows = rows.sealed()
        self._order = tuple(order)  # position in time order → index in ``rows``
        self._redactor = redactor
        self._done: dict[int, TimelineRow] = {}
        self.refs: tuple[str, ...] = tuple([rows.refs[i] for i in order])
        self.kinds: tuple[TimelineKind, ...] = tuple([rows.kinds[i] for i in order])
        self.attempts: tuple[int | None, ...] = tuple([attempts[i] for i in order])
        # A ref twice (it should not be) names its last row, as a dict of the rows would.
        self._index = {ref: n for n, ref in enumerate(self.refs)}

    @classmethod
    def empty(cls) -> Replay:
        return cls(_Rows(), [], [], Redactor())

    def row(self, position: int) -> TimelineRow:
        """The row at ``position`` (time order), finished and redacted."""
        done = self._done.get(position)
        if done is None:
            index = self._order[position]
            done = self._rows.finish(index, self.attempts[position], self._redactor)
            self._done[position] = done
        return done

    def __getitem__(self, ref: str) -> TimelineRow:
        return self.row(self._index[ref])

    def position(self, ref: str) -> int | None:
        """Where the row ``ref`` stands in time order (None: no such row)."""
        return self._index.get(ref)

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, ref: object) -> bool:
        return ref in self._index

    @property
    def finished(self) -> int:
        """How many rows have been made (and redacted) so far."""
        return len(self._done)

    def rows(self) -> list[TimelineRow]:
        """Every row, in time order (each finished now if it was not yet)."""
        return [self.row(n) for n in range(len(self._order))]


# --- building -------------------------------------------------------------------------------


@dataclass(slots=True)
class _Draft:
    at: str
    kind: TimelineKind
    title: str
    detail: str
    record: dict[str, Any]
    ref: str
    rank: int = _RANK_CONTENT
    attempt: int | None = None  # known from the record (or a record it cites)


# Where a row's text comes from: ``_Rows.sources`` holds ``position * 3 + list``.
_EAGER, _EVENT, _MESSAGE = range(3)


class _Rows:
    """The rows gathered: a list per field holding strings and numbers only, and the records
    the bulk rows are made from in lists of their own.

    Nothing a row is an object the cycle collector walks: at 50,000 rows, every one would be
    walked again at each collection while they are built, and again later on the UI thread.
    """

    __slots__ = (
        "ats",
        "attempts",
        "eager",
        "events",
        "kinds",
        "messages",
        "obligations",
        "ranks",
        "refs",
        "sources",
    )

    def __init__(self) -> None:
        self.ats: list[str] = []
        self.kinds: list[TimelineKind] = []
        self.refs: list[str] = []
        self.attempts: list[int | None] = []
        self.ranks: list[int] = []
        self.sources: list[int] = []
        self.eager: list[tuple[str, str, dict[str, Any]]] = []  # (title, detail, record)
        self.obligations: list[ObligationState] = []  # with ``events``: an event, its obligation
        self.events: list[ObligationEvent] = []
        self.messages: list[VsmMessage] = []

    def sealed(self) -> _Sealed:
        return _Sealed(self)

    def add(self, draft: _Draft) -> None:
        self.ats.append(draft.at)
        self.kinds.append(draft.kind)
        self.refs.append(draft.ref)
        self.attempts.append(draft.attempt)
        self.ranks.append(draft.rank)
        self.sources.append(len(self.eager) * 3 + _EAGER)
        self.eager.append((draft.title, draft.detail, draft.record))


class _Sealed:
    """Gathered rows kept for making them later: their fields as tuples of strings and numbers,
    which the cycle collector stops walking after its first look (a list it would walk, every
    entry, at every full collection)."""

    __slots__ = ("ats", "eager", "events", "kinds", "messages", "obligations", "refs", "sources")

    def __init__(self, rows: _Rows) -> None:
        self.ats, self.kinds, self.refs = tuple(rows.ats), tuple(rows.kinds), tuple(rows.refs)
        self.sources = tuple(rows.sources)
        self.eager, self.messages = rows.eager, rows.messages
        self.obligations, self.events = rows.obligations, rows.events

    def finish(self, index: int, attempt: int | None, redactor: Redactor) -> TimelineRow:
        n, which = divmod(self.sources[index], 3)
        if which == _EVENT:
            title, detail, record = _obligation_text(self.obligations[n], self.events[n])
        elif which == _MESSAGE:
            title, detail, record = _message_text(self.messages[n])
        else:
            title, detail, record = self.eager[n]
        at, kind, ref = self.ats[index], self.kinds[index], self.refs[index]
        return _finish(at, kind, attempt, ref, title, detail, record, redactor)


@dataclass(slots=True)
class _Span:
    attempt: int
    start: datetime
    end: datetime | None  # None: no end recorded yet


def _time(text: str) -> datetime | None:
    try:
        return parse_iso(text)
    except (ValueError, TypeError, AttributeError):
        return None


def _stamp(text: str, unparsed: float) -> float:
    """``_time(text)`` as seconds since the epoch, ``unparsed`` when it does not parse.

    Python 3.11 reads a trailing ``Z`` itself: the stored form goes straight through, anything
    else the way :func:`parse_iso` reads it."""
    try:
        moment = _fromisoformat(text)
    except (ValueError, TypeError):
        moment = None
    if moment is None or moment.tzinfo is None or "Z" in text[:-1]:
        moment = _time(text)
        if moment is None:
            return unparsed
    return moment.timestamp()


_fromisoformat = datetime.fromisoformat


def _flat(text: str | None) -> str:
    """A subject or a name on one line (its whitespace runs, newlines too, as one space)."""
    return " ".join(text.split()) if text else ""


def _first(text: str | None) -> str:
    """The first non-blank line of a body (an observation, a command's output)."""
    if not text:
        return ""
    for line in text.splitlines():
        if line.strip():
            return _flat(line)
    return ""


def _join(*parts: str | None) -> str:
    return " · ".join(p for p in parts if p)


def _short(ident: str) -> str:
    return ident[:8]


class _Builder:
    def __init__(self, unit_id: str) -> None:
        self.unit_id = unit_id
        self.rows = _Rows()
        # Ids of records that carry an attempt (decisions, evidence, verdicts), and obligations
        # opened by a question asked in an attempt: what an obligation or message cites.
        self.links: dict[str, int] = {}
        self.spans: dict[int, _Span] = {}

    def add(self, draft: _Draft) -> None:
        self.rows.add(draft)

    # -- execution store -----------------------------------------------------------------

    def execution(self, layout: Layout, store: ExecutionStore) -> None:
        unit_id = self.unit_id
        unit = _guarded(store.find_unit, unit_id)
        if unit is not None:
            record = unit.to_json_dict()
            self.add(
                _Draft(
                    unit.created_at,
                    "unit",
                    "unit created",
                    _join(
                        unit.unit_type,
                        f"{unit.workload.name} v{unit.workload.version}",
                        f"contract {unit.contract.id} v{unit.contract.version}",
                    ),
                    record,
                    f"unit:{unit_id}",
                    rank=_RANK_UNIT,
                )
            )
            # The record is rewritten in place; its last write says what the unit has become.
            if unit.updated_at != unit.created_at and unit.status != "contracted":
                plural = "" if unit.attempts == 1 else "s"
                self.add(
                    _Draft(
                        unit.updated_at,
                        "unit",
                        f"unit {unit.status}",
                        _join(_flat(unit.reason), f"{unit.attempts} attempt{plural}"),
                        record,
                        f"unit-status:{unit_id}",
                        rank=_RANK_STATUS,
                    )
                )
        for version in contract_versions(layout, unit_id, store=store):
            contract = version.contract
            predecessor = contract.provenance.predecessor
            self.add(
                _Draft(
                    contract.provenance.created_at,
                    "contract",
                    f"contract {contract.id} v{contract.version}",
                    _join(
                        _flat(contract.objective),
                        f"replans v{predecessor.version}: {_flat(predecessor.reason)}"
                        if predecessor is not None
                        else None,
                        "changes: " + "; ".join(_flat(c) for c in version.changes)
                        if version.changes
                        else None,
                    ),
                    contract.to_json_dict(),
                    f"contract:{contract.id}:v{contract.version}",
                    rank=_RANK_CONTRACT,
                )
            )
        attempts = _guarded(store.attempts, unit_id) or []
        for attempt in attempts:
            self._attempt(attempt)
        for n in _guarded(layout.list_budgets, unit_id) or []:
            ledger = _guarded(store.budget, unit_id, n)
            if ledger is not None:
                self._budget(ledger)
        for decision in _guarded(store.decisions, unit_id) or []:
            self.links[decision.id] = decision.attempt
            title = (
                f"after attempt {decision.attempt}: {decision.cause} "
                f"(occurrence {decision.occurrence}) → {decision.action}"
            )
            self.add(
                _Draft(
                    decision.decided_at,
                    "decision",
                    title,
                    _join(
                        _first(decision.rationale),
                        f"question: {_first(decision.question)}" if decision.question else None,
                        f"hint: {_first(decision.hint)}" if decision.hint else None,
                    ),
                    decision.to_json_dict(),
                    f"decision:{decision.id}",
                    attempt=decision.attempt,
                )
            )
        for index, observation in enumerate(_guarded(store.observations, unit_id) or []):
            where = " ".join(p for p in (observation.source, observation.tool_name) if p)
            self.add(
                _Draft(
                    observation.at,
                    "observation",
                    f"failure observed: {observation.cause} ({where})",
                    _first(observation.message),
                    observation.to_json_dict(),
                    # The log is append-only: a line's position never changes.
                    f"observation:{index + 1}",
                    attempt=observation.attempt,
                )
            )

    def _attempt(self, attempt: AttemptRecord) -> None:
        start, end = _time(attempt.started_at), _time(attempt.ended_at)
        if start is not None:
            self.spans[attempt.attempt] = _Span(attempt.attempt, start, end or start)
        record = attempt.to_json_dict()
        session = f"session {attempt.session_id}" if attempt.session_id else None
        self.add(
            _Draft(
                attempt.started_at,
                "attempt",
                f"attempt {attempt.attempt} started",
                _join(f"contract v{attempt.contract_version}", session),
                record,
                f"attempt-start:{attempt.attempt}",
                rank=_RANK_START,
                attempt=attempt.attempt,
            )
        )
        took = _duration(start, end)
        self.add(
            _Draft(
                attempt.ended_at,
                "attempt",
                f"attempt {attempt.attempt}: {attempt.outcome}",
                _join(_first(attempt.detail), f"after {took}" if took else None, session),
                record,
                f"attempt-end:{attempt.attempt}",
                rank=_RANK_END,
                attempt=attempt.attempt,
            )
        )

    def _budget(self, ledger: BudgetLedger) -> None:
        n = ledger.attempt
        record = ledger.to_json_dict()
        if n not in self.spans:
            # The attempt line is written when an attempt ends: a ledger without one is an
            # attempt under way (or one whose session died before it could end).
            start = _time(ledger.started_at)
            if start is not None:
                self.spans[n] = _Span(n, start, None)
            self.add(
                _Draft(
                    ledger.started_at,
                    "attempt",
                    f"attempt {n} started",
                    "no end recorded: running, or its session died",
                    record,
                    f"attempt-start:{n}",
                    rank=_RANK_START,
                    attempt=n,
                )
            )
        consumed, ceiling = ledger.consumed, ledger.ceiling
        cost = f"cost {consumed.cost:g}"
        if ceiling.cost is not None:
            cost += f"/{ceiling.cost:g}"
        wall = f"wall {consumed.wall_clock_ms / 1000:g}/{ceiling.wall_clock_ms / 1000:g} s"
        compactions = ledger.compactions
        lost = sum(1 for c in compactions if not c.preserved)
        self.add(
            _Draft(
                # The ledger is a counter rewritten as the attempt goes: its last update.
                ledger.updated_at,
                "budget",
                f"budget: {budget_summary(ledger)}",
                _join(
                    cost,
                    wall,
                    "models " + " → ".join(ledger.models) if ledger.models else "no model yet",
                    f"compactions {len(compactions)}"
                    + (f" ({lost} without the contract)" if lost else "")
                    if compactions
                    else None,
                ),
                record,
                f"budget:{n}",
                attempt=n,
            )
        )

    # -- audit log -----------------------------------------------------------------------

    def audit(self, audit: AuditLog) -> None:
        found = audit.audit_for(self.unit_id)
        for evidence in found.evidence:
            self.links[evidence.id] = evidence.attempt
            criteria = ", ".join(evidence.criteria) or "no criterion"
            self.add(
                _Draft(
                    evidence.at,
                    "evidence",
                    f"evidence {evidence.check}: {evidence.verdict}",
                    _join(
                        f"[{evidence.class_} → {criteria}]",
                        f"@{evidence.revision[:7]}",
                        _first(evidence.observation),
                    ),
                    evidence.to_json_dict(),
                    f"evidence:{evidence.id}",
                    attempt=evidence.attempt,
                )
            )
        for verdict in found.verdicts:
            self.links[verdict.id] = verdict.attempt
            n = len(verdict.evidence)
            self.add(
                _Draft(
                    verdict.at,
                    "verdict",
                    f"verdict: {summarize_verdict(verdict)}",
                    _join(
                        "; ".join(_first(r) for r in verdict.reasons),
                        f"{n} record{'' if n == 1 else 's'} considered",
                        f"@{verdict.revision[:7]}",
                    ),
                    verdict.to_json_dict(),
                    f"verdict:{verdict.id}",
                    attempt=verdict.attempt,
                )
            )
        for acceptance in found.acceptances:
            self.add(
                _Draft(
                    acceptance.at,
                    "acceptance",
                    f"{acceptance.disposition} by {_flat(acceptance.by)}: "
                    f"{_flat(acceptance.criterion)}",
                    _join(_first(acceptance.note), f"@{acceptance.revision[:7]}"),
                    acceptance.to_json_dict(),
                    f"acceptance:{acceptance.id}",
                )
            )

    # -- regulatory log ------------------------------------------------------------------

    def regulatory(self, log: RegulatoryLog) -> None:
        unit_id = self.unit_id
        # The log keeps each unit's records apart: no scan of every record of the instance.
        for state in log.interactions_of(unit_id):
            request = state.request
            if request.attempt is not None:
                self.links[request.obligation_id] = request.attempt
            self.add(
                _Draft(
                    request.raised_at,
                    "interaction",
                    f"asked {request.kind}: {_flat(request.subject)}",
                    _join(
                        _first(request.question),
                        f"a yes authorizes: {_first(request.action)}" if request.action else None,
                        "options: " + " | ".join(_flat(o) for o in request.options)
                        if request.options
                        else None,
                    ),
                    request.to_json_dict(),
                    f"interaction:{request.id}",
                    attempt=request.attempt,
                )
            )
            for index, answer in enumerate(state.answers):
                self.add(self._answer(request.id, request.kind, index, answer))
        # Only what orders, groups and filters a row is read now, its text when it is shown.
        # The fold may go on meanwhile: the text reads a message, an event, and the fields an
        # obligation was opened with, none of which the fold changes.
        rows = self.rows
        ats, kinds, refs = rows.ats.append, rows.kinds.append, rows.refs.append
        attempts, ranks, sources = rows.attempts.append, rows.ranks.append, rows.sources.append
        messages = rows.messages
        for message in log.messages_of(unit_id):
            ats(message.timestamp)
            kinds("message")
            refs(f"message:{message.id}")
            # An audit finding shares its verdict's id, an escalation's signal its decision's.
            attempts(self.links.get(message.id))
            ranks(_RANK_CONTENT)
            sources(len(messages) * 3 + _MESSAGE)
            messages.append(message)
        obligations, events = rows.obligations, rows.events
        for obligation in log.obligations_of(unit_id):
            for event in obligation.history:
                ats(event.at)
                refs(f"obligation-event:{event.id}")
                if isinstance(event, ObligationOpened):
                    kinds("obligation")
                    attempts(self._cited_attempt(obligation))
                else:
                    kinds("delivery" if isinstance(event, ObligationDelivered) else "obligation")
                    attempts(None)
                ranks(_RANK_CONTENT)
                sources(len(events) * 3 + _EVENT)
                obligations.append(obligation)
                events.append(event)

    def _answer(self, request_id: str, kind: str, index: int, answer: Answer) -> _Draft:
        by = _flat(answer.by)
        titles = {
            "answered": f"answered by {by}",
            "timed-out": "timed out: no answer",
            "cancelled": f"cancelled by {by}",
            "unavailable": "nobody to ask: unavailable",
        }
        record: dict[str, Any] = {
            # The fold keeps what an answer said, not its event id: this is that event less it.
            "type": "interaction-answered",
            "at": answer.at,
            "by": answer.by,
            "requestId": request_id,
            "outcome": answer.outcome,
            "channel": answer.channel,
        }
        if answer.answer is not None:
            record["answer"] = answer.answer
        return _Draft(
            answer.at,
            "interaction",
            titles.get(answer.outcome, f"{answer.outcome} ({by})"),
            _join(
                f"“{_first(answer.answer)}”" if answer.answer else None,
                # Silence is never consent: say so where a yes was needed.
                "silence is not consent"
                if answer.outcome != "answered" and kind in ("consent", "uat")
                else None,
                f"via {answer.channel}",
            ),
            record,
            f"interaction-answer:{request_id}:{index + 1}",
        )

    def _cited_attempt(self, state: ObligationState) -> int | None:
        if state.id in self.links:
            return self.links[state.id]
        for source in state.sources:
            if source in self.links:
                return self.links[source]
        return None

    # -- memory and effects --------------------------------------------------------------

    def memory(self, memory: MemoryStore) -> None:
        for state in memory.states():
            entry = state.entry
            if entry.unit != self.unit_id:
                continue
            self.add(
                _Draft(
                    entry.recorded_at,
                    "memory",
                    f"remembered: {_flat(entry.subject)}",
                    _join(_first(entry.note), f"review by {entry.review_by[:10]}", state.status),
                    entry.to_json_dict(),
                    f"memory:{entry.id}",
                )
            )
            retraction = state.retraction
            if retraction is not None:
                self.add(
                    _Draft(
                        retraction.at,
                        "memory",
                        f"memory retracted by {_flat(retraction.by)}: {_flat(entry.subject)}",
                        _first(retraction.reason),
                        {
                            # The fold keeps the retraction without its event id.
                            "type": "memory-retracted",
                            "memoryId": entry.id,
                            "by": retraction.by,
                            "at": retraction.at,
                            "reason": retraction.reason,
                        },
                        f"memory-retraction:{entry.id}",
                    )
                )

    def effects(self, effects: EffectJournal) -> None:
        for state in effects.states():
            if state.unit_id != self.unit_id:
                continue
            self.add(
                _Draft(
                    state.intended_at,
                    "effect",
                    f"{state.tool}: {state.status}",
                    _join(_first(state.description), _first(state.result)),
                    state.to_json(),
                    f"effect:{state.key}",
                )
            )

    # -- placing -------------------------------------------------------------------------

    def replay(self, redactor: Redactor) -> Replay:
        rows = self.rows
        last = float("inf")
        # Parsed (so that an offset or a missing fraction still sorts right); a time that does
        # not parse goes last.
        times = [_stamp(at, last) for at in rows.ats]
        attempts = rows.attempts
        spans = sorted(self.spans.values(), key=lambda s: (s.start, s.attempt))
        if spans:
            bounds = [
                (s.attempt, s.start.timestamp(), last if s.end is None else s.end.timestamp())
                for s in spans
            ]
            for index, stamp in enumerate(times):
                if attempts[index] is None and stamp != last:
                    attempts[index] = _attempt_at(bounds, stamp)
        # Time first; on a tie the earlier attempt's rows, within one attempt its start,
        # contents, end; then the order the records were read in. Stable sorts, the least
        # significant key first, each on a plain number (a tuple a row costs twice as much).
        order = list(range(len(times)))
        ranks = rows.ranks
        if any(rank != _RANK_CONTENT for rank in ranks):
            order.sort(key=ranks.__getitem__)
        if spans or any(attempt is not None for attempt in attempts):
            by_attempt = [last if a is None else float(a) for a in attempts]
            order.sort(key=by_attempt.__getitem__)
        order.sort(key=times.__getitem__)
        return Replay(rows, order, attempts, redactor)


def _message_text(message: VsmMessage) -> tuple[str, str, dict[str, Any]]:
    severity = getattr(message, "severity", None)
    if isinstance(message, UncertaintySignal):
        severity = f"impact {message.impact}"
    return (
        f"{message.kind} from {message.source}" + (f" ({severity})" if severity else ""),
        _join(_flat(message.subject), _first(_message_body(message))),
        message.to_json_dict(),
    )


def _obligation_text(
    state: ObligationState, event: ObligationEvent
) -> tuple[str, str, dict[str, Any]]:
    head = f"{_short(state.id)} {_flat(state.subject)}"
    record = event.to_json_dict()
    by = _flat(event.by)
    match event:
        case ObligationOpened():
            veto = " veto" if state.blocks else ""
            return (
                f"obligation-opened by {by} ({state.severity}{veto} → {state.consumer})",
                _join(
                    f"{_short(state.id)} {state.concern}: {_flat(state.subject)}",
                    _first(state.question),
                ),
                record,
            )
        case ObligationDelivered():
            verb = "reminded" if event.reminder else "delivered"
            target = _flat(event.target)
            title = f"{verb} via {event.channel}" + (
                f" to {target}" if target and target != event.channel else ""
            )
            return title, head, record
        case ObligationAcknowledged():
            title, body = f"obligation-acknowledged by {by}", event.note
        case ObligationResolved():
            title = f"obligation-resolved by {by} ({event.disposition})"
            body = event.rationale
        case ObligationEscalated() | ObligationSuperseded():
            title = f"{event.type} by {by} → {_short(event.successor)}"
            body = event.rationale
        case _:  # message-noted never lands in an obligation's history
            title, body = f"{event.type} by {by}", None
    return title, _join(head, _first(body)), record


def _attempt_at(spans: Sequence[tuple[int, float, float]], moment: float) -> int | None:
    """The attempt under way at ``moment``, else the next one to start, else None.

    ``spans``: (attempt, start, end) in order of start; an attempt not ended ends at inf."""
    inside = [n for n, start, end in spans if start <= moment <= end]
    if inside:
        return inside[-1]  # overlapping attempts should not exist: the later start
    for n, start, _ in spans:
        if start > moment:
            return n
    return None


def _finish(
    at: str,
    kind: TimelineKind,
    attempt: int | None,
    ref: str,
    title: str,
    detail: str,
    raw: dict[str, Any],
    redactor: Redactor,
) -> TimelineRow:
    title, t_removed = redactor.scrub(title)
    detail, d_removed = redactor.scrub(detail)
    record, r_removed = redactor.scrub_json(raw)
    if len(detail) > DETAIL_CHARS:
        detail = detail[: DETAIL_CHARS - 1] + "…"
    return TimelineRow(
        at=at,
        kind=kind,
        title=visible(title),
        detail=visible(detail),
        attempt=attempt,
        record=record if isinstance(record, dict) else {"redacted": record},
        ref=ref,
        redacted=t_removed or d_removed or r_removed,
    )


def _duration(start: datetime | None, end: datetime | None) -> str:
    if start is None or end is None:
        return ""
    seconds = (end - start).total_seconds()
    if seconds < 0:
        return ""
    if seconds < 60:
        return f"{seconds:.3g} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def _message_body(message: VsmMessage) -> str | None:
    match message:
        case (
            AuditFinding()
            | OperationalSignal()
            | CoordinationSignal()
            | IntelligenceSignal()
            | AlgedonicSignal()
        ):
            return message.observation
        case PolicyProposal():
            return message.rationale
        case Constraint():
            return message.rule
        case UncertaintySignal():
            return f"{message.decision}: {message.reason}"
    return None


def _guarded(read: Callable[..., T], *args: Any) -> T | None:
    # A corrupt or unreadable file is doctor's to report; the replay shows what does read.
    try:
        return read(*args)
    except (CorruptRecord, StoreError, OSError, ValueError):
        return None


# --- the API --------------------------------------------------------------------------------


def unit_timeline(
    layout: Layout,
    unit_id: str,
    *,
    log: RegulatoryLog | None = None,
    audit: AuditLog | None = None,
    store: ExecutionStore | None = None,
    memory: MemoryStore | None = None,
    effects: EffectJournal | None = None,
    redactor: Redactor | None = None,
) -> list[TimelineRow]:
    """Every record naming ``unit_id``, sorted by time (stable), each placed in its attempt.

    Readers passed in are used as they stand; the others are opened here and read whole.
    ``redactor`` defaults to the instance's (its canaries and every credential shape).
    Raises ``InvalidUnitId`` for an id that could not be a unit's; a unit with no records
    has an empty timeline. :func:`unit_replay` gives the same rows, each made when read.
    """
    return unit_replay(
        layout,
        unit_id,
        log=log,
        audit=audit,
        store=store,
        memory=memory,
        effects=effects,
        redactor=redactor,
    ).rows()


def unit_replay(
    layout: Layout,
    unit_id: str,
    *,
    log: RegulatoryLog | None = None,
    audit: AuditLog | None = None,
    store: ExecutionStore | None = None,
    memory: MemoryStore | None = None,
    effects: EffectJournal | None = None,
    redactor: Redactor | None = None,
) -> Replay:
    """:func:`unit_timeline` as a :class:`Replay`: ordered, grouped and filterable at once,
    each row's text made (and redacted) when the row is first read.

    A row reads its records when it is finished, but only what the fold never changes (an
    obligation's fields as opened, its events, messages): the readers may be refreshed
    meanwhile.
    """
    check_unit_id(unit_id)
    if log is None:
        log = RegulatoryLog(layout)
        log.refresh()
    builder = _Builder(unit_id)
    builder.execution(layout, store if store is not None else ExecutionStore(layout))
    # Audit before the log: findings and obligations cite verdicts by id.
    builder.audit(audit if audit is not None else AuditLog(layout))
    builder.regulatory(log)
    builder.memory(memory if memory is not None else MemoryStore(layout))
    builder.effects(effects if effects is not None else EffectJournal(layout))
    return builder.replay(redactor if redactor is not None else Redactor.for_layout(layout))


@dataclass(frozen=True, slots=True)
class ContractVersion:
    """One version of a unit's contract, and what changed from the version it replans."""

    contract: WorkContract
    # The version it replaced (its predecessor, else the one before it); None for the first.
    replaces: int | None
    reason: str | None
    changes: tuple[str, ...]  # one line each: "~ fixed d1: decision", "+ delegated d3"


def contract_versions(
    layout: Layout, unit_id: str, *, store: ExecutionStore | None = None
) -> list[ContractVersion]:
    """Every version of the unit's contract, oldest first, each with its diff from the one it
    replaces (for the inspector's versions view). A version that does not read is left out."""
    check_unit_id(unit_id)
    store = store if store is not None else ExecutionStore(layout)
    read: dict[int, WorkContract] = {}
    for n in _guarded(layout.list_contract_versions, unit_id) or []:
        contract = _guarded(store.contract, unit_id, n)
        if contract is not None:
            read[n] = contract
    out: list[ContractVersion] = []
    previous: WorkContract | None = None
    for n in sorted(read):
        contract = read[n]
        predecessor = contract.provenance.predecessor
        base = read.get(predecessor.version) if predecessor is not None else previous
        out.append(
            ContractVersion(
                contract=contract,
                replaces=base.version if base is not None else None,
                reason=predecessor.reason if predecessor is not None else None,
                changes=tuple(contract_changes(base, contract)) if base is not None else (),
            )
        )
        previous = contract
    return out


def group_by_attempt(rows: Iterable[TimelineRow]) -> list[AttemptGroup]:
    """The rows by attempt, attempts in ascending order, rows outside every attempt last.

    Within a group the rows keep the order given (the timeline's, time order).
    """
    groups: dict[int | None, list[TimelineRow]] = {}
    for row in rows:
        groups.setdefault(row.attempt, []).append(row)
    numbered = sorted(n for n in groups if n is not None)
    out = [AttemptGroup(n, f"attempt {n}", tuple(groups[n])) for n in numbered]
    if None in groups:
        label = f"after attempt {numbered[-1]}" if numbered else "no attempt yet"
        out.append(AttemptGroup(None, label, tuple(groups[None])))
    return out


def filter_kinds(rows: Iterable[TimelineRow], kinds: Iterable[str]) -> list[TimelineRow]:
    """Only the rows of ``kinds`` (the room's filter by kind)."""
    wanted = frozenset(kinds)
    return [row for row in rows if row.kind in wanted]
