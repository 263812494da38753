"""Operational memory: the store's rules, and the `memory` commands as a person runs them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from regulator.policy import load_definition
from regulator.protocol.clock import iso
from regulator.rules.ledger import Actor
from regulator.rules.memory_store import MemoryRefusal, MemoryStore, retract_memory
from regulator.store import Layout

from .conftest import cli, run_cli

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
POLICY = load_definition(None).interaction


class Clock:
    def __init__(self, moment: datetime) -> None:
        self.moment = moment

    def __call__(self) -> datetime:
        return self.moment


def store_at(root: Path, moment: datetime) -> MemoryStore:
    (root / ".regulator").mkdir(exist_ok=True)
    return MemoryStore(Layout(root), Clock(moment))


def remember(store: MemoryStore, subject: str, days: float, scope: list[str] | None = None) -> str:
    review = iso(store.clock() + timedelta(days=days))
    entry = store.record(
        subject=subject, note=f"{subject} holds", recorded_by="S1", review_by=review, scope=scope
    )
    return entry.id


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in (root / ".regulator").rglob("*") if p.is_file()}


# -- the store ----------------------------------------------------------------------------------


def test_a_review_by_date_in_the_past_is_refused_with_the_originals_text(tmp_path: Path) -> None:
    store = store_at(tmp_path, T0)
    with pytest.raises(MemoryRefusal) as refused:
        store.record(subject="s", note="n", recorded_by="S1", review_by="2026-03-01T00:00:00.000Z")
    assert str(refused.value) == (
        "reviewBy 2026-03-01T00:00:00.000Z is not in the future; "
        "a fact that is already stale is not worth remembering"
    )
    # Now itself is not the future either.
    with pytest.raises(MemoryRefusal, match="is not in the future"):
        store.record(subject="s", note="n", recorded_by="S1", review_by=iso(T0))
    assert not (tmp_path / ".regulator" / "memory.ndjson").exists()


def test_a_review_by_date_more_than_90_days_out_is_refused_with_the_originals_text(
    tmp_path: Path,
) -> None:
    store = store_at(tmp_path, T0)
    late = iso(T0 + timedelta(days=90, milliseconds=1))
    with pytest.raises(MemoryRefusal) as refused:
        store.record(subject="s", note="n", recorded_by="S1", review_by=late)
    assert str(refused.value) == (
        f"reviewBy {late} is more than 90 days out; operational memory is reviewed, not "
        "permanent — identity is proposed, not remembered"
    )
    # Exactly 90 days is allowed, and a date-only value is normalised to the stored format.
    entry = store.record(
        subject="s", note="n", recorded_by="S1", review_by=iso(T0 + timedelta(days=90))
    )
    assert entry.review_by == "2026-05-31T09:00:00.000Z"
    assert (
        store.record(subject="d", note="n", recorded_by="S1", review_by="2026-04-01").review_by
        == "2026-04-01T00:00:00.000Z"
    )


def test_a_review_by_that_is_not_a_date_is_refused(tmp_path: Path) -> None:
    with pytest.raises(MemoryRefusal, match='reviewBy "next spring" is not a date'):
        store_at(tmp_path, T0).record(
            subject="s", note="n", recorded_by="S1", review_by="next spring"
        )


def test_an_entry_its_record_refuses_is_a_refusal_naming_the_field_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    store = store_at(tmp_path, T0)
    before = snapshot(tmp_path)
    review = iso(T0 + timedelta(days=3))
    with pytest.raises(MemoryRefusal, match=r"memory entry refused: .*subject"):
        store.record(subject="", note="n", recorded_by="S1", review_by=review)
    assert snapshot(tmp_path) == before


def test_an_entry_is_current_until_its_review_date_then_expired(tmp_path: Path) -> None:
    store = store_at(tmp_path, T0)
    short = remember(store, "short", 1)
    long = remember(store, "long", 30)
    line = json.loads((tmp_path / ".regulator" / "memory.ndjson").read_text().splitlines()[0])
    assert line["type"] == "memory-recorded"
    assert set(line["entry"]) == {
        "id",
        "subject",
        "note",
        "evidence",
        "recordedBy",
        "recordedAt",
        "reviewBy",
    }  # no scope, unit or revision when none was given
    later = {s.id: s.status for s in store.states(T0 + timedelta(days=2))}
    assert later == {short: "expired", long: "current"}
    assert [s.id for s in store.current(now=T0 + timedelta(days=2))] == [long]


def test_current_for_a_unit_type_keeps_unscoped_entries_and_those_scoped_to_it(
    tmp_path: Path,
) -> None:
    store = store_at(tmp_path, T0)
    everyone = remember(store, "everyone", 5)
    ingest = remember(store, "ingest only", 5, scope=["ingest"])
    remember(store, "report only", 5, scope=["report"])
    assert [s.id for s in store.current("ingest")] == [everyone, ingest]
    assert len(store.current()) == 3


def test_retract_by_prefix_then_again_is_refused(tmp_path: Path) -> None:
    store = store_at(tmp_path, T0)
    mid = remember(store, "mirror", 5)
    event = store.retract(mid[:6], "alice", "the mirror moved")
    assert event.memory_id == mid
    (state,) = store.states()
    assert state.status == "retracted"
    assert state.retraction is not None and state.retraction.reason == "the mirror moved"
    before = (tmp_path / ".regulator" / "memory.ndjson").read_bytes()
    with pytest.raises(MemoryRefusal) as refused:
        store.retract(mid, "alice", "again")
    assert str(refused.value) == f"memory entry {mid} is already retracted"
    assert (tmp_path / ".regulator" / "memory.ndjson").read_bytes() == before


def test_an_expired_entry_can_still_be_retracted(tmp_path: Path) -> None:
    store = store_at(tmp_path, T0)
    mid = remember(store, "old", 1)
    store.clock = Clock(T0 + timedelta(days=3))
    store.retract(mid, "alice", "wrong all along")
    assert store.states()[0].status == "retracted"


def test_retract_refuses_an_unknown_id_and_an_ambiguous_prefix(tmp_path: Path) -> None:
    store = store_at(tmp_path, T0)
    for suffix in ("1", "2"):
        entry = {
            "id": f"abc{suffix}",
            "subject": "s",
            "note": "n",
            "evidence": [],
            "recordedBy": "S1",
            "recordedAt": iso(T0),
            "reviewBy": iso(T0 + timedelta(days=5)),
        }
        with (tmp_path / ".regulator" / "memory.ndjson").open("a") as f:
            f.write(json.dumps({"type": "memory-recorded", "entry": entry}) + "\n")
    with pytest.raises(MemoryRefusal, match='no memory entry "zzz"'):
        store.retract("zzz", "alice", "r")
    with pytest.raises(MemoryRefusal, match=r'^"abc" matches 2 entries$'):
        store.retract("abc", "alice", "r")
    assert store.retract("abc2", "alice", "r").memory_id == "abc2"


def test_retract_by_a_person_not_listed_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    store = store_at(tmp_path, T0)
    mid = remember(store, "a", 5)
    before = snapshot(tmp_path)
    with pytest.raises(MemoryRefusal, match='"mallory" is not a person'):
        retract_memory(store, POLICY, mid, "mallory", Actor("cli", "tester"), "r")
    assert snapshot(tmp_path) == before


def test_bad_lines_and_unknown_retractions_are_problems_not_failures(tmp_path: Path) -> None:
    store = store_at(tmp_path, T0)
    mid = remember(store, "kept", 5)
    with (tmp_path / ".regulator" / "memory.ndjson").open("a") as f:
        f.write("{not json\n")
        f.write(
            json.dumps(
                {
                    "type": "memory-retracted",
                    "id": "r1",
                    "memoryId": "ghost",
                    "by": "alice",
                    "at": iso(T0),
                    "reason": "r",
                }
            )
            + "\n"
        )
    fresh = MemoryStore(Layout(tmp_path), Clock(T0))
    assert [s.id for s in fresh.states()] == [mid]
    problems = [str(p) for p in fresh.problems]
    assert problems[0].startswith(".regulator/memory.ndjson:2: not JSON")
    assert problems[1] == ".regulator/memory.ndjson:3: retraction of unknown entry ghost"


# -- the CLI ------------------------------------------------------------------------------------


def seed(instance: Path) -> tuple[str, str, str]:
    """One current, one expired and one retracted entry, relative to the real clock."""
    now = datetime.now(UTC)
    store = MemoryStore(Layout(instance), Clock(now - timedelta(days=10)))
    expired = store.record(
        subject="cache",
        note="the cache is warm",
        recorded_by="S1",
        unit="u1",
        revision="0123456789abcdef",
        review_by=iso(now - timedelta(days=1)),
    ).id
    retracted = remember(store, "mirror", 60)
    store.retract(retracted, "alice", "the mirror moved")
    current = remember(store, "ports", 60)
    return current, expired, retracted


def test_memory_lists_current_entries_with_the_originals_line_and_footer(instance: Path) -> None:
    result = run_cli("memory", cwd=instance)
    assert (result.returncode, result.stdout) == (0, "no memory recorded\n0 shown of 0\n")
    current, _, _ = seed(instance)
    result = cli("memory", cwd=instance)
    assert result.returncode == 0, result.stderr
    store = MemoryStore(Layout(instance))
    entry = next(s.entry for s in store.states() if s.id == current)
    assert result.stdout.splitlines() == [
        f"current   {current[:8]}  ports: ports holds  (by S1, {entry.recorded_at[:10]} → "
        f"review {entry.review_by[:10]})",
        "1 shown of 3",
    ]


def test_memory_all_shows_expired_and_retracted_entries_with_the_retraction(
    instance: Path,
) -> None:
    current, expired, retracted = seed(instance)
    result = cli("memory", "--all", cwd=instance)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(
        f"expired   {expired[:8]}  cache: the cache is warm  (by S1 in u1 @0123456, "
    )
    assert lines[1].startswith(f"retracted {retracted[:8]}  mirror: mirror holds  (by S1, ")
    assert lines[2] == "          retracted by alice: the mirror moved"
    assert lines[3].startswith(f"current   {current[:8]}  ports")
    assert lines[4] == "3 shown of 3"
    data = json.loads(cli("memory", "--all", "--json", cwd=instance).stdout)
    assert [d["status"] for d in data] == ["expired", "retracted", "current"]
    assert data[1]["retraction"]["by"] == "alice"
    assert data[0]["recordedBy"] == "S1" and data[0]["unit"] == "u1"


def test_memory_retract_records_the_retraction_and_its_provenance(instance: Path) -> None:
    current, _, _ = seed(instance)
    result = cli(
        "memory", "retract", current[:8], "--by", "bob", "--reason", "ports changed", cwd=instance
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"memory {current[:8]} retracted by bob: ports changed\n"
    last = json.loads((instance / ".regulator" / "memory.ndjson").read_text().splitlines()[-1])
    assert (last["type"], last["memoryId"], last["by"]) == ("memory-retracted", current, "bob")
    provenance = (instance / ".regulator" / "provenance.ndjson").read_text().splitlines()
    assert json.loads(provenance[-1])["eventId"] == last["id"]
    assert json.loads(provenance[-1])["via"] == "cli"
    shown = cli("memory", cwd=instance).stdout
    assert shown == "nothing current; --all shows expired and retracted entries\n0 shown of 3\n"


def test_memory_retract_twice_is_refused_and_leaves_every_file_unchanged(instance: Path) -> None:
    _, _, retracted = seed(instance)
    before = snapshot(instance)
    result = cli("memory", "retract", retracted, "--by", "alice", "--reason", "again", cwd=instance)
    assert result.returncode == 1
    assert result.stderr == f"regulator: memory entry {retracted} is already retracted\n"
    assert snapshot(instance) == before


def test_memory_retract_by_a_name_not_listed_is_refused(instance: Path) -> None:
    current, _, _ = seed(instance)
    before = snapshot(instance)
    result = cli("memory", "retract", current, "--by", "zed", "--reason", "r", cwd=instance)
    assert result.returncode == 1
    assert result.stderr == (
        'regulator: "zed" is not a person the interaction policy (interaction v1) names; '
        "a name not listed may disposition nothing\n"
    )
    assert snapshot(instance) == before


def test_a_note_holding_a_terminal_escape_is_shown_as_text(instance: Path) -> None:
    store = MemoryStore(Layout(instance))
    store.record(
        subject="x",
        note="\x1b]52;c;aGk=\x07 done",
        recorded_by="S1",
        review_by=iso(datetime.now(UTC) + timedelta(days=3)),
    )
    out = cli("memory", cwd=instance).stdout
    assert "\x1b" not in out and "\\x1b]52;c;aGk=\\x07 done" in out


def test_a_person_recording_a_fact_gets_a_provenance_line_naming_the_entry(
    tmp_path: Path,
) -> None:
    store = store_at(tmp_path, T0)
    entry = store.record(
        subject="s",
        note="n",
        recorded_by="alice",
        review_by=iso(T0 + timedelta(days=3)),
        actor=Actor("mcp", "tester"),
    )
    (line,) = (tmp_path / ".regulator" / "provenance.ndjson").read_text().splitlines()
    assert json.loads(line)["eventId"] == entry.id
    assert json.loads(line)["via"] == "mcp"
