"""Replan: a person writes the contract's next version, and the loop goes on under it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from regulator.host.loop import Loop
from regulator.protocol.execution import WorkContract
from regulator.rules.execution import ExecutionError, check_replan, contract_changes
from regulator.rules.ledger import Actor
from regulator.store import Layout
from regulator.views.timeline import contract_versions, unit_timeline

from .conftest import cli, git
from .test_loop import SILENT, contract_with, loop_for, project, with_policy, write_scenario

__all__ = ["project"]  # the fixture, shared with the loop's tests

ALICE = Actor("cli")
FIXED = [
    {
        "id": "d1",
        "subject": "the parser",
        "decision": "hand-written",
        "authorityRef": "human:alice",
    }
]
CLOSES: dict[str, Any] = {
    "steps": [
        {"edit": {"path": "notes.txt", "content": "done\n"}},
        {"commit": "notes"},
        {"report": {"summary": "done under the new plan"}},
    ]
}


def replan_first(policy: dict[str, Any]) -> None:
    policy["rules"] = [{"cause": "no-report", "actions": ["replan"]}]


def policy_committed(root: Path, kind: str, change: Any) -> None:
    """The repository's own policy, committed: an untracked file would keep the base dirty."""
    with_policy(root, kind, change)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", f"{kind} policy")


def v2_of(v1: WorkContract, **changes: Any) -> WorkContract:
    data = v1.to_json_dict()
    data["version"] = 2
    data["provenance"] = {
        **data["provenance"],
        "predecessor": {"version": 1, "reason": "the parser needs a grammar"},
    }
    data.update(changes)
    return WorkContract.from_json_dict(data)


def test_a_replan_decision_then_unit_replan_and_drive_close_the_unit_under_version_2(
    project: Path,
) -> None:
    policy_committed(project, "recovery", replan_first)
    v1 = contract_with("parser", fixed=FIXED)
    v1_path = project.parent / "parser.v1.json"
    v1_path.write_text(json.dumps(v1.to_json_dict()))
    reports_d2 = {
        "steps": [
            *CLOSES["steps"][:2],
            {
                "report": {
                    "summary": "parsed with a grammar",
                    "delegatedResults": [{"decisionId": "d2", "choice": "re"}],
                }
            },
        ]
    }
    script = write_scenario(project, "parser", {"attempts": [SILENT, reports_d2]})

    first = cli("unit", "drive", str(v1_path), "--script", str(script), cwd=project)
    assert first.returncode == 1
    assert "no-report → replan" in first.stdout
    assert "unit parser: replan (no-report)" in first.stdout

    # The edited contract: the objective changes, d1 is carried, a delegated decision comes.
    edited = v1.to_json_dict()
    edited["objective"] = "parse with a grammar"
    edited["delegated"] = [{"id": "d2", "subject": "the grammar tool", "bounds": "stdlib"}]
    v2_path = project.parent / "parser.v2.json"
    v2_path.write_text(json.dumps(edited))
    replanned = cli(
        "unit",
        "replan",
        "parser",
        "--contract",
        str(v2_path),
        "--by",
        "alice",
        "--reason",
        "a grammar, not a hand-written parser",
        "--no-drive",
        cwd=project,
    )
    assert replanned.returncode == 0, replanned.stderr + replanned.stdout
    assert "unit parser: parser-c v2 replaces v1" in replanned.stdout
    assert "+ delegated d2" in replanned.stdout
    assert "as replan" in replanned.stdout

    layout = Layout(project)
    loop = Loop(layout, loop_for(project, {"attempts": [SILENT]}).definition)
    written = loop.store.contract("parser", 2)
    assert written is not None and written.provenance.predecessor is not None
    assert written.provenance.predecessor.version == 1
    assert written.provenance.predecessor.reason == "a grammar, not a hand-written parser"
    assert loop.store.unit("parser").contract.version == 2
    (wait,) = [
        o
        for o in loop.log.obligations.values()
        if o.unit == "parser" and o.concern == "recovery-decision"
    ]
    assert (wait.status, wait.closed_by, wait.disposition) == ("resolved", "alice", "replan")

    # The new version is what `unit drive` runs now, with the replan told to the attempt.
    v2_file = project.parent / "parser.v2.written.json"
    v2_file.write_text(json.dumps(written.to_json_dict()))
    driven = cli("unit", "drive", str(v2_file), "--script", str(script), cwd=project)
    assert driven.returncode == 0, driven.stdout + driven.stderr
    assert "unit parser closed" in driven.stdout
    attempts = loop.store.attempts("parser")
    assert [(a.attempt, a.contract_version) for a in attempts] == [(1, 1), (2, 2)]
    prompt = (layout.unit_dir("parser") / "prompt.a2.md").read_text()
    assert "resolved by alice as replan" in prompt
    assert "parse with a grammar" in prompt
    assert "done" in (project / "notes.txt").read_text()

    # The inspector's data: both versions, and what changed between them.
    rows = [r for r in unit_timeline(layout, "parser") if r.kind == "contract"]
    assert [r.title for r in rows] == ["contract parser-c v1", "contract parser-c v2"]
    assert "replans v1: a grammar, not a hand-written parser" in rows[1].detail
    assert "+ delegated d2" in rows[1].detail
    versions = contract_versions(layout, "parser")
    assert [(v.contract.version, v.replaces) for v in versions] == [(1, None), (2, 1)]
    assert "objective: 'objective of parser' → 'parse with a grammar'" in versions[1].changes


def test_a_decision_dropped_or_changed_without_being_named_is_refused_by_the_replan_gate() -> None:
    v1 = contract_with("u", fixed=FIXED)
    dropped = v2_of(v1, fixed=[])
    (problem,) = check_replan(v1, dropped)
    assert problem.path == "fixed" and 'decision "d1" of v1 is dropped' in str(problem)
    changed = v2_of(v1, fixed=[{**FIXED[0], "decision": "generated"}])
    assert 'decision "d1" of v1 is changed' in str(check_replan(v1, changed)[0])
    # Named in the reason, the same change is a revisit, and passes.
    named = v2_of(v1, fixed=[])
    named = WorkContract.from_json_dict(
        {
            **named.to_json_dict(),
            "provenance": {
                **named.to_json_dict()["provenance"],
                "predecessor": {"version": 1, "reason": "d1 no longer holds: generated"},
            },
        }
    )
    assert check_replan(v1, named) == []
    assert contract_changes(v1, named) == ["- fixed d1"]


def test_a_replan_keeps_the_unit_and_the_workload_and_names_its_predecessor() -> None:
    v1 = contract_with("u")
    other_unit = v2_of(v1, unitId="w")
    assert any(p.path == "unitId" for p in check_replan(v1, other_unit))
    other_workload = v2_of(v1, workload={"name": "elsewhere", "version": 1})
    assert any(p.path == "workload" for p in check_replan(v1, other_workload))
    no_predecessor = WorkContract.from_json_dict({**v1.to_json_dict(), "version": 2})
    assert [p.path for p in check_replan(v1, no_predecessor)] == ["provenance.predecessor"]
    same_version = v2_of(v1, version=1)
    assert any(p.path == "version" for p in check_replan(v1, same_version))


def _state(root: Path) -> dict[str, bytes]:
    state = root / ".regulator"
    return {
        str(p.relative_to(state)): p.read_bytes()
        for p in sorted(state.rglob("*"))
        if p.is_file() and "worktrees" not in p.parts and p.suffix in (".json", ".ndjson")
    }


def test_a_refused_replan_writes_nothing(project: Path) -> None:
    policy_committed(project, "recovery", replan_first)
    v1 = contract_with("p2", fixed=FIXED)
    loop = loop_for(project, {"attempts": [SILENT]})
    loop.drive(v1)
    before = _state(project)
    dropped = v1.to_json_dict()
    dropped["fixed"] = []
    path = project.parent / "p2.v2.json"
    path.write_text(json.dumps(dropped))
    refused = cli(
        "unit", "replan", "p2", "--contract", str(path), "--by", "alice", "--reason", "x",
        cwd=project,
    )  # fmt: skip
    assert refused.returncode == 1
    assert 'decision "d1" of v1 is dropped' in refused.stdout
    assert "the replan of unit p2 is refused" in refused.stderr
    ok = project.parent / "p2.ok.json"
    ok.write_text(json.dumps(v1.to_json_dict()))
    mallory = cli(
        "unit", "replan", "p2", "--contract", str(ok), "--by", "mallory", "--reason", "x",
        cwd=project,
    )  # fmt: skip
    assert mallory.returncode == 1
    assert "mallory" in mallory.stderr and "not a person" in mallory.stderr
    assert _state(project) == before


def test_after_a_replan_the_attempt_ceiling_counts_the_new_versions_attempts(
    project: Path,
) -> None:
    def retry_then_replan(policy: dict[str, Any]) -> None:
        policy["rules"] = [{"cause": "no-report", "actions": ["retry", "retry", "replan"]}]

    policy_committed(project, "recovery", retry_then_replan)
    v1 = contract_with("p3")
    loop = loop_for(project, {"attempts": [SILENT, SILENT, SILENT, CLOSES]})
    driven = loop.drive(v1)
    assert [d.action for d in driven.decisions] == ["retry", "retry", "replan"]
    assert loop.store.unit("p3").attempts == 3  # the whole ceiling, under v1
    done = loop.replan("p3", v1, "alice", ALICE, reason="smaller steps")
    assert done.contract.version == 2 and done.resolved is not None
    assert loop.attempts_under_contract(loop.store.unit("p3")) == 0
    closed = loop.drive(done.contract)
    assert closed.outcome.status == "closed", closed.outcome
    assert git(project, "log", "-1", "--format=%s").strip() == "Reintegrate unit/p3"
    # The old version is not driven again.
    again = loop_for(project, {"attempts": [SILENT]})
    assert "was replanned" in " ".join(again.gate(v1))


def test_a_replan_is_refused_for_a_unit_that_is_not_blocked(project: Path) -> None:
    v1 = contract_with("p4")
    loop = loop_for(project, {"attempts": [CLOSES]})
    assert loop.drive(v1).outcome.status == "closed"
    with pytest.raises(ExecutionError, match="p4 is closed; only a blocked unit is replanned"):
        loop.replan("p4", v1, "alice", ALICE, reason="late")
