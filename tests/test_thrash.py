"""S2's thrash detector: writes counted per file per unit, kept on disk, signalled past the
threshold, and routed as ``oscillation``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from regulator.host.hooks import claude_code
from regulator.host.thrash import ThrashDetector, writes_path
from regulator.policy import load_definition
from regulator.protocol.messages import CoordinationSignal
from regulator.rules.execution import ExecutionStore
from regulator.rules.regulatory_log import RegulatoryLog
from regulator.store import Layout

from .agent_fixture import as_agent_of
from .test_loop import contract_with, loop_for, project, with_policy

__all__ = ["project"]


def edit(root: Path, unit_id: str, attempt: int, path: str, tool: str = "Edit") -> dict[str, Any]:
    """Claude Code's PostToolUse for one of its own tools, under `unit drive`'s environment."""
    payload = {
        "hook_event_name": "PostToolUse",
        "session_id": "s-1",
        "cwd": str(root),
        "tool_name": tool,
        "tool_input": {"file_path": path, "old_string": "a", "new_string": "b"},
        "tool_response": {"success": True},
    }
    env = {"REGULATOR_UNIT": unit_id, "REGULATOR_ATTEMPT": str(attempt)}
    with as_agent_of(root, unit_id, attempt):
        return claude_code(payload, Layout(root), load_definition(root), env=env)


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
    for _ in range(2):
        assert edit(project, "thrash", 2, str(worktree / "calc.py")) == {}
    assert oscillations(project, "thrash") == []
    edit(project, "thrash", 2, str(worktree / "calc.py"))  # the fifth write
    (signal,) = oscillations(project, "thrash")
    assert signal.resource == "calc.py" and signal.source == "S2"
    assert "written 5 times (3 from the agent's own tools, 2 in commits between attempts)" in (
        signal.observation
    )
    assert loop.dispatch(work, hint=first.hint).status == "blocked"
    second = loop.route("thrash")
    assert second is not None and (second.cause, second.action) == ("oscillation", "clarify")


def test_the_count_is_on_disk_so_a_new_session_of_the_unit_continues_it(project: Path) -> None:
    ExecutionStore(Layout(project)).create_unit(contract_with("kept"))
    for _ in range(3):
        edit(project, "kept", 1, str(project / "calc.py"))
    assert writes_path(Layout(project), "kept").is_file()
    # Another process, another attempt: the count goes on from three.
    for _ in range(2):
        edit(project, "kept", 2, "calc.py")
    assert len(oscillations(project, "kept")) == 1
    # The file's count starts again after its signal: one more write signals nothing.
    edit(project, "kept", 2, "calc.py")
    assert len(oscillations(project, "kept")) == 1


def test_the_budget_policys_threshold_decides_and_other_tools_and_our_own_files_do_not_count(
    project: Path,
) -> None:
    def low(policy: dict[str, Any]) -> None:
        policy["coordination"] = {"oscillationThreshold": 2}

    with_policy(project, "budget", low)
    ExecutionStore(Layout(project)).create_unit(contract_with("low"))
    edit(project, "low", 1, "calc.py", tool="Read")
    edit(project, "low", 1, ".regulator/units/low/unit.json", tool="Write")
    edit(project, "low", 1, "README.md", tool="Write")
    edit(project, "low", 1, "calc.py", tool="MultiEdit")
    edit(project, "low", 1, "calc.py")
    assert oscillations(project, "low") == []
    edit(project, "low", 1, "calc.py", tool="Write")
    (signal,) = oscillations(project, "low")
    assert "past the oscillation threshold of 2" in signal.observation


def test_a_commit_of_what_the_hook_already_counted_is_not_counted_twice(project: Path) -> None:
    loop = loop_for(project, {"attempts": [twice("calc.py")]})
    loop.store.create_unit(contract_with("once"))
    layout = Layout(project)
    # The session's agent edited twice with its own tools; the scenario commits those two.
    edit(project, "once", 1, "calc.py")
    edit(project, "once", 1, "calc.py")
    loop.dispatch(contract_with("once"))
    counts = ThrashDetector(layout, loop.definition).counts("once").counts["calc.py"]
    assert dict(counts) == {"hook": 2}
