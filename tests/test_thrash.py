"""S2's thrash detector: writes counted per file per unit, kept on disk, signalled past the
threshold, told to the agent, and routed (as ``oscillation`` for a driven unit's next failure,
at once for a session unit's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from regulator.host.hooks import claude_code
from regulator.host.session_units import start_session_unit
from regulator.host.thrash import ThrashDetector, writes_path
from regulator.policy import load_definition
from regulator.protocol.messages import CoordinationSignal
from regulator.rules.execution import ExecutionStore
from regulator.rules.regulatory_log import RegulatoryLog
from regulator.store import Layout

from .agent_fixture import as_agent_of
from .test_loop import contract_with, loop_for, project, with_policy

__all__ = ["project"]


def call(
    root: Path, unit_id: str, attempt: int, tool: str, tool_input: dict[str, Any], cwd: Path
) -> dict[str, Any]:
    """Claude Code's PreToolUse for one of its own tools, under `unit drive`'s environment."""
    payload = {
        "hook_event_name": "PreToolUse",
        "session_id": "s-1",
        "cwd": str(cwd),
        "tool_name": tool,
        "tool_input": tool_input,
    }
    env = {"REGULATOR_UNIT": unit_id, "REGULATOR_ATTEMPT": str(attempt)}
    with as_agent_of(root, unit_id, attempt):
        return claude_code(payload, Layout(root), load_definition(root), env=env)


def edit(
    root: Path,
    unit_id: str,
    attempt: int,
    path: str,
    tool: str = "Edit",
    *,
    cwd: Path | None = None,
    fails: bool = False,
) -> dict[str, Any]:
    """One of the agent's own writing tools: the hook's PreToolUse, then the tool writes the
    file (unless it ``fails``, as an Edit whose old string is not there does)."""
    cwd = root if cwd is None else cwd
    field = "notebook_path" if tool == "NotebookEdit" else "file_path"
    reply = call(root, unit_id, attempt, tool, {field: path, "old_string": "a"}, cwd)
    target = Path(path) if Path(path).is_absolute() else cwd / path
    if not fails and tool in ("Write", "Edit", "MultiEdit", "NotebookEdit"):
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a") as file:
            file.write("# again\n")
    return reply


def next_call(root: Path, unit_id: str, attempt: int, cwd: Path | None = None) -> dict[str, Any]:
    """A later call with an effect (a subagent): it settles the writes before it."""
    return call(root, unit_id, attempt, "Agent", {"prompt": "look"}, cwd or root)


def told(reply: dict[str, Any]) -> str:
    context: str = reply.get("hookSpecificOutput", {}).get("additionalContext", "")
    return context


def oscillations(root: Path, unit_id: str) -> list[CoordinationSignal]:
    log = RegulatoryLog(Layout(root))
    log.refresh()
    return [
        m
        for m in log.messages.values()
        if isinstance(m, CoordinationSignal)
        and m.coordination == "oscillation"
        and m.unit == unit_id
    ]


def twice(path: str) -> dict[str, Any]:
    return {
        "steps": [
            {"edit": {"path": path, "content": "def add(a, b):\n    return a + b  # 1\n"}},
            {"commit": "one"},
            {"edit": {"path": path, "content": "def add(a, b):\n    return a + b  # 2\n"}},
            {"commit": "two"},
            {"end": "silent"},
        ]
    }


def test_five_writes_of_one_file_by_hooks_and_commits_signal_oscillation_and_route_so(
    project: Path,
) -> None:
    loop = loop_for(project, {"attempts": [twice("calc.py"), {"steps": [{"end": "silent"}]}]})
    work = contract_with("thrash")
    assert loop.dispatch(work).status == "blocked"
    first = loop.route("thrash")
    assert first is not None and (first.cause, first.action) == ("no-report", "retry")
    detector = ThrashDetector(Layout(project), load_definition(project))
    assert detector.counts("thrash").counts["calc.py"]["diff"] == 2
    # The next attempt's agent edits the file with its own tools, seen by the hook.
    worktree = Layout(project).worktree("thrash")
    for _ in range(3):
        assert edit(project, "thrash", 2, str(worktree / "calc.py"), cwd=worktree) == {}
    # The fifth write is settled by the next call, whose reply tells the agent.
    assert oscillations(project, "thrash") == []
    reply = next_call(project, "thrash", 2, cwd=worktree)
    (signal,) = oscillations(project, "thrash")
    assert signal.resource == "calc.py" and signal.source == "S2"
    assert "written 5 times (3 from the agent's own tools, 2 in commits between attempts)" in (
        signal.observation
    )
    assert "decision" not in str(reply)  # no decision: Claude Code's own rules decide the call
    assert told(reply).startswith(
        "regulator: you have written calc.py 5 times, past the oscillation threshold of 4"
    )
    # A driven unit's signal is the loop's to route, after the attempt.
    assert [o for o in RegulatoryLog(Layout(project)).open_obligations("thrash")] == []
    assert loop.dispatch(work, hint=first.hint).status == "blocked"
    second = loop.route("thrash")
    assert second is not None and (second.cause, second.action) == ("oscillation", "clarify")


def test_the_count_is_on_disk_so_a_new_session_of_the_unit_continues_it(project: Path) -> None:
    ExecutionStore(Layout(project)).create_unit(contract_with("kept"))
    for _ in range(3):
        edit(project, "kept", 1, str(project / "calc.py"))
    next_call(project, "kept", 1)
    assert writes_path(Layout(project), "kept").is_file()
    # Another process, another attempt: the count goes on from three.
    for _ in range(2):
        edit(project, "kept", 2, "calc.py")
    next_call(project, "kept", 2)
    assert len(oscillations(project, "kept")) == 1
    # The file's count starts again after its signal: one more write signals nothing.
    edit(project, "kept", 2, "calc.py")
    assert told(next_call(project, "kept", 2)) == ""
    assert len(oscillations(project, "kept")) == 1


def test_the_budget_policys_threshold_decides_and_other_tools_and_our_own_files_do_not_count(
    project: Path,
) -> None:
    def low(policy: dict[str, Any]) -> None:
        policy["coordination"] = {"oscillationThreshold": 2}

    with_policy(project, "budget", low)
    ExecutionStore(Layout(project)).create_unit(contract_with("low"))
    edit(project, "low", 1, "calc.py", tool="Read")
    edit(project, "low", 1, ".regulator/units/low/state.txt", tool="Write")
    edit(project, "low", 1, "README.md", tool="Write")
    edit(project, "low", 1, "calc.py", tool="MultiEdit")
    edit(project, "low", 1, "calc.py")
    next_call(project, "low", 1)
    assert oscillations(project, "low") == []
    edit(project, "low", 1, "calc.py", tool="Write")
    assert "calc.py 3 times, past the oscillation threshold of 2" in told(
        next_call(project, "low", 1)
    )
    (signal,) = oscillations(project, "low")
    assert "past the oscillation threshold of 2" in signal.observation


def test_a_write_that_did_not_happen_is_not_counted(project: Path) -> None:
    """An Edit whose old string is not there, or one refused at Claude Code's own prompt,
    leaves the file as it was: expected by the hook, it is dropped, not counted."""
    ExecutionStore(Layout(project)).create_unit(contract_with("fails"))
    for _ in range(6):
        edit(project, "fails", 1, "calc.py", fails=True)
    next_call(project, "fails", 1)
    detector = ThrashDetector(Layout(project), load_definition(project))
    assert detector.counts("fails").counts == {}
    # The last stays expected (its tool may still run) until the file's next write or the end.
    assert list(detector.counts("fails").pending) == ["calc.py"]
    edit(project, "fails", 1, "calc.py")
    next_call(project, "fails", 1)
    assert dict(detector.counts("fails").counts["calc.py"]) == {"hook": 1}
    # One still expected when the attempt ended is never counted, whatever becomes of its file
    # later (a driven unit's commits count what its last writes did).
    edit(project, "fails", 1, "notes.md", fails=True)
    (project / "notes.md").write_text("written by the person, later\n")
    next_call(project, "fails", 2)
    state = detector.counts("fails")
    assert "notes.md" not in state.counts and state.pending == {}


def test_a_session_units_signal_is_told_and_routed_at_once(project: Path) -> None:
    """No loop step follows a session unit's writes: its signal is routed by the hook, and a
    person finds it in the inbox; the session still closes, the obligation not blocking."""
    layout = Layout(project)
    definition = load_definition(project)
    unit_id = start_session_unit(
        layout, definition, "claude-s-7", agent="claude-code", cwd=project
    ).unit_id

    def hook(event: str, tool: str = "", path: str = "calc.py") -> dict[str, Any]:
        payload = {
            "hook_event_name": event,
            "session_id": "s-7",
            "cwd": str(project),
            "tool_name": tool,
            "tool_input": {"file_path": str(project / path), "content": "x"},
        }
        reply = claude_code(payload, layout, definition, env={})
        if tool == "Write":
            (project / path).write_text(f"{len(str(reply))}\n" + (project / path).read_text())
        return reply

    for _ in range(5):
        assert hook("PreToolUse", "Write") == {}
    said = told(hook("PreToolUse", "Write"))  # the sixth settles the fifth
    assert said.startswith("regulator: you have written calc.py 5 times")
    (signal,) = oscillations(project, unit_id)
    log = RegulatoryLog(layout)
    log.refresh()
    assert log.unrouted() == []
    (owed,) = log.open_obligations(unit_id)
    assert (owed.concern, owed.sources, owed.blocks) == ("coordination-signal", [signal.id], False)
    assert owed.subject == f"unit {unit_id} keeps rewriting calc.py"
    # The session's end settles its last write (the sixth), and closes it.
    for _ in range(3):
        hook("PreToolUse", "Write")
    hook("SessionEnd")
    counts = ThrashDetector(layout, definition).counts(unit_id)
    assert counts.pending == {} and counts.total("calc.py") == 4
    assert ExecutionStore(layout).unit(unit_id).status == "closed"


def test_a_commit_of_what_the_hook_already_counted_is_not_counted_twice(project: Path) -> None:
    loop = loop_for(project, {"attempts": [twice("calc.py")]})
    loop.store.create_unit(contract_with("once"))
    layout = Layout(project)
    # The session's agent edited twice with its own tools; the scenario commits those two.
    original = (project / "calc.py").read_text()
    edit(project, "once", 1, "calc.py")
    edit(project, "once", 1, "calc.py")
    next_call(project, "once", 1)
    (project / "calc.py").write_text(original)  # the base as it was, for the loop
    loop.dispatch(contract_with("once"))
    counts = ThrashDetector(layout, loop.definition).counts("once").counts["calc.py"]
    assert dict(counts) == {"hook": 2}


def test_a_count_that_fails_at_the_sessions_end_still_lets_the_session_be_settled(
    project: Path, monkeypatch: Any
) -> None:
    layout, definition = Layout(project), load_definition(project)
    unit_id = start_session_unit(
        layout, definition, "claude-s-8", agent="claude-code", cwd=project
    ).unit_id

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise OSError("the disk is full")

    monkeypatch.setattr(ThrashDetector, "settle", broken)
    payload = {"hook_event_name": "SessionEnd", "session_id": "s-8", "cwd": str(project)}
    with pytest.raises(OSError, match="the disk is full"):  # reported by the command
        claude_code(payload, layout, definition, env={})
    assert ExecutionStore(layout).unit(unit_id).status == "closed"
