"""The fold of the regulatory log holds what its rules, written plainly, hold.

The reference here is the fold's rules as the original states them: every line read by
``parse_signal_line``, dispatched with ``match``, obligations built by ``from_opened``. The
fold must agree with it on every obligation, message, interaction and problem, and on the
entries a refresh returns — on a log written by the real write path with bad lines, events for
unknown obligations and the original's line shapes mixed in, read cold, as lines arrive, or
replaced.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from regulator.policy import load_definition
from regulator.protocol.entry import parse_signal_line
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
from regulator.rules.asking import ask_in
from regulator.rules.ledger import Ledger
from regulator.rules.regulatory_log import Answer, InteractionState, RegulatoryLog
from regulator.rules.router import route_messages
from regulator.store import RESTART_MESSAGE, Layout, Problem, TailReader

from .factory import message

DEFINITION = load_definition(None)
START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


# --- the reference: the fold's rules, plainly --------------------------------------------


class ReferenceFold:
    """Every line read on its own; the fold's rules as they are stated, with ``match``."""

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
    if isinstance(record, msgspec.Struct):
        return (
            type(record).__name__,
            [(k, record_state(getattr(record, k))) for k in record.__struct_fields__],
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
        opened_line = ObligationOpened.from_json_dict(
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


def read_fold(layout: Layout) -> tuple[RegulatoryLog, Sequence[Any]]:
    log = RegulatoryLog(layout)
    return log, log.refresh()


def read_reference(layout: Layout) -> tuple[ReferenceFold, list[Any]]:
    log = ReferenceFold(layout)
    return log, log.refresh()


# --- the fold ---------------------------------------------------------------------------------


def test_the_fold_holds_exactly_what_its_rules_hold(layout: Layout) -> None:
    write_busy_log(layout)
    log, entries = read_fold(layout)
    assert_folds_as_the_reference(layout, log, entries)
    assert len(log.problems) > 20 and log.obligations and log.interactions


def test_a_bad_line_is_reported_naming_its_field_and_why(layout: Layout) -> None:
    write_busy_log(layout, rounds=1)
    fast, _ = read_fold(layout)
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


def test_a_large_refresh_leaves_the_collector_as_it_found_it(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_busy_log(layout, rounds=1)
    frozen: list[bool] = []
    monkeypatch.setattr("regulator.store.collector.gc.freeze", lambda: frozen.append(True))
    assert gc.isenabled()
    RegulatoryLog(layout, freeze_after=1).refresh()
    assert gc.isenabled() and frozen == [True]
    RegulatoryLog(layout).refresh()
    assert frozen == [True], "a refresh of fewer lines than freeze_after freezes nothing"
    gc.disable()
    try:
        RegulatoryLog(layout, freeze_after=1).refresh()
        assert not gc.isenabled(), "a caller's choice to turn it off is kept"
    finally:
        gc.enable()


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
    cold, _ = read_fold(layout)
    assert_per_unit_lists_are_the_scans(cold)
    # Every line was taken (the only problem: an obligation opened a second time).
    assert all("second time" in p.message for p in cold.problems)
