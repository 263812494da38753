"""Remediate and clarify: a person acts on what a unit waits on, and the loop goes on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from regulator.host.loop import Loop
from regulator.rules.audit_log import AuditLog
from regulator.store import Layout

from .conftest import cli
from .test_loop import SILENT, contract_with, loop_for, project, write_scenario
from .test_replan import CLOSES, _state, policy_committed

__all__ = ["project"]


def first_is(action: str) -> Any:
    def change(policy: dict[str, Any]) -> None:
        policy["rules"] = [{"cause": "no-report", "actions": [action]}]

    return change


def driven_once(root: Path, unit_id: str, action: str) -> tuple[Path, Path]:
    """A unit whose first attempt ends silent and waits on ``action``; its contract and script."""
    policy_committed(root, "recovery", first_is(action))
    contract = root.parent / f"{unit_id}.json"
    contract.write_text(json.dumps(contract_with(unit_id).to_json_dict()))
    script = write_scenario(root, unit_id, {"attempts": [SILENT, CLOSES]})
    first = cli("unit", "drive", str(contract), "--script", str(script), cwd=root)
    assert first.returncode == 1 and f"no-report → {action}" in first.stdout, first.stdout
    return contract, script


def loop_of(root: Path) -> Loop:
    return loop_for(root, {"attempts": [SILENT]})


def test_a_remediation_with_a_passing_command_resolves_the_wait_and_the_unit_closes(
    project: Path,
) -> None:
    _, script = driven_once(project, "docs", "remediate")
    done = cli(
        "unit", "remediate", "docs", "--by", "alice", "--note", "installed mkdocs",
        "--run", "git --version", "--script", str(script), cwd=project,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "resolved by alice as fixed: remediated: installed mkdocs; ran `git --version`" in (
        done.stdout
    )
    assert "unit docs closed" in done.stdout
    prompt = (Layout(project).unit_dir("docs") / "prompt.a2.md").read_text()
    assert "resolved by alice as fixed: remediated: installed mkdocs" in prompt
    (evidence,) = [
        e for e in AuditLog(Layout(project)).audit_for("docs").evidence if e.check == "remediate"
    ]
    assert evidence.command == ["git", "--version"] and evidence.verdict == "pass"


def test_a_remediation_whose_command_fails_is_refused_and_writes_nothing(project: Path) -> None:
    driven_once(project, "docs2", "remediate")
    before = _state(project)
    failed = cli(
        "unit", "remediate", "docs2", "--by", "alice", "--note", "fixed it",
        "--run", "git no-such-command", cwd=project,
    )  # fmt: skip
    assert failed.returncode == 1
    assert "the remediation is not recorded" in failed.stderr
    assert _state(project) == before
    unauthorized = cli(
        "unit", "remediate", "docs2", "--by", "mallory", "--note", "fixed it", cwd=project
    )
    assert unauthorized.returncode == 1 and "mallory" in unauthorized.stderr
    assert _state(project) == before


def test_remediate_is_refused_for_a_unit_that_waits_on_something_else(project: Path) -> None:
    driven_once(project, "asks", "replan")
    refused = cli(
        "unit", "remediate", "asks", "--by", "alice", "--note", "n", "--no-drive", cwd=project
    )
    assert refused.returncode == 1
    assert "unit asks waits on no remediate decision: it waits on replan" in refused.stderr


def test_a_clarify_decision_asks_a_clarification_whose_answer_is_the_next_attempts_hint(
    project: Path,
) -> None:
    contract, script = driven_once(project, "shape", "clarify")
    loop = loop_of(project)
    log = loop.log
    (question,) = [o for o in log.open_obligations("shape") if o.concern == "interaction"]
    assert question.consumer == "human" and question.blocks
    interaction = log.interaction_for(question.id)
    assert interaction is not None and interaction.request.kind == "clarification"
    (decision,) = loop.store.decisions("shape")
    assert interaction.request.question == decision.question
    (wait,) = [o for o in log.obligations.values() if o.concern == "recovery-decision"]
    assert (wait.status, wait.successor) == ("escalated", question.id)
    waiting = loop.waiting_on("shape")
    assert waiting is not None and waiting.action == "clarify"
    assert waiting.obligation.id == question.id

    # Not answered: driving again is refused by the veto.
    held = cli("unit", "drive", str(contract), "--script", str(script), cwd=project)
    assert held.returncode == 1
    answered = cli(
        "answer", question.id[:8], "--by", "alice", "--answer", "keep the old format", cwd=project
    )
    assert answered.returncode == 0, answered.stderr
    again = cli("unit", "drive", str(contract), "--script", str(script), cwd=project)
    assert again.returncode == 0, again.stdout + again.stderr
    prompt = (Layout(project).unit_dir("shape") / "prompt.a2.md").read_text()
    assert (
        f"Your question (clarification: unit shape: no-report: {decision.question}) was answered "
        "by alice — fixed: keep the old format"
    ) in " ".join(prompt.split())
