"""`regulator doctor` runs an agent's wiring: the hook must answer, the MCP servers must start."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from regulator.host.wiring import check_wiring

from .conftest import cli


def wiring(root: Path) -> dict[str, Any]:
    done = cli("doctor", "--json", cwd=root)
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    checks["exit"] = done.returncode
    return checks


def install(root: Path, agent: str = "claude-code") -> None:
    done = cli("agent", "install", agent, cwd=root)
    assert done.returncode == 0, done.stderr


def state(root: Path) -> dict[str, tuple[int, int]]:
    top = root / ".regulator"
    return {
        str(p.relative_to(top)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in top.rglob("*")
        if p.is_file()
    }


def test_no_wiring_no_check(instance: Path) -> None:
    assert "agent wiring" not in wiring(instance)


def test_a_good_install_passes_and_doctor_writes_nothing(instance: Path) -> None:
    install(instance)
    install(instance, "codex")
    before = state(instance)
    found = wiring(instance)
    check = found["agent wiring"]
    assert found["exit"] == 0, check
    assert (check["level"], check["problems"], check["notices"]) == ("ok", [], [])
    assert "the hook answers a Read with allow" in check["detail"]
    assert "the .mcp.json server starts and lists" in check["detail"]
    assert "the .codex/config.toml server starts and lists" in check["detail"]
    assert state(instance) == before  # a Read and a tool listing record nothing


def test_a_hook_whose_interpreter_is_gone_is_a_problem(instance: Path) -> None:
    install(instance)
    path = instance / ".claude" / "settings.json"
    path.write_text(path.read_text().replace(sys.executable, "/nonexistent/python3"))
    found = wiring(instance)
    assert found["exit"] == 1
    (problem,) = found["agent wiring"]["problems"]
    assert problem.startswith("the hook `/nonexistent/python3 -P -m regulator hook claude-code`")
    assert "does not run (exit 127" in problem and "not found" in problem
    assert "Claude Code blocks every call it matches" in problem


def test_a_hook_that_answers_with_garbage_is_a_problem(instance: Path) -> None:
    install(instance)
    path = instance / ".claude" / "settings.json"
    data = json.loads(path.read_text())
    data["hooks"]["PreToolUse"][0]["hooks"][0]["command"] = "/bin/echo hook claude-code"
    path.write_text(json.dumps(data))
    found = wiring(instance)
    assert found["exit"] == 1
    not_closed, garbage = found["agent wiring"]["problems"]
    assert "does not fail closed" in not_closed
    assert "replied to a Read with something that is not a JSON object" in garbage


def test_an_old_relative_install_is_a_problem_saying_how_to_fix_it(instance: Path) -> None:
    (instance / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"regulator": {"command": "regulator", "args": ["mcp"]}}})
    )
    (instance / ".claude").mkdir()
    hook = {"type": "command", "command": "regulator hook claude-code", "timeout": 660}
    old = {"hooks": {"PreToolUse": [{"matcher": OLDER_MATCHER, "hooks": [hook]}]}}
    (instance / ".claude" / "settings.json").write_text(json.dumps(old))
    check = wiring(instance)["agent wiring"]
    assert check["level"] == "problem"
    hook_problem, server_problem = check["problems"]
    assert hook_problem.startswith(
        "the hook `regulator hook claude-code` (PreToolUse) is not an absolute command"
    )
    assert "Claude Code lets the call through" in hook_problem
    assert server_problem.startswith(".mcp.json: the server `regulator mcp` is not an absolute")
    for problem in check["problems"]:
        assert problem.endswith("run `regulator agent install claude-code` again")
    assert any("permissions.allow has no mcp__regulator" in n for n in check["notices"])
    assert any("does not approve the regulator server" in n for n in check["notices"])
    install(instance)  # the fix it names
    assert wiring(instance)["agent wiring"]["level"] == "ok"


OLDER_MATCHER = "Bash|Write|Edit|MultiEdit|NotebookEdit|WebFetch"  # what older installs wrote


def test_an_older_installs_matcher_and_post_tool_hook_are_notices_install_fixes(
    instance: Path,
) -> None:
    install(instance)
    path = instance / ".claude" / "settings.json"
    data = json.loads(path.read_text())
    ours = data["hooks"]["PreToolUse"][0]
    data["hooks"]["PreToolUse"][0] = {**ours, "matcher": OLDER_MATCHER}
    data["hooks"]["PostToolUse"] = [{**ours, "matcher": "Write|Edit|MultiEdit|NotebookEdit"}]
    path.write_text(json.dumps(data))
    check = wiring(instance)["agent wiring"]
    assert (check["level"], check["problems"]) == ("notice", [])
    post, pre = check["notices"]
    assert post.startswith(
        ".claude/settings.json: regulator's hook in PostToolUse is an older install's: it starts "
        "a process after every call it matches and no longer does anything"
    )
    assert pre.startswith(
        f".claude/settings.json: regulator's PreToolUse hook matches only {OLDER_MATCHER}: "
        "while a session is paused, the tools it leaves out"
    )
    for notice in check["notices"]:
        assert notice.endswith("run `regulator agent install claude-code` again")
    install(instance)  # the fix it names
    assert wiring(instance)["agent wiring"]["level"] == "ok"
    # A matcher of the person's own is theirs, but doctor says what it leaves unrefused.
    data = json.loads(path.read_text())
    data["hooks"]["PreToolUse"][0]["matcher"] = "Bash|Write"
    path.write_text(json.dumps(data))
    (notice,) = wiring(instance)["agent wiring"]["notices"]
    assert "matches 'Bash|Write', not regulator's" in notice
    assert "a tool it leaves out is not refused while a session is paused" in notice


def test_a_grant_only_in_the_committed_settings_is_a_notice_it_needs_a_trusted_workspace(
    instance: Path,
) -> None:
    install(instance)
    local = instance / ".claude" / "settings.local.json"
    local.write_text(json.dumps({"enabledMcpjsonServers": ["regulator"]}))
    (notice,) = wiring(instance)["agent wiring"]["notices"]
    assert notice.startswith(
        ".claude/settings.local.json: permissions.allow has no mcp__regulator, and Claude Code "
        "honours the one in .claude/settings.json only in a workspace you have trusted"
    )
    install(instance)  # the fix it names
    assert wiring(instance)["agent wiring"]["level"] == "ok"


def test_a_server_that_does_not_start_is_a_problem(instance: Path) -> None:
    install(instance)
    path = instance / ".mcp.json"
    data = json.loads(path.read_text())
    data["mcpServers"]["regulator"]["args"] = ["-c", "raise SystemExit('no database here')"]
    path.write_text(json.dumps(data))
    found = wiring(instance)
    assert found["exit"] == 1
    (problem,) = found["agent wiring"]["problems"]
    assert problem.endswith("exited before answering initialize (exit 1: no database here)"), (
        problem
    )


def test_a_codex_server_without_approval_is_a_notice(instance: Path) -> None:
    (instance / ".codex").mkdir()
    (instance / ".codex" / "config.toml").write_text(
        f'[mcp_servers.regulator]\ncommand = "{sys.executable}"\n'
        'args = ["-P", "-m", "regulator", "mcp"]\n'
    )
    check = wiring(instance)["agent wiring"]
    assert check["level"] == "notice", check
    assert any("default_tools_approval_mode" in n for n in check["notices"])
    assert any("required = true" in n for n in check["notices"])


def test_a_server_that_hangs_is_stopped_at_the_deadline_with_its_children(
    instance: Path, tmp_path: Path
) -> None:
    pid_file = tmp_path / "child.pid"
    hang = (
        "import os, subprocess, sys, time; "
        f"child = subprocess.Popen(['sleep', '300']); open({str(pid_file)!r}, 'w')"
        ".write(str(child.pid)); time.sleep(300)"
    )
    (instance / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"regulator": {"command": sys.executable, "args": ["-c", hang]}}})
    )
    started = time.monotonic()
    report = check_wiring(instance, timeout=3)
    assert time.monotonic() - started < 30
    assert report is not None
    (problem,) = report.problems
    assert problem.endswith("did not answer initialize within 3 s"), problem
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead: it waits only for its parent (the init process here) to reap it.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False


def test_a_symlinked_settings_file_is_a_problem(instance: Path, tmp_path: Path) -> None:
    install(instance)
    settings = instance / ".claude" / "settings.json"
    target = tmp_path / "settings.json"
    target.write_text(settings.read_text())
    settings.unlink()
    settings.symlink_to(target)
    (problem,) = wiring(instance)["agent wiring"]["problems"]
    assert problem == f"{settings}: is a symlink; regulator never writes through one " + (
        "(replace it with the file itself)"
    )
