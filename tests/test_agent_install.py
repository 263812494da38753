"""`regulator agent install`: the agent's configuration merged in, never overwritten."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from .conftest import run_cli


def test_claude_code_gets_the_mcp_server_hooks_and_a_tool_timeout(instance: Path) -> None:
    done = run_cli("agent", "install", "claude-code", cwd=instance)
    assert done.returncode == 0, done.stderr
    mcp = json.loads((instance / ".mcp.json").read_text())
    assert mcp["mcpServers"]["regulator"] == {"command": "regulator", "args": ["mcp"]}
    settings = json.loads((instance / ".claude" / "settings.json").read_text())
    assert int(settings["env"]["MCP_TOOL_TIMEOUT"]) > 600_000  # above the longest question
    for event in ("PreToolUse", "SessionStart", "SessionEnd"):
        (entry,) = settings["hooks"][event]
        assert entry["hooks"][0]["command"] == "regulator hook claude-code"
    assert "Bash" in settings["hooks"]["PreToolUse"][0]["matcher"]


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
    assert run_cli("agent", "install", "claude-code", cwd=instance).returncode == 0
    mcp = json.loads((instance / ".mcp.json").read_text())
    assert set(mcp["mcpServers"]) == {"other", "regulator"}
    settings = json.loads((instance / ".claude" / "settings.json").read_text())
    assert settings["permissions"] == theirs["permissions"]
    commands = [h["command"] for e in settings["hooks"]["PreToolUse"] for h in e["hooks"]]
    assert commands == ["lint-it", "regulator hook claude-code"]
    before = (instance / ".claude" / "settings.json").read_bytes()
    again = run_cli("agent", "install", "claude-code", cwd=instance)
    assert "unchanged" in again.stdout
    assert (instance / ".claude" / "settings.json").read_bytes() == before


def test_a_different_regulator_entry_is_refused_and_nothing_is_written(instance: Path) -> None:
    mine = {"mcpServers": {"regulator": {"command": "/opt/old/regulator", "args": ["mcp"]}}}
    (instance / ".mcp.json").write_text(json.dumps(mine))
    done = run_cli("agent", "install", "claude-code", cwd=instance)
    assert done.returncode == 1
    assert done.stderr.startswith("regulator: ") and ".mcp.json" in done.stderr
    assert json.loads((instance / ".mcp.json").read_text()) == mine
    assert not (instance / ".claude").exists()


def test_dry_run_shows_the_change_and_writes_nothing(instance: Path) -> None:
    done = run_cli("agent", "install", "codex", "--dry-run", cwd=instance)
    assert done.returncode == 0
    assert "+[mcp_servers.regulator]" in done.stdout
    assert not (instance / ".codex").exists()


def test_codex_config_keeps_its_comments_and_gains_the_server(instance: Path) -> None:
    (instance / ".codex").mkdir()
    (instance / ".codex" / "config.toml").write_text('# my settings\nmodel = "o4"\n')
    assert run_cli("agent", "install", "codex", cwd=instance).returncode == 0
    text = (instance / ".codex" / "config.toml").read_text()
    assert text.startswith('# my settings\nmodel = "o4"\n')
    server = tomllib.loads(text)["mcp_servers"]["regulator"]
    assert (server["command"], server["args"]) == ("regulator", ["mcp"])
