"""``regulator agent install``: wire an agent in a repository to regulator, never clobbering.

Claude Code: the ``regulator`` MCP server in ``.mcp.json``, the hooks (``PreToolUse`` for tools
that may need consent, ``SessionStart``, ``SessionEnd``) and ``MCP_TOOL_TIMEOUT`` in
``.claude/settings.json``. Codex CLI: ``[mcp_servers.regulator]`` in ``.codex/config.toml``.
What is already there stays: an identical entry is left alone, a different one is refused with
the file and key named, and nothing is written when anything is refused. A TOML table is
appended as text, so the file's comments and layout survive.
"""

from __future__ import annotations

import difflib
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from regulator.protocol.errors import Refused

# Longer than the longest shipped question timeout (uat, 10 minutes): the agent must not give
# up on a call while a person may still answer it.
TOOL_TIMEOUT_S = 660
HOOK_MATCHER = "Bash|Write|Edit|MultiEdit|NotebookEdit|WebFetch"


class InstallRefused(Refused):
    """An existing entry differs from regulator's: nothing was written."""


@dataclass(frozen=True)
class Change:
    path: Path
    before: str
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self, root: Path) -> str:
        name = self.path.relative_to(root).as_posix()
        return "".join(
            difflib.unified_diff(
                self.before.splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                fromfile=f"a/{name}" if self.before else "/dev/null",
                tofile=f"b/{name}",
            )
        )


def _read_json(path: Path) -> tuple[str, dict[str, Any]]:
    if not path.exists():
        return "", {}
    if not path.is_file():
        raise InstallRefused(f"{path}: not a regular file")
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise InstallRefused(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise InstallRefused(f"{path}: holds a JSON {type(data).__name__}, not an object")
    return text, data


def _table(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = data.setdefault(key, {})
    if not isinstance(value, dict):
        raise InstallRefused(f"{path}: {key} is a {type(value).__name__}, not an object")
    return value


def _put(table: dict[str, Any], key: str, value: Any, path: Path, where: str) -> None:
    if key in table and table[key] != value:
        raise InstallRefused(
            f"{path}: {where}.{key} is already set to something else; "
            "remove it or change it by hand (regulator never overwrites it)"
        )
    table[key] = value


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def mcp_server(command: str) -> dict[str, Any]:
    return {"command": command, "args": ["mcp"]}


def claude_code(root: Path, command: str = "regulator") -> list[Change]:
    changes = []
    mcp_path = root / ".mcp.json"
    before, data = _read_json(mcp_path)
    servers = _table(data, "mcpServers", mcp_path)
    _put(servers, "regulator", mcp_server(command), mcp_path, "mcpServers")
    changes.append(Change(mcp_path, before, _dump(data)))

    settings_path = root / ".claude" / "settings.json"
    before, data = _read_json(settings_path)
    env = _table(data, "env", settings_path)
    _put(env, "MCP_TOOL_TIMEOUT", str(TOOL_TIMEOUT_S * 1000), settings_path, "env")
    hooks = _table(data, "hooks", settings_path)
    hook = {"type": "command", "command": f"{command} hook claude-code", "timeout": TOOL_TIMEOUT_S}
    for event, matcher in (
        ("PreToolUse", HOOK_MATCHER),
        ("PostToolUse", "Write|Edit|MultiEdit|NotebookEdit"),  # the thrash detector's count
        ("SessionStart", "startup|resume|clear|compact"),
        ("SessionEnd", None),
    ):
        entries = hooks.setdefault(event, [])
        if not isinstance(entries, list):
            raise InstallRefused(f"{settings_path}: hooks.{event} is not a list")
        present = any(
            isinstance(e, dict)
            and any(
                isinstance(h, dict) and h.get("command") == hook["command"]
                for h in e.get("hooks", [])
            )
            for e in entries
        )
        if not present:
            entry: dict[str, Any] = {"hooks": [hook]}
            if matcher is not None:
                entry = {"matcher": matcher, **entry}
            entries.append(entry)
    changes.append(Change(settings_path, before, _dump(data)))
    return changes


def codex(root: Path, command: str = "regulator") -> list[Change]:
    path = root / ".codex" / "config.toml"
    before = path.read_text(encoding="utf-8") if path.is_file() else ""
    if path.exists() and not path.is_file():
        raise InstallRefused(f"{path}: not a regular file")
    try:
        data = tomllib.loads(before)
    except tomllib.TOMLDecodeError as exc:
        raise InstallRefused(f"{path}: not valid TOML: {exc}") from None
    servers = data.get("mcp_servers", {})
    wanted = {**mcp_server(command), "tool_timeout_sec": TOOL_TIMEOUT_S}
    existing = servers.get("regulator") if isinstance(servers, dict) else None
    if existing is not None:
        if {k: existing.get(k) for k in ("command", "args")} != mcp_server(command):
            raise InstallRefused(
                f"{path}: [mcp_servers.regulator] is already set to something else; "
                "remove it or change it by hand (regulator never overwrites it)"
            )
        return [Change(path, before, before)]
    table = (
        "[mcp_servers.regulator]\n"
        f"command = {json.dumps(command)}\n"
        'args = ["mcp"]\n'
        f"tool_timeout_sec = {TOOL_TIMEOUT_S}\n"
    )
    after = before + ("\n" if before and not before.endswith("\n\n") else "") + table
    if before and not before.endswith("\n"):
        after = before + "\n\n" + table
    # The appended table must read back as written (a dotted key elsewhere could clash).
    try:
        readback = tomllib.loads(after).get("mcp_servers", {}).get("regulator")
    except tomllib.TOMLDecodeError as exc:
        raise InstallRefused(
            f"{path}: adding [mcp_servers.regulator] would break it: {exc}"
        ) from None
    if readback != wanted:
        raise InstallRefused(f"{path}: mcp_servers.regulator is defined in another way there")
    return [Change(path, before, after)]


def apply(changes: list[Change]) -> None:
    for change in changes:
        if change.changed:
            change.path.parent.mkdir(parents=True, exist_ok=True)
            change.path.write_text(change.after, encoding="utf-8")
