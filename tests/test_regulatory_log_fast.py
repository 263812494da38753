"""The fast fold of the regulatory log folds exactly what the plain one does, snapshot or not.

The reference here is the fold as it was before it was made fast: every line through pydantic
(``parse_signal_line``), dispatched with ``match``, obligations built by ``from_opened``. The
fast one must agree with it on every obligation, message, interaction and problem, and on the
entries a refresh returns — on a log written by the real write path with bad lines, events for
unknown obligations and the original's line shapes mixed in. A snapshot that is stale,
tampered with or not this user's must be ignored, never half-used.
"""

from __future__ import annotations

import gc
import json
import os
import re
import threading
import time
import zlib
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from regulator.policy import load_definition
from regulator.protocol.entry import ENTRY_MODELS, parse_signal_line, validate_entry
from regulator.protocol.fast_records import COMPILER, codecs_for
from regulator.protocol.interaction import InteractionAnswered, InteractionRequested
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
from regulator.protocol.vocab import MESSAGE_KINDS
from regulator.rules import regulatory_log as rl
from regulator.rules.asking import ask_in
from regulator.rules.ledger import Ledger
from regulator.rules.regulatory_log import Answer, InteractionState, RegulatoryLog
from regulator.rules.router import route_messages
from regulator.store import RESTART_MESSAGE, Layout, Problem, TailReader, fold_cache

from .factory import message
from .test_protocol_roundtrip import EVENTS, INTERACTIONS, MESSAGES

DEFINITION = load_definition(None)
START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


# --- the reference: the fold before it was made fast ------------------------------------------


class ReferenceFold:
    """Every line validated by pydantic; the fold's rules as they were, with ``match``."""

    def __init__(self, layout: Layout) -> None:
        self.label = layout.label(layout.signals)
        self.line = 0
        self.reader: TailReader[tuple[int, Any]] = TailReader(
            layout.signals, self._parse, label=self.label
        )
        self.messages: dict[str, Any] = {}
        self.obligations: dict[str, ObligationState] = {}
        self.interactions: dict[str, InteractionState] = {}
        self.by_obligation: dict[str, str] = {}
        self.cited: set[str] = set()
        self.fold_problems: list[Problem] = []
        self.lines = 0

    def _parse(self, raw: bytes) -> tuple[int, Any]:
        self.line += 1
        return self.line, parse_signal_line(raw)

    def refresh(self) -> list[Any]:
        new = []
        for line, entry in self.reader.refresh().items:
            self._fold(line, entry)
            new.append(entry)
        return new

    @property
    def problems(self) -> list[Problem]:
        return sorted([*self.reader.problems, *self.fold_problems], key=lambda p: p.line or 0)

    def _problem(self, line: int, text: str) -> None:
        self.fold_problems.append(Problem(self.label, line, text))

    def _fold(self, line: int, entry: Any) -> None:
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
                self._apply(state, entry)
            case InteractionRequested():
                request = entry.request
                self.interactions[request.id] = InteractionState(request)
                self.by_obligation[request.obligation_id] = request.id
            case InteractionAnswered():
                interaction = self.interactions.get(entry.request_id)
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

    @staticmethod
    def _apply(state: ObligationState, event: Any) -> None:
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
                escalated = isinstance(event, ObligationEscalated)
                state.status = "escalated" if escalated else "superseded"
                state.closed_at, state.closed_by = event.at, event.by
                state.rationale, state.successor = event.rationale, event.successor


# --- comparing two folds ----------------------------------------------------------------------


def record_state(record: Any) -> Any:
    """Everything of a record that could tell two builds apart, nested records included."""
    if isinstance(record, BaseModel):
        if isinstance(record, ObligationState):
            record.settle()  # what a reader of its history sees (a restore builds it then)
        return (
            type(record).__name__,
            [(k, record_state(v)) for k, v in record.__dict__.items()],
            sorted(record.__pydantic_fields_set__),
            record.__pydantic_extra__,
            record.__pydantic_private__,
        )
    if isinstance(record, list):
        return [record_state(v) for v in record]
    return (type(record).__name__, record)


def fold_state(log: RegulatoryLog | ReferenceFold) -> dict[str, Any]:
    by_obligation = log._by_obligation if isinstance(log, RegulatoryLog) else log.by_obligation
    return {
        "obligations": [(oid, record_state(s)) for oid, s in log.obligations.items()],
        "messages": [(mid, record_state(m)) for mid, m in log.messages.items()],
        "interactions": [
            (rid, record_state(i.request), list(i.answers)) for rid, i in log.interactions.items()
        ],
        "by_obligation": dict(by_obligation),
        "cited": sorted(log.cited),
        "problems": [str(p) for p in log.problems],
        "lines": log.lines,
    }


def assert_same_fold(fast: RegulatoryLog, reference: ReferenceFold) -> None:
    mine, theirs = fold_state(fast), fold_state(reference)
    for key in theirs:
        assert mine[key] == theirs[key], key
    assert fast.unrouted() == reference_unrouted(reference)
    assert_per_unit_lists_are_the_scans(fast)


def assert_folds_as_the_reference(layout: Layout, log: RegulatoryLog, entries: Any) -> None:
    """``log`` holds what the pydantic fold of ``layout``'s log holds, and ``entries`` are
    its entries."""
    reference, reference_entries = read_reference(layout)
    assert_same_fold(log, reference)
    assert_same_entries(entries, reference_entries)


def reference_unrouted(reference: ReferenceFold) -> list[Any]:
    return [m for mid, m in reference.messages.items() if mid not in reference.cited]


def assert_same_entries(mine: Sequence[Any], theirs: Sequence[Any]) -> None:
    assert len(mine) == len(theirs)
    assert [record_state(e) for e in mine] == [record_state(e) for e in theirs]


# --- a log with everything in it --------------------------------------------------------------


class Tick:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=7)
        return self.now


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    root = tmp_path / "instance"
    (root / ".regulator").mkdir(parents=True)
    return Layout(root)


def raw(layout: Layout, *lines: bytes | str) -> None:
    """Append lines exactly as given (a writer that does not go through the ledger)."""
    with layout.signals.open("ab") as f:
        for line in lines:
            f.write((line.encode() if isinstance(line, str) else line) + b"\n")


def write_busy_log(layout: Layout, rounds: int = 3) -> None:
    """Messages, routing, questions, deliveries, acknowledgements, every way of closing —
    through the ledger and the router — with bad and odd lines in between."""
    clock = Tick()
    ledger = Ledger(layout, clock=clock)
    for n in range(rounds):
        raw(
            layout,
            json.dumps(message("operational-signal", f"tests fail {n}", unit="u1")),
            json.dumps(message("audit-finding", f"no evidence {n}", severity="critical")),
            json.dumps(message("operational-signal", f"fine {n}", severity="info", unit="u2")),
            json.dumps(message("policy-proposal", f"allow INV-001 {n}", requestedChange=None)),
            json.dumps(
                message(
                    "policy-proposal",
                    f"nested change {n}",
                    requestedChange={"a": [1, 2.5, "x", None, True], "b": {"c": -3}},
                )
            ),
            json.dumps(
                message(
                    "intelligence-signal",
                    f"advisory {n}",
                    affectedUnits=["u1", "u2"],
                    confidence="high",
                    expiresAt="2099-01-01T00:00:00.000Z",
                )
            ),
            json.dumps(message("uncertainty-signal", f"rounding {n}", unit="u3")),
            json.dumps(message("coordination-signal", f"collision {n}", resource="calc.py")),
            json.dumps(message("algedonic-signal", f"budget gone {n}", unit="u1")),
            json.dumps(message("constraint", f"never push {n}", rationale=None)),
        )
        routed = route_messages(ledger, DEFINITION.routing)
        opened = [o.id for o in routed.opened]
        with ledger.transaction() as txn:
            asks = [
                ask_in(
                    txn,
                    DEFINITION.interaction,
                    kind="choice",
                    subject=f"store {n}",
                    question="Which store?",
                    options=["sqlite", "json"],
                    unit="u1",
                    attempt=1,
                    evidence=[{"class": "file", "ref": "README.md", "observation": ""}],
                ),
                ask_in(
                    txn,
                    DEFINITION.interaction,
                    kind="recap",
                    subject=f"wording {n}",
                    question="Fine?",
                ),
            ]
        with ledger.transaction() as txn:
            for oid in opened:
                txn.deliver(oid, "S3", "outbox")
                txn.deliver(oid, "S3", "tui", reminder=True, target="alice")
                txn.acknowledge(oid, "S3")
                txn.acknowledge(oid, "alice", note="looking")
        with ledger.transaction() as txn:
            txn.resolve(opened[0], "alice", "fixed", "done")
            txn.escalate(opened[1], "S3", "a person decides", to="human")
            txn.supersede(opened[2], "S3", opened[3], "covered")
            request = asks[0].request
            txn.answer_interaction(request.id, outcome="timed-out", by="S1", channel="none")
            txn.answer_interaction(
                request.id, outcome="answered", by="alice", channel="cli", answer="sqlite"
            )
            txn.resolve(asks[0].obligation.id, "alice", "fixed", "sqlite")
        ghost = "00000000-0000-4000-8000-000000000000"
        opened_line = ObligationOpened.model_validate(
            {
                "id": f"dup-{n}",
                "at": "2026-12-01T10:00:00.000Z",
                "by": "S3",
                "obligation": ledger.refresh()
                .obligations[opened[0]]
                .as_obligation()
                .to_json_dict(),
            }
        ).to_json_dict()
        raw(
            layout,
            # Bad lines of every kind: each one a problem, the lines around it still read.
            '{"type":"obligation-acknowledged","id":"x"',
            "not json at all",
            "",
            "[1, 2, 3]",
            "42",
            '{"type":"obligation-teleported","id":"x"}',
            '{"kind":"gossip","id":"x"}',
            json.dumps({"type": "obligation-delivered", "id": "d", "at": "t", "by": "S3"}),
            json.dumps(
                {
                    "type": "obligation-delivered",
                    "id": "d",
                    "at": "t",
                    "by": "S3",
                    "obligationId": opened[4],
                    "channel": "pigeon",
                    "reminder": False,
                }
            ),
            json.dumps(
                {
                    "type": "obligation-delivered",
                    "id": "d",
                    "at": "t",
                    "by": "S3",
                    "obligationId": opened[4],
                    "channel": "outbox",
                    "reminder": "yes",
                }
            ),
            json.dumps(
                {
                    "type": "obligation-acknowledged",
                    "id": "",
                    "at": "t",
                    "by": "S3",
                    "obligationId": opened[4],
                }
            ),
            json.dumps(
                {
                    "type": "obligation-acknowledged",
                    "id": "a",
                    "at": "t",
                    "by": ["S3"],
                    "obligationId": opened[4],
                }
            ),
            json.dumps(
                {
                    "type": "obligation-resolved",
                    "id": "r",
                    "at": "t",
                    "by": "S3",
                    "obligationId": opened[4],
                    "disposition": {"not": "a word"},
                    "rationale": "x",
                }
            ),
            json.dumps({**opened_line, "extra": 1}),
            b'{"kind":"constraint","id":"\xff\xfe"}',
            b'{"type":"message-noted","id":"n","at":"t","by":"S3","message":"m\x00","reason":"r"}',
            # Lines pydantic accepts in shapes the fast path leaves to it: snake_case keys,
            # keys out of order, an explicit null for an optional field.
            json.dumps(
                {
                    "type": "obligation-acknowledged",
                    "id": f"snake-{n}",
                    "at": "t",
                    "by": "bob",
                    "obligation_id": opened[4],
                }
            ),
            json.dumps(
                {
                    "obligationId": opened[4],
                    "reminder": False,
                    "channel": "cli",
                    "by": "S3",
                    "at": "t",
                    "id": f"reordered-{n}",
                    "type": "obligation-delivered",
                }
            ),
            json.dumps(
                {
                    "type": "obligation-acknowledged",
                    "id": f"null-note-{n}",
                    "at": "t",
                    "by": "S3",
                    "obligationId": opened[4],
                    "note": None,
                }
            ),
            # Events the fold cannot place: unknown obligation, unknown request, a second
            # opening of the same obligation.
            json.dumps(
                {
                    "type": "obligation-resolved",
                    "id": f"ghost-{n}",
                    "at": "t",
                    "by": "S3",
                    "obligationId": ghost,
                    "disposition": "fixed",
                    "rationale": "x",
                }
            ),
            json.dumps(
                {
                    "type": "interaction-answered",
                    "id": f"ghost-answer-{n}",
                    "at": "t",
                    "by": "alice",
                    "requestId": ghost,
                    "outcome": "answered",
                    "answer": "yes",
                    "channel": "cli",
                }
            ),
            json.dumps(opened_line),
        )


def read_fast(layout: Layout) -> tuple[RegulatoryLog, Sequence[Any]]:
    log = RegulatoryLog(layout)
    return log, log.refresh()


def read_reference(layout: Layout) -> tuple[ReferenceFold, list[Any]]:
    log = ReferenceFold(layout)
    return log, log.refresh()


@pytest.fixture(autouse=True)
def _snapshots_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    # Snapshots are written only after reading many lines; tests that want one lower that.
    monkeypatch.setattr(rl, "SNAPSHOT_AFTER_LINES", 10**9)


def snapshot_after_every_cold_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rl, "SNAPSHOT_AFTER_LINES", 1)


# --- the fast path ----------------------------------------------------------------------------


def test_the_fast_fold_holds_exactly_what_the_pydantic_fold_holds(layout: Layout) -> None:
    write_busy_log(layout)
    fast, fast_entries = read_fast(layout)
    assert_folds_as_the_reference(layout, fast, fast_entries)
    assert len(fast.problems) > 20 and fast.obligations and fast.interactions


def test_a_bad_line_is_reported_with_the_message_pydantic_gives_it(layout: Layout) -> None:
    write_busy_log(layout, rounds=1)
    fast, _ = read_fast(layout)
    problems = [str(p) for p in fast.problems]
    assert any("unknown line type 'obligation-teleported'" in p for p in problems)
    assert any("channel: 'pigeon' is not one of" in p for p in problems)
    assert any("obligation-delivered: obligationId" in p for p in problems)
    assert any("invalid UTF-8" in p for p in problems)
    assert any("for an unknown obligation 00000000-" in p for p in problems)
    assert any("interaction-answered for an unknown request" in p for p in problems)
    assert any("is opened a second time" in p for p in problems)


def test_refreshing_as_lines_arrive_folds_what_one_cold_read_folds(layout: Layout) -> None:
    follower = RegulatoryLog(layout)
    seen: list[Any] = []
    for _ in range(3):
        write_busy_log(layout, rounds=1)
        seen += follower.refresh()
    assert_folds_as_the_reference(layout, follower, seen)


def followed_then_replaced(layout: Layout, before: int, after: int) -> RegulatoryLog:
    """A log of ``before`` rounds read by a follower, then replaced by one of ``after``."""
    write_busy_log(layout, rounds=before)
    log = RegulatoryLog(layout)
    log.refresh()
    replacement = layout.signals.with_name("other.ndjson")
    replacement.write_bytes(b"")
    replacement.replace(layout.signals)
    write_busy_log(layout, rounds=after)
    return log


def test_a_log_replaced_by_another_is_folded_afresh(layout: Layout) -> None:
    log = followed_then_replaced(layout, 2, 1)
    entries = log.refresh()
    reference, reference_entries = read_reference(layout)
    mine, theirs = fold_state(log), fold_state(reference)
    notice = f"{layout.label(layout.signals)}: {RESTART_MESSAGE}"
    assert mine.pop("problems") == [notice, *theirs.pop("problems")]
    assert mine == theirs
    assert_same_entries(entries, reference_entries)


def test_the_fast_states_and_deliveries_are_the_ones_the_models_build(layout: Layout) -> None:
    write_busy_log(layout, rounds=1)
    fast, _ = read_fast(layout)
    for state in fast.obligations.values():
        opened = state.history[0]
        assert isinstance(opened, ObligationOpened)
        built = rl._opened_state(opened)
        expected = ObligationState.from_opened(opened)
        assert record_state(built) == record_state(expected)
        for event in state.history:
            if isinstance(event, ObligationDelivered):
                assert record_state(rl._delivery(event)) == record_state(Delivery.from_event(event))


def test_every_line_type_has_a_fast_builder() -> None:
    codecs = codecs_for(ENTRY_MODELS)
    assert set(codecs) == set(ENTRY_MODELS), dict(COMPILER.refused)


def test_a_large_refresh_leaves_the_collector_as_it_found_it(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_busy_log(layout, rounds=1)
    monkeypatch.setattr(rl, "_FREEZE_AFTER", 1)
    frozen: list[bool] = []
    monkeypatch.setattr("regulator.store.collector.gc.freeze", lambda: frozen.append(True))
    assert gc.isenabled()
    read_fast(layout)
    assert gc.isenabled() and frozen == [True]
    gc.disable()
    try:
        read_fast(layout)
        assert not gc.isenabled(), "a caller's choice to turn it off is kept"
    finally:
        gc.enable()


# --- the fast builders against pydantic, line by line -----------------------------------------


def sample_lines() -> list[dict[str, Any]]:
    """One valid line of every type, in the shapes the writers produce."""
    lines = [message(kind, f"a {kind}") for kind in MESSAGE_KINDS]
    lines.append(
        message(
            "intelligence-signal",
            "every optional field",
            unit="u1",
            expiresAt="2099-01-01T00:00:00.000Z",
            claim="c",
            confidence="low",
            observedAt="2026-12-01T10:00:00.000Z",
            affectedUnits=["u1"],
        )
    )
    obligation = {
        "id": "ob-1",
        "subject": "s",
        "unit": "u1",
        "concern": "interaction",
        "sources": ["ask:1"],
        "severity": "blocking",
        "consumer": "human",
        "blocks": True,
        "question": "q?",
        "openedAt": "2026-12-01T10:00:00.000Z",
        "openedBy": "S1",
    }
    base = {"id": "e-1", "at": "2026-12-01T10:00:00.000Z", "by": "S3"}
    lines += [
        {"type": "obligation-opened", **base, "obligation": obligation},
        {"type": "obligation-acknowledged", **base, "obligationId": "ob-1", "note": "n"},
        {
            "type": "obligation-resolved",
            **base,
            "obligationId": "ob-1",
            "disposition": "fixed",
            "rationale": "r",
        },
        {
            "type": "obligation-escalated",
            **base,
            "obligationId": "ob-1",
            "successor": "ob-2",
            "rationale": "r",
        },
        {
            "type": "obligation-superseded",
            **base,
            "obligationId": "ob-1",
            "successor": "ob-2",
            "rationale": "r",
        },
        {"type": "message-noted", **base, "message": "m-1", "reason": "below the line"},
        {
            "type": "obligation-delivered",
            **base,
            "obligationId": "ob-1",
            "channel": "outbox",
            "reminder": False,
            "target": "alice",
        },
        {
            "type": "interaction-requested",
            **base,
            "request": {
                "id": "rq-1",
                "kind": "choice",
                "subject": "s",
                "question": "q?",
                "options": ["a", "b"],
                "severity": "blocking",
                "unit": "u1",
                "attempt": 1,
                "obligationId": "ob-1",
                "evidence": [{"class": "file", "ref": "f", "observation": "o"}],
                "raisedBy": "S1",
                "raisedAt": "2026-12-01T10:00:00.000Z",
                "timeoutMs": 0,
                "channel": "tui",
            },
        },
        {
            "type": "interaction-answered",
            **base,
            "requestId": "rq-1",
            "outcome": "answered",
            "answer": "a",
            "channel": "cli",
        },
    ]
    return lines


SAMPLES = sample_lines()
CODECS = codecs_for(ENTRY_MODELS)
ODD_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -1,
    1.5,
    "",
    "x",
    "S3",
    "fixed",
    "obligation-delivered",
    [],
    ["x"],
    [""],
    {},
    {"class": "file", "ref": "f"},
]


def tag_of(data: dict[str, Any]) -> str:
    return str(data["kind"] if "kind" in data else data["type"])


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield (*prefix, key)
            yield from paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield (*prefix, index)
            yield from paths(inner, (*prefix, index))


def mutate(data: Any, path: tuple[Any, ...], how: str, value: Any) -> Any:
    """A deep copy of ``data`` with the node at ``path`` replaced, removed, or given a sibling."""
    copy = orjson.loads(orjson.dumps(data))
    parent = copy
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if how == "set":
        parent[last] = value
    elif how == "drop":
        del parent[last]
    elif how == "rename" and isinstance(parent, dict):
        parent[f"{last}_x" if last.islower() else last.lower()] = parent.pop(last)
    elif how == "snake" and isinstance(parent, dict):
        # The field's Python name: pydantic takes it too (``populate_by_name``).
        parent[re.sub(r"(?<!^)([A-Z])", r"_\1", last).lower()] = parent.pop(last)
    elif how == "sibling" and isinstance(parent, dict):
        parent["unexpected"] = value
    return copy


def pydantic_says(data: Any) -> Any:
    try:
        return validate_entry(data)
    except ValueError:
        return None


def fast_says(data: Any) -> Any:
    # The dispatch ``RegulatoryLog`` makes: ``kind`` if present, else ``type``.
    tag = (data["kind"] if "kind" in data else data.get("type")) if isinstance(data, dict) else None
    codec = CODECS.get(tag) if isinstance(tag, str) else None
    if codec is None:
        return None
    try:
        return codec.build(data)
    except (KeyError, TypeError):
        return None


ORIGINAL_SHAPES = {**MESSAGES, **EVENTS, **INTERACTIONS}


@pytest.mark.parametrize("original", ORIGINAL_SHAPES.values(), ids=ORIGINAL_SHAPES.keys())
def test_each_of_the_originals_line_shapes_is_built_as_pydantic_builds_it(
    original: dict[str, Any],
) -> None:
    data = orjson.loads(orjson.dumps(original))
    slow = validate_entry(data)
    codec = CODECS[tag_of(data)]
    assert record_state(codec.build(data)) == record_state(slow)
    row = orjson.loads(orjson.dumps(codec.to_row(slow)))
    assert record_state(codec.from_row(row)) == record_state(slow)


def test_a_log_of_the_originals_line_shapes_folds_as_the_pydantic_fold_does(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every shape in log order, twice (the second time: a second opening, answers placed on
    # the question asked first), then the same log through a snapshot.
    for _ in range(2):
        raw(layout, *(orjson.dumps(shape) for shape in ORIGINAL_SHAPES.values()))
    fast, entries = read_fast(layout)
    assert_folds_as_the_reference(layout, fast, entries)
    snapshot_after_every_cold_start(monkeypatch)
    read_fast(layout)
    outcomes = restored(monkeypatch)
    again, again_entries = read_fast(layout)
    assert outcomes == [True]
    assert_folds_as_the_reference(layout, again, again_entries)


def test_each_sample_is_taken_by_the_fast_builder_as_pydantic_takes_it() -> None:
    for data in SAMPLES:
        slow = validate_entry(data)
        fast = CODECS[tag_of(data)].build(data)
        assert fast is not None, tag_of(data)
        assert record_state(fast) == record_state(slow)
        row = orjson.loads(orjson.dumps(CODECS[tag_of(data)].to_row(slow)))
        assert record_state(CODECS[tag_of(data)].from_row(row)) == record_state(slow)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sample=st.sampled_from(SAMPLES),
    pick=st.integers(min_value=0),
    how=st.sampled_from(["set", "set", "set", "drop", "rename", "snake", "sibling"]),
    value=st.sampled_from(ODD_VALUES),
)
def test_a_damaged_line_is_refused_by_the_fast_builder_or_built_exactly_as_pydantic_builds_it(
    sample: dict[str, Any], pick: int, how: str, value: Any
) -> None:
    where = list(paths(sample))
    path = where[pick % len(where)]
    data = mutate(sample, path, how, value)
    fast = fast_says(data)
    if fast is None:
        return  # left to pydantic: whatever it says is what the log reports
    slow = pydantic_says(data)
    assert slow is not None, f"the fast path took a line pydantic refuses: {data}"
    assert record_state(fast) == record_state(slow)


# --- the snapshot -----------------------------------------------------------------------------


def restored(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Record, for each cold start from now on, whether it came from a snapshot."""
    outcomes: list[bool] = []
    original = RegulatoryLog._restore

    def spy(self: RegulatoryLog) -> Any:
        result = original(self)
        outcomes.append(result is not None)
        return result

    monkeypatch.setattr(RegulatoryLog, "_restore", spy)
    return outcomes


def test_a_cold_start_from_a_snapshot_folds_what_a_full_read_folds(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_busy_log(layout)
    snapshot_after_every_cold_start(monkeypatch)
    outcomes = restored(monkeypatch)
    read_fast(layout)  # reads it all, writes the snapshot
    assert fold_cache.snapshot_path(layout).exists()
    again, entries = read_fast(layout)
    assert outcomes == [False, True]
    assert_folds_as_the_reference(layout, again, entries)


def test_lines_appended_after_the_snapshot_are_folded_on_top_of_it(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_busy_log(layout, rounds=2)
    snapshot_after_every_cold_start(monkeypatch)
    read_fast(layout)
    monkeypatch.setattr(rl, "SNAPSHOT_AFTER_LINES", 10**9)  # keep that snapshot
    write_busy_log(layout, rounds=1)
    outcomes = restored(monkeypatch)
    again, entries = read_fast(layout)
    assert outcomes == [True]
    reference, reference_entries = read_reference(layout)
    assert_same_fold(again, reference)
    assert_same_entries(entries, reference_entries)
    # And it keeps following the log from there.
    write_busy_log(layout, rounds=1)
    more = again.refresh()
    reference_more = reference.refresh()
    assert_same_fold(again, reference)
    assert_same_entries(more, reference_more)


def test_a_snapshot_written_after_the_log_was_replaced_does_not_say_so_at_later_starts(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "The log was replaced" is news to the process that saw it happen, not a fact about the
    file: a later start from the snapshot that reading wrote reports what a full read would."""
    log = followed_then_replaced(layout, 1, 2)
    snapshot_after_every_cold_start(monkeypatch)
    outcomes = restored(monkeypatch)
    log.refresh()  # the new file, read whole: writes the snapshot
    assert fold_cache.snapshot_path(layout).exists()
    again, _ = read_fast(layout)
    assert outcomes == [True]
    reference, _ = read_reference(layout)
    assert [str(p) for p in again.problems] == [str(p) for p in reference.problems]
    assert not any(RESTART_MESSAGE in str(p) for p in again.problems)


def test_a_snapshot_is_written_only_after_reading_many_lines(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_busy_log(layout, rounds=1)
    read_fast(layout)
    assert not fold_cache.snapshot_path(layout).exists()
    lines = len(layout.signals.read_bytes().splitlines())
    monkeypatch.setattr(rl, "SNAPSHOT_AFTER_LINES", lines)
    log, _ = read_fast(layout)
    assert fold_cache.snapshot_path(layout).exists()
    # A follower's small refreshes never write one.
    before = fold_cache.snapshot_path(layout).stat().st_mtime_ns
    write_busy_log(layout, rounds=1)
    log.refresh()
    assert fold_cache.snapshot_path(layout).stat().st_mtime_ns == before


def snapshot_header(layout: Layout) -> dict[str, Any]:
    file = fold_cache.open_snapshot(layout)  # kept: its file closes when it goes
    blocks = file.blocks()
    header: dict[str, Any] = next(blocks)
    blocks.close()
    return header


def read_deferring(layout: Layout, monkeypatch: pytest.MonkeyPatch) -> RegulatoryLog:
    """A busy log read whole by a reader that writes its snapshot later, as the room does;
    from then on, the test's own writes (a ledger's reads) write no snapshot of their own."""
    write_busy_log(layout, rounds=2)
    snapshot_after_every_cold_start(monkeypatch)
    log = RegulatoryLog(layout, defer_snapshot=True)
    log.refresh()
    monkeypatch.setattr(rl, "SNAPSHOT_AFTER_LINES", 10**9)
    return log


def assert_restores_as_the_reference(layout: Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    outcomes = restored(monkeypatch)
    again, entries = read_fast(layout)
    assert outcomes == [True]
    assert_folds_as_the_reference(layout, again, entries)


def test_a_cold_read_leaves_its_snapshot_to_be_written_after_it_and_whole(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader that shows the fold first (the room) does not wait on its snapshot too
    (seconds, at a million lines): the read makes it due, and it is written later, with
    whatever was read in between."""
    log = read_deferring(layout, monkeypatch)
    assert log.snapshot_due and not fold_cache.snapshot_path(layout).exists()
    write_busy_log(layout, rounds=1)
    log.refresh()  # a follower's small refresh: part of the snapshot due, not a new one
    assert log.save_snapshot() and not log.snapshot_due
    assert not log.save_snapshot()  # once
    lines = len(layout.signals.read_bytes().splitlines())
    assert snapshot_header(layout)["nextLine"] == lines + 1
    assert_restores_as_the_reference(layout, monkeypatch)


def test_a_reader_that_does_not_defer_it_writes_the_snapshot_before_its_refresh_returns(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every reader but the room: a long-lived one (the MCP server, the loop) reading again and
    # again must not keep what a due snapshot would hold, nor leave the next start to fold it.
    write_busy_log(layout, rounds=2)
    snapshot_after_every_cold_start(monkeypatch)
    log = RegulatoryLog(layout)
    log.refresh()
    assert fold_cache.snapshot_path(layout).exists() and not log.snapshot_due


def test_a_snapshot_a_refresh_ran_beside_does_not_land_and_stays_due(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write reads the fold block by block; a fold that ran meanwhile (the room's, on
    another thread) would leave a snapshot of neither state. It is dropped, and written again
    later from the fold as it then is."""
    log = read_deferring(layout, monkeypatch)

    def fold_beside() -> bool:
        write_busy_log(layout, rounds=1)
        log.refresh()  # lands between two blocks of the write
        return False

    assert not log.save_snapshot(fold_beside)
    cache = fold_cache.snapshot_path(layout).parent
    assert log.snapshot_due and not any(cache.iterdir())  # no snapshot, no temp file left
    assert not log.save_snapshot(lambda: True)  # one ended by whoever it gives way to
    assert log.snapshot_due and not any(cache.iterdir())
    assert log.save_snapshot()
    assert_restores_as_the_reference(layout, monkeypatch)


def test_a_log_read_from_another_path_has_no_snapshot(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_busy_log(layout, rounds=1)
    snapshot_after_every_cold_start(monkeypatch)
    elsewhere = layout.state / "copy.ndjson"
    elsewhere.write_bytes(layout.signals.read_bytes())
    RegulatoryLog(layout, path=elsewhere).refresh()
    assert not fold_cache.snapshot_path(layout).exists()


def stale_or_tampered(layout: Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    """The next cold start must not use the snapshot, and must fold the log as it is."""
    monkeypatch.setattr(rl, "SNAPSHOT_AFTER_LINES", 10**9)
    outcomes = restored(monkeypatch)
    again, entries = read_fast(layout)
    assert outcomes == [False]
    assert_folds_as_the_reference(layout, again, entries)


@pytest.fixture
def snapshotted(layout: Layout, monkeypatch: pytest.MonkeyPatch) -> Layout:
    write_busy_log(layout, rounds=2)
    snapshot_after_every_cold_start(monkeypatch)
    read_fast(layout)
    assert fold_cache.snapshot_path(layout).exists()
    # From here on only the test changes the snapshot (a writer's own cold start would not).
    monkeypatch.setattr(rl, "SNAPSHOT_AFTER_LINES", 10**9)
    return layout


def test_a_snapshot_of_a_log_rewritten_in_place_is_ignored(
    snapshotted: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Same inode, same length, one obligation's "fixed" now "rework": only the CRC can tell.
    data = snapshotted.signals.read_bytes()
    assert b'"disposition":"fixed"' in data
    with snapshotted.signals.open("r+b") as f:
        f.write(data.replace(b'"disposition":"fixed"', b'"disposition":"rwork"', 1))
    stale_or_tampered(snapshotted, monkeypatch)


def test_a_snapshot_of_a_log_truncated_and_grown_again_is_ignored(
    snapshotted: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = snapshotted.signals.read_bytes()
    keep = data[: data.index(b"\n", len(data) // 3) + 1]
    with snapshotted.signals.open("r+b") as f:
        f.truncate(len(keep))
    write_busy_log(snapshotted, rounds=2)
    assert snapshotted.signals.stat().st_size >= len(data)
    stale_or_tampered(snapshotted, monkeypatch)


def test_a_snapshot_of_a_replaced_log_is_ignored(
    snapshotted: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = snapshotted.state / "new.ndjson"
    copy.write_bytes(snapshotted.signals.read_bytes())
    copy.replace(snapshotted.signals)  # same bytes, another file
    stale_or_tampered(snapshotted, monkeypatch)


def test_a_snapshot_of_a_shorter_log_is_ignored(
    snapshotted: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = snapshotted.signals.read_bytes()
    with snapshotted.signals.open("r+b") as f:
        f.truncate(data.rindex(b"\n", 0, len(data) - 1) + 1)
    stale_or_tampered(snapshotted, monkeypatch)


def edit_snapshot(layout: Layout, change: Any) -> None:
    path = fold_cache.snapshot_path(layout)
    path.write_bytes(change(path.read_bytes()))


def recompute_trailer(data: bytes) -> bytes:
    lines = data.split(b"\n")[:-2]  # drop the trailer and the empty last piece
    body = b"".join(line + b"\n" for line in lines)
    blocks = (len(lines) - 1) // 2  # a header, then each block's line and its texts line
    crc = 0
    for line in [lines[0], *lines[1::2]]:  # the header's and the blocks': not the texts
        crc = zlib.crc32(line + b"\n", crc)
    trailer = {"end": fold_cache.FORMAT, "blocks": blocks, "crc": crc}
    return body + orjson.dumps(trailer) + b"\n"


def snapshot_parts(data: bytes) -> tuple[Any, list[tuple[Any, bytes]]]:
    """A snapshot's header, and each block with its texts line."""
    lines = data.split(b"\n")[:-2]
    pairs = [(orjson.loads(lines[i]), lines[i + 1]) for i in range(1, len(lines), 2)]
    return orjson.loads(lines[0]), pairs


def snapshot_bytes(header: Any, pairs: list[tuple[Any, bytes]]) -> bytes:
    """The snapshot of ``snapshot_parts``, its trailer computed."""
    body = orjson.dumps(header) + b"\n"
    for block, texts in pairs:
        block[-1] = len(texts)
        body += orjson.dumps(block) + b"\n" + texts + b"\n"
    return recompute_trailer(body + b"{}\n")


def in_groups(change: Any) -> Any:
    """An edit of the first obligation group with events, given as it was before the texts
    had lines of their own (``[ordinal, opened, tail, places, events text]``); the block's
    texts line, offsets and CRCs, and the trailer, recomputed after it."""

    def edit(data: bytes) -> bytes:
        header, pairs = snapshot_parts(data)
        changed = False
        out: list[tuple[Any, bytes]] = []
        for block, texts in pairs:
            if block[0] == "o":
                groups = [[*g[:4], texts[g[4] : g[4] + g[5]].decode()] for g in block[1]]
                target = next((g for g in groups if g[3]), None)
                if not changed and target is not None:
                    change(target)
                    changed = True
                rows, packed = [], b""
                for g in groups:
                    text = g[4].encode()
                    rows.append([*g[:4], len(packed), len(text), zlib.crc32(text)])
                    packed += text
                block, texts = ["o", rows, len(packed)], packed
            out.append((block, texts))
        assert changed
        return snapshot_bytes(header, out)

    return edit


def _text_past_its_line(data: bytes) -> bytes:
    header, pairs = snapshot_parts(data)
    at = next(i for i, (block, _) in enumerate(pairs) if block[0] == "o")
    block, texts = pairs[at]
    group = next(g for g in block[1] if g[3])
    group[5] = len(texts) - group[4] + 1  # one byte past the end of its line
    return snapshot_bytes(header, pairs)


def _texts_line_longer_than_its_block_says(data: bytes) -> bytes:
    lines = data.split(b"\n")[:-2]
    lines[2] += b" "  # the first block's texts line
    return recompute_trailer(b"".join(line + b"\n" for line in lines) + b"{}\n")


def _second_slot_twice(group: list[Any]) -> None:
    group[3][0] = group[0]  # an event given its opening's ordinal


def _opening_that_does_not_build(group: list[Any]) -> None:
    group[1][3] = 20261201  # the opening's time, a number: its state still builds from the
    # obligation's row, and the opening itself is built with the history


def _row_that_does_not_build(group: list[Any]) -> None:
    rows = orjson.loads(group[4])  # the events, as one JSON text
    rows[0][1][0] = "not the fields present"
    group[4] = orjson.dumps(rows).decode()


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda d: d.replace(b'"fixed"', b'"fixxd"', 1), id="a byte changed"),
        pytest.param(in_groups(_second_slot_twice), id="an ordinal given twice"),
        pytest.param(_text_past_its_line, id="a text said to end past its line"),
        pytest.param(_texts_line_longer_than_its_block_says, id="a texts line of another length"),
        pytest.param(lambda d: d[: len(d) // 2], id="cut in half"),
        pytest.param(lambda d: d[: d.rindex(b"\n", 0, len(d) - 1) + 1], id="trailer gone"),
        pytest.param(lambda d: d + b'["o",[]]\n', id="a block after the trailer"),
        pytest.param(lambda d: b"", id="empty"),
        pytest.param(lambda d: b"\x80\x81 not json\n", id="garbage"),
        pytest.param(
            lambda d: recompute_trailer(d.replace(b'"fingerprint":"', b'"fingerprint":"0', 1)),
            id="another version's snapshot",
        ),
        pytest.param(
            lambda d: recompute_trailer(d.replace(b",false]", b',"no"]', 1)),
            id="a forged row, trailer recomputed",
        ),
        pytest.param(
            lambda d: recompute_trailer(d.replace(b'"entries":', b'"entries":1', 1)),
            id="a forged count, trailer recomputed",
        ),
    ],
)
def test_a_tampered_snapshot_is_ignored(
    snapshotted: Layout, monkeypatch: pytest.MonkeyPatch, change: Any
) -> None:
    edit_snapshot(snapshotted, change)
    stale_or_tampered(snapshotted, monkeypatch)


def test_a_restored_history_is_built_when_first_read_and_once_for_every_thread(
    snapshotted: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    builds: list[str] = []
    build = rl._Unbuilt.build

    def slow_build(self: Any) -> Any:
        builds.append(self.oid)
        time.sleep(0.05)  # long enough for every reader to arrive meanwhile
        return build(self)

    monkeypatch.setattr(rl._Unbuilt, "build", slow_build)
    again, entries = read_fast(snapshotted)
    reference, reference_entries = read_reference(snapshotted)
    assert len(entries) == len(reference_entries)  # counted, not built
    states = [o for o in again.obligations.values() if type(o.__dict__["history"]) is not list]
    assert len(states) > 10, "a restore builds no history"
    first, rest = states[0], states[1:]
    seen: list[tuple[int, int]] = []
    barrier = threading.Barrier(4)

    def read() -> None:
        barrier.wait()
        seen.append((id(first.history), id(first.deliveries)))

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(seen)) == 1 and builds == [first.id]  # one build, whoever asked first
    assert type(first.__dict__["history"]) is list
    assert all(type(o.__dict__["history"]) is not list for o in rest)
    opening: Any = first.history[0]
    assert opening.obligation.id == first.id
    assert record_state(first) == record_state(reference.obligations[first.id])


def test_what_pydantic_does_with_an_unbuilt_state_sees_its_history(
    snapshotted: Layout,
) -> None:
    """Dumps, comparison, copies, pickling and repr read ``__dict__`` directly: each builds
    a restored state's history first, so none of them sees it missing."""
    import copy
    import pickle

    from regulator.protocol.fast_dump import dumper_for

    reference, _ = read_reference(snapshotted)

    def unbuilt() -> Any:
        again, _ = read_fast(snapshotted)
        return next(
            o
            for o in again.obligations.values()
            if type(o.__dict__["history"]) is not list and o.id in reference.obligations
        )

    def theirs(state: Any) -> Any:
        return reference.obligations[state.id]

    o = unbuilt()
    assert o.to_json_dict() == theirs(o).to_json_dict() and len(o.history) > 1
    o = unbuilt()
    assert o.model_dump_json() == theirs(o).model_dump_json()
    o = unbuilt()
    assert dumper_for(ObligationState).dump(o, []) == theirs(o).to_json_dict()
    o = unbuilt()
    assert o == theirs(o) and theirs(o) == unbuilt()
    o = unbuilt()
    assert copy.copy(o).history == theirs(o).history
    o = unbuilt()
    assert copy.deepcopy(o).deliveries == theirs(o).deliveries
    o = unbuilt()
    assert pickle.loads(pickle.dumps(o)) == theirs(o)
    o = unbuilt()
    assert "ObligationOpened" in repr(o) and dict(o)["history"] == theirs(o).history


def test_a_restore_counts_unrouted_messages_without_building_them(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rl, "_BLOCK_ROWS", 3)  # groups of three messages
    write_busy_log(layout, rounds=1)
    with layout.signals.open("a") as f:  # two left unrouted, one of them twice
        twice = message("operational-signal", "again", unit="u1")
        for m in (twice, message("audit-finding", "unseen", severity="info"), twice):
            f.write(json.dumps(m) + "\n")
    snapshot_after_every_cold_start(monkeypatch)
    read_fast(layout)  # writes the snapshot
    snapshotted = layout
    again, _ = read_fast(snapshotted)
    reference, _ = read_reference(snapshotted)
    groups = again._later_messages
    assert groups and len(groups) > 3, "a restore leaves the messages to be built"
    assert again.unrouted_count() == len(reference_unrouted(reference)) > 0
    assert not again._built_groups, "counting built nothing"
    assert [record_state(m) for m in again.unrouted()] == [
        record_state(m) for m in reference_unrouted(reference)
    ]
    # Only the groups that hold an unrouted message were built.
    unrouted = {m.id for m in reference_unrouted(reference)}
    holding = {n for n, group in enumerate(groups) if unrouted & set(group.keys)}
    assert set(again._built_groups) == holding and len(holding) < len(groups)
    assert again.unrouted_count() == len(reference_unrouted(reference))
    assert [m.id for m in again.messages.values()] == [m.id for m in reference.messages.values()]


def test_messages_built_group_by_group_stop_when_asked_and_end_as_the_fold(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The room's warm-up builds a restored log's messages a group at a time, asking between
    groups whether to stop (a person pressing keys): stopped, nothing is lost; resumed, the
    messages are the fold's."""
    monkeypatch.setattr(rl, "_BLOCK_ROWS", 7)  # several groups of messages
    write_busy_log(layout, rounds=2)
    snapshot_after_every_cold_start(monkeypatch)
    read_fast(layout)  # writes the snapshot
    log, entries = read_fast(layout)
    groups = log._later_messages
    assert groups is not None and len(groups) > 2
    asked = iter([False, True])
    log.build_messages(lambda: next(asked))
    assert log._later_messages is groups and list(log._built_groups) == [0]
    log.build_messages()
    assert log.messages_built
    assert_folds_as_the_reference(layout, log, entries)


def test_one_message_is_found_after_a_restore_by_building_only_its_group(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_busy_log(layout, rounds=1)
    with layout.signals.open("a") as f:  # an id seen twice: the dict holds the second
        first = message("operational-signal", "first", unit="u1")
        second = {**first, "subject": "second"}
        f.write(json.dumps(first) + "\n" + json.dumps(second) + "\n")
    snapshot_after_every_cold_start(monkeypatch)
    read_fast(layout)  # writes the snapshot
    snapshotted = layout
    again, _ = read_fast(snapshotted)
    assert again.message(first["id"]).subject == "second"  # type: ignore[union-attr]
    reference, _ = read_reference(snapshotted)
    some = list(reference.messages)[-1]
    assert record_state(again.message(some)) == record_state(reference.messages[some])
    assert again._later_messages is not None and len(again._built_groups) == 1
    assert again.message("no-such-message") is None
    for mid, m in reference.messages.items():  # each as the dict holds it (the last, if twice)
        assert record_state(again.message(mid)) == record_state(m)
    assert again._later_messages is not None, "nothing but groups was built"
    assert [record_state(m) for m in again.messages.values()] == [
        record_state(m) for m in reference.messages.values()
    ]
    assert record_state(again.message(some)) == record_state(reference.messages[some])


def _message_row_that_does_not_build(data: bytes) -> bytes:
    header, pairs = snapshot_parts(data)
    at = next(i for i, (block, _) in enumerate(pairs) if block[0] == "m")
    rows = orjson.loads(pairs[at][1])  # the group's rows, its block's texts line
    rows[0][1][0] = "not the fields present"
    text = orjson.dumps(rows)
    pairs[at][0][1][2] = zlib.crc32(text)  # the text is what its block says: it does not build
    pairs[at] = (pairs[at][0], text)
    return snapshot_bytes(header, pairs)


def _a_texts_byte_changed(data: bytes) -> bytes:
    header, pairs = snapshot_parts(data)
    at = next(i for i, (block, _) in enumerate(pairs) if block[0] == "o" and block[-1])
    texts = bytearray(pairs[at][1])
    texts[0] ^= 0x01  # "[" is now "Z": and its CRC no longer the one its block names
    pairs[at] = (pairs[at][0], bytes(texts))
    return snapshot_bytes(header, pairs)


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(in_groups(_row_that_does_not_build), id="an obligation's event"),
        pytest.param(in_groups(_opening_that_does_not_build), id="an obligation's opening"),
        pytest.param(_message_row_that_does_not_build, id="a message"),
        pytest.param(_a_texts_byte_changed, id="a byte of a text changed"),
    ],
)
def test_a_row_that_does_not_build_is_read_from_the_log_and_the_snapshot_dropped(
    snapshotted: Layout, monkeypatch: pytest.MonkeyPatch, change: Any
) -> None:
    """Rows are checked as they are built, when first read: one that does not build is taken
    from the log itself (at the place the snapshot gave it), and a snapshot that held it is
    not started from again."""
    edit_snapshot(snapshotted, change)
    outcomes = restored(monkeypatch)
    again, entries = read_fast(snapshotted)
    assert outcomes == [True]
    assert fold_cache.snapshot_path(snapshotted).exists()  # nothing was built yet
    assert_folds_as_the_reference(snapshotted, again, entries)
    assert not fold_cache.snapshot_path(snapshotted).exists()


def test_a_restore_reads_no_text_and_a_history_reads_only_its_own(
    snapshotted: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The texts (events, messages) are most of a snapshot: a restore leaves them in the
    file, and building one history reads that history's text alone."""
    reads: list[int] = []
    read = fold_cache.SnapshotFile.read

    def counted(self: Any, offset: int, size: int, crc: int) -> bytes:
        reads.append(size)
        return read(self, offset, size, crc)

    monkeypatch.setattr(fold_cache.SnapshotFile, "read", counted)
    log, entries = read_fast(snapshotted)
    assert log._later_messages is not None and len(log.obligations) > 1
    assert [o.status for o in log.obligations.values()] and reads == []
    some = next(o for o in log.obligations.values() if type(o.__dict__["history"]) is not list)
    assert len(some.history) > 1
    assert len(reads) == 1 and 0 < reads[0] < fold_cache.snapshot_path(snapshotted).stat().st_size
    assert_folds_as_the_reference(snapshotted, log, entries)


def test_a_snapshot_cut_short_after_a_restore_gives_way_to_the_log(
    snapshotted: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The texts are read from the file when built: if it lost them meanwhile (cut short in
    place), what they held is read from the log, and the snapshot is not started from again."""
    outcomes = restored(monkeypatch)
    again, entries = read_fast(snapshotted)
    assert outcomes == [True]
    path = fold_cache.snapshot_path(snapshotted)
    with path.open("r+b") as f:
        f.truncate(len(f.readline()))  # the header alone
    assert_folds_as_the_reference(snapshotted, again, entries)
    assert not path.exists()


def test_a_restore_followed_by_a_long_tail_writes_a_new_snapshot(
    snapshotted: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A start that restored and then read many appended lines writes a snapshot of it all,
    what the restore left unbuilt included, so the next start reads no tail."""
    path = fold_cache.snapshot_path(snapshotted)
    before = path.read_bytes()
    write_busy_log(snapshotted, rounds=1)
    snapshot_after_every_cold_start(monkeypatch)
    outcomes = restored(monkeypatch)
    read_fast(snapshotted)  # restores, reads the tail, writes a new snapshot
    assert path.read_bytes() != before
    monkeypatch.setattr(rl, "SNAPSHOT_AFTER_LINES", 10**9)
    again, entries = read_fast(snapshotted)
    assert outcomes == [True, True]
    assert again._reader.next_line - 1 == snapshotted.signals.read_bytes().count(b"\n")
    assert_folds_as_the_reference(snapshotted, again, entries)


def test_a_log_replaced_while_another_thread_builds_its_messages_keeps_only_the_new_ones(
    snapshotted: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The room's warm-up builds a restored log's messages while a fold may find the log
    replaced: the build ends before the fold forgets them, and its messages are not kept."""
    log, _ = read_fast(snapshotted)
    built = rl._Later.built

    def slow(self: Any) -> Any:
        time.sleep(0.2)  # long enough for the fold below to find the log replaced
        return built(self)

    monkeypatch.setattr(rl._Later, "built", slow)
    reader = threading.Thread(target=lambda: log.messages)
    reader.start()
    time.sleep(0.05)
    replacement = snapshotted.signals.with_name("other.ndjson")
    fresh = message("operational-signal", "the only one", unit="u1")
    replacement.write_text(json.dumps(fresh) + "\n")
    replacement.replace(snapshotted.signals)
    log.refresh()
    reader.join()
    assert list(log.messages) == [fresh["id"]]


def test_a_snapshot_others_could_have_written_is_ignored(
    snapshotted: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = fold_cache.snapshot_path(snapshotted)
    path.chmod(0o664)  # group-writable: someone else may have put it there
    stale_or_tampered(snapshotted, monkeypatch)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file away needs root")
def test_a_snapshot_owned_by_another_user_is_ignored(
    snapshotted: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    os.chown(fold_cache.snapshot_path(snapshotted), 4242, -1)
    stale_or_tampered(snapshotted, monkeypatch)


def test_a_symlink_in_place_of_the_cache_is_neither_read_nor_written_through(
    layout: Layout, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    write_busy_log(layout, rounds=1)
    snapshot_after_every_cold_start(monkeypatch)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (layout.state / "cache").mkdir()
    fold_cache.cache_dir(layout).symlink_to(elsewhere)
    log, entries = read_fast(layout)  # reads fine, writes nothing
    assert list(elsewhere.iterdir()) == []
    assert_folds_as_the_reference(layout, log, entries)


def test_a_half_written_last_line_leaves_no_snapshot_until_it_is_whole(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_busy_log(layout, rounds=1)
    snapshot_after_every_cold_start(monkeypatch)
    with layout.signals.open("ab") as f:
        f.write(b'{"type":"message-noted","id":"half')
    read_fast(layout)
    assert not fold_cache.snapshot_path(layout).exists()
    with layout.signals.open("ab") as f:
        f.write(b'","at":"t","by":"S3","message":"m","reason":"r"}\n')
    read_fast(layout)
    outcomes = restored(monkeypatch)
    again, entries = read_fast(layout)
    assert outcomes == [True]
    assert_folds_as_the_reference(layout, again, entries)


# --- the per-unit lists ---------------------------------------------------------------------

UNITS = ["u1", "u2", "u3"]


def assert_per_unit_lists_are_the_scans(log: RegulatoryLog) -> None:
    """``obligations_of`` and the like hold exactly the filtered scan of the dicts, in order."""

    def same(mine: list[Any], scan: list[Any]) -> None:
        assert len(mine) == len(scan) and all(a is b for a, b in zip(mine, scan, strict=True))

    for unit in [*UNITS, "nobody"]:
        same(log.obligations_of(unit), [s for s in log.obligations.values() if s.unit == unit])
        same(
            log.messages_of(unit),
            [
                m
                for m in log.messages.values()
                if m.unit == unit or unit in (getattr(m, "affected_units", None) or ())
            ],
        )
        same(
            log.interactions_of(unit),
            [i for i in log.interactions.values() if i.request.unit == unit],
        )


_OPENED: dict[str, Any] = {
    "type": "obligation-opened",
    "at": "2026-12-01T09:00:00.014Z",
    "by": "S3",
    "obligation": {
        "subject": "tests fail",
        "concern": "operational-signal",
        "sources": ["m-x"],
        "severity": "blocking",
        "consumer": "S3",
        "blocks": True,
        "openedAt": "2026-12-01T09:00:00.014Z",
        "openedBy": "S3",
    },
}
_REQUESTED: dict[str, Any] = {
    "type": "interaction-requested",
    "at": "2026-12-01T09:00:00.105Z",
    "by": "S1",
    "request": {
        "kind": "recap",
        "subject": "wording",
        "question": "Fine?",
        "severity": "advisory",
        "evidence": [],
        "raisedBy": "S1",
        "raisedAt": "2026-12-01T09:00:00.098Z",
        "timeoutMs": 30000,
        "channel": "none",
    },
}
_unit = st.sampled_from([None, *UNITS])
_step = st.one_of(
    # A message; a few ids, so that some arrive again (replacing the first, maybe another unit).
    st.tuples(
        st.just("message"),
        st.integers(0, 4),
        _unit,
        st.none() | st.lists(st.sampled_from(UNITS), max_size=3),
    ),
    st.tuples(st.just("opened"), st.integers(0, 30), _unit),  # an id opened twice is refused
    st.tuples(st.just("asked"), st.integers(0, 3), _unit),  # a question asked again replaces
    st.tuples(st.sampled_from(["refresh", "cold start", "replace the log"])),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(_step, max_size=25))
@example(  # a unit named twice by one message; a message and a question each replaced
    steps=[
        ("message", 0, "u1", ["u1", "u2"]),
        ("asked", 0, "u1"),
        ("refresh",),
        ("message", 0, "u2", None),
        ("asked", 0, "u2"),
        ("opened", 1, "u1"),
        ("refresh",),
        ("cold start",),
    ]
)
def test_each_units_obligations_messages_and_questions_are_the_filtered_scans(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[Any, ...]]
) -> None:
    root = tmp_path_factory.mktemp("units") / "instance"
    (root / ".regulator").mkdir(parents=True)
    layout = Layout(root)
    layout.signals.write_bytes(b"")
    follower = RegulatoryLog(layout)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rl, "SNAPSHOT_AFTER_LINES", 1)  # every cold start writes, the next reads
        for step in steps:
            if step[0] == "message":
                _, n, unit, affected = step
                if affected is None:
                    line = message("operational-signal", "s", id=f"m{n}", unit=unit)
                else:
                    line = message("intelligence-signal", "s", id=f"m{n}", unit=unit)
                    line["affectedUnits"] = affected
                raw(layout, orjson.dumps({k: v for k, v in line.items() if v is not None}))
            elif step[0] == "opened":
                _, n, unit = step
                ob = {**_OPENED["obligation"], "id": f"o{n}", "unit": unit}
                opened = {**_OPENED, "id": f"e{n}", "obligation": ob}
                if unit is None:
                    del ob["unit"]
                raw(layout, orjson.dumps(opened))
            elif step[0] == "asked":
                _, n, unit = step
                request = {**_REQUESTED["request"], "id": f"r{n}", "obligationId": f"o{n}"}
                if unit is not None:
                    request["unit"] = unit
                raw(layout, orjson.dumps({**_REQUESTED, "id": f"q{n}", "request": request}))
            elif step[0] == "refresh":
                follower.refresh()
                assert_per_unit_lists_are_the_scans(follower)
            elif step[0] == "cold start":  # asked before its first refresh, and after
                cold = RegulatoryLog(layout)
                assert_per_unit_lists_are_the_scans(cold)
                cold.refresh()
                assert_per_unit_lists_are_the_scans(cold)
            else:  # the same lines under a new inode: the follower starts over
                copy = layout.signals.with_name("copy.ndjson")
                copy.write_bytes(layout.signals.read_bytes())
                copy.replace(layout.signals)
        follower.refresh()
        assert_per_unit_lists_are_the_scans(follower)
        cold, _ = read_fast(layout)
        assert_per_unit_lists_are_the_scans(cold)
        # Every line was taken (the only problems: an obligation opened a second time, and
        # the notice of a restart that a snapshot written after it carries).
        assert all(
            p.message == RESTART_MESSAGE or "second time" in p.message for p in cold.problems
        )
