"""The real Claude Code and Codex CLI: looking and checking with nobody in the room, and the
session of an agent killed outright, settled by the next look.

Run as `tests/test_real_agents.py` runs its clients (the harness is
`tests/agents/real_clients.py`): a repository wired by `init` and `agent install` alone, the
model scripted, what the client sent back to the model read from the model's side.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from .agents.real_clients import (
    Client,
    Run,
    Workspace,
    claude_code,
    claude_result,
    codex_cli,
    codex_events,
)
from .agents.real_clients import workspace as workspace
from .agents.scripted_model import Call, Say, Turn, mcp

__all__ = ["claude_code", "codex_cli", "workspace"]  # fixtures, used by name

pytestmark = pytest.mark.real_agents

CONSENT = {
    "kind": "consent",
    "subject": "release",
    "question": "May I tag and publish release pelican?",
    "action": "git tag pelican && git push --tags",
}
PASSING = """\
import unittest


class Release(unittest.TestCase):
    def test_name(self) -> None:
        self.assertEqual("pelican".title(), "Pelican")
"""


def bash(command: str) -> Call:
    return Call("Bash", {"command": command, "description": "look"})


def kill_everything_it_started(run: Run) -> None:
    """SIGKILL to every process of the client's session (its MCP servers and hooks too, in
    whatever process group they run): nothing of it can settle anything."""
    session = run.process.pid
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat[stat.rfind(")") + 2 :].split()[3]) == session:
            try:
                os.kill(int(entry.name), signal.SIGKILL)
            except ProcessLookupError:
                pass
    run.process.wait(timeout=30)
    run.server.close()


def doctor_sessions(workspace: Workspace) -> str:
    """What `regulator doctor` says of the sessions, from the person's own terminal."""
    out = workspace.regulator("doctor", check=False).stdout
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line[8:].startswith("sessions"))
    shown = [lines[start]]
    shown += [line for line in lines[start + 1 :] if line.startswith(" " * 8)][:3]
    return "\n".join(shown)


def waited_for_unit(workspace: Workspace, unit_id: str, status: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while (unit := workspace.unit(unit_id))["status"] != status:
        assert time.monotonic() < deadline, unit
        time.sleep(0.05)
    return unit


# --- looking and checking, nobody in the room -------------------------------------------------


def test_claude_code_with_nobody_present_finds_files_reads_git_and_runs_the_checks(
    claude_code: Client, workspace: Workspace
) -> None:
    (workspace.root / "tests").mkdir()
    (workspace.root / "tests" / "test_release.py").write_text(PASSING)
    script: list[Turn] = [
        bash("find . -name '*.py'"),
        bash("git log --oneline"),
        # Claude Code's own rules refuse this one headless: regulator's list lets it run.
        bash("git --no-pager log -1 --format=%s"),
        Call(mcp("regulator", "run_checks"), {}),
        Say("the checks pass"),
    ]
    run = workspace.claude(claude_code, script)
    result = claude_result(run.finish())

    found = run.model.result_of(0)
    assert not found.is_error and found.text.strip() == "./tests/test_release.py"
    log = run.model.result_of(1)
    assert not log.is_error and "the project" in log.text
    assert "regulator init: instance prepared by carol" in log.text
    last = run.model.result_of(2)
    assert not last.is_error, last.text
    assert last.text.strip() == "regulator init: instance prepared by carol"
    checks = run.model.result_of(3)
    assert not checks.is_error, checks.text
    ran = json.loads(checks.text)
    assert (ran["passed"], ran["checks"]) == (True, ["tests/ directory (unittest)"])
    assert result["permission_denials"] == []
    # The model was told of run_checks by the name it calls it, and never of report_result.
    first = json.dumps(run.model.turns[0].body)
    assert "Check your work with mcp__regulator__run_checks" in first
    assert "report_result" not in first
    assert workspace.obligations() == []  # nobody was asked anything


def test_codex_refuses_to_end_a_session_that_is_not_its_own(
    codex_cli: Client, workspace: Workspace
) -> None:
    nightly = workspace.regulator("session", "start", "--key", "nightly").stdout.strip()
    end = f"{sys.executable} -m regulator session end {nightly}"
    script: list[Turn] = [
        Call(mcp("regulator", "read_conventions"), {}),  # opens the server's session unit
        Call("exec_command", {"cmd": end}),
        Say("left it"),
    ]
    run = workspace.codex(codex_cli, script)
    codex_events(run.finish())

    refused = run.model.result_of(1).text
    assert f"regulator: session end {nightly} is refused here: " in refused
    # Codex runs the command in a sandbox with a pid namespace of its own: no registered
    # process is visible from there, so the command knows it is Codex's by its environment only.
    assert "its environment says Codex runs it (CODEX_THREAD_ID=" in refused
    assert "an agent may end only its own session (it has no session unit of its own)" in refused
    assert workspace.unit(nightly)["status"] == "dispatched"


def test_codex_cannot_answer_its_own_question_from_its_shell(
    codex_cli: Client, workspace: Workspace
) -> None:
    regulator = f"{sys.executable} -m regulator"
    answer = (
        f"id=$({regulator} obligations | grep -o 'veto [0-9a-f]*' | head -n 1 | cut -d ' ' -f 2)"
        f" && {regulator} answer $id --by carol --answer yes"
    )
    script: list[Turn] = [
        Call(mcp("regulator", "ask_human"), CONSENT),  # nobody there: it stays owed
        Call("exec_command", {"cmd": answer}),
        Say("I will wait for carol"),
    ]
    run = workspace.codex(codex_cli, script)
    codex_events(run.finish())

    refused = run.model.result_of(1).text
    assert "regulator: a person's act is refused here: its environment says Codex runs it" in (
        refused
    )
    (owed,) = workspace.obligations()
    assert (owed.status, owed.closed_by) == ("open", None)


# --- an agent killed outright -----------------------------------------------------------------


def test_claude_code_killed_while_it_waits_is_settled_by_the_next_look_and_not_before(
    claude_code: Client, workspace: Workspace
) -> None:
    with workspace.present("carol"):
        run = workspace.claude(claude_code, [Call(mcp("regulator", "ask_human"), CONSENT)])
        question = workspace.question(run)
        unit_id = question.unit
        assert unit_id is not None and unit_id.startswith("session-claude-")
        # Claude Code runs, and waits: a look settles nothing.
        assert "no running session unit's agent has gone" in doctor_sessions(workspace)
        assert workspace.unit(unit_id)["status"] == "dispatched"
        kill_everything_it_started(run)

    said = doctor_sessions(workspace)
    assert "1 session unit(s) settled now" in said, said
    assert f"{unit_id} settled (blocked)" in said
    unit = workspace.unit(unit_id)
    assert (unit["status"], unit["attempts"]) == ("blocked", 1)  # its question is still owed
    (owed,) = workspace.obligations()
    assert owed.id == question.id and owed.status == "open"


def test_codex_and_its_server_killed_are_settled_by_the_next_look(
    codex_cli: Client, workspace: Workspace
) -> None:
    with workspace.present("carol"):
        run = workspace.codex(codex_cli, [Call(mcp("regulator", "ask_human"), CONSENT)])
        question = workspace.question(run)
        unit_id = question.unit
        assert unit_id is not None and unit_id.startswith("session-mcp-")
        kill_everything_it_started(run)
    # Neither Codex nor the server could settle it: SIGKILL, no SIGTERM first.
    assert workspace.unit(unit_id)["status"] == "dispatched"

    assert f"{unit_id} settled (blocked)" in doctor_sessions(workspace)
    waited_for_unit(workspace, unit_id, "blocked")
    agents = workspace.root / ".regulator" / "sessions" / "agents"
    assert not list(agents.glob("*.json"))  # the ended agent's registration is forgotten
