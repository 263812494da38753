"""``regulator agent install``: wire an agent in a repository to regulator, so it cannot fail open.

Claude Code: the ``regulator`` MCP server in ``.mcp.json``; in ``.claude/settings.json`` the
hooks (``PreToolUse`` for every tool but those that only read and regulator's own, so that a
pause holds for all of them and the thrash detector counts the writes; ``SessionStart``,
``SessionEnd``; an older install's ``PostToolUse`` is removed), ``MCP_TOOL_TIMEOUT`` and the
permission for regulator's own MCP tools; in ``.claude/settings.local.json`` the project
server's approval and the permission again: Claude Code honours the approval only there, and
the committed file's permissions only in a workspace the person has trusted (its trust
dialog), so ``claude -p`` in a fresh clone would refuse every regulator tool. Codex CLI:
``[mcp_servers.regulator]`` in ``.codex/config.toml``, approved and required.

Every command names the interpreter running this install by its absolute path, so nothing
depends on the agent's ``PATH``. A hook that cannot run at all exits 2, the one failure Claude
Code takes as "block the call" (any other lets the call through). What is already there stays:
an identical entry is left alone, regulator's own older entry is upgraded in place, and a
different one is refused with the file and key named. A JSON file is refused when rewriting it
would change what it says (a duplicate key, a number a float cannot hold, NaN), a symlink is
never followed, each file is replaced by a rename, and nothing is written when anything is
refused. A TOML table is written as text, so the file's comments and layout survive.
"""

from __future__ import annotations

import difflib
import errno
import json
import os
import re
import secrets
import shlex
import stat
import sys
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path, PurePosixPath
from typing import Any

from regulator.protocol.errors import HostFailure, Refused
from regulator.store._fs import kind_of, write_all

# Longer than the longest shipped question timeout (uat, 10 minutes): the agent must not give
# up on a call while a person may still answer it.
TOOL_TIMEOUT_S = 660
# Claude Code's own tools that only read, and touch nothing outside Claude Code: the one kind of
# call the hook is not asked about (each would pay the hook's start, some 0.3 s, for an `allow`).
# Every other tool is, so that a paused session's every effect is refused: Bash, Write, Edit,
# WebFetch, a subagent, another server's MCP tool, and a tool a later Claude Code adds.
# Regulator's own MCP tools are left out too: they keep their own gate.
ONLY_READ = ("Read", "Glob", "Grep", "LS", "NotebookRead", "TodoRead", "TodoWrite", "ToolSearch")
# A regular expression (Claude Code tests it against the tool's name): every name but those.
HOOK_MATCHER = f"^(?!(?:{'|'.join(ONLY_READ)})$|mcp__regulator__)"
HOOK_EVENTS: tuple[tuple[str, str | None], ...] = (
    ("PreToolUse", HOOK_MATCHER),
    ("SessionStart", "startup|resume|clear|compact"),
    ("SessionEnd", None),
)
# The matchers older installs wrote, upgraded in place (any other matcher is the person's).
OLDER_MATCHERS: dict[str, tuple[str, ...]] = {
    "PreToolUse": ("Bash|Write|Edit|MultiEdit|NotebookEdit|WebFetch",),
}
# Events an older install hooked and this one does not: regulator's hook there is removed.
# PostToolUse counted the thrash detector's writes, a process after every edit; PreToolUse
# counts them now.
RETIRED_EVENTS = ("PostToolUse",)
SERVER = "regulator"
# Claude Code's permission rule for every tool of the `regulator` MCP server.
MCP_GRANT = f"mcp__{SERVER}"

# After the hook's own command: when it cannot give its reply (the interpreter moved, the venv
# deleted, an import error, a crash), the shell ends with exit 2, which Claude Code takes as
# "block the call", and one line on stderr, which it shows as the reason. The command's own
# stderr is dropped so that line is the whole reason; `regulator doctor` shows the details.
HOOK_FAILS_CLOSED = (
    ' 2>/dev/null || { echo "regulator: the hook could not run (exit $?), so the call is '
    'blocked; run regulator doctor" >&2; exit 2; }'
)

_CLAUDE_DIR = ".claude"
_CODEX_DIR = ".codex"


class InstallRefused(Refused):
    """An existing entry differs from regulator's, or a file cannot be kept: nothing was written."""


@dataclass(frozen=True)
class Change:
    path: Path
    before: str
    after: str
    notes: list[str] = field(default_factory=list)  # regulator's older entries it replaces

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


# --- the command the agent runs ------------------------------------------------------------


def default_program() -> list[str]:
    """This interpreter running regulator.

    ``-P``: ``python -m`` otherwise puts the working directory first on the import path, and
    the repository has a ``regulator/`` directory of its own (the definition): a package the
    agent wrote there must never be what runs as the hook or the server.
    """
    return [sys.executable, "-P", "-m", "regulator"]


def program_for(command: str | None) -> list[str]:
    """The words that run regulator: ``--command`` checked, or :func:`default_program`."""
    if command is None:
        if not sys.executable or not Path(sys.executable).is_absolute():
            raise InstallRefused(
                "this Python does not know its own path; pass --command /path/to/regulator"
            )
        words = default_program()
    else:
        try:
            words = shlex.split(command)
        except ValueError as exc:
            raise InstallRefused(f"--command {command}: {exc}") from None
        if not words:
            raise InstallRefused("--command: empty; leave it out to use this Python")
        first = words[0]
        if not Path(first).is_absolute():
            raise InstallRefused(
                f"--command {command}: {first} is not an absolute path; an agent whose PATH "
                "does not find it would run without regulator's hooks (give /path/to/regulator, "
                f"or leave --command out for {shlex.join(default_program())})"
            )
        if not (Path(first).is_file() and os.access(first, os.X_OK)):
            raise InstallRefused(f"--command {command}: {first} is not an executable file here")
        if "-m" in words[1:]:
            flags = words[1 : words.index("-m", 1)]
            if not any(f[:1] == "-" and f[1:2] != "-" and ("P" in f or "I" in f) for f in flags):
                raise InstallRefused(
                    f"--command {command}: `-m` without -P puts the working directory first on "
                    "the import path, where the agent can write a `regulator` package; add -P "
                    "before -m"
                )
    for word in words:
        try:
            word.encode("utf-8")
        except UnicodeEncodeError:
            raise InstallRefused(f"--command: {word!r} is not valid UTF-8") from None
    return words


def hook_command(program: Sequence[str]) -> str:
    """The shell command of every hook: the hook, failing closed when it cannot answer."""
    return shlex.join([*program, "hook", "claude-code"]) + HOOK_FAILS_CLOSED


def mcp_server(program: Sequence[str]) -> dict[str, Any]:
    return {"command": program[0], "args": [*program[1:], "mcp"]}


def _runs_regulator(words: Sequence[str]) -> bool:
    """``…/regulator`` or ``…/python… [flags] -m regulator``: regulator's own program."""
    if len(words) == 1:
        return PurePosixPath(words[0]).name == "regulator"
    return (
        len(words) >= 3
        and list(words[-2:]) == ["-m", "regulator"]
        and PurePosixPath(words[0]).name.startswith("python")
        and all(w.startswith("-") for w in words[1:-2])
    )


def is_our_hook(command: object) -> bool:
    """A hook command ``agent install`` wrote, this version's or an older one's."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command.removesuffix(HOOK_FAILS_CLOSED))
    except ValueError:
        return False
    return words[-2:] == ["hook", "claude-code"] and _runs_regulator(words[:-2])


def is_our_server(entry: object) -> bool:
    """An MCP server entry ``agent install`` wrote: regulator's program, ``mcp``, no more."""
    if not isinstance(entry, dict) or not set(entry) <= {"command", "args", "type"}:
        return False
    command, args = entry.get("command"), entry.get("args", [])
    return (
        entry.get("type", "stdio") == "stdio"
        and isinstance(command, str)
        and isinstance(args, list)
        and all(isinstance(a, str) for a in args)
        and args[-1:] == ["mcp"]
        and _runs_regulator([command, *args[:-1]])
    )


# --- files: read without following a symlink, refused unless they round-trip --------------


def _check_directory(root: Path, name: str) -> None:
    path = root / name
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISLNK(mode):
        raise InstallRefused(
            f"{path}: is a symlink; regulator never writes through one (make it a directory)"
        )
    if not stat.S_ISDIR(mode):
        raise InstallRefused(f"{path}: is {kind_of(mode)}, not a directory")


def read_text(path: Path) -> str:
    """The file's text, ``""`` when there is none; a symlink or a non-regular file is refused."""
    try:
        # O_NONBLOCK: a FIFO in the file's place must not hang the install on open.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return ""
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InstallRefused(
                f"{path}: is a symlink; regulator never writes through one "
                "(replace it with the file itself)"
            ) from None
        raise InstallRefused(f"{path}: cannot be read: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as file:
        mode = os.fstat(file.fileno()).st_mode
        if not stat.S_ISREG(mode):
            raise InstallRefused(f"{path}: is {kind_of(mode)}, not a regular file")
        data = file.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InstallRefused(f"{path}: is not UTF-8 (byte {exc.start})") from None


_WS = re.compile(r"[ \t\n\r]*")


def _skip(text: str, at: int) -> int:
    """Past the JSON whitespace at ``at``."""
    found = _WS.match(text, at)
    return found.end() if found is not None else at


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")


class _Walk:
    """Refuse JSON text that ``json.loads`` then ``json.dumps`` would not give back as it says.

    Run on text ``json.loads`` accepted, so only what it lets through needs a word here: a key
    twice in one object (it keeps the last), a number a float cannot hold (``1e400`` becomes
    ``Infinity``, which is not JSON; ``0.1000000000000000000001`` loses digits), ``NaN`` and
    ``Infinity``, and a lone surrogate escape (it cannot be written as UTF-8).
    """

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.text = text

    def refuse(self, at: int, message: str) -> InstallRefused:
        line = self.text.count("\n", 0, at) + 1
        return InstallRefused(
            f"{self.path}:{line}: {message}; rewritten, the file would say something else, "
            "so nothing is written (fix it by hand)"
        )

    def string(self, at: int, where: str) -> tuple[str, int]:
        token = _STRING.match(self.text, at)
        assert token is not None  # json.loads read the text
        value, end = json.loads(token.group()), token.end()
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise self.refuse(at, f"{where}: a lone surrogate escape (\\ud800-\\udfff)") from None
        return value, end

    def value(self, at: int, where: str) -> int:
        text = self.text
        at = _skip(text, at)
        first = text[at]
        if first == "{":
            return self.object(at, where)
        if first == "[":
            return self.array(at, where)
        if first == '"':
            return self.string(at, where)[1]
        number = _NUMBER.match(text, at)
        if number is not None:
            token = number.group()
            if number.group(1) or number.group(2):
                held = float(token)
                if held in (float("inf"), float("-inf")):
                    raise self.refuse(at, f"{where}: {token} would become Infinity, not JSON")
                if Decimal(token) != Decimal(repr(held)):
                    raise self.refuse(at, f"{where}: {token} would lose digits")
            return number.end()
        for literal in ("true", "false", "null"):
            if text.startswith(literal, at):
                return at + len(literal)
        word = re.match(r"-?[A-Za-z]+", text[at:])
        raise self.refuse(at, f"{where}: {word.group() if word else text[at]} is not JSON")

    def object(self, at: int, where: str) -> int:
        text = self.text
        at = _skip(text, at + 1)
        if text[at] == "}":
            return at + 1
        seen: set[str] = set()
        while True:
            at = _skip(text, at)
            key, end = self.string(at, where or "the top level")
            if key in seen:
                inside = where or "the top level"
                raise self.refuse(at, f"the key {json.dumps(key)} appears twice in {inside}")
            seen.add(key)
            end = _skip(text, end)
            at = self.value(end + 1, f"{where}.{key}" if where else key)  # past the ':'
            at = _skip(text, at)
            if text[at] == "}":
                return at + 1
            at += 1  # the ','

    def array(self, at: int, where: str) -> int:
        text = self.text
        at = _skip(text, at + 1)
        if text[at] == "]":
            return at + 1
        index = 0
        while True:
            at = self.value(at, f"{where}[{index}]")
            at = _skip(text, at)
            if text[at] == "]":
                return at + 1
            at += 1
            index += 1


def read_json(path: Path) -> tuple[str, dict[str, Any]]:
    """The file's text and its object (``{}`` for a missing or blank file), refused unless
    writing the object back would say what the file says."""
    text = read_text(path)
    if not text.strip():
        return text, {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InstallRefused(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    except (ValueError, RecursionError) as exc:  # an integer too long to read, nesting too deep
        raise InstallRefused(f"{path}: cannot be read back: {exc}") from None
    try:
        _Walk(path, text).value(0, "")
    except RecursionError:
        raise InstallRefused(f"{path}: nested too deeply to be rewritten") from None
    if not isinstance(data, dict):
        raise InstallRefused(f"{path}: holds a JSON {type(data).__name__}, not an object")
    return text, data


def _table(data: dict[str, Any], key: str, path: Path, where: str = "") -> dict[str, Any]:
    value = data.setdefault(key, {})
    if not isinstance(value, dict):
        raise InstallRefused(f"{path}: {where}{key} is a {type(value).__name__}, not an object")
    return value


def _list(data: dict[str, Any], key: str, path: Path, where: str = "") -> list[Any]:
    value = data.setdefault(key, [])
    if not isinstance(value, list):
        raise InstallRefused(f"{path}: {where}{key} is a {type(value).__name__}, not a list")
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


# --- Claude Code ---------------------------------------------------------------------------


def _mcp_json(root: Path, program: list[str]) -> Change:
    path = root / ".mcp.json"
    before, data = read_json(path)
    servers = _table(data, "mcpServers", path)
    wanted = mcp_server(program)
    notes = []
    existing = servers.get(SERVER)
    if existing is not None and existing != wanted and is_our_server(existing):
        old = shlex.join([existing["command"], *existing.get("args", [])])
        notes.append(f"replaced regulator's older server command `{old}`")
        servers[SERVER] = wanted
    _put(servers, SERVER, wanted, path, "mcpServers")
    return Change(path, before, _dump(data), notes)


def our_hooks(entries: list[Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Regulator's hooks among an event's entries: (entry, hook) each."""
    ours: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for entry in entries:
        listed = entry.get("hooks") if isinstance(entry, dict) else None
        for hook in listed if isinstance(listed, list) else []:
            if isinstance(hook, dict) and is_our_hook(hook.get("command")):
                ours.append((entry, hook))
    return ours


def _hooks(data: dict[str, Any], path: Path, command: str) -> list[str]:
    """Merge regulator's hooks into ``data["hooks"]``: an older command of regulator's is
    upgraded in place (its entry's timeout stays, and its matcher unless it is one an older
    install wrote); a second one of regulator's in the same event is removed, as is regulator's
    hook in an event it no longer uses; another program's hook is never touched."""
    hooks = _table(data, "hooks", path)
    replaced: dict[str, list[str]] = {}  # an older command of regulator's: its events
    removed: dict[str, list[str]] = {}
    retired: dict[str, list[str]] = {}
    notes: list[str] = []
    for event, matcher in HOOK_EVENTS:
        entries = _list(hooks, event, path, "hooks.")
        ours = our_hooks(entries)
        if not ours:
            new: dict[str, Any] = {
                "hooks": [{"type": "command", "command": command, "timeout": TOOL_TIMEOUT_S}]
            }
            entries.append({"matcher": matcher, **new} if matcher is not None else new)
            continue
        entry, first = ours[0]
        if first["command"] != command:
            replaced.setdefault(first["command"], []).append(event)
            first["command"] = command
        older = entry.get("matcher")
        if older in OLDER_MATCHERS.get(event, ()) and older != matcher:
            # An older install's matcher, not the person's: the tools it left out were not
            # refused while the session was paused.
            entry["matcher"] = matcher
            notes.append(f"replaced regulator's older matcher `{older}` in hooks {event}")
        for entry, hook in ours[1:]:
            removed.setdefault(hook["command"], []).append(event)
            entry["hooks"].remove(hook)
            if not entry["hooks"]:
                entries.remove(entry)
    for event in RETIRED_EVENTS:
        listed = hooks.get(event)
        if not isinstance(listed, list):
            continue
        for entry, hook in our_hooks(listed):
            retired.setdefault(hook["command"], []).append(event)
            entry["hooks"].remove(hook)
            if not entry["hooks"]:
                listed.remove(entry)
        if not listed:
            del hooks[event]
    return [
        f"{what} `{old.removesuffix(HOOK_FAILS_CLOSED)}` in hooks {', '.join(events)}"
        for what, found in (
            ("replaced regulator's older hook", replaced),
            ("removed a second hook of regulator's", removed),
            ("removed regulator's hook of an older install, no longer used,", retired),
        )
        for old, events in found.items()
    ] + notes


def _settings(root: Path, program: list[str]) -> Change:
    path = root / _CLAUDE_DIR / "settings.json"
    before, data = read_json(path)
    env = _table(data, "env", path)
    _put(env, "MCP_TOOL_TIMEOUT", str(TOOL_TIMEOUT_S * 1000), path, "env")
    # Without a rule allowing them, Claude Code refuses regulator's MCP tools in `-p` mode and
    # asks for each in a terminal: the model could not even ask a person.
    _grant(data, path)
    notes = _hooks(data, path, hook_command(program))
    return Change(path, before, _dump(data), notes)


def _grant(data: dict[str, Any], path: Path) -> None:
    allow = _list(_table(data, "permissions", path), "allow", path, "permissions.")
    if MCP_GRANT not in allow:
        allow.append(MCP_GRANT)


def _local_settings(root: Path) -> Change:
    # The project server's approval: Claude Code honours it in the local file (headless too),
    # and ignores the same key in the committed settings.json. The permission too: the committed
    # file's is ignored until the person trusts the workspace ("Ignoring 1 permissions.allow
    # entry from .claude/settings.json: this workspace has not been trusted", Claude Code
    # 2.1.328), the local file's is not.
    path = root / _CLAUDE_DIR / "settings.local.json"
    before, data = read_json(path)
    disabled = data.get("disabledMcpjsonServers")
    if isinstance(disabled, list) and SERVER in disabled:
        raise InstallRefused(
            f"{path}: disabledMcpjsonServers names {SERVER}; remove it by hand to enable it "
            "(regulator never overwrites it)"
        )
    enabled = _list(data, "enabledMcpjsonServers", path)
    if SERVER not in enabled:
        enabled.append(SERVER)
    _grant(data, path)
    return Change(path, before, _dump(data))


def claude_code(root: Path, command: str | None = None) -> list[Change]:
    """The changes wiring Claude Code in ``root``; refused (nothing to apply) as a whole."""
    program = program_for(command)
    _check_directory(root, _CLAUDE_DIR)
    return [_mcp_json(root, program), _settings(root, program), _local_settings(root)]


# --- Codex CLI -----------------------------------------------------------------------------


def _toml_value(value: Any) -> str:
    # A JSON string or list of strings is a TOML basic string or array (escapes included).
    return json.dumps(value, ensure_ascii=False)


def _codex_table(values: dict[str, Any]) -> str:
    lines = [f"{key} = {_toml_value(value)}" for key, value in values.items()]
    return f"[mcp_servers.{SERVER}]\n" + "\n".join(lines) + "\n"


_HEADER = re.compile(rf"^\[mcp_servers\.{SERVER}\][ \t]*\n?", re.MULTILINE)
_NEXT_TABLE = re.compile(r"^[ \t]*\[", re.MULTILINE)


def _replace_table(path: Path, text: str, table: str, keys: set[str]) -> str:
    """``text`` with its ``[mcp_servers.regulator]`` block replaced by ``table``, when the block
    is a header and key lines regulator writes only (anything else is the person's)."""
    headers = list(_HEADER.finditer(text))
    written_by_hand = InstallRefused(
        f"{path}: [mcp_servers.{SERVER}] is regulator's, but written by hand; change it by hand "
        "or remove it and install again (regulator never overwrites it)"
    )
    if len(headers) != 1:
        raise written_by_hand
    start = headers[0].start()
    following = _NEXT_TABLE.search(text, headers[0].end())
    end = following.start() if following is not None else len(text)
    body = text[headers[0].end() : end]
    for line in body.splitlines():
        if line.strip() and line.split("=", 1)[0].strip() not in keys:
            raise written_by_hand
    blank = "\n" if body.endswith("\n\n") else ""
    return text[:start] + table + blank + text[end:]


def codex(root: Path, command: str | None = None) -> list[Change]:
    """The change wiring Codex CLI in ``root``; refused (nothing to apply) as a whole."""
    program = program_for(command)
    _check_directory(root, _CODEX_DIR)
    path = root / _CODEX_DIR / "config.toml"
    before = read_text(path)
    try:
        data = tomllib.loads(before)
    except tomllib.TOMLDecodeError as exc:
        raise InstallRefused(f"{path}: not valid TOML: {exc}") from None
    wanted: dict[str, Any] = {
        **mcp_server(program),
        "tool_timeout_sec": TOOL_TIMEOUT_S,
        # `codex exec` refuses an MCP call that needs approval ("approval policy is never"):
        # regulator's tools are its own gate, so they are approved here.
        "default_tools_approval_mode": "approve",
        # Without it Codex may send the model's first request before the server's tools are
        # listed (measured: 12 runs in 53 with codex-cli 0.171).
        "required": True,
    }
    servers = data.get("mcp_servers", {})
    existing = servers.get(SERVER) if isinstance(servers, dict) else None
    notes: list[str] = []
    if existing is None:
        table = _codex_table(wanted)
        if not before:
            after = table
        elif before.endswith("\n\n"):
            after = before + table
        else:
            after = before + ("\n" if before.endswith("\n") else "\n\n") + table
    else:
        server = {"command": existing.get("command"), "args": existing.get("args", [])}
        if not (set(existing) <= set(wanted) and is_our_server(server)):
            raise InstallRefused(
                f"{path}: [mcp_servers.{SERVER}] is already set to something else; "
                "remove it or change it by hand (regulator never overwrites it)"
            )
        # Regulator's own table: the program and what it lacks are set; a value the person
        # gave a setting stays.
        upgraded = {**wanted, **{k: v for k, v in existing.items() if k not in server}}
        if upgraded == existing:
            return [Change(path, before, before)]
        if server != mcp_server(program):
            old = shlex.join([server["command"], *server["args"]])
            notes.append(f"replaced regulator's older server command `{old}`")
        after = _replace_table(path, before, _codex_table(upgraded), set(wanted))
        wanted = upgraded
    # The table must read back as written (a dotted key elsewhere could clash).
    try:
        readback = tomllib.loads(after).get("mcp_servers", {}).get(SERVER)
    except tomllib.TOMLDecodeError as exc:
        raise InstallRefused(
            f"{path}: adding [mcp_servers.{SERVER}] would break it: {exc}"
        ) from None
    if readback != wanted:
        raise InstallRefused(f"{path}: mcp_servers.{SERVER} is defined in another way there")
    return [Change(path, before, after, notes)]


# --- writing -------------------------------------------------------------------------------


def _write(root: Path, path: Path, text: str) -> None:
    """Replace ``path`` by a temp file renamed over it, never through a symlink."""
    parent = path.parent
    if parent != root:
        parent.mkdir(exist_ok=True)
    # O_NOFOLLOW on .claude/ or .codex/: a symlink put there since the plan is refused too.
    follow = 0 if parent == root else os.O_NOFOLLOW
    dir_fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | follow)
    temp = f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        try:
            found = os.stat(path.name, dir_fd=dir_fd, follow_symlinks=False).st_mode
        except FileNotFoundError:
            found = None
        if found is not None and not stat.S_ISREG(found):
            raise InstallRefused(f"{path}: is {kind_of(found)}, not a regular file")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(temp, flags, 0o666, dir_fd=dir_fd)
        try:
            if found is not None:
                os.fchmod(fd, stat.S_IMODE(found))  # keep the mode the file had
            write_all(fd, text.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.rename(temp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            os.unlink(temp, dir_fd=dir_fd)
            raise
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def apply(root: Path, changes: list[Change]) -> None:
    for change in changes:
        if not change.changed:
            continue
        try:
            _write(root, change.path, change.after)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise InstallRefused(
                    f"{change.path.parent}: is not a directory (a symlink?); nothing more written"
                ) from None
            raise HostFailure(f"{change.path}: cannot be written: {exc.strerror}") from None
