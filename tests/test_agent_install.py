"""`regulator agent install`: the agent's configuration merged in, never overwritten, and wired
so that it cannot fail open: absolute commands, a hook that blocks when it cannot run,
regulator's tools granted, and the files it merges into kept exactly or refused."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from regulator.host.agent_install import HOOK_FAILS_CLOSED, HOOK_MATCHER

from .conftest import cli, run_cli

AGENTS = Path(__file__).parent / "agents" / "claude_code"
PROGRAM = [sys.executable, "-P", "-m", "regulator"]
HOOK = shlex.join([*PROGRAM, "hook", "claude-code"]) + HOOK_FAILS_CLOSED


def settings(root: Path, name: str = "settings.json") -> Any:
    return json.loads((root / ".claude" / name).read_text())


def hook_commands(root: Path, event: str) -> list[str]:
    return [h["command"] for e in settings(root)["hooks"][event] for h in e["hooks"]]


def run_hook(root: Path, command: str, name: str, env: dict[str, str] | None = None) -> Any:
    """A hook command run as Claude Code runs it: by the shell, a payload on stdin."""
    payload = json.loads((AGENTS / f"{name}.json").read_text())
    payload["cwd"] = str(root)
    return subprocess.run(
        ["/bin/sh", "-c", command],
        input=json.dumps(payload),
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def test_claude_code_gets_the_mcp_server_hooks_and_a_tool_timeout(instance: Path) -> None:
    done = run_cli("agent", "install", "claude-code", cwd=instance)
    assert done.returncode == 0, done.stderr
    mcp = json.loads((instance / ".mcp.json").read_text())
    assert mcp["mcpServers"]["regulator"] == {"command": PROGRAM[0], "args": [*PROGRAM[1:], "mcp"]}
    found = settings(instance)
    assert int(found["env"]["MCP_TOOL_TIMEOUT"]) > 600_000  # above the longest question
    assert set(found["hooks"]) == {"PreToolUse", "SessionStart", "SessionEnd"}
    for event in ("PreToolUse", "SessionStart", "SessionEnd"):
        assert hook_commands(instance, event) == [HOOK]
    assert found["hooks"]["PreToolUse"][0]["matcher"] == HOOK_MATCHER


def matched(tool: str) -> bool:
    """Whether Claude Code sends ``tool``'s calls to the hook: it tests the matcher, a regular
    expression (it is not a plain list of names), against the tool's name."""
    import re

    return re.search(HOOK_MATCHER, tool) is not None


def test_the_hook_sees_every_tool_but_those_that_only_read_and_regulators_own() -> None:
    # What a pause must refuse: Claude Code's own writes and shell, a subagent, the web, another
    # server's MCP tools, and a tool no one has named yet.
    for tool in ("Bash", "Write", "Edit", "MultiEdit", "NotebookEdit", "WebFetch", "Agent"):
        assert matched(tool), tool
    for tool in ("Task", "mcp__github__create_issue", "mcp__regulatorx__a", "Workflow", "Reads"):
        assert matched(tool), tool
    # Each of these would pay the hook's start for an `allow`; regulator's tools have their own
    # gate.
    for tool in ("Read", "Glob", "Grep", "LS", "ToolSearch", "mcp__regulator__ask_human"):
        assert not matched(tool), tool


def test_every_command_is_absolute_the_interpreter_that_ran_the_install(instance: Path) -> None:
    assert cli("agent", "install", "claude-code", cwd=instance).returncode == 0
    assert cli("agent", "install", "codex", cwd=instance).returncode == 0
    server = json.loads((instance / ".mcp.json").read_text())["mcpServers"]["regulator"]
    assert Path(server["command"]).is_absolute() and server["command"] == sys.executable
    codex = tomllib.loads((instance / ".codex" / "config.toml").read_text())
    assert codex["mcp_servers"]["regulator"]["command"] == sys.executable
    for event in ("PreToolUse", "SessionStart"):
        (command,) = hook_commands(instance, event)
        assert shlex.split(command)[0] == sys.executable


def test_the_installed_hook_answers_a_read(instance: Path) -> None:
    assert cli("agent", "install", "claude-code", cwd=instance).returncode == 0
    (command,) = hook_commands(instance, "PreToolUse")
    done = run_hook(instance, command, "pre_tool_use_read")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "allow"


def test_a_hook_whose_interpreter_is_gone_blocks_the_call_with_exit_2(
    instance: Path, tmp_path: Path
) -> None:
    # A virtualenv's interpreter, deleted after the install.
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python3").symlink_to(sys.executable)
    given = f"{venv / 'python3'} -P -m regulator"
    done = cli("agent", "install", "claude-code", "--command", given, cwd=instance)
    assert done.returncode == 0, done.stderr
    (venv / "python3").unlink()
    (command,) = hook_commands(instance, "PreToolUse")
    blocked = run_hook(instance, command, "pre_tool_use_bash_rm")
    # Claude Code lets a call through on any failure but exit 2, which blocks it.
    assert blocked.returncode == 2
    assert blocked.stdout == ""
    (reason,) = blocked.stderr.splitlines()
    assert reason.startswith("regulator: the hook could not run (exit 127)")


def test_a_hook_that_cannot_import_regulator_blocks_the_call_with_exit_2(
    instance: Path, tmp_path: Path
) -> None:
    assert cli("agent", "install", "claude-code", cwd=instance).returncode == 0
    broken = tmp_path / "broken" / "regulator"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('a half-upgraded install')\n")
    (command,) = hook_commands(instance, "PreToolUse")
    blocked = run_hook(
        instance, command, "pre_tool_use_bash_rm", env={"PYTHONPATH": str(broken.parent)}
    )
    assert blocked.returncode == 2
    assert blocked.stderr.startswith("regulator: the hook could not run (exit 1)")


def test_a_regulator_package_the_agent_writes_in_the_repository_is_not_what_runs(
    instance: Path,
) -> None:
    assert cli("agent", "install", "claude-code", cwd=instance).returncode == 0
    # `python -m regulator` from the repository would import ./regulator first, without -P.
    planted = instance / "regulator"
    allow = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}
    planted.mkdir(exist_ok=True)
    (planted / "__init__.py").write_text("")
    (planted / "__main__.py").write_text(f"print({json.dumps(json.dumps(allow))})\n")
    (command,) = hook_commands(instance, "PreToolUse")
    done = run_hook(instance, command, "pre_tool_use_bash_rm")
    assert done.returncode == 0, done.stderr
    decision = json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"]
    assert decision == "ask"  # nobody in the room: regulator's own answer, not the planted one


def test_claude_code_is_granted_regulators_tools_and_the_server_approved(instance: Path) -> None:
    (instance / ".claude").mkdir()
    theirs = {"permissions": {"allow": ["Bash(npm test)"], "deny": ["WebFetch"]}}
    (instance / ".claude" / "settings.json").write_text(json.dumps(theirs))
    local = {"enabledMcpjsonServers": ["other"], "model": "opus"}
    (instance / ".claude" / "settings.local.json").write_text(json.dumps(local))
    for _ in range(2):
        assert cli("agent", "install", "claude-code", cwd=instance).returncode == 0
    found = settings(instance)["permissions"]
    assert found == {"allow": ["Bash(npm test)", "mcp__regulator"], "deny": ["WebFetch"]}
    # The local file holds the grant too: Claude Code honours settings.json's permissions only
    # in a workspace the person has trusted, the local file's in any.
    assert settings(instance, "settings.local.json") == {
        "enabledMcpjsonServers": ["other", "regulator"],
        "model": "opus",
        "permissions": {"allow": ["mcp__regulator"]},
    }


def test_a_server_the_person_disabled_is_refused_not_enabled(instance: Path) -> None:
    (instance / ".claude").mkdir()
    local = instance / ".claude" / "settings.local.json"
    local.write_text(json.dumps({"disabledMcpjsonServers": ["regulator"]}))
    done = cli("agent", "install", "claude-code", cwd=instance)
    assert done.returncode == 1
    assert "settings.local.json: disabledMcpjsonServers names regulator" in done.stderr
    assert not (instance / ".mcp.json").exists()


def test_what_is_already_there_is_kept_and_a_second_install_changes_nothing(
    instance: Path,
) -> None:
    (instance / ".mcp.json").write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}}))
    (instance / ".claude").mkdir()
    theirs = {
        "permissions": {"allow": ["Bash(npm test)"]},
        "hooks": {
            "PreToolUse": [
                {"matcher": "Write", "hooks": [{"type": "command", "command": "lint-it"}]}
            ]
        },
    }
    (instance / ".claude" / "settings.json").write_text(json.dumps(theirs))
    assert cli("agent", "install", "claude-code", cwd=instance).returncode == 0
    mcp = json.loads((instance / ".mcp.json").read_text())
    assert set(mcp["mcpServers"]) == {"other", "regulator"}
    assert settings(instance)["permissions"]["allow"][0] == "Bash(npm test)"
    assert hook_commands(instance, "PreToolUse") == ["lint-it", HOOK]
    before = {p: p.read_bytes() for p in (instance / ".claude").iterdir()}
    again = cli("agent", "install", "claude-code", cwd=instance)
    assert again.stdout.count("unchanged") == 3
    assert {p: p.read_bytes() for p in (instance / ".claude").iterdir()} == before


OLD_HOOK = {"type": "command", "command": "regulator hook claude-code", "timeout": 660}


def test_an_older_install_is_upgraded_in_place_and_a_foreign_hook_kept(instance: Path) -> None:
    # What `agent install claude-code` wrote before its commands were absolute.
    (instance / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"regulator": {"command": "regulator", "args": ["mcp"]}}})
    )
    (instance / ".claude").mkdir()
    old = {
        "env": {"MCP_TOOL_TIMEOUT": "660000"},
        "hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "lint-it"}]},
                {"matcher": "Bash|Write|Edit", "hooks": [{**OLD_HOOK, "timeout": 900}]},
            ],
            "SessionStart": [{"matcher": "startup", "hooks": [OLD_HOOK]}],
            "SessionEnd": [{"hooks": [OLD_HOOK]}, {"hooks": [OLD_HOOK]}],
            "PostToolUse": [
                {"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "fmt-it"}]},
                {"matcher": "Write|Edit|MultiEdit|NotebookEdit", "hooks": [OLD_HOOK]},
            ],
        },
    }
    (instance / ".claude" / "settings.json").write_text(json.dumps(old))
    done = cli("agent", "install", "claude-code", cwd=instance)
    assert done.returncode == 0, done.stderr
    assert "replaced regulator's older hook `regulator hook claude-code`" in done.stdout
    assert "replaced regulator's older server command `regulator mcp`" in done.stdout
    server = json.loads((instance / ".mcp.json").read_text())["mcpServers"]["regulator"]
    assert server["command"] == sys.executable
    hooks = settings(instance)["hooks"]
    assert hook_commands(instance, "PreToolUse") == ["lint-it", HOOK]
    # The entry keeps its place, its matcher and the person's timeout; only the command moves.
    assert hooks["PreToolUse"][1] == {
        "matcher": "Bash|Write|Edit",
        "hooks": [{"type": "command", "command": HOOK, "timeout": 900}],
    }
    assert hook_commands(instance, "SessionStart") == [HOOK]
    assert hook_commands(instance, "SessionEnd") == [HOOK]  # the second one removed
    # PostToolUse is no longer regulator's: its hook there goes, the person's stays.
    assert hook_commands(instance, "PostToolUse") == ["fmt-it"]
    assert (
        "removed regulator's hook of an older install, no longer used, "
        "`regulator hook claude-code` in hooks PostToolUse"
    ) in done.stdout


def test_an_older_installs_matcher_and_post_tool_hook_are_upgraded(instance: Path) -> None:
    """What `agent install` wrote before the pause held for every tool: its matcher is
    replaced, its PostToolUse hook removed (the event with it, nothing else being there)."""
    assert cli("agent", "install", "claude-code", cwd=instance).returncode == 0
    path = instance / ".claude" / "settings.json"
    current = json.loads(path.read_text())
    older = json.loads(path.read_text())
    older["hooks"]["PreToolUse"][0]["matcher"] = "Bash|Write|Edit|MultiEdit|NotebookEdit|WebFetch"
    older["hooks"]["PostToolUse"] = [
        {
            "matcher": "Write|Edit|MultiEdit|NotebookEdit",
            "hooks": [{"type": "command", "command": HOOK, "timeout": 660}],
        }
    ]
    path.write_text(json.dumps(older, indent=2) + "\n")
    done = cli("agent", "install", "claude-code", cwd=instance)
    assert done.returncode == 0, done.stderr
    assert (
        "replaced regulator's older matcher `Bash|Write|Edit|MultiEdit|NotebookEdit|WebFetch` "
        "in hooks PreToolUse"
    ) in done.stdout
    assert settings(instance) == current
    # A matcher of the person's own stays theirs.
    mine = json.loads(path.read_text())
    mine["hooks"]["PreToolUse"][0]["matcher"] = "Bash|Write"
    path.write_text(json.dumps(mine, indent=2) + "\n")
    assert cli("agent", "install", "claude-code", cwd=instance).returncode == 0
    assert settings(instance)["hooks"]["PreToolUse"][0]["matcher"] == "Bash|Write"


def test_a_regulator_entry_written_by_hand_is_refused_and_nothing_is_written(
    instance: Path,
) -> None:
    mine = {"mcpServers": {"regulator": {"command": "regulator", "args": ["mcp"], "env": {}}}}
    (instance / ".mcp.json").write_text(json.dumps(mine))
    done = cli("agent", "install", "claude-code", cwd=instance)
    assert done.returncode == 1
    assert done.stderr.startswith("regulator: ") and ".mcp.json" in done.stderr
    assert json.loads((instance / ".mcp.json").read_text()) == mine
    assert not (instance / ".claude").exists()


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("regulator", "regulator is not an absolute path"),
        ("bin/regulator", "bin/regulator is not an absolute path"),
        ("/nonexistent/regulator", "/nonexistent/regulator is not an executable file here"),
        (f"{sys.executable} -m regulator", "`-m` without -P"),
    ],
)
def test_a_command_that_depends_on_path_or_the_directory_is_refused(
    instance: Path, given: str, says: str
) -> None:
    done = cli("agent", "install", "claude-code", "--command", given, cwd=instance)
    assert done.returncode == 1
    assert says in done.stderr and "--command" in done.stderr
    assert not (instance / ".mcp.json").exists() and not (instance / ".claude").exists()


def test_an_absolute_command_is_used_as_given_quoted_for_the_shell(
    instance: Path, tmp_path: Path
) -> None:
    where = tmp_path / "my tools" / "regulator"
    where.parent.mkdir()
    where.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -P -m regulator "$@"\n')
    where.chmod(0o755)
    # --command takes shell words: a path with a space is quoted.
    given = shlex.quote(str(where))
    done = cli("agent", "install", "claude-code", "--command", given, cwd=instance)
    assert done.returncode == 0, done.stderr
    server = json.loads((instance / ".mcp.json").read_text())["mcpServers"]["regulator"]
    assert server == {"command": str(where), "args": ["mcp"]}
    (command,) = hook_commands(instance, "PreToolUse")
    assert command.startswith(f"'{where}' hook claude-code")
    answered = run_hook(instance, command, "pre_tool_use_read")
    assert answered.returncode == 0, answered.stderr
    assert json.loads(answered.stdout)["hookSpecificOutput"]["permissionDecision"] == "allow"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{\n  "env": {\n    "RATIO": 1e400\n  }\n}', ":3: env.RATIO: 1e400 would become Infinity"),
        ('{"x": 0.1000000000000000000001}', ":1: x: 0.1000000000000000000001 would lose digits"),
        ('{"x": [1, NaN]}', ":1: x[1]: NaN is not JSON"),
        ('{"x": -Infinity}', ":1: x: -Infinity is not JSON"),
        (
            '{\n  "hooks": {},\n  "permissions": {\n    "allow": [],\n    "allow": []\n  }\n}',
            ':5: the key "allow" appears twice in permissions',
        ),
        ('{"a": 1,\n"a": 2}', ':2: the key "a" appears twice in the top level'),
        ('{"x": "\\udc00"}', ":1: x: a lone surrogate escape"),
    ],
)
def test_json_that_would_not_round_trip_is_refused_naming_file_line_and_key(
    instance: Path, text: str, says: str
) -> None:
    (instance / ".claude").mkdir()
    path = instance / ".claude" / "settings.json"
    path.write_text(text)
    done = cli("agent", "install", "claude-code", cwd=instance)
    assert done.returncode == 1, done.stdout
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"regulator: {path}{says}"), line
    assert path.read_text() == text  # never rewritten as `Infinity`, never a key dropped
    assert not (instance / ".mcp.json").exists()  # nor any other file written
    assert not (instance / ".claude" / "settings.local.json").exists()


def test_a_symlinked_settings_file_is_refused_and_its_target_untouched(
    instance: Path, tmp_path: Path
) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_text("{}\n")
    (instance / ".claude").mkdir()
    (instance / ".claude" / "settings.json").symlink_to(target)
    done = cli("agent", "install", "claude-code", cwd=instance)
    assert done.returncode == 1
    assert done.stderr == (
        f"regulator: {instance / '.claude' / 'settings.json'}: is a symlink; regulator never "
        "writes through one (replace it with the file itself)\n"
    )
    assert target.read_text() == "{}\n"
    assert not (instance / ".mcp.json").exists()


@pytest.mark.parametrize("link", [".claude", ".codex", ".mcp.json", ".codex/config.toml"])
def test_no_symlink_is_followed_a_dangling_one_neither(
    instance: Path, tmp_path: Path, link: str
) -> None:
    agent = "codex" if link.startswith(".codex") else "claude-code"
    away = tmp_path / "away"  # does not exist: writing through the link would create it
    if "/" in link:
        (instance / link).parent.mkdir()
    (instance / link).symlink_to(away)
    done = cli("agent", "install", agent, cwd=instance)
    assert done.returncode == 1
    assert f"{instance / link}: is a symlink" in done.stderr
    assert not os.path.lexists(away)
    assert not (instance / ".mcp.json").exists() or link == ".mcp.json"


def test_a_file_is_replaced_by_rename_keeping_its_mode(instance: Path, tmp_path: Path) -> None:
    (instance / ".claude").mkdir()
    path = instance / ".claude" / "settings.json"
    path.write_text('{"model": "opus"}\n')
    path.chmod(0o600)
    # A hard link still sees the old text when the file is replaced, not rewritten in place.
    os.link(path, tmp_path / "old-inode")
    assert cli("agent", "install", "claude-code", cwd=instance).returncode == 0
    assert (tmp_path / "old-inode").read_text() == '{"model": "opus"}\n'
    assert settings(instance)["model"] == "opus"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in (instance / ".claude").iterdir()) == [
        "settings.json",
        "settings.local.json",
    ]  # no temp file left


def test_dry_run_shows_the_change_and_writes_nothing(instance: Path) -> None:
    done = cli("agent", "install", "codex", "--dry-run", cwd=instance)
    assert done.returncode == 0
    assert "+[mcp_servers.regulator]" in done.stdout
    assert not (instance / ".codex").exists()


def test_codex_config_keeps_its_comments_and_gains_the_server(instance: Path) -> None:
    (instance / ".codex").mkdir()
    (instance / ".codex" / "config.toml").write_text('# my settings\nmodel = "o4"\n')
    assert cli("agent", "install", "codex", cwd=instance).returncode == 0
    text = (instance / ".codex" / "config.toml").read_text()
    assert text.startswith('# my settings\nmodel = "o4"\n')
    server = tomllib.loads(text)["mcp_servers"]["regulator"]
    assert server == {
        "command": sys.executable,
        "args": ["-P", "-m", "regulator", "mcp"],
        "tool_timeout_sec": 660,
        # `codex exec` refuses a call needing approval; without `required` the first request
        # may go out before the tools are listed.
        "default_tools_approval_mode": "approve",
        "required": True,
    }
    again = cli("agent", "install", "codex", cwd=instance)
    assert "unchanged" in again.stdout


OLD_CODEX = (
    "# mine\n"
    'model = "o4"\n'
    "\n"
    "[mcp_servers.regulator]\n"
    'command = "regulator"\n'
    'args = ["mcp"]\n'
    "tool_timeout_sec = 900\n"
    "\n"
    "[profiles.fast]\n"
    'model = "o4-mini"\n'
)


def test_an_older_codex_table_is_upgraded_and_the_rest_of_the_file_kept(instance: Path) -> None:
    (instance / ".codex").mkdir()
    path = instance / ".codex" / "config.toml"
    path.write_text(OLD_CODEX)
    done = cli("agent", "install", "codex", cwd=instance)
    assert done.returncode == 0, done.stderr
    assert "replaced regulator's older server command `regulator mcp`" in done.stdout
    text = path.read_text()
    assert text.startswith('# mine\nmodel = "o4"\n\n[mcp_servers.regulator]\n')
    assert text.endswith('\n\n[profiles.fast]\nmodel = "o4-mini"\n')
    data = tomllib.loads(text)
    server = data["mcp_servers"]["regulator"]
    assert server["command"] == sys.executable and server["required"] is True
    assert server["tool_timeout_sec"] == 900  # the person's value stays
    assert data["profiles"] == {"fast": {"model": "o4-mini"}}


def test_a_codex_table_of_regulators_with_a_comment_inside_is_refused(instance: Path) -> None:
    (instance / ".codex").mkdir()
    path = instance / ".codex" / "config.toml"
    text = OLD_CODEX.replace('args = ["mcp"]\n', '# keep this\nargs = ["mcp"]\n')
    path.write_text(text)
    done = cli("agent", "install", "codex", cwd=instance)
    assert done.returncode == 1
    assert "written by hand" in done.stderr
    assert path.read_text() == text
