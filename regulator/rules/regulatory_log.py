"""The regulatory log (``signals.ndjson``) folded into what the instance owes and has asked.

One ``RegulatoryLog`` follows the file with an incremental reader and folds only what was
appended since its last refresh (upstream-core §2.7): messages, obligations with their history
and deliveries, interactions with their answers, and which messages routing has cited. Writers
never update this state directly; they append, and the next refresh folds what they wrote, so
every process sees the same state through the same code.

Unlike the original, one bad line does not make the log unreadable: it is a problem
(``file:line: message``), and so is an event for an obligation the log never opened.

A cold start of a large log is made cheap three ways, none visible in what the fold holds:
lines are checked and built by code compiled from the record models (``fast_records``), with
pydantic validating only the lines that code does not take (so every refusal reads as it always
did); the cycle collector is kept out of the way of a large fold (see ``refresh``); and a
snapshot of the fold (``fold_cache``), written after a cold start that read much of the log
(by that refresh, or later by a reader that asked to show the fold first: ``save_snapshot``),
lets the next cold start read only what was appended since. The first refresh returns every
entry of the log either way.

A start from the snapshot makes each obligation's state and each question at once, and leaves
what a reader may never look at to be built when first read: each obligation's history and
deliveries (``ObligationState``, ``_Unbuilt``), the log's messages and message-noted lines
(``messages``, ``message``, ``_Later``), and the first refresh's entries (``_Entries``). The
texts those are built from stay in the snapshot's file until then (``_Text``). A row that does
not build when its turn comes, or is no longer in the file, is read from the log itself
(``_Source``).
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import zlib
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path
from typing import Any, cast, get_args

import orjson

from regulator.protocol.entry import ENTRY_MODELS, RegulatoryEntry, loads_json, validate_entry
from regulator.protocol.errors import CorruptState
from regulator.protocol.fast_records import (
    COMPILER,
    Unsupported,
    codecs_for,
    fingerprint,
    set_dict,
    set_extra,
    set_fields_set,
    set_private,
)
from regulator.protocol.interaction import (
    InteractionAnswered,
    InteractionRequest,
    InteractionRequested,
)
from regulator.protocol.messages import MESSAGE_MODELS, IntelligenceSignal, VsmMessage
from regulator.protocol.obligations import (
    Delivery,
    MessageNoted,
    Obligation,
    ObligationAcknowledged,
    ObligationDelivered,
    ObligationEscalated,
    ObligationOpened,
    ObligationResolved,
    ObligationState,
    ObligationSuperseded,
    Unbuilt,
)
from regulator.protocol.vocab import TERMINAL_STATUSES, Disposition, ObligationStatus
from regulator.store import Layout, fold_cache
from regulator.store.collector import collector_paused
from regulator.store.ndjson import Problem, TailBatch, TailReader, describe_line_error


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

    lines: int  # the number of the last line folded into an entry

    def __init__(
        self,
        layout: Layout,
        *,
        path: Path | None = None,
        snapshots: bool = True,
        defer_snapshot: bool = False,
    ) -> None:
        self.layout = layout
        self.path = path if path is not None else layout.signals
        self._reader = _FoldReader(
            self.path,
            self._parse,
            label=layout.label(self.path),
            take=self._take,
            on_restart=self._reset,
        )
        # Where the lines being read land: the list ``refresh`` returns.
        self._sink: list[RegulatoryEntry] = []
        # Only the instance's own log has a snapshot (a log read from elsewhere has none).
        self._snapshots = snapshots and SNAPSHOTS and self.path == layout.signals
        # The snapshot a cold start makes due is left to ``save_snapshot`` (the room's, which
        # shows the data first), else written by that refresh itself.
        self._defer_snapshot = defer_snapshot
        self._tried_snapshot = False
        # How many times a refresh began or ended: odd while one is under way.
        self._folds = 0
        self._building_messages = threading.Lock()
        self._reset()

    def _parse(self, raw: bytes) -> RegulatoryEntry:
        """``parse_signal_line``: the line a fast builder takes, or pydantic's verdict on it."""
        try:
            data = _loads(raw)
        except orjson.JSONDecodeError:
            data = loads_json(raw)  # raises the usual "not JSON: …"
        if type(data) is dict:
            tag = data["kind"] if "kind" in data else data.get("type")
            build = _BUILDERS.get(tag) if type(tag) is str else None
            if build is not None:
                try:
                    entry = build(data)
                except Exception:  # a list where a word belongs, and the like: pydantic says
                    entry = None
                if entry is not None:
                    return cast(RegulatoryEntry, entry)
        return validate_entry(data)

    def _take(self, lines: list[bytes], number: int, bad: _BadLine) -> int:
        """Parse and fold ``lines`` (the first is line ``number``); the next line's number.

        One loop per chunk instead of a call per line and another per entry: on a cold load
        this runs a million times. A line the compiled builders do not take goes through
        ``_parse``, so that a refusal reads as it always did (``bad`` records it).
        """
        loads = _loads
        builders = _BUILDERS
        fold = self._fold
        keep = self._sink.append
        last = 0
        for raw in lines:
            try:
                data = loads(raw)
                entry = builders[data["kind"] if "kind" in data else data["type"]](data)
            except Exception:  # not JSON, not an object, no tag, …: ``_parse`` says what
                entry = None
            if entry is None:
                try:
                    entry = self._parse(raw)
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
        # Under the messages' lock: a build of a restored log's messages on another thread
        # (the room's warm-up) ends, and publishes, before this forgets them, never after.
        with self._building_messages:
            # Which reading of the log this is (``message`` checks it has not changed).
            self._reading = object()
            self._messages: dict[str, VsmMessage] = {}
            # After a restore: the messages' groups, built into ``messages`` when first read,
            # and their ids meanwhile (``unrouted_count`` needs no more).
            self._later_messages: list[_Later] | None = None
            self._message_ids: list[str] = []
            # For ``message``: the groups built.
            self._built_groups: dict[int, list[Any]] = {}
        self.obligations: dict[str, ObligationState] = {}
        self.interactions: dict[str, InteractionState] = {}
        self._by_obligation: dict[str, str] = {}  # obligation id → interaction request id
        self.cited: set[str] = set()
        self.fold_problems: list[Problem] = []
        self.lines = 0
        # The entries of a snapshot due (``save_snapshot``): every entry since the log's start,
        # in the parts the refreshes since the one that made it due returned.
        self._due: list[list[RegulatoryEntry] | _Entries] | None = None
        self._sink.clear()
        self._index_units()

    @property
    def messages(self) -> dict[str, VsmMessage]:
        """Every message by id, in log order (a later message with the same id replaces the
        earlier's value in its place)."""
        if self._later_messages is not None:
            self._build_messages()
        return self._messages

    @messages.setter
    def messages(self, value: dict[str, VsmMessage]) -> None:
        with self._building_messages:
            self._messages = value
            self._later_messages = None

    def build_messages(self, stop: Callable[[], bool] = lambda: False) -> None:
        """Build the messages a restore left to be built when read, one group at a time,
        asking ``stop`` between groups (for a long-lived reader, off the screen); ``messages``
        then holds them all, unless ``stop`` said so first."""
        groups, built = self._later_messages, self._built_groups
        if groups is None:
            return
        for n, group in enumerate(groups):
            if stop():
                return
            if n not in built:
                built[n] = group.built()
        if self._later_messages is groups:
            self._build_messages()  # put together from the groups just built

    def _build_messages(self) -> None:
        with self._building_messages:  # two threads reading them build them once
            groups = self._later_messages
            if groups is None:
                return
            messages: dict[str, VsmMessage] = {}
            built = self._built_groups
            for n, group in enumerate(groups):
                for message in built.get(n) or group.built():
                    messages[message.id] = message
            self._messages = messages
            self._later_messages = None
            self._built_groups = {}

    def message(self, message_id: str) -> VsmMessage | None:
        """``messages.get(message_id)``, building at most the one group of messages that holds
        it when a restore left them unbuilt (a pane showing one obligation's sources).

        It takes no lock (the UI thread calls it while the messages may be being built on
        another): what it reads is replaced whole, never changed in place, and a lookup that
        overlapped a replaced log is made again.
        """
        reading, groups, built_groups = self._reading, self._later_messages, self._built_groups
        if groups is None:
            return self.messages.get(message_id)
        message: VsmMessage | None = None
        # The group that holds the id, the last one first (the dict keeps an id's last
        # message): a scan of each group's ids in C, a few milliseconds at 1M lines, rather
        # than an index of every id first (a tenth of a second, on the UI thread).
        for n in range(len(groups) - 1, -1, -1):
            keys = groups[n].keys
            if message_id in keys:
                message = _built_group(groups, built_groups, n)[_last_index(keys, message_id)]
                break
        if self._reading is not reading:
            return self.message(message_id)  # the log was replaced meanwhile: ask it again
        return message

    def _index_units(self) -> None:
        # The per-unit lists of ``obligations_of`` and the like, each ``None`` until first
        # asked for (a cold load or a restore builds none of them), then kept by the fold;
        # ``None`` again when an id seen again replaces its value in place.
        self._unit_obligations: dict[str | None, list[ObligationState]] | None = None
        self._unit_messages: dict[str | None, list[VsmMessage]] | None = None
        self._unit_interactions: dict[str | None, list[InteractionState]] | None = None

    # -- reading ---------------------------------------------------------------------------

    def refresh(self) -> Sequence[RegulatoryEntry]:
        """Fold what was appended since the last refresh; return the new entries.

        After a restore from the snapshot, the entries of the histories not built yet are
        built when the returned sequence is first read (its length costs nothing).
        """
        new: list[RegulatoryEntry] = []
        unbuilt: list[tuple[_Unbuilt, ObligationState]] = []
        later: list[_Later] = []
        self._folds += 1  # odd while a fold is under way (``save_snapshot`` looks)
        # The fold makes a few long-lived objects per line and no reference cycles. Left on,
        # the cycle collector would walk everything folded so far again and again while a
        # large log loads (half the time of a cold load); it is off for the refresh, and what
        # a large refresh built is moved out of its sight afterwards (``gc.freeze``), so that
        # it is not walked again on the first collections after either. Reference counting
        # still frees all of it when the fold is dropped.
        with collector_paused(freeze=lambda: len(new) >= _FREEZE_AFTER):
            try:
                # ``whole``: ``new`` will hold every entry of the log, as a snapshot needs.
                whole = self._reader.offset == 0 and self._reader.next_line == 1
                if whole and self._snapshots and not self._tried_snapshot:
                    self._tried_snapshot = True  # once: a log that stays empty is not looked for
                    restored = self._restore()
                    if restored is not None:
                        new, unbuilt, later = restored
                start = self._reader.next_line
                self._sink = new
                while True:
                    # A restart (the log truncated or replaced) resets the fold and ``new`` first.
                    batch = self._reader.refresh(max_bytes=_SLICE_BYTES)
                    if batch.restarted:
                        whole, start = True, 1
                        unbuilt, later = [], []  # the fold was reset: the restore is gone
                    if not batch.more:
                        break
                read = self._reader.next_line - start  # lines of the file this refresh read
                entries = _Entries(new, unbuilt, later) if unbuilt or later else None
                result = entries if entries is not None else new
                if whole and self._snapshots and read >= SNAPSHOT_AFTER_LINES:
                    # A cold start, or a restore and a long tail: a snapshot is due.
                    self._due = [result]
                elif self._due is not None and result:
                    self._due.append(result)  # the due snapshot covers what came since too
            finally:
                self._sink = []
                self._folds += 1  # even again: no fold under way
        if self._due is not None and not self._defer_snapshot:
            self.save_snapshot()  # a reader that did not ask to write it later
        return result

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
            oid = event.obligation_id
            state = self.obligations.get(oid)
            if state is None:
                self._problem(line, f"{event.type} for an unknown obligation {oid}")
                return
            # The same id, held once: the state's string instead of one copy per event.
            event.__dict__["obligation_id"] = state.id
            history = state.__dict__["history"]
            if type(history) is not list:  # restored, not built yet: build it first
                history = state.history
            history.append(event)
            _apply(state, event)
        elif kind is ObligationOpened:
            assert isinstance(entry, ObligationOpened)
            ob = entry.obligation
            if ob.id in self.obligations:
                self._problem(line, f"obligation {ob.id} is opened a second time")
                return
            state = _opened_state(entry)
            self.obligations[ob.id] = state
            self.cited.update(ob.sources)
            if self._unit_obligations is not None:
                _add(self._unit_obligations, ob.unit, state)
        elif kind is MessageNoted:
            assert isinstance(entry, MessageNoted)
            self.cited.add(entry.message)
        elif kind is InteractionRequested:
            assert isinstance(entry, InteractionRequested)
            request = entry.request
            asked = InteractionState(request)
            if request.id in self.interactions:
                self._unit_interactions = None  # replaced in place: its list is rebuilt
            elif self._unit_interactions is not None:
                _add(self._unit_interactions, request.unit, asked)
            self.interactions[request.id] = asked
            self._by_obligation[request.obligation_id] = request.id
        elif kind is InteractionAnswered:
            assert isinstance(entry, InteractionAnswered)
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
        else:
            message = cast(VsmMessage, entry)
            if message.id in self.messages:
                self._unit_messages = None  # replaced in place: its lists are rebuilt
            elif self._unit_messages is not None:
                _index_message(self._unit_messages, message)
            self.messages[message.id] = message

    # -- the snapshot -----------------------------------------------------------------------

    @property
    def snapshot_due(self) -> bool:
        """Whether a refresh read enough of the log for a snapshot that is not written yet."""
        return self._due is not None

    def save_snapshot(self, give_way: Callable[[], bool] | None = None) -> bool:
        """Write the snapshot a refresh made due (see ``refresh``); whether one was written.

        A refresh that reads much of the log from its start writes the snapshot through this
        before it returns, unless the log was made with ``defer_snapshot``: then whoever waits
        on the fold does not also wait on the write (seconds, at a million lines), and calls
        this when it has time (the room, once the data is on screen, and as it ends); until
        then, later refreshes add to what it will hold. ``give_way`` is asked between blocks:
        it may wait (the room's, while a person presses keys), and true ends the write, which
        stays due. It may run beside a refresh of the same log on another thread (it only
        reads): a refresh under way, or one that begins before the write lands, makes it land
        nowhere, and the snapshot stays due.

        A cache: a failure only costs the next cold start.
        """
        due, folds = self._due, self._folds
        if due is None or folds % 2:
            return False
        parts = [part.whole() if isinstance(part, _Entries) else part for part in due]
        new = parts[0] if len(parts) == 1 else [entry for part in parts for entry in part]

        def keep() -> bool:
            ended = give_way is not None and give_way()
            return not ended and self._folds == folds  # asked after any wait

        with collector_paused():
            outcome = self._save(new, keep)
        if self._folds != folds:
            outcome = None  # a fold ran meanwhile, whatever the write made of it: later
        if outcome is not None and self._due is due:
            self._due = None  # written, or refused for good: not tried again
        return outcome is True

    def _save(self, new: list[RegulatoryEntry], keep: Callable[[], bool]) -> bool | None:
        """Write the fold as a snapshot: whether it was, or ``None`` if ``keep`` (asked as it
        goes) ended it before it landed."""
        reader = self._reader
        if reader.fragment or reader.identity is None or len(new) < 1:
            return False  # a line half written, or no file: nothing a later start could match
        try:
            blocks = _encode(self, new)
            if blocks is None:
                return False
            dev, ino = reader.identity
            header = {
                "format": fold_cache.FORMAT,
                "version": _SNAPSHOT_VERSION,
                "fingerprint": _FINGERPRINT,
                "label": reader.label,
                "log": fold_cache.LogKey(dev, ino, reader.offset, reader.crc).to_json(),
                "nextLine": reader.next_line,
                "line": reader.next_line - 1,
                "lines": self.lines,
                "entries": len(new),
                # Only what the file's lines say: a notice without a line ("the log was
                # replaced", "cannot read") was news to this process, not a fact about the file.
                "readerProblems": [_problem_json(p) for p in reader.problems if p.line],
                "foldProblems": [_problem_json(p) for p in self.fold_problems],
            }
            if not fold_cache.write_snapshot(self.layout, header, blocks, keep):
                return None
        except Exception:  # a cache must never break reading the log: a read-only disk, …
            return False
        return True

    def _restore(
        self,
    ) -> tuple[list[RegulatoryEntry], list[tuple[_Unbuilt, ObligationState]], list[_Later]] | None:
        """The fold from a snapshot that matches the log, or ``None`` (then: read it all)."""
        try:
            file = fold_cache.open_snapshot(self.layout)
            with contextlib.closing(file.blocks()) as snapshot:
                header = next(snapshot)
                if not (
                    isinstance(header, dict)
                    and header.get("format") == fold_cache.FORMAT
                    and header.get("version") == _SNAPSHOT_VERSION
                    and header.get("fingerprint") == _FINGERPRINT
                    and header.get("label") == self._reader.label
                ):
                    return None
                key = fold_cache.LogKey.from_json(header.get("log"))
                numbers = [header.get(k) for k in ("nextLine", "line", "lines", "entries")]
                if not all(type(v) is int and v >= 0 for v in numbers):
                    return None
                next_line, line, lines, count = (cast(int, v) for v in numbers)
                # Each line is at least its newline, each entry a line: a count the log could
                # not hold is refused before anything is made for it.
                if not (count <= line == next_line - 1 <= key.offset and lines <= line):
                    return None
                # The log's prefix is checked on a thread while the blocks are decoded.
                matched = fold_cache.check_log(self.path, key)
                if matched is None:
                    return None
                reader_problems = [_problem_from(p) for p in _list(header.get("readerProblems"))]
                fold_problems = [_problem_from(p) for p in _list(header.get("foldProblems"))]
                fold = _Restored(count, _Source(self.layout, self.path), file)
                # The file's own check runs when the blocks run out.
                for block, offset, size in snapshot:
                    fold.add(block, offset, size)
                new = fold.entries()
                if not matched():
                    return None
        except Exception:  # torn, edited, stale, someone else's, or none: read the log instead
            return None
        self._messages = {}
        self._later_messages = [g for g in fold.later if g.kind == "m"]
        self._message_ids = fold.message_ids
        self.obligations = fold.obligations
        self.interactions = fold.interactions
        self._by_obligation = fold.by_obligation
        self.cited = fold.cited
        self.fold_problems = fold_problems
        self.lines = lines
        self._index_units()
        self._reader.resume(
            identity=(key.dev, key.ino),
            offset=key.offset,
            next_line=next_line,
            crc=key.crc,
            problems=reader_problems,
        )
        return new, fold.unbuilt, fold.later

    # -- questions the folded state answers ------------------------------------------------

    def unrouted(self) -> list[VsmMessage]:
        """Messages no routing event cites yet, in log order (a message's id where it first
        appears, its last message as ``messages`` holds it). After a restore, only the groups
        of messages that hold one are built: routing cites most messages, often all of them.

        Like ``message``, it takes no lock; a look that overlapped a replaced log is made again.
        """
        reading, groups, built_groups = self._reading, self._later_messages, self._built_groups
        if groups is None:
            return [m for mid, m in self.messages.items() if mid not in self.cited]
        wanted = set(self._message_ids) - self.cited
        # Each unrouted id, in the order it first appears (a key assigned again keeps its
        # place), with where its last message is: its group, its place there.
        last: dict[str, tuple[int, int]] = {}
        if wanted:
            for n, group in enumerate(groups):
                for i, mid in enumerate(group.keys):
                    if mid in wanted:
                        last[mid] = (n, i)
        out = [_built_group(groups, built_groups, n)[i] for n, i in last.values()]
        if self._reading is not reading:
            return self.unrouted()  # the log was replaced meanwhile: ask it again
        return out

    def unrouted_count(self) -> int:
        """``len(unrouted())``, without building the messages a restore left to be built
        (nor waiting for a build on another thread: until it ends, the ids say as much)."""
        if self._later_messages is not None:
            return len(set(self._message_ids) - self.cited)
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

    def build_histories(
        self, stop: Callable[[], bool] = lambda: False, *, asked_only: bool = False
    ) -> None:
        """Build the histories a restore left to be built when read (see ``ObligationState``):
        for a long-lived reader, off the screen, before a person's first look needs them.
        ``asked_only``: only those of obligations a question was asked about (what a report
        of the questions reads). ``stop`` is asked between obligations."""
        if asked_only:
            obligations = self.obligations
            states = [
                o
                for i in list(self.interactions.values())
                if (o := obligations.get(i.request.obligation_id)) is not None
            ]
        else:
            states = list(self.obligations.values())
        for state in states:
            if stop():
                return
            if type(state.__dict__["history"]) is not list:
                state.settle()

    @property
    def messages_built(self) -> bool:
        """Whether ``messages`` holds every message (false after a restore, until read)."""
        return self._later_messages is None

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
    """Fold ``event`` into ``state``, whose history the caller has read (so it is built)."""
    kind = type(event)
    if kind is ObligationDelivered:
        state.__dict__["deliveries"].append(_delivery(event))
    elif kind is ObligationAcknowledged:
        state.acknowledged_by.append(event.by)
        if state.status == "open":
            _assign(state, {"status": "acknowledged"})
    elif kind is ObligationResolved:
        _assign(
            state,
            {
                "status": "resolved",
                "closed_at": event.at,
                "closed_by": event.by,
                "rationale": event.rationale,
                "disposition": event.disposition,
            },
        )
    elif kind is ObligationEscalated or kind is ObligationSuperseded:
        _assign(
            state,
            {
                "status": "escalated" if kind is ObligationEscalated else "superseded",
                "closed_at": event.at,
                "closed_by": event.by,
                "rationale": event.rationale,
                "successor": event.successor,
            },
        )


def _assign(state: ObligationState, values: dict[str, Any]) -> None:
    """``setattr`` for each of ``values``, done as pydantic does it for a plain field.

    For a model without ``validate_assignment``, pydantic's ``__setattr__`` stores the value
    in ``__dict__`` and adds the name to the fields set; doing both directly skips its
    per-call dispatch, half a million times on a cold load.
    """
    if _DIRECT_ASSIGN:
        state.__dict__.update(values)
        state.__pydantic_fields_set__.update(values)
    else:
        for name, value in values.items():
            setattr(state, name, value)


_DIRECT_ASSIGN = not ObligationState.model_config.get(
    "validate_assignment"
) and not ObligationState.model_config.get("frozen")


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

# ``tag → codec`` for every line type the fast path can take (the others: pydantic only).
_CODECS = codecs_for(ENTRY_MODELS)
_OPENED_FROM_ROW = _CODECS["obligation-opened"].from_row
_BUILDERS = {tag: codec.build for tag, codec in _CODECS.items()}

_loads = orjson.loads
_new = object.__new__
# How much the reader parses before the fold takes it: 1 byte means one reader chunk (1 MiB),
# so that the parsed-but-unfolded lines held at once stay few.
_SLICE_BYTES = 1
# A refresh that folded this many lines built enough to be worth freezing (see ``refresh``).
_FREEZE_AFTER = 50_000

_OBLIGATION_FIELDS = tuple(Obligation.model_fields)
# What ``ObligationState.from_opened`` passes to ``model_construct``, beside the obligation's.
_STATE_FIELDS_SET = {*_OBLIGATION_FIELDS, "status", "acknowledged_by", "deliveries", "history"}


def _state_tail() -> dict[str, object] | None:
    """The state's own fields in field order, as ``from_opened`` sets them: ``status`` and the
    three lists it passes (replaced by fresh lists for each state), the defaults of the rest.

    ``None`` if a default is not a plain immutable value: then sharing it would be wrong, and
    ``from_opened`` itself is used.
    """
    tail: dict[str, object] = {}
    for name, info in ObligationState.model_fields.items():
        if name in _OBLIGATION_FIELDS:
            continue
        if name == "status":
            tail[name] = "open"
        elif name in _STATE_FIELDS_SET:
            tail[name] = None
        elif info.default_factory is None and type(info.default) in (type(None), str, bool, int):
            tail[name] = info.default
        else:
            return None
    return tail


_STATE_TAIL = _state_tail()
_STATE_LISTS = ("acknowledged_by", "deliveries", "history")


# A restored obligation's state made from its obligation's row at once, as ``_opened_state``
# makes it from the record (the lists fresh, ``history`` and ``deliveries`` set after).
def _state_from_row() -> Callable[[Any], ObligationState | None] | None:
    if _STATE_TAIL is None:
        return None
    try:
        return COMPILER.rows_into(
            Obligation,
            ObligationState,
            {k: [] if k in _STATE_LISTS else v for k, v in _STATE_TAIL.items()},
            frozenset(_STATE_FIELDS_SET),
        )
    except Unsupported:  # the state no longer starts with the obligation's fields
        return None


_STATE_FROM_ROW = _state_from_row()
# Where an opening's row holds its obligation's (a row is its mask, then the fields in order).
_OBLIGATION_IN_OPENED = 1 + list(ObligationOpened.model_fields).index("obligation")
# ``Delivery.from_event`` passes every field. Delivery is frozen: one shared set does for all.
_DELIVERY_SET = set(Delivery.model_fields)


def _opened_state(event: ObligationOpened) -> ObligationState:
    """``ObligationState.from_opened(event)``, built the way ``model_construct`` builds it.

    ``model_construct`` walks every field, alias and default for each of a hundred thousand
    obligations; the result here is the same object (same ``__dict__`` in field order, same
    fields set), written out once.
    """
    if _STATE_TAIL is None:
        return ObligationState.from_opened(event)
    ob = event.obligation.__dict__
    if len(ob) == len(_OBLIGATION_FIELDS):
        values = ob.copy()  # every field, in field order: a validated or fast-built record
    else:
        values = {name: ob[name] for name in _OBLIGATION_FIELDS}
    values.update(_STATE_TAIL)
    values["acknowledged_by"] = []
    values["deliveries"] = []
    values["history"] = [event]
    state: ObligationState = _new(ObligationState)
    set_dict(state, values)
    # Its own set: the fold assigns to the state, and pydantic records each assignment there.
    set_fields_set(state, _STATE_FIELDS_SET.copy())
    set_extra(state, None)
    set_private(state, None)
    return state


def _delivery(event: ObligationDelivered) -> Delivery:
    """``Delivery.from_event(event)`` without validating again what the event's check proved."""
    delivery: Delivery = _new(Delivery)
    d = event.__dict__
    set_dict(
        delivery,
        {"at": d["at"], "channel": d["channel"], "reminder": d["reminder"], "target": d["target"]},
    )
    set_fields_set(delivery, _DELIVERY_SET)
    set_extra(delivery, None)
    set_private(delivery, None)
    return delivery


# --- the snapshot -----------------------------------------------------------------------------

#: Whether instances' logs use fold snapshots at all (benchmarks and tests turn it off).
SNAPSHOTS = True
#: A cold start that had to read at least this many lines of the log writes a snapshot.
SNAPSHOT_AFTER_LINES = 50_000
# Bump when what the fold keeps, or how a snapshot encodes it, changes.
# 3: states whole; 4: events as text; 5: messages built when read; 6: the texts on lines of
# their own, read from the file when built; 7: each text with its own CRC, the lines skipped
_SNAPSHOT_VERSION = 7
# Records per block line: small enough to parse one at a time, large enough to be few.
_BLOCK_ROWS = 2000

_TAG_OF: dict[type, str] = {model: tag for tag, model in ENTRY_MODELS.items()}
_MESSAGE_TYPES: frozenset[type] = frozenset(MESSAGE_MODELS)


class _Corrupt(CorruptState):
    """A snapshot whose blocks do not make a fold."""


#: Records a line ``parse`` refused: its number, its bytes, the error.
_BadLine = Callable[[int, bytes, Exception], None]


class _FoldReader(TailReader[RegulatoryEntry]):
    """The tail reader, handing whole chunks of lines to the fold, plus what a snapshot needs.

    ``take(lines, number, bad)`` parses and folds the lines itself (the entries land where
    the log keeps them, not in the batch); ``on_restart`` resets the fold before the first
    line of a log read again from its start. A CRC-32 of every byte read (chunk by chunk, so
    it costs next to nothing) is what a later start compares against the log; ``resume``
    starts reading where a snapshot ended.
    """

    def __init__(
        self,
        path: Path,
        parse: Callable[[bytes], RegulatoryEntry],
        *,
        label: str,
        take: Callable[[list[bytes], int, _BadLine], int],
        on_restart: Callable[[], None],
    ) -> None:
        super().__init__(path, parse, label=label)
        self.crc = 0
        self._take = take
        self._on_restart = on_restart
        self._batch: TailBatch[RegulatoryEntry] | None = None

    @property
    def identity(self) -> tuple[int, int] | None:
        return self._identity

    def _consume(self, chunk: bytes, batch: TailBatch[RegulatoryEntry]) -> None:
        self.crc = zlib.crc32(chunk, self.crc)
        super()._consume(chunk, batch)

    def _parse_lines(self, lines: list[bytes], batch: TailBatch[RegulatoryEntry]) -> None:
        self._batch = batch
        try:
            self._next_line = self._take(lines, self._next_line, self._bad)
        finally:
            self._batch = None

    def _bad(self, number: int, line: bytes, error: Exception) -> None:
        # What ``TailReader`` does with a line its ``parse`` refused.
        problem = Problem(self.label, number, describe_line_error(line, error))
        self.problems.append(problem)
        if self._batch is not None:
            self._batch.problems.append(problem)

    def _restart(self, batch: TailBatch[RegulatoryEntry], message: str) -> None:
        super()._restart(batch, message)
        self.crc = 0
        self._on_restart()

    def resume(
        self,
        *,
        identity: tuple[int, int],
        offset: int,
        next_line: int,
        crc: int,
        problems: list[Problem],
    ) -> None:
        """Carry on as if the first ``offset`` bytes (``next_line - 1`` lines) had been read."""
        self._identity = identity
        self._read_to = offset
        self._fragment = []
        self._fragment_len = 0
        self._next_line = next_line
        self.problems = list(problems)
        self.crc = crc


def _problem_json(problem: Problem) -> list[object]:
    return [problem.file, problem.line, problem.message]


def _problem_from(value: object) -> Problem:
    if not (isinstance(value, list) and len(value) == 3):
        raise _Corrupt("bad problem")
    file, line, message = value
    if type(file) is not str or type(message) is not str:
        raise _Corrupt("bad problem")
    if line is not None and (type(line) is not int or line < 1):
        raise _Corrupt("bad problem")
    return Problem(file, line, message)


def _list(value: object) -> list[object]:
    if not isinstance(value, list):
        raise _Corrupt("expected a list")
    return value


def _encode(
    log: RegulatoryLog, new: list[RegulatoryEntry]
) -> Iterator[tuple[list[Any], bytes]] | None:
    """The blocks of a snapshot of ``log``, whose entries since the log's start are ``new``.

    Obligation by obligation — the opening, then its events — because restoring them together
    touches each obligation's state once, instead of once per event scattered over the whole
    log; then every other entry in log order. Each entry carries its ordinal in ``new``, so
    the first refresh after a restore still returns every entry in log order. ``None`` if an
    entry has no compiled codec, or the fold does not account for every entry it holds.
    """
    obligations = log.obligations
    ordinals: dict[str, list[int]] = {}  # obligation id → ordinals of its history's entries
    rest = bytearray(len(new))  # 1: an entry of the second part; 2: an answer the fold placed
    asked: set[str] = set()
    for index, entry in enumerate(new):
        # What the fold decided for each entry, decided again the same way: an event lands in
        # its obligation's history iff the obligation was opened earlier in the log, an answer
        # on its question iff the question was asked earlier. (Checked against the histories
        # below, so a fold that ever decides otherwise means no snapshot, not a wrong one.)
        kind = type(entry)
        if kind in _OBLIGATION_EVENTS:
            found = ordinals.get(entry.obligation_id)  # type: ignore[union-attr]
            if found is not None:
                found.append(index)
            else:
                rest[index] = 1
        elif kind is ObligationOpened:
            oid = entry.obligation.id  # type: ignore[union-attr]
            if oid in ordinals:
                rest[index] = 1  # opened a second time
            else:
                ordinals[oid] = [index]
        elif kind not in _TO_ROW:
            return None  # a record with no compiled codec: pydantic's alone
        elif kind is InteractionRequested:
            asked.add(entry.request.id)  # type: ignore[union-attr]
            rest[index] = 1
        elif kind is InteractionAnswered:
            rest[index] = 2 if entry.request_id in asked else 1  # type: ignore[union-attr]
        else:
            rest[index] = 1
    if len(ordinals) != len(obligations) or any(
        len(ordinals.get(oid, ())) != len(state.history) for oid, state in obligations.items()
    ):
        return None

    def blocks() -> Iterator[tuple[list[Any], bytes]]:
        opened_row = _CODECS["obligation-opened"].to_row
        rows: list[Any] = []
        texts: list[bytes] = []  # the block's texts line, in pieces
        at = 0  # where the next text starts in it
        size = 0
        for oid, state in obligations.items():
            history = state.history
            pairs = zip(ordinals[oid], history, strict=True)
            first, opened = next(pairs)  # a history starts with its opening
            if new[first] is not opened:
                raise _Corrupt("the fold's history is not the log's")
            events: list[Any] = []
            places: list[int] = []
            for ordinal, event in pairs:
                if new[ordinal] is not event:
                    raise _Corrupt("the fold's history is not the log's")
                tag, to_row = _IN_GROUP[type(event)]
                events.append([tag, to_row(event)])
                places.append(ordinal)
            # The events as one JSON text on the block's texts line, named by where it lies
            # there: a restore decodes none of it, and a history is built from its text (read
            # from the file) only if it is read.
            text = orjson.dumps(events) if events else b""
            texts.append(text)
            tail = _tail_row(state)
            rows.append([first, opened_row(opened), tail, places, at, len(text), zlib.crc32(text)])
            at += len(text)
            size += len(history)
            if size >= _BLOCK_ROWS:
                yield ["o", rows, at], b"".join(texts)
                rows, texts, at, size = [], [], 0, 0
        if rows:
            yield ["o", rows, at], b"".join(texts)
        # Messages and message-noted lines, which a restore needs only the ids of (the
        # messages' own, and the ones noted), as later groups: their places, those ids, and
        # their rows as one JSON text (the block's texts line), built when first read.
        later: dict[str, tuple[list[int], list[str], list[Any]]] = {
            "m": ([], [], []),
            "n": ([], [], []),
        }

        def group(kind: str) -> tuple[list[Any], bytes]:
            places, keys, grouped = later[kind]
            later[kind] = ([], [], [])
            text = orjson.dumps(grouped)
            return [kind, [places, keys, zlib.crc32(text)], len(text)], text

        rows = []
        for index, flag in enumerate(rest):
            if flag:
                entry = new[index]
                kind = type(entry)
                tag, to_row = _TO_ROW[kind]
                if kind in _MESSAGE_TYPES or kind is MessageNoted:
                    name = "m" if kind in _MESSAGE_TYPES else "n"
                    places, keys, grouped = later[name]
                    places.append(index)
                    keys.append(entry.id if name == "m" else entry.message)  # type: ignore[union-attr]
                    grouped.append([tag, to_row(entry)])
                    if len(places) >= _BLOCK_ROWS:
                        yield group(name)
                    continue
                rows.append([index, tag, to_row(entry), flag == 2])
                if len(rows) >= _BLOCK_ROWS:
                    yield ["e", rows, 0], b""
                    rows = []
        if rows:
            yield ["e", rows, 0], b""
        for name in ("m", "n"):
            if later[name][0]:
                yield group(name)

    return blocks()


# What the fold adds to an obligation's own fields, besides its history and deliveries: a
# snapshot carries them as they are, so that a restore needs no event to know them.
_TAIL_FIELDS = tuple(
    name
    for name in ObligationState.model_fields
    if name not in _OBLIGATION_FIELDS and name not in ("history", "deliveries")
)
_TAIL_SET = frozenset(_TAIL_FIELDS)
# The fields, in the order, ``_set_tail`` knows how to check; with others no snapshot is read.
_TAIL_CHECKED = _TAIL_FIELDS == (
    "status",
    "acknowledged_by",
    "disposition",
    "rationale",
    "successor",
    "closed_at",
    "closed_by",
)
_STATUSES = frozenset(get_args(ObligationStatus))
_DISPOSITIONS = frozenset(get_args(Disposition))
# The tail of an obligation nothing has happened to yet (most of them, in a busy instance):
# what ``_opened_state`` already made.
_UNTOUCHED_TAIL: list[Any] = ["open", [], None, None, None, None, None, []]


def _tail_row(state: ObligationState) -> list[Any]:
    d = state.__dict__
    assigned = state.__pydantic_fields_set__ - _STATE_FIELDS_SET
    return [*(d[name] for name in _TAIL_FIELDS), sorted(assigned)]


def _set_tail(state: ObligationState, row: Any) -> None:
    """The folded fields of ``_tail_row``, checked as the fold would have made them."""
    if row == _UNTOUCHED_TAIL and _TAIL_CHECKED:  # lists of str and None: compared in C
        return
    if not _TAIL_CHECKED or type(row) is not list or len(row) != 8:
        raise _Corrupt("bad state")
    status, acknowledged, disposition, rationale, successor, closed_at, closed_by, assigned = row
    if (
        status not in _STATUSES
        or type(acknowledged) is not list
        or (disposition is not None and disposition not in _DISPOSITIONS)
        or (rationale is not None and type(rationale) is not str)
        or (successor is not None and type(successor) is not str)
        or (closed_at is not None and type(closed_at) is not str)
        or (closed_by is not None and type(closed_by) is not str)
        or type(assigned) is not list
        or not _TAIL_SET.issuperset(assigned)
    ):
        raise _Corrupt("bad state")
    for by in acknowledged:
        if type(by) is not str or not by:
            raise _Corrupt("bad state")
    d = state.__dict__
    d["status"] = status
    d["acknowledged_by"] = acknowledged
    d["disposition"] = disposition
    d["rationale"] = rationale
    d["successor"] = successor
    d["closed_at"] = closed_at
    d["closed_by"] = closed_by
    if assigned:
        state.__pydantic_fields_set__.update(assigned)


# For each record type with a codec: its tag and its encoder.
_TO_ROW = {
    model: (tag, _CODECS[tag].to_row) for tag, model in ENTRY_MODELS.items() if tag in _CODECS
}
# An obligation's events in its group of a snapshot: rows without the two fields the group
# already says, their tag and their obligation (``type`` and ``obligation_id``).
_GROUP_ROWS = {
    model: COMPILER.given_rows(model, ("type", "obligation_id")) for model in _OBLIGATION_EVENTS
}
_IN_GROUP = {model: (_TAG_OF[model], rows.to_row) for model, rows in _GROUP_ROWS.items()}
_EVENT_FROM_ROW = {_TAG_OF[model]: rows.from_row for model, rows in _GROUP_ROWS.items()}


def _fold_fingerprint() -> str:
    # The records' compiled code (the group rows' too), and the fields of what the fold builds
    # from them itself: a snapshot from code that differs in any of it is not read.
    extra = repr((tuple(ObligationState.model_fields), tuple(Delivery.model_fields)))
    extra += "".join(
        _GROUP_ROWS[model].source for model in sorted(_GROUP_ROWS, key=_TAG_OF.__getitem__)
    )
    return fingerprint(_CODECS) + ":" + hashlib.sha256(extra.encode()).hexdigest()


_FINGERPRINT = _fold_fingerprint()


class _Restored:
    """A fold rebuilt from a snapshot's blocks, checked as it goes (``_Corrupt`` if not whole).

    Each entry lands in its slot of ``new`` by its ordinal, unchecked per entry: ``entries``
    counts the placements and then looks for an empty slot. With exactly ``count`` placements,
    a slot given twice (or an entry that failed to build, placed as ``None``) leaves one empty.

    An obligation's state is whole at once (its folded fields are in its group); its events
    are kept as rows, its history and deliveries built from them when first read
    (``_Unbuilt``), their slots of ``new`` held by ``_UNBUILT`` meanwhile.
    """

    def __init__(self, count: int, source: _Source, file: fold_cache.SnapshotFile) -> None:
        self.new: list[Any] = [None] * count
        # Entries placed so far, counted per group and block, not per entry.
        self.filled = 0
        self.obligations: dict[str, ObligationState] = {}
        self.interactions: dict[str, InteractionState] = {}
        self.by_obligation: dict[str, str] = {}
        self.cited: set[str] = set()
        self.unbuilt: list[tuple[_Unbuilt, ObligationState]] = []
        self._claimed: list[int] = []  # the slots of every obligation's events
        self.later: list[_Later] = []  # messages ("m") and message-noted lines ("n")
        self.message_ids: list[str] = []
        self._source = source
        self._file = file

    def add(self, block: object, offset: int, size: int) -> None:
        """A block, whose texts are ``size`` bytes at ``offset`` of the snapshot's file."""
        if not (isinstance(block, list) and len(block) == 3 and isinstance(block[1], list)):
            raise _Corrupt("bad block")
        kind, items, _ = block
        if kind == "o":
            self._obligations(items, offset, size)
        elif kind == "e":
            entry = self._entry
            for item in items:
                entry(item)
            self.filled += len(items)
        elif kind == "m" or kind == "n":
            places, keys, crc = items
            if not (
                type(places) is list
                and type(keys) is list
                and type(crc) is int
                and len(places) == len(keys)
                and set(map(type, keys)) <= {str}
            ):
                raise _Corrupt("bad block")
            # The slots claimed now (see ``entries``); the rows checked when built.
            deque(map(self.new.__setitem__, places, repeat(_UNBUILT)), maxlen=0)
            if kind == "m":
                self.message_ids.extend(keys)
            else:
                self.cited.update(keys)
            text = _Text(self._file, offset, size, crc)
            self.later.append(_Later(kind, places, keys, text, self._source))
            self.filled += len(places)
        else:
            raise _Corrupt("bad block")

    def _obligations(self, items: list[Any], offset: int, size: int) -> None:
        """A block of obligations: each one's state, whole but for its history and deliveries.

        One loop for the block, its names local (this runs for every obligation of a large
        log, and is most of a restore). The slots of the events are claimed all at once, in
        ``entries``, so that a slot given twice is still found before anything is used.
        """
        from_row = _OPENED_FROM_ROW
        state_from_row = _STATE_FROM_ROW
        at_obligation = _OBLIGATION_IN_OPENED
        obligations = self.obligations
        cited = self.cited
        new = self.new
        claim = self._claimed.extend
        claim_one = self._claimed.append
        keep = self.unbuilt.append
        source = self._source
        file = self._file
        untouched = _UNTOUCHED_TAIL
        filled = 0
        for ordinal, row, tail, places, at, length, crc in items:
            if places and state_from_row is not None:
                # Something happened to it: the state is made from the obligation's row at
                # once, and the opening's record only with the rest of its history.
                state = state_from_row(row[at_obligation])
                if state is None:
                    raise _Corrupt("bad obligation")
                opened = None
                claim_one(ordinal)
            else:
                opened = from_row(row)
                if type(opened) is not ObligationOpened:
                    raise _Corrupt("bad obligation")
                state = _opened_state(opened)
                new[ordinal] = opened
            if tail != untouched:  # most are: nothing to set (compared in C)
                _set_tail(state, tail)
            oid = state.id
            if oid in obligations:
                raise _Corrupt("bad obligation")
            obligations[oid] = state
            sources = state.sources
            if sources:
                cited.update(sources)
            if places:
                # Where its events' text lies: checked to lie in the block's texts line (what
                # the text holds is checked when the history is built).
                if (
                    type(places) is not list
                    or type(at) is not int
                    or type(length) is not int
                    or type(crc) is not int
                    or not 0 <= at < at + length <= size
                ):
                    raise _Corrupt("bad obligation")
                claim(places)
                text = _Text(file, offset + at, length, crc)
                unbuilt = _Unbuilt(ordinal, opened or row, oid, places, text, source)
                d = state.__dict__
                d["history"] = d["deliveries"] = unbuilt
                keep((unbuilt, state))
                filled += 1 + len(places)
            elif length != 0:
                raise _Corrupt("bad obligation")
            else:
                filled += 1
        self.filled += filled

    def _entry(self, item: Any) -> None:
        ordinal, tag, row, placed = item
        entry = _CODECS[tag].from_row(row)
        if entry is None or type(placed) is not bool:
            raise _Corrupt("bad entry")
        kind = type(entry)
        if kind in _MESSAGE_TYPES or kind is MessageNoted:
            raise _Corrupt("a message outside its group")
        elif kind is InteractionRequested:
            request = entry.request
            self.interactions[request.id] = InteractionState(request)
            self.by_obligation[request.obligation_id] = request.id
        elif kind is InteractionAnswered and placed:
            interaction = self.interactions.get(entry.request_id)
            if interaction is None:
                raise _Corrupt("an answer placed on no question")
            interaction.answers.append(
                Answer(entry.at, entry.by, entry.outcome, entry.channel, entry.answer)
            )
        # Otherwise an event the fold could not place: an entry, and a problem already kept.
        self.new[ordinal] = entry

    def entries(self) -> list[RegulatoryEntry]:
        # Every event's slot claimed now (a loop in C: an ordinal not a number, or out of
        # range, raises); a slot given twice leaves another empty, which the check finds.
        new = self.new
        deque(map(new.__setitem__, self._claimed, repeat(_UNBUILT)), maxlen=0)
        self._claimed = []
        # By type, not ``None in``: that would call each record's ``__eq__``.
        if self.filled != len(self.new) or type(None) in set(map(type, self.new)):
            raise _Corrupt("entries missing, or an ordinal given twice")
        return self.new


class _UnbuiltSlot:
    """Holds the slot of an event whose history is not built yet (one shared object)."""

    __slots__ = ()


_UNBUILT = _UnbuiltSlot()


class _Source:
    """Where an obligation's history comes from when its snapshot rows do not build: the log
    itself, read once without the snapshot, its entries kept for every obligation in need."""

    def __init__(self, layout: Layout, path: Path) -> None:
        self.layout = layout
        self.path = path
        self._entries: Sequence[RegulatoryEntry] | None = None
        self._lock = threading.Lock()

    def entries(self) -> Sequence[RegulatoryEntry]:
        with self._lock:
            if self._entries is None:
                # A snapshot that held a row that does not build is not one to start from
                # again: the next cold start reads the log and writes a new one.
                with contextlib.suppress(OSError):
                    fold_cache.snapshot_path(self.layout).unlink()
                log = RegulatoryLog(self.layout, path=self.path, snapshots=False)
                self._entries = log.refresh()
            return self._entries

    def at(self, places: list[int], fits: Callable[[Any, int], bool], what: str) -> list[Any]:
        """The log's entries at ``places`` (the snapshot's ordinals), each of which must
        ``fits(entry, i)``; a ``CorruptState`` naming ``what`` if the log no longer holds
        them there."""
        entries = self.entries()
        out: list[Any] = []
        for i, place in enumerate(places):
            found = type(place) is int and 0 <= place < len(entries)
            entry = entries[place] if found else None
            if entry is None or not fits(entry, i):
                raise CorruptState(
                    f"{self.layout.label(self.path)}: {what} does not build from the fold "
                    "snapshot, and the log no longer holds it where the snapshot said"
                )
            out.append(entry)
        return out


def _built_group(groups: list[_Later], built: dict[int, list[Any]], n: int) -> list[Any]:
    """Group ``n`` of a restored log's messages, built once and kept in ``built``."""
    found = built.get(n)
    if found is None:
        found = built[n] = groups[n].built()
    return found


def _last_index(values: list[str], value: str) -> int:
    i = values.index(value)
    with contextlib.suppress(ValueError):
        while True:
            i = values.index(value, i + 1)
    return i


class _Text:
    """A JSON text of the snapshot's, read from its file, and checked against its CRC-32,
    when first needed (a restore reads none of them: they are most of the file)."""

    __slots__ = ("crc", "file", "offset", "size")

    def __init__(self, file: fold_cache.SnapshotFile, offset: int, size: int, crc: int) -> None:
        self.file = file
        self.offset = offset
        self.size = size
        self.crc = crc

    def read(self) -> bytes:
        return self.file.read(self.offset, self.size, self.crc)


class _Later:
    """A group of messages ("m") or message-noted lines ("n") a restore did not build: their
    places among the first refresh's entries, their keys (a message's id, the id a line
    notes), and their rows as one JSON text, in the snapshot's file."""

    __slots__ = ("keys", "kind", "places", "source", "text")

    def __init__(
        self, kind: str, places: list[int], keys: list[str], text: _Text, source: _Source
    ) -> None:
        self.kind = kind
        self.places = places
        self.keys = keys
        self.text = text
        self.source = source

    def _fits(self, entry: Any, i: int) -> bool:
        if self.kind == "m":
            return type(entry) in _MESSAGE_TYPES and bool(entry.id == self.keys[i])
        return type(entry) is MessageNoted and bool(entry.message == self.keys[i])

    def built(self) -> list[Any]:
        """The entries, from the rows; from the log if one does not build or fit its key."""
        out: list[Any] = []
        fits = self._fits
        try:
            rows = orjson.loads(self.text.read())
            if type(rows) is list and len(rows) == len(self.places):
                for i, (tag, row) in enumerate(rows):
                    entry = _CODECS[tag].from_row(row)
                    if entry is None or not fits(entry, i):
                        break
                    out.append(entry)
        except Exception:  # not JSON, a tag or a row of the wrong shape, the file cut short
            pass
        if len(out) != len(self.places):
            what = "a message" if self.kind == "m" else "a message-noted line"
            out = self.source.at(self.places, fits, what)
        return out


class _Unbuilt(Unbuilt):
    """One obligation's history and deliveries as its snapshot rows, built when first read:
    the opening (its record, or its row when the restore made the state without it), and
    the events' text."""

    __slots__ = ("events", "first", "oid", "opened", "places", "source")

    def __init__(
        self,
        first: int,
        opened: ObligationOpened | list[Any],
        oid: str,
        places: list[int],
        events: _Text,
        source: _Source,
    ) -> None:
        self.first = first  # the opening's ordinal among the first refresh's entries
        self.opened = opened
        self.oid = oid
        self.places = places  # each event's ordinal among the first refresh's entries
        self.events = events  # the events' rows, as JSON: ``[[tag, row], …]``
        self.source = source

    def build(self) -> tuple[list[Any], list[Delivery]]:
        oid = self.oid
        from_rows = _EVENT_FROM_ROW
        history: list[Any] | None = None
        try:
            opened = self.opened
            if type(opened) is not ObligationOpened:
                opened = _OPENED_FROM_ROW(opened)
            if type(opened) is ObligationOpened and opened.obligation.id == oid:
                rows = orjson.loads(self.events.read())
                if len(rows) == len(self.places):
                    history = [opened]
                    append = history.append
                    for tag, row in rows:
                        event = from_rows[tag](row, tag, oid)
                        if event is None:
                            history = None
                            break
                        append(event)
        except Exception:  # not JSON, a tag or a row of the wrong shape, the file cut
            history = None  # short: as a row that does not build
        if history is None:
            history = self._from_log()
        deliveries = [_delivery(e) for e in history if type(e) is ObligationDelivered]
        return history, deliveries

    def _from_log(self) -> list[Any]:
        """The history as the log holds it, at the ordinals the snapshot gave its entries."""
        oid = self.oid

        def fits(entry: Any, i: int) -> bool:
            if i == 0:
                return type(entry) is ObligationOpened and bool(entry.obligation.id == oid)
            return type(entry) in _OBLIGATION_EVENTS and bool(entry.obligation_id == oid)

        return self.source.at([self.first, *self.places], fits, f"obligation {oid}'s history")

    def place(self, new: list[Any], history: list[Any]) -> None:
        """Put the built history in its slots of ``new`` (the first refresh's entries)."""
        new[self.first] = history[0]
        for ordinal, event in zip(self.places, history[1:]):  # noqa: B905
            new[ordinal] = event


class _Entries(Sequence[RegulatoryEntry]):
    """The first refresh's entries after a restore: what was not built yet is built (every
    unbuilt history) when an entry is first read; the length needs none of it."""

    def __init__(
        self,
        new: list[RegulatoryEntry],
        unbuilt: list[tuple[_Unbuilt, ObligationState]],
        later: list[_Later],
    ) -> None:
        self._new = new
        self._unbuilt: list[tuple[_Unbuilt, ObligationState]] | None = unbuilt
        self._later = later

    def whole(self) -> list[RegulatoryEntry]:
        """Every entry, what was not built yet built now."""
        pairs = self._unbuilt
        if pairs is not None:
            new = self._new
            for unbuilt, state in pairs:
                unbuilt.place(new, state.history)
            # Entries of their own (the log's messages are built apart, when first read).
            for group in self._later:
                for place, entry in zip(group.places, group.built()):  # noqa: B905
                    new[place] = entry
            self._unbuilt = None
        return self._new

    def __len__(self) -> int:
        return len(self._new)

    def __getitem__(self, index: Any) -> Any:
        return self.whole()[index]

    def __iter__(self) -> Iterator[RegulatoryEntry]:
        return iter(self.whole())
