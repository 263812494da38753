"""Paths of an instance: every file of format.md, unit ids checked before any path is built."""

from __future__ import annotations

from pathlib import Path

import pytest

from regulator.store import (
    InvalidPathComponent,
    InvalidUnitId,
    Layout,
    find_instance,
    is_valid_unit_id,
    write_json_atomic,
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / ".regulator").mkdir()
    return tmp_path


def test_every_file_of_the_format_has_its_path(root: Path) -> None:
    layout = Layout(root, env={})
    state = root / ".regulator"
    assert layout.state == state
    assert layout.manifest == state / "instance.json"
    assert layout.signals == state / "signals.ndjson"
    assert layout.unit_record("u-1") == state / "units" / "u-1" / "unit.json"
    assert layout.contract("u-1", 3) == state / "units" / "u-1" / "contract.v3.json"
    assert layout.report("u-1", 2, 5) == state / "units" / "u-1" / "report.v2.a5.json"
    assert layout.attempts("u-1") == state / "units" / "u-1" / "attempts.ndjson"
    assert layout.decisions("u-1") == state / "units" / "u-1" / "decisions.ndjson"
    assert layout.observations("u-1") == state / "units" / "u-1" / "observations.ndjson"
    assert layout.budget("u-1", 4) == state / "units" / "u-1" / "budget.a4.json"
    assert layout.lease("u-1") == state / "leases" / "u-1.json"
    assert layout.worktree("u-1") == state / "worktrees" / "u-1"
    assert layout.audit == state / "audit.ndjson"
    assert layout.effects == state / "effects.ndjson"
    assert layout.memory == state / "memory.ndjson"
    assert layout.outbox == state / "outbox"
    assert layout.outbox_cursor == state / "outbox.cursor"
    assert layout.canaries == state / "canaries"
    assert layout.presence("box.local", 4242) == state / "presence" / "box.local-4242.json"
    assert layout.provenance == state / "provenance.ndjson"
    assert layout.receipts == state / "receipts.ndjson"
    assert layout.label(layout.signals) == ".regulator/signals.ndjson"


def test_regulator_outbox_moves_the_outbox_but_not_its_cursor(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "mail" / "outbox.txt"
    monkeypatch.setenv("REGULATOR_OUTBOX", str(elsewhere))
    layout = Layout(root)
    assert layout.outbox == elsewhere
    assert layout.outbox_cursor == root / ".regulator" / "outbox.cursor"
    monkeypatch.setenv("REGULATOR_OUTBOX", "")
    assert layout.outbox == root / ".regulator" / "outbox"


BAD_UNIT_IDS = ["../x", "/abs", "a/b", "..", ".", "", "a b", "a\x00b", "ü", "a\\b", "x\n"]


@pytest.mark.parametrize("unit_id", BAD_UNIT_IDS)
def test_a_unit_id_outside_the_pattern_is_refused_before_any_path_is_built(
    root: Path, unit_id: str
) -> None:
    layout = Layout(root, env={})
    before = sorted(p.name for p in (root / ".regulator").iterdir())
    builders = [
        layout.unit_dir,
        layout.unit_record,
        layout.attempts,
        layout.decisions,
        layout.observations,
        layout.lease,
        layout.worktree,
        lambda u: layout.contract(u, 1),
        lambda u: layout.report(u, 1, 1),
        lambda u: layout.budget(u, 1),
        layout.list_contract_versions,
    ]
    for build in builders:
        with pytest.raises(InvalidUnitId, match="invalid unit id"):
            build(unit_id)
    assert not is_valid_unit_id(unit_id)
    assert sorted(p.name for p in (root / ".regulator").iterdir()) == before


@pytest.mark.parametrize("unit_id", ["u1", "a.b", "A_b-9", "...", "x..y"])
def test_a_unit_id_inside_the_pattern_is_accepted(root: Path, unit_id: str) -> None:
    path = Layout(root, env={}).unit_record(unit_id)
    assert path.parent.parent == root / ".regulator" / "units"
    assert path.parent.name == unit_id


@pytest.mark.parametrize("bad", [0, -1, True, "1"])
def test_versions_and_attempts_must_be_positive_integers(root: Path, bad: object) -> None:
    layout = Layout(root, env={})
    with pytest.raises(InvalidPathComponent):
        layout.contract("u1", bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidPathComponent):
        layout.budget("u1", bad)  # type: ignore[arg-type]


def test_a_presence_host_with_a_slash_is_refused(root: Path) -> None:
    with pytest.raises(InvalidPathComponent, match="host name"):
        Layout(root, env={}).presence("../evil", 1)


def test_find_instance_walks_up_to_the_nearest_regulator_dir(root: Path) -> None:
    deep = root / "src" / "pkg"
    deep.mkdir(parents=True)
    (deep / "mod.py").write_text("")
    assert find_instance(deep) == root
    assert find_instance(deep / "mod.py") == root
    assert find_instance(root) == root
    layout = Layout.find(deep, env={})
    assert layout is not None and layout.root == root


def test_find_instance_is_none_outside_any_instance(tmp_path: Path) -> None:
    lone = tmp_path / "lone"
    lone.mkdir()
    # tmp_path's ancestors hold no .regulator/ on a test machine; guard the assumption.
    if any((parent / ".regulator").is_dir() for parent in lone.parents):
        pytest.skip("an ancestor of the temporary directory is an instance")
    assert find_instance(lone) is None


def test_listings_return_units_and_record_numbers_sorted(root: Path) -> None:
    layout = Layout(root, env={})
    for unit in ["b", "a"]:
        write_json_atomic(layout.unit_record(unit), {"unitId": unit})
    for version in [2, 1, 10]:
        write_json_atomic(layout.contract("a", version), {})
    write_json_atomic(layout.report("a", 1, 2), {})
    write_json_atomic(layout.budget("a", 3), {})
    (layout.units_dir / "stray-file").write_text("")
    (layout.units_dir / "c").symlink_to(layout.unit_dir("a"))
    assert layout.list_units() == ["a", "b"]
    assert layout.list_contract_versions("a") == [1, 2, 10]
    assert layout.list_reports("a") == [(1, 2)]
    assert layout.list_budgets("a") == [3]
    assert layout.list_units() == ["a", "b"]
    assert Layout(root / "nowhere", env={}).list_presence() == []
