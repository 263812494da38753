"""The real Claude Code and regulator's hook: what the model reads of a yes, a pause that holds
for Claude Code's own writes, and the thrash detector's word.

Run as `tests/test_real_agents.py` runs its clients (the harness is
`tests/agents/real_clients.py`): a repository wired by `init` and `agent install` alone, the
model scripted, what the client sent back to the model read from the model's side.
"""

from __future__ import annotations

import json

import pytest

from .agents.real_clients import Client, Workspace, claude_code, claude_result
from .agents.real_clients import workspace as workspace
from .agents.scripted_model import Call, Say, Turn, mcp

__all__ = ["claude_code", "workspace"]  # fixtures, used by name

pytestmark = pytest.mark.real_agents

CONSENT = {
    "kind": "consent",
    "subject": "release",
    "question": "May I tag and publish release pelican?",
    "action": "git tag pelican && git push --tags",
}
# Claude Code's own edits, made without its prompt: what a pause must hold against.
ACCEPT_EDITS = ("--permission-mode", "acceptEdits")


def test_claude_code_reads_the_note_a_person_typed_beside_a_hook_consent_yes(
    claude_code: Client, workspace: Workspace
) -> None:
    (workspace.root / "build").mkdir()
    (workspace.root / "build" / "old.txt").write_text("stale\n")
    rm = {"command": "rm -rf build", "description": "Remove the build directory"}
    note = "keep the logs of the next build, they go to the auditors"
    with workspace.present("carol"):
        run = workspace.claude(claude_code, [Call("Bash", rm), Say("removed")])
        question = workspace.question(run)
        assert question.concern == "interaction" and "rm -rf build" in (question.question or "")
        workspace.regulator(
            "answer", question.id[:8], "--by", "carol", "--answer", "yes", "--note", note
        )
        result = claude_result(run.finish())

    ran = run.model.result_of(0)
    assert not ran.is_error, ran.text
    assert not (workspace.root / "build").exists()
    assert result["permission_denials"] == []
    # The reason of an allow is the person's to read; the model reads the yes and the note in
    # the hook's additionalContext, which Claude Code puts beside the tool's result.
    after = json.dumps(run.model.turns[1].body)
    assert f"regulator: carol consented to Bash: rm -rf build. They said: {note}" in after


def test_a_paused_claude_code_session_cannot_write_with_its_own_tools_under_accept_edits(
    claude_code: Client, workspace: Workspace
) -> None:
    release = workspace.root / "release.txt"
    notes = workspace.root / "notes.txt"
    script: list[Turn] = [
        Call(mcp("regulator", "ask_human"), CONSENT),  # nobody there: the session pauses
        Call("Write", {"file_path": str(release), "content": "pelican 1.0\n"}),
        Call("Edit", {"file_path": str(notes), "old_string": "pelican", "new_string": "heron"}),
        Call("Bash", {"command": "touch tagged", "description": "mark the release"}),
        Call("Read", {"file_path": str(notes)}),  # a look is still allowed
        Say("waiting for carol"),
    ]
    run = workspace.claude(claude_code, script, "go", *ACCEPT_EDITS)
    result = claude_result(run.finish())

    paused = json.loads(run.model.result_of(0).text)
    assert (paused["answered"], paused["paused"]) == (False, True)
    for n in (1, 2, 3):
        refused = run.model.result_of(n)
        assert refused.is_error, refused.text
        assert "regulator: this session is paused (consent unanswered: release" in refused.text
        assert "No tool with an effect runs until a person answers that question" in refused.text
    assert not release.exists() and not (workspace.root / "tagged").exists()
    assert notes.read_text() == "the release is called pelican\n"
    assert "pelican" in run.model.result_of(4).text
    assert [d["tool_name"] for d in result["permission_denials"]] == ["Write", "Edit", "Bash"]


def test_claude_code_rewriting_one_file_is_told_and_the_signal_reaches_the_inbox(
    claude_code: Client, workspace: Workspace
) -> None:
    draft = workspace.root / "draft.txt"
    writes: list[Turn] = [
        Call("Write", {"file_path": str(draft), "content": f"version {n}\n"}) for n in range(6)
    ]
    run = workspace.claude(claude_code, [*writes, Say("done")], "go", *ACCEPT_EDITS)
    result = claude_result(run.finish())

    assert draft.read_text() == "version 5\n"
    # The sixth call settles the fifth write, past the threshold of 4: its reply tells the model.
    for n in range(6):
        before = json.dumps(run.model.turns[n].body)
        assert "past the oscillation threshold" not in before, n
    after = json.dumps(run.model.turns[6].body)
    assert "regulator: you have written draft.txt 5 times, past the oscillation threshold of 4" in (
        after
    )
    # A session unit has no loop to route it: the signal is an obligation in the inbox at once,
    # and does not hold the session, which closes.
    unit_id = f"session-claude-{result['session_id']}"
    (owed,) = workspace.obligations()
    assert (owed.unit, owed.concern, owed.status) == (unit_id, "coordination-signal", "open")
    assert owed.subject == f"unit {unit_id} keeps rewriting draft.txt"
    shown = workspace.regulator("obligations").stdout
    assert f"unit {unit_id} keeps rewriting draft.txt" in shown
