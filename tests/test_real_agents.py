"""The real Claude Code and Codex CLI under regulator, driven by a scripted model on localhost.

Each test wires a fresh repository as a user would (``init``, ``agent install``; nothing edited
by hand), runs the real client on a prompt while the model plays a script, and reads what the
client sent back to the model (the hooks' and the MCP server's replies) and what regulator
recorded. The harness is ``tests/agents/real_clients.py``; the clients are skipped, with the
reason, where they are not installed (``.ci/run`` installs them). Select with ``-m real_agents``.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from .agents.real_clients import (
    Client,
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


def settled(workspace: Workspace, unit_id: str, deadline_s: float = 10.0) -> dict[str, Any]:
    """The unit once it is no longer running: the client's exit settles it, just after."""
    deadline = time.monotonic() + deadline_s
    while True:
        unit = workspace.unit(unit_id)
        if unit["status"] != "dispatched" or time.monotonic() > deadline:
            return unit
        time.sleep(0.05)


# --- Claude Code ------------------------------------------------------------------------------


def test_claude_code_reads_a_file_and_the_model_sees_it_in_a_session_unit_the_hooks_settle(
    claude_code: Client, workspace: Workspace
) -> None:
    notes = str(workspace.root / "notes.txt")
    run = workspace.claude(claude_code, [Call("Read", {"file_path": notes}), Say("done")])
    result = claude_result(run.finish())

    read = run.model.result_of(0)
    assert not read.is_error
    assert "the release is called pelican" in read.text
    assert result["permission_denials"] == []
    # SessionStart opened the session's unit, and told the model so; SessionEnd settled it.
    unit_id = f"session-claude-{result['session_id']}"
    first = json.dumps(run.model.turns[0].body)
    assert f"runs under regulator as unit {unit_id}" in first
    assert settled(workspace, unit_id)["status"] == "closed"
    assert run.model.overruns == 0


def test_claude_code_does_not_run_a_destructive_bash_with_nobody_in_the_room(
    claude_code: Client, workspace: Workspace
) -> None:
    (workspace.root / "build").mkdir()
    (workspace.root / "build" / "release-notes.txt").write_text("pelican\n")
    rm = {"command": "rm -rf build", "description": "Remove the build directory"}
    run = workspace.claude(claude_code, [Call("Bash", rm), Say("I left build/ alone")])
    result = claude_result(run.finish())

    refused = run.model.result_of(0)
    assert refused.is_error
    assert "regulator: nobody is in the control room to ask" in refused.text
    assert (workspace.root / "build" / "release-notes.txt").read_text() == "pelican\n"
    assert [d["tool_name"] for d in result["permission_denials"]] == ["Bash"]
    # Nobody was there to ask, so nothing was asked: the decision went to Claude Code's own
    # prompt, which `-p` answers with a refusal.
    assert workspace.obligations() == []


def test_claude_code_asks_the_room_over_mcp_and_the_model_reads_the_yes_and_the_note(
    claude_code: Client, workspace: Workspace
) -> None:
    ask = mcp("regulator", "ask_human")
    with workspace.present("carol"):
        run = workspace.claude(claude_code, [Call(ask, CONSENT), Say("tagged")])
        question = workspace.question(run)
        workspace.regulator(
            "answer",
            question.id[:8],
            "--by",
            "carol",
            "--answer",
            "yes",
            "--note",
            "publish after the changelog is merged",
        )
        result = claude_result(run.finish())

    answered = run.model.result_of(0)
    assert not answered.is_error, answered.text
    reply = json.loads(answered.text)
    assert reply["answered"] is True
    assert (reply["by"], reply["answer"], reply["disposition"]) == ("carol", "yes", "accepted")
    assert reply["note"] == "publish after the changelog is merged"
    assert "publish after the changelog is merged" in reply["message"]
    # The question was the session's, and it is on record as carol's yes.
    unit_id = f"session-claude-{result['session_id']}"
    assert question.unit == unit_id
    (recorded,) = workspace.obligations()
    assert (recorded.disposition, recorded.closed_by) == ("accepted", "carol")
    shown = workspace.regulator("unit", "show", unit_id).stdout
    assert "accepted by carol: yes" in shown
    assert settled(workspace, unit_id)["status"] == "closed"


def test_claude_code_asks_past_its_sessions_hourly_budget_and_is_told_what_to_do_instead(
    claude_code: Client, workspace: Workspace
) -> None:
    """Four blocking questions in an hour, as shipped: more than the two per attempt of a
    contracted unit, and a hook's consent on the way spends none of them."""
    ask = mcp("regulator", "ask_human")
    (workspace.root / "build").mkdir()
    (workspace.root / "build" / "old.txt").write_text("stale\n")
    rm = {"command": "rm -rf build", "description": "Remove the build directory"}
    questions = [
        {"kind": "clarification", "subject": f"naming {n}", "question": f"which name for {n}?"}
        for n in range(5)
    ]
    script: list[Turn] = [Call("Bash", rm), *(Call(ask, q) for q in questions), Say("done")]
    with workspace.present("carol"):
        run = workspace.claude(claude_code, script)
        for n in range(5):  # the hook's consent, then four of the model's own questions
            question = workspace.question(run)
            answer = "yes" if n == 0 else f"name {n}"
            workspace.regulator("answer", question.id[:8], "--by", "carol", "--answer", answer)
        result = claude_result(run.finish())

    assert not (workspace.root / "build").exists()  # the consent was the host's: yes, it ran
    for n in range(1, 5):
        reply = run.model.result_of(n)
        assert not reply.is_error, reply.text
        assert json.loads(reply.text)["answer"] == f"name {n}"
    refused = run.model.result_of(5)
    assert refused.is_error
    assert (
        "the attention budget is spent: 4 blocking question(s) in the last hour, and a session "
        "may ask 4 in any hour. Decide it yourself where it is reversible and offer it as a "
        "recap, or ask after "
    ) in refused.text
    # Nothing was asked for the fifth: five questions, all answered.
    asked = workspace.obligations()
    assert len(asked) == 5 and all(o.status != "open" for o in asked)
    # `attention` counts what the gate counted: the session's four, the hook's consent apart.
    unit_id = f"session-claude-{result['session_id']}"
    figures = json.loads(workspace.regulator("attention", "--json").stdout)
    assert (figures["asked"], figures["host"]["asked"]) == (5, 1)
    (session,) = figures["perSession"]
    assert (session["session"], session["asked"], session["mostInAnHour"]) == (unit_id, 4, 4)
    assert (figures["blockingPerHour"], figures["overBudget"]) == (4, [])


# --- Codex CLI --------------------------------------------------------------------------------


def test_codex_asks_with_nobody_present_is_paused_and_its_session_is_settled_when_it_exits(
    codex_cli: Client, workspace: Workspace
) -> None:
    ask = mcp("regulator", "ask_human")
    run = workspace.codex(codex_cli, [Call(ask, CONSENT), Say("I will wait")])
    events = codex_events(run.finish())

    # Codex offers regulator's tools as the namespace mcp__regulator, and ran the call there.
    assert run.model.turns[0].offered[ask] == ("mcp__regulator", "ask_human")
    (call,) = [
        e["item"]
        for e in events
        if e["type"] == "item.completed" and e["item"]["type"] == "mcp_tool_call"
    ]
    assert (call["server"], call["tool"], call["status"]) == ("regulator", "ask_human", "completed")
    reply = run.model.result_of(0).text
    # Codex puts its own lines before the tool's output: the JSON is the last line.
    paused = json.loads(reply.splitlines()[-1])
    assert (paused["answered"], paused["outcome"], paused["paused"]) == (False, "unavailable", True)
    assert "Silence is not consent" in paused["message"]

    (owed,) = workspace.obligations()
    assert owed.id.startswith(paused["obligation"]) and owed.status == "open"
    unit_id = owed.unit
    assert unit_id is not None and unit_id.startswith("session-mcp-")
    # Codex stops the server with SIGTERM: the session is settled all the same, and it holds
    # the question it left owed.
    unit = settled(workspace, unit_id)
    assert unit["status"] == "blocked"
    shown = workspace.regulator("unit", "show", unit_id).stdout
    assert "attempt 1: paused" in shown
