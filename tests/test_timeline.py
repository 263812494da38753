"""The unit replay: every record naming a unit, in time order, placed in its attempt."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from regulator.host.demo import build_demo
from regulator.policy import load_definition
from regulator.protocol.clock import iso, parse_iso, system_clock
from regulator.rules.asking import ask
from regulator.rules.audit_log import AuditLog
from regulator.rules.dispositions import answer
from regulator.rules.effect_journal import EffectJournal
from regulator.rules.execution import ExecutionStore
from regulator.rules.ledger import Actor, Ledger
from regulator.rules.memory_store import MemoryStore
from regulator.rules.regulatory_log import RegulatoryLog
from regulator.store import InvalidUnitId, Layout
from regulator.views.timeline import (
    KINDS,
    TimelineRow,
    filter_kinds,
    group_by_attempt,
    unit_timeline,
)

CANARY = "CANARY-7f3a9c21e0b4"
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


class Ticking:
    """A clock that moves a millisecond per reading, from ``start``."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=1)
        return self.now


def _question_during_fix_rounding_attempt_2(layout: Layout) -> None:
    # A person present answers a question asked during attempt 2. It is appended after the
    # whole demo, timestamped inside the attempt: the replay must sort by time, not by file.
    attempt_2 = ExecutionStore(layout).attempts("fix-rounding")[1]
    policy = load_definition(layout.root).interaction
    ledger = Ledger(layout, clock=Ticking(parse_iso(attempt_2.started_at)))
    asked = ask(
        ledger,
        policy,
        kind="clarification",
        subject="negative halves",
        question="Should round_half_up(-2.5) be -3?",
        unit="fix-rounding",
        attempt=2,
    )
    ledger.deliver(asked.obligation.id, "S3", "tui")
    answer(
        ledger,
        policy,
        asked.obligation.id,
        "alice",
        Actor("room", "tests"),
        "yes, away from zero",
        channel="tui",
    )


def _running_attempt_of_build_docs(layout: Layout, start: datetime) -> None:
    # Attempt 2 under way: its ledger is written, its attempt line not yet; an S3 note comes
    # in while it runs.
    store = ExecutionStore(layout)
    ledger = store.budget("build-docs", 1)
    assert ledger is not None
    store.write_budget(
        ledger.replace(
            **{
                "attempt": 2,
                "started_at": iso(start),
                "updated_at": iso(start + timedelta(seconds=5)),
            }
        )
    )
    Ledger(layout, clock=lambda: start + timedelta(seconds=2)).acknowledge(
        _obligation_of(layout, "build-docs"), "alice", "mkdocs is being installed"
    )


def _obligation_of(layout: Layout, unit: str) -> str:
    log = RegulatoryLog(layout)
    log.refresh()
    return next(o.id for o in log.open_obligations(unit) if o.concern == "recovery-decision")


def _secret_in_a_question(layout: Layout) -> None:
    layout.canaries.write_text(f"{CANARY}\nshort\n", encoding="utf-8")
    Ledger(layout).open_obligation(
        subject=f"the deploy key {CANARY} leaked",
        unit="survey-deps",
        concern="operational-signal",
        sources=["a-message"],
        severity="advisory",
        consumer="S3",
        blocks=False,
        question=f"Rotate GITHUB_TOKEN={GITHUB_TOKEN}? It was printed as {CANARY}.",
    )


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Layout]:
    layout = build_demo(tmp_path_factory.mktemp("timeline") / "d")
    _question_during_fix_rounding_attempt_2(layout)
    _running_attempt_of_build_docs(layout, system_clock() + timedelta(minutes=1))
    _secret_in_a_question(layout)
    yield layout


def titles(rows: list[TimelineRow]) -> list[str]:
    return [row.title for row in rows]


def assert_in_order(seen: list[str], expected: list[str]) -> None:
    positions = [seen.index(title) for title in expected]
    assert positions == sorted(positions), seen


def assert_time_ordered(rows: list[TimelineRow]) -> None:
    moments = [parse_iso(row.at) for row in rows]
    assert moments == sorted(moments)


def test_fix_rounding_replays_its_attempts_decision_and_question_in_time_order(
    demo: Layout,
) -> None:
    rows = unit_timeline(demo, "fix-rounding")
    expected = [
        ("contract", "contract fix-rounding-c v1"),
        ("unit", "unit created"),
        ("attempt", "attempt 1 started"),
        ("attempt", "attempt 1: check-failure"),
        ("evidence", "evidence run_tests: fail"),
        ("verdict", "verdict: fail (1 failed)"),
        ("decision", "after attempt 1: check-failure (occurrence 1) → repair"),
        ("attempt", "attempt 2 started"),
        ("obligation", "obligation-opened by S1 (blocking veto → human)"),
        ("interaction", "asked clarification: negative halves"),
        ("delivery", "delivered via tui"),
        ("interaction", "answered by alice"),
        ("obligation", "obligation-resolved by alice (fixed)"),
        ("effect", "notify_owner: committed"),
        ("memory", "remembered: pip mirror"),
        ("attempt", "attempt 2: reported"),
        ("evidence", "evidence run_tests: pass"),
        ("verdict", "verdict: pass (1 satisfied)"),
        ("unit", "unit closed"),
    ]
    by_title = {row.title: row for row in rows}
    for kind, title in expected:
        assert by_title[title].kind == kind, title
    assert_in_order(titles(rows), [title for _, title in expected])
    assert_time_ordered(rows)
    assert by_title["answered by alice"].detail == "“yes, away from zero” · via tui"


def test_each_row_belongs_to_the_attempt_of_its_record_or_its_time(demo: Layout) -> None:
    rows = {row.title: row for row in unit_timeline(demo, "fix-rounding")}
    # From the record: the decision names the attempt that failed, evidence its attempt.
    assert rows["after attempt 1: check-failure (occurrence 1) → repair"].attempt == 1
    assert rows["evidence run_tests: pass"].attempt == 2
    # From time: inside attempt 2, or before attempt 1 started (the next to start).
    assert rows["obligation-resolved by alice (fixed)"].attempt == 2
    assert rows["delivered via tui"].attempt == 2
    assert rows["contract fix-rounding-c v1"].attempt == 1
    # After the last attempt ended.
    assert rows["unit closed"].attempt is None


def test_publish_release_shows_its_question_and_the_obligation_delivered(demo: Layout) -> None:
    rows = unit_timeline(demo, "publish-release")
    by_title = {row.title: row for row in rows}
    asked = by_title["asked consent: push the release tag"]
    assert asked.kind == "interaction"
    assert asked.attempt == 1
    assert "a yes authorizes: git push origin v1.2.0" in asked.detail
    assert asked.record["action"] == "git push origin v1.2.0"
    assert_in_order(
        titles(rows),
        [
            "attempt 1 started",
            "obligation-opened by S1 (blocking veto → human)",
            "asked consent: push the release tag",
            "nobody to ask: unavailable",
            "attempt 1: paused",
            "delivered via outbox",
            "reminded via outbox",
        ],
    )
    # Nobody answered: the end of the question says silence is not consent.
    assert "silence is not consent" in by_title["nobody to ask: unavailable"].detail
    deliveries = filter_kinds(rows, ["delivery"])
    assert [d.record["reminder"] for d in deliveries] == [False, True]
    assert all(d.ref.startswith("obligation-event:") and d.attempt is None for d in deliveries)
    assert_time_ordered(rows)


def test_rows_group_by_attempt_with_what_came_after_last(demo: Layout) -> None:
    rows = unit_timeline(demo, "fix-rounding")
    groups = group_by_attempt(rows)
    assert [(g.attempt, g.label) for g in groups] == [
        (1, "attempt 1"),
        (2, "attempt 2"),
        (None, "after attempt 2"),
    ]
    assert sorted(r.ref for g in groups for r in g.rows) == sorted(r.ref for r in rows)
    for group in groups:
        assert all(row.attempt == group.attempt for row in group.rows)
        assert list(group.rows) == [r for r in rows if r.attempt == group.attempt]
    first, second = groups[0].rows, groups[1].rows
    assert first[-1].title.startswith("after attempt 1:")
    # The repair resolves S3's finding as rework just before attempt 2 starts.
    assert "attempt 2 started" in [r.title for r in second[:2]]
    assert group_by_attempt([]) == []


def test_a_running_attempt_starts_from_its_ledger_and_gathers_what_follows(
    demo: Layout,
) -> None:
    rows = unit_timeline(demo, "build-docs")
    started = next(r for r in rows if r.ref == "attempt-start:2")
    assert started.title == "attempt 2 started"
    assert started.detail.startswith("no end recorded")
    ack = next(r for r in rows if r.title == "obligation-acknowledged by alice")
    assert ack.attempt == 2
    assert ack.detail.endswith("mkdocs is being installed")
    assert [g.label for g in group_by_attempt(rows)] == ["attempt 1", "attempt 2"]


def test_an_intelligence_signal_appears_on_every_unit_it_affects(demo: Layout) -> None:
    for unit in ("clarify-api", "pick-storage", "survey-deps"):
        messages = filter_kinds(unit_timeline(demo, unit), ["message"])
        assert any(m.title.startswith("intelligence-signal from S4") for m in messages), unit


def test_every_row_of_every_unit_is_well_formed(demo: Layout) -> None:
    for unit in ExecutionStore(demo).units():
        rows = unit_timeline(demo, unit.unit_id)
        assert rows, unit.unit_id
        assert_time_ordered(rows)
        assert len({row.ref for row in rows}) == len(rows), unit.unit_id
        for row in rows:
            assert row.kind in KINDS
            assert row.title and "\n" not in row.title and "\n" not in row.detail
            json.dumps(row.record)  # expandable: the record is plain JSON
            assert parse_iso(row.at)


def test_readers_the_room_holds_give_the_same_timeline(demo: Layout) -> None:
    log = RegulatoryLog(demo)
    log.refresh()
    audit, store, memory, effects = (
        AuditLog(demo),
        ExecutionStore(demo),
        MemoryStore(demo),
        EffectJournal(demo),
    )
    for unit in ("fix-rounding", "publish-release", "flaky-import"):
        held = unit_timeline(
            demo, unit, log=log, audit=audit, store=store, memory=memory, effects=effects
        )
        assert held == unit_timeline(demo, unit)


def test_secrets_in_records_are_redacted_on_the_timeline(demo: Layout) -> None:
    rows = unit_timeline(demo, "survey-deps")
    opened = next(r for r in rows if "leaked" in r.detail)
    assert opened.redacted
    shown = json.dumps([[r.title, r.detail, r.record] for r in rows], ensure_ascii=False)
    assert CANARY not in shown
    assert GITHUB_TOKEN not in shown
    assert "GITHUB_TOKEN=«redacted»" in opened.record["obligation"]["question"]
    assert not any(r.redacted for r in unit_timeline(demo, "fix-rounding"))


def test_an_id_that_is_no_unit_id_is_refused_and_an_unknown_unit_is_empty(
    demo: Layout,
) -> None:
    with pytest.raises(InvalidUnitId):
        unit_timeline(demo, "../etc")
    assert unit_timeline(demo, "no-such-unit") == []


def test_a_fresh_instance_with_no_files_has_an_empty_timeline(tmp_path: Path) -> None:
    (tmp_path / ".regulator").mkdir()
    assert unit_timeline(Layout(tmp_path), "u") == []
