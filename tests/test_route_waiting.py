"""A unit waiting on its recovery decision is not routed again: the second `unit route` says so
and writes nothing (no occurrence 4, no second wait)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from regulator.host.demo import contract

from .conftest import cli
from .test_loop import SILENT, loop_for, project, with_policy, write_contract, write_scenario

__all__ = ["project"]  # the fixture, used here as in test_loop


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in (root / ".regulator").rglob("*") if p.is_file()}


def always_retry(d: dict[str, Any]) -> None:
    d["rules"] = [{"cause": "no-report", "actions": ["retry"]}]


def waiting_unit(project: Path) -> str:
    """u2: retried to its attempt ceiling, then escalated; it waits on a recovery decision."""
    with_policy(project, "recovery", always_retry)
    work = write_contract(project, "u2")
    scenario = write_scenario(project, "silent", {"attempts": [SILENT]})
    driven = cli("unit", "drive", str(work), "--script", str(scenario), cwd=project)
    assert driven.returncode == 1 and "escalate" in driven.stdout, driven.stdout + driven.stderr
    return "u2"


def test_a_second_unit_route_on_a_unit_waiting_on_its_recovery_decision_writes_nothing(
    project: Path,
) -> None:
    unit = waiting_unit(project)
    loop = loop_for(project, {"attempts": [SILENT]})
    [wait] = [o for o in loop.owed(unit) if o.concern == "recovery-decision"]
    before = snapshot(project)
    for _ in range(2):
        routed = cli("unit", "route", unit, cwd=project)
        assert routed.returncode == 0, routed.stderr
        assert routed.stdout == (
            f"unit {unit} already waits on its recovery decision (obligation {wait.id[:8]}, "
            f"owed to {wait.consumer}); nothing routed\n"
        )
        assert snapshot(project) == before
    assert [d.occurrence for d in loop.store.decisions(unit)] == [1, 2, 3]


def test_the_loop_does_not_decide_again_for_a_unit_waiting_on_its_recovery_decision(
    project: Path,
) -> None:
    with_policy(project, "recovery", always_retry)
    loop = loop_for(project, {"attempts": [SILENT]})
    driven = loop.drive(contract("u3", "x"))
    assert driven.decisions[-1].action == "escalate"
    before = snapshot(project)
    assert loop.route("u3") is None
    assert snapshot(project) == before
    assert len([o for o in loop.owed("u3") if o.concern == "recovery-decision"]) == 1


def test_once_the_recovery_decision_is_resolved_the_unit_can_be_routed_again(
    project: Path,
) -> None:
    unit = waiting_unit(project)
    loop = loop_for(project, {"attempts": [SILENT]})
    [wait] = [o for o in loop.owed(unit) if o.concern == "recovery-decision"]
    done = cli(
        "obligation", "resolve", wait.id, "--by", "alice", "--disposition", "rework",
        "--rationale", "try again", cwd=project,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    routed = cli("unit", "route", unit, cwd=project)
    assert "already waits" not in routed.stdout
    assert "occurrence 4" in routed.stdout
