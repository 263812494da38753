"""``--json`` on the commands that act: one object on stdout saying what was done; a refusal is
its stderr line and exit code, with nothing on stdout. The remote room reads these objects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from regulator.cli.main import main
from regulator.store import Layout

from .conftest import cli, git, run_cli
from .test_cli_obligations import ask_one, open_one, snapshot
from .test_identity import NEW_INVARIANTS, OLD_INVARIANTS, head
from .test_identity import open_obligation as open_proposal
from .test_identity import snapshot as identity_snapshot
from .test_loop import SILENT, contract_with, project, write_contract, write_scenario
from .test_memory import seed
from .test_remediate_clarify import driven_once, first_is
from .test_replan import CLOSES, FIXED, policy_committed
from .test_route_waiting import waiting_unit

__all__ = ["project"]  # the fixture, shared with the loop's tests


def act(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> tuple[int, str, str]:
    """``regulator ARGS --instance ROOT`` in this process: (exit code, stdout, stderr)."""
    capsys.readouterr()
    code = main([*args, "--instance", str(root)])
    out, err = capsys.readouterr()
    return code, out, err


def done(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> dict[str, Any]:
    code, out, err = act(capsys, root, *args, "--json")
    assert code == 0, err
    value = json.loads(out)  # one object, nothing else on stdout
    assert isinstance(value, dict)
    return value


def test_ack_json_is_the_obligation_as_it_is_now(
    instance: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    oid = open_one(instance)
    got = done(capsys, instance, "obligation", "ack", oid[:8], "--by", "bob", "--note", "seen")
    assert got["act"] == "acknowledge"
    assert got["obligation"]["id"] == oid and got["obligation"]["status"] == "acknowledged"
    assert got["obligation"]["acknowledgedBy"] == ["bob"]
    assert got["obligation"]["history"][-1]["note"] == "seen"


def test_resolve_json_says_what_follows_for_the_unit(
    instance: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    oid = open_one(instance)
    got = done(
        capsys,
        instance,
        "obligation",
        "resolve",
        oid,
        "--by",
        "alice",
        "--disposition",
        "no-action",
        "--rationale",
        "fine",
    )
    assert got["act"] == "resolve"
    assert got["obligation"]["status"] == "resolved"
    assert got["obligation"]["disposition"] == "no-action"
    assert got["obligation"]["closedBy"] == "alice"
    assert got["next"] == "unit u1 may proceed if nothing else is owed on it"
    # Nothing held: nothing follows, said as null rather than left out.
    free = open_one(instance, unit=None)
    got = done(
        capsys,
        instance,
        "obligation",
        "resolve",
        free,
        "--by",
        "alice",
        "--disposition",
        "no-action",
        "--rationale",
        "fine",
    )
    assert got["next"] is None


def test_escalate_json_names_the_successor_and_the_person(
    instance: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    oid = open_one(instance)
    got = done(
        capsys,
        instance,
        "obligation",
        "escalate",
        oid,
        "--by",
        "alice",
        "--to",
        "human",
        "--person",
        "bob",
        "--rationale",
        "yours",
    )
    assert got["act"] == "escalate"
    assert got["obligation"]["id"] == oid and got["obligation"]["status"] == "escalated"
    successor = got["successor"]
    assert got["obligation"]["successor"] == successor["id"]
    assert successor["status"] == "open" and successor["consumer"] == "human"
    assert got["person"] == "bob"
    line = json.loads((instance / ".regulator" / "addressees.ndjson").read_text())
    assert line["obligationId"] == successor["id"] and line["person"] == "bob"
    got = done(
        capsys,
        instance,
        "obligation",
        "escalate",
        successor["id"],
        "--by",
        "alice",
        "--to",
        "S3",
        "--rationale",
        "back",
    )
    assert got["person"] is None and got["successor"]["consumer"] == "S3"


def test_answer_json_is_the_answer_its_disposition_and_the_next_step(
    instance: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    oid = ask_one(instance, "consent", action="push to production")
    got = done(
        capsys, instance, "answer", oid[:8], "--by", "alice", "--answer", "Yes", "--note", "ok"
    )
    assert got["act"] == "answer"
    assert got["kind"] == "consent" and got["disposition"] == "accepted"
    assert got["answer"] == "Yes — ok"  # as recorded: the word, then the note
    assert got["obligation"]["id"] == oid and got["obligation"]["status"] == "resolved"
    assert got["next"] == (
        "unit u1 may proceed if nothing else is owed on it, and the next attempt carries the answer"
    )


def _refusals(oid: str) -> list[list[str]]:
    return [
        ["answer", oid, "--by", "alice", "--answer", "ok"],
        ["obligation", "ack", oid, "--by", "alice"],
        [
            "obligation",
            "resolve",
            oid,
            "--by",
            "alice",
            "--disposition",
            "fixed",
            "--rationale",
            "again",
        ],
        ["obligation", "escalate", oid, "--by", "alice", "--to", "S3", "--rationale", "again"],
    ]


@pytest.mark.parametrize("which", range(4), ids=["answer", "ack", "resolve", "escalate"])
def test_a_refused_act_with_json_prints_nothing_on_stdout_and_writes_nothing(
    instance: Path, capsys: pytest.CaptureFixture[str], which: int
) -> None:
    oid = ask_one(instance, "clarification")
    assert done(capsys, instance, "answer", oid, "--by", "alice", "--answer", "done")
    before = snapshot(instance)
    # Every act on an obligation already closed is refused.
    code, out, err = act(capsys, instance, *_refusals(oid)[which], "--json")
    assert code == 1 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("regulator: ")
    assert snapshot(instance) == before


def test_bad_usage_with_json_prints_nothing_on_stdout(
    instance: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    oid = open_one(instance)
    code, out, err = act(
        capsys, instance, "obligation", "resolve", oid, "--by", "alice",
        "--disposition", "maybe", "--rationale", "x", "--json",
    )  # fmt: skip
    assert code == 2 and out == "" and "--disposition" in err


def test_act_json_from_a_shell_is_one_object(instance: Path) -> None:
    # One real process: what the remote room runs over ssh, stdout is exactly the object.
    oid = open_one(instance)
    result = run_cli("obligation", "ack", oid, "--by", "bob", "--json", cwd=instance)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["obligation"]["status"] == "acknowledged"
    assert result.stderr == ""


def test_memory_retract_json_is_the_retraction_and_a_refusal_prints_nothing(
    instance: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    current, _, retracted = seed(instance)
    got = done(
        capsys, instance, "memory", "retract", current[:8], "--by", "bob", "--reason", "moved"
    )
    assert got["act"] == "retract"
    assert got["retraction"]["memoryId"] == current and got["retraction"]["by"] == "bob"
    last = json.loads((instance / ".regulator" / "memory.ndjson").read_text().splitlines()[-1])
    assert got["retraction"] == last
    before = snapshot(instance)
    code, out, err = act(
        capsys, instance, "memory", "retract", retracted, "--by", "bob", "--reason", "x", "--json"
    )
    assert (code, out) == (1, "") and "already retracted" in err
    assert snapshot(instance) == before


def test_identity_accept_json_names_the_commit_and_reject_the_obligation(
    instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = instance  # with an identity file committed, as tests/test_identity.py's base
    (base / "regulator" / "identity").mkdir(parents=True)
    (base / "regulator" / "identity" / "INVARIANTS.md").write_text(OLD_INVARIANTS)
    git(base, "add", "regulator")
    git(base, "commit", "-q", "-m", "identity seed")
    proposal_file = tmp_path / "proposed.md"  # outside the repository: the checkout stays clean
    proposal_file.write_text(NEW_INVARIANTS)
    oid = open_proposal(base)
    got = done(
        capsys, base, "identity", "accept", oid[:8], "--by", "alice", "--file", "INVARIANTS.md",
        "--from", str(proposal_file), "--rationale", "agreed",
    )  # fmt: skip
    assert got["act"] == "accept-proposal"
    assert got["obligation"]["id"] == oid and got["obligation"]["disposition"] == "accepted"
    assert got["path"] == "regulator/identity/INVARIANTS.md"
    assert got["commit"] == head(base) and got["branch"]
    other = open_proposal(base)
    got = done(capsys, base, "identity", "reject", other, "--by", "alice", "--rationale", "no")
    assert got == {"act": "reject-proposal", "obligation": got["obligation"]}
    assert got["obligation"]["disposition"] == "rejected"
    before = identity_snapshot(base)
    code, out, err = act(
        capsys, base, "identity", "reject", other, "--by", "alice", "--rationale", "x", "--json"
    )
    assert (code, out) == (1, "") and "terminal records do not reopen" in err
    assert identity_snapshot(base) == before


# --- the acting unit commands: drive, dispatch, close, accept, route, replan, remediate ---------


def unit_json(root: Path, *args: str, code: int = 0) -> dict[str, Any]:
    """``regulator ARGS --json`` run in this process: stdout is exactly one JSON object."""
    result = cli(*args, "--json", cwd=root)
    assert result.returncode == code, result.stdout + result.stderr
    value = json.loads(result.stdout)  # one object, no progress line before it
    assert isinstance(value, dict)
    return value


def unit_refused(root: Path, *args: str) -> str:
    """A refusal with ``--json``: exit 1, nothing on stdout, nothing written; its stderr."""
    before = unit_files(root)
    result = cli(*args, "--json", cwd=root)
    assert (result.returncode, result.stdout) == (1, ""), result.stdout + result.stderr
    assert result.stderr.startswith("regulator: ")
    assert unit_files(root) == before
    return result.stderr


def unit_files(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in (root / ".regulator").rglob("*") if p.is_file()}


def test_unit_drive_json_is_the_unit_its_contract_how_it_ended_and_the_decisions(
    project: Path,
) -> None:
    closes = write_contract(project, "d1")
    script = write_scenario(project, "closes", {"attempts": [CLOSES]})
    got = unit_json(project, "unit", "drive", str(closes), "--script", str(script))
    assert got["act"] == "drive" and got["unit"] == "d1"
    assert got["contract"] == {"id": "d1-c", "version": 1}
    assert got["status"] == "closed" and got["merged"] == git(project, "rev-parse", "HEAD").strip()
    assert (got["decisions"], got["owed"], got["problems"]) == ([], [], [])
    # Ended blocked: the decisions made on the way and what the unit is owed, exit 1 as without.
    driven_to_replan = write_contract(project, "d2")
    policy_committed(project, "recovery", first_is("replan"))
    silent = write_scenario(project, "silent", {"attempts": [SILENT]})
    got = unit_json(
        project, "unit", "drive", str(driven_to_replan), "--script", str(silent), code=1
    )
    assert got["status"] == "blocked"
    assert got["reason"] == "the unit ended without calling report_result"
    [decision] = got["decisions"]
    assert (decision["cause"], decision["action"], decision["unitId"]) == (
        "no-report",
        "replan",
        "d2",
    )
    assert [o["concern"] for o in got["owed"]] == ["recovery-decision"]
    # Refused by the gate: the problem on stderr, nothing on stdout.
    again = unit_refused(project, "unit", "drive", str(closes), "--script", str(script))
    assert "d1" in again


def test_unit_dispatch_json_then_close_json_once_the_work_passes(project: Path) -> None:
    broken = {
        "steps": [
            {"edit": {"path": "calc.py", "content": "def add(a, b):\n    return a - b\n"}},
            {"commit": "subtract"},
            {"report": {"summary": "done"}},
        ]
    }
    script = write_scenario(project, "broken", {"attempts": [broken]})
    work = write_contract(project, "c1")
    got = unit_json(project, "unit", "dispatch", str(work), "--script", str(script), code=1)
    assert got["act"] == "dispatch" and got["unit"] == "c1"
    assert got["contract"] == {"id": "c1-c", "version": 1}
    assert got["status"] == "blocked" and "audit refused closeout" in got["reason"]
    assert got["merged"] is None
    # Mended in the unit's worktree and committed: `unit close` audits it again and closes.
    tree = Layout(project).worktree("c1")
    (tree / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(tree, "commit", "-q", "-am", "mended")
    # Held first by the audit finding it owes, as without --json (exit 1).
    got = unit_json(project, "unit", "close", "c1", code=1)
    assert got["act"] == "close" and got["status"] == "held" and got["merged"] is None
    [finding] = got["owed"]
    assert finding["concern"] == "audit-finding"
    assert got["problems"] == [
        f"obligations: obligation {finding['id'][:8]} (S3, blocking, audit-finding): "
        "unit c1: closeout refused (fail) must be dispositioned before close"
    ]
    resolved = cli(
        "obligation", "resolve", finding["id"], "--by", "alice", "--disposition", "fixed",
        "--rationale", "mended", cwd=project,
    )  # fmt: skip
    assert resolved.returncode == 0, resolved.stderr
    got = unit_json(project, "unit", "close", "c1")
    assert got["act"] == "close" and got["unit"] == "c1"
    assert got["status"] == "closed" and got["merged"] == git(project, "rev-parse", "HEAD").strip()
    # Closed: nothing to close, refused, and nothing on stdout.
    assert "nothing to close" in unit_refused(project, "unit", "close", "c1")


def test_unit_accept_json_is_the_acceptance_as_recorded(project: Path) -> None:
    work = write_contract(project, "a1", tests=True)
    script = write_scenario(project, "closes", {"attempts": [CLOSES]})
    # Whatever the drive comes to (no test evidence reported: blocked), the contract is recorded.
    cli("unit", "drive", str(work), "--script", str(script), cwd=project)
    got = unit_json(
        project, "unit", "accept", "a1", "tests-pass", "--by", "alice", "--note", "seen"
    )
    assert got["act"] == "accept-criterion" and got["unit"] == "a1"
    recorded = got["acceptance"]
    assert (recorded["criterion"], recorded["disposition"], recorded["by"]) == (
        "tests-pass", "accepted", "alice",
    )  # fmt: skip
    assert recorded["note"] == "seen" and recorded["unitId"] == "a1"
    got = unit_json(project, "unit", "accept", "a1", "tests-pass", "--by", "alice", "--reject")
    assert got["act"] == "reject-criterion" and got["acceptance"]["disposition"] == "rejected"
    assert "not an evidence expectation" in unit_refused(
        project, "unit", "accept", "a1", "nope", "--by", "alice"
    )


def test_unit_route_json_says_what_was_routed_or_why_nothing_was(project: Path) -> None:
    unit = waiting_unit(project)
    got = unit_json(project, "unit", "route", unit)
    assert got["act"] == "route-unit" and got["unit"] == unit and got["decision"] is None
    wait = got["awaiting"]
    assert wait["concern"] == "recovery-decision"
    assert got["nothingRouted"] == (
        f"unit {unit} already waits on its recovery decision (obligation {wait['id'][:8]}, "
        f"owed to {wait['consumer']}); nothing routed"
    )
    assert [o["id"] for o in got["owed"]] == [wait["id"]]
    assert "nope" in unit_refused(project, "unit", "route", "nope")
    # One attempt dispatched, blocked and not yet routed: the decision route makes.
    work = write_contract(project, "r2")
    silent = write_scenario(project, "silent", {"attempts": [SILENT]})
    dispatched = cli("unit", "dispatch", str(work), "--script", str(silent), cwd=project)
    assert dispatched.returncode == 1, dispatched.stdout + dispatched.stderr
    got = unit_json(project, "unit", "route", "r2")
    assert got["nothingRouted"] is None and got["awaiting"] is None
    decision = got["decision"]
    assert (decision["unitId"], decision["attempt"], decision["cause"]) == ("r2", 1, "no-report")
    assert decision["action"] == "retry" and decision["decidedBy"] == "S3"


def _replan_v2(root: Path, unit_id: str) -> Path:
    edited = contract_with(unit_id).to_json_dict()
    edited["objective"] = "a narrower objective"
    path = root.parent / f"{unit_id}.v2.json"
    path.write_text(json.dumps(edited))
    return path


def test_unit_replan_json_names_both_versions_the_wait_resolved_and_the_drive(
    project: Path,
) -> None:
    _, script = driven_once(project, "r1", "replan")
    v2 = _replan_v2(project, "r1")
    refused = unit_refused(
        project, "unit", "replan", "r1", "--contract", str(v2), "--by", "mallory", "--reason", "x"
    )
    assert "mallory" in refused
    got = unit_json(
        project, "unit", "replan", "r1", "--contract", str(v2), "--by", "alice",
        "--reason", "narrower", "--script", str(script),
    )  # fmt: skip
    assert got["act"] == "replan" and got["unit"] == "r1"
    assert got["contract"] == {"id": "r1-c", "version": 2}
    assert got["predecessor"] == {"id": "r1-c", "version": 1}
    assert got["reason"] == "narrower" and any("objective" in c for c in got["changes"])
    resolved = got["resolved"]
    assert (resolved["status"], resolved["disposition"], resolved["closedBy"]) == (
        "resolved", "replan", "alice",
    )  # fmt: skip
    drive = got["drive"]
    assert drive["act"] == "drive" and drive["contract"] == {"id": "r1-c", "version": 2}
    assert (
        drive["status"] == "closed" and drive["merged"] == git(project, "rev-parse", "HEAD").strip()
    )


def test_unit_remediate_json_is_the_resolution_its_evidence_and_the_drive(
    project: Path,
) -> None:
    driven_once(project, "m1", "remediate")
    before = unit_files(project)
    failed = cli(
        "unit", "remediate", "m1", "--by", "alice", "--note", "fixed it",
        "--run", "git no-such-command", "--json", cwd=project,
    )  # fmt: skip
    assert (failed.returncode, failed.stdout) == (1, "")
    assert "the remediation is not recorded" in failed.stderr
    assert unit_files(project) == before
    got = unit_json(
        project, "unit", "remediate", "m1", "--by", "alice", "--note", "installed it",
        "--run", "git --version", "--no-drive",
    )  # fmt: skip
    assert got["act"] == "remediate" and got["unit"] == "m1" and got["drive"] is None
    assert got["obligation"]["disposition"] == "fixed"
    assert got["obligation"]["rationale"].startswith("remediated: installed it")
    assert got["evidence"]["check"] == "remediate" and got["evidence"]["verdict"] == "pass"


def test_a_replan_the_gate_refuses_with_json_says_its_problems_on_stderr_only(
    project: Path,
) -> None:
    policy_committed(project, "recovery", first_is("replan"))
    v1 = contract_with("p3", fixed=FIXED)
    first = project.parent / "p3.json"
    first.write_text(json.dumps(v1.to_json_dict()))
    silent = write_scenario(project, "silent", {"attempts": [SILENT]})
    assert cli("unit", "drive", str(first), "--script", str(silent), cwd=project).returncode == 1
    dropped = {**v1.to_json_dict(), "fixed": []}
    path = project.parent / "p3.v2.json"
    path.write_text(json.dumps(dropped))
    err = unit_refused(
        project, "unit", "replan", "p3", "--contract", str(path), "--by", "alice", "--reason", "x"
    )
    assert err.splitlines() == [
        f"regulator: {path}: the replan of unit p3 is refused",
        'regulator: ✖ fixed: decision "d1" of v1 is dropped without being revisited: carry it '
        "unchanged, or name it in provenance.predecessor.reason",
    ]
