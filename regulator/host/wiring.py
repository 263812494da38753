"""Does an agent's wiring to regulator work? Its hook and MCP servers, run as the agent runs them.

``regulator doctor`` asks this of a repository that has the wiring ``regulator agent install``
writes. The hook command in ``.claude/settings.json`` is run through the shell, as Claude Code
runs it, with a ``PreToolUse`` payload for a ``Read``, and must reply with well-formed JSON
(``allow``, with the shipped ``agents.yaml``). Each ``regulator`` MCP server, in ``.mcp.json``
and in ``.codex/config.toml``, is started and must answer ``initialize`` and ``tools/list`` over
stdio (plain JSON-RPC lines, so this module imports no MCP library). A command that is not an
absolute path, or a hook that does not fail closed, is a problem whatever the probe says: it
works only where the agent's ``PATH`` happens to find it, and a hook that cannot run lets every
call through. Every process has a deadline and is killed with its process group after it.

Nothing here writes: the configuration is read as ``agent install`` reads it (no symlink
followed), and a ``Read`` or a server listing its tools records nothing.
"""

from __future__ import annotations

import json
import os
import selectors
import shlex
import signal
import subprocess
import tempfile
import time
import tomllib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO, Any

from regulator.host.agent_install import (
    HOOK_FAILS_CLOSED,
    HOOK_MATCHER,
    MCP_GRANT,
    OLDER_MATCHERS,
    RETIRED_EVENTS,
    SERVER,
    InstallRefused,
    read_json,
    read_text,
)

PROBE_TIMEOUT_S = 20.0
_AGAIN = {
    "claude-code": "run `regulator agent install claude-code` again",
    "codex": "run `regulator agent install codex` again",
}
# Variables that would make a probe act for a unit or session of the person's shell.
_SESSION_VARS = ("REGULATOR_UNIT", "REGULATOR_ATTEMPT", "REGULATOR_SESSION")


@dataclass
class WiringReport:
    checked: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    @property
    def detail(self) -> str:
        return "; ".join(self.checked) or "regulator's wiring found, nothing run"


def _env(extra: Any = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SESSION_VARS}
    if isinstance(extra, dict):
        env.update({str(k): str(v) for k, v in extra.items()})
    return env


def _last_line(stream: IO[bytes]) -> str:
    stream.seek(0)
    lines = [ln for ln in stream.read().decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1].strip()[:300] if lines else ""


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Kill what the probe started, its children included (they may hold the pipes)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


def _said(status: int | None, stderr: str) -> str:
    words = f"exit {status}" if status is not None and status >= 0 else "killed"
    if status is not None and status < 0:
        words = f"killed by signal {-status}"
    return f"{words}: {stderr}" if stderr else words


# --- the hook -----------------------------------------------------------------------------


def _read_payload(root: Path) -> bytes:
    return json.dumps(
        {
            "session_id": "regulator-doctor",
            "transcript_path": "",
            "cwd": str(root),
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": str(root / "README.md")},
            "tool_use_id": "regulator-doctor",
        }
    ).encode()


def probe_hook(root: Path, command: str, timeout: float = PROBE_TIMEOUT_S) -> tuple[str, str]:
    """Run a hook command as Claude Code would, for a ``Read``: (``problem``, ``notice`` or
    ``ok``; what happened). Regulator's own fail-closed wrapper is left off, so what the hook
    said on stderr is seen."""
    inner = command.removesuffix(HOOK_FAILS_CLOSED)
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            ["/bin/sh", "-c", inner],
            cwd=root,
            env=_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            start_new_session=True,
        )
        try:
            out, _ = proc.communicate(_read_payload(root), timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop(proc)
            return "problem", f"gave no reply to a Read within {timeout:g} s"
        finally:
            _stop(proc)
        stderr = _last_line(err)
    if proc.returncode != 0:
        return "problem", f"does not run ({_said(proc.returncode, stderr)})"
    try:
        reply = json.loads(out) if out.strip() else None
    except ValueError:
        reply = None
    if not isinstance(reply, dict):
        shown = out.decode("utf-8", "replace").strip()[:200]
        return "problem", f"replied to a Read with something that is not a JSON object: {shown!r}"
    decision = reply.get("hookSpecificOutput", {})
    decision = decision.get("permissionDecision") if isinstance(decision, dict) else None
    if decision != "allow":
        return "notice", (
            f"answered a Read with {decision or 'no decision'}, not allow "
            "(does agents.yaml list Read as read-only?)"
        )
    return "ok", "answers a Read with allow"


# --- an MCP server ------------------------------------------------------------------------


class _Exchange:
    """JSON-RPC lines to and from a process's stdin and stdout, under one deadline."""

    def __init__(self, proc: subprocess.Popen[bytes], deadline: float) -> None:
        self.proc = proc
        self.deadline = deadline
        self.buffer = b""
        assert proc.stdout is not None
        self.fd = proc.stdout.fileno()
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.fd, selectors.EVENT_READ)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def reply(self, request_id: int) -> dict[str, Any] | str:
        """The response to ``request_id``, or why there is none."""
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                if not line.strip():
                    continue
                try:
                    message = json.loads(line)
                except ValueError:
                    shown = line.decode("utf-8", "replace")[:120]
                    return f"wrote something that is not JSON-RPC on stdout: {shown!r}"
                if isinstance(message, dict) and message.get("id") == request_id:
                    return message
            left = self.deadline - time.monotonic()
            if left <= 0 or not self.selector.select(left):
                return "timeout"
            chunk = os.read(self.fd, 65536)
            if not chunk:
                return "exited"
            self.buffer += chunk


def probe_server(
    root: Path, command: list[str], env: Any = None, timeout: float = PROBE_TIMEOUT_S
) -> tuple[str, str]:
    """Start an MCP server on stdio and ask ``initialize`` then ``tools/list``: (``problem``
    or ``ok``; what happened)."""
    with tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(
                command,
                cwd=root,
                env=_env(env),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                start_new_session=True,
            )
        except OSError as exc:
            return "problem", f"does not start: {exc.strerror}"
        exchange = _Exchange(proc, time.monotonic() + timeout)
        step = "initialize"
        try:
            exchange.send(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "regulator-doctor", "version": "1"},
                    },
                }
            )
            answer = exchange.reply(1)
            if isinstance(answer, dict) and "result" in answer:
                step = "tools/list"
                exchange.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
                exchange.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
                answer = exchange.reply(2)
        except BrokenPipeError:
            answer = "exited"
        finally:
            exchange.selector.close()
            assert proc.stdin is not None
            try:
                proc.stdin.close()  # the end of the session: the server exits on its own
            except BrokenPipeError:
                pass
            try:
                proc.wait(timeout=max(0.1, min(5.0, exchange.deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                pass
            _stop(proc)
        stderr = _last_line(err)
    if answer == "timeout":
        return "problem", f"did not answer {step} within {timeout:g} s"
    if answer == "exited":
        return "problem", f"exited before answering {step} ({_said(proc.returncode, stderr)})"
    if isinstance(answer, str):
        return "problem", answer
    if "result" not in answer:
        return "problem", f"refused {step}: {json.dumps(answer.get('error'))[:200]}"
    tools = answer["result"].get("tools") if isinstance(answer["result"], dict) else None
    if not isinstance(tools, list) or not tools:
        return "problem", "started, but lists no tools"
    return "ok", f"starts and lists {len(tools)} tools"


# --- the repository's wiring --------------------------------------------------------------


def _absolute(words: list[str], agent: str, what: str, hook: bool = False) -> str | None:
    if words and Path(words[0]).is_absolute():
        return None
    fails = "it fails and Claude Code lets the call through" if hook else "it does not start"
    return (
        f"{what} is not an absolute command: where the agent's PATH does not find "
        f"{words[0] if words else 'it'}, {fails}; {_AGAIN[agent]}"
    )


@dataclass
class _Plan:
    """What the configuration names, read; the probes it needs, not yet run."""

    report: WiringReport = field(default_factory=WiringReport)
    found: bool = False
    # (label for the detail, what for a problem, the probe, what a failure means)
    probes: list[tuple[str, str, Callable[[], tuple[str, str]], str]] = field(default_factory=list)


def _claude_hooks(root: Path, plan: _Plan, timeout: float) -> None:
    """Regulator's hook commands in ``.claude/settings.json``: checked, their probes planned."""
    path = root / ".claude" / "settings.json"
    report = plan.report
    try:
        _, data = read_json(path)
    except InstallRefused as exc:
        report.problems.append(str(exc))
        plan.found = True
        return
    hooks = data.get("hooks")
    events: dict[str, list[str]] = {}
    matchers: dict[str, list[object]] = {}  # regulator's hooks' matchers, by event
    for event, entries in hooks.items() if isinstance(hooks, dict) else []:
        for entry in entries if isinstance(entries, list) else []:
            listed = entry.get("hooks") if isinstance(entry, dict) else None
            for hook in listed if isinstance(listed, list) else []:
                command = hook.get("command") if isinstance(hook, dict) else None
                if isinstance(command, str) and "hook claude-code" in command:
                    events.setdefault(command, []).append(event)
                    matchers.setdefault(event, []).append(entry.get("matcher"))
    if not events:
        return
    plan.found = True
    for event in RETIRED_EVENTS:
        if event in matchers:
            report.notices.append(
                f".claude/settings.json: regulator's hook in {event} is an older install's: it "
                "starts a process after every call it matches and no longer does anything; "
                f"{_AGAIN['claude-code']}"
            )
    for matcher in matchers.get("PreToolUse", []):
        if matcher in OLDER_MATCHERS["PreToolUse"]:
            report.notices.append(
                f".claude/settings.json: regulator's PreToolUse hook matches only {matcher}: "
                "while a session is paused, the tools it leaves out (a subagent, another "
                f"server's MCP tools) are not refused; {_AGAIN['claude-code']}"
            )
        elif matcher not in (HOOK_MATCHER, None, "", "*"):  # the last three: every tool
            report.notices.append(
                f".claude/settings.json: regulator's PreToolUse hook matches {matcher!r}, not "
                f"regulator's {HOOK_MATCHER}: a tool it leaves out is not refused while a "
                "session is paused, nor its writes counted"
            )
    for command, named in events.items():
        what = f"the hook `{command.removesuffix(HOOK_FAILS_CLOSED)}` ({', '.join(named)})"
        try:
            words = shlex.split(command.removesuffix(HOOK_FAILS_CLOSED))
        except ValueError as exc:
            report.problems.append(f"{what} cannot be read as a command: {exc}")
            continue
        relative = _absolute(words, "claude-code", what, hook=True)
        if relative is not None:
            report.problems.append(relative)
            continue  # run here, it would say nothing of the agent's PATH
        means = "; Claude Code blocks every call it matches until it is fixed"
        if not command.endswith(HOOK_FAILS_CLOSED):
            report.problems.append(
                f"{what} does not fail closed: when it cannot run, Claude Code lets the call "
                f"through; {_AGAIN['claude-code']}"
            )
            means = ""
        probe = partial(probe_hook, root, command, timeout)
        plan.probes.append(("the hook", what, probe, means))
    try:
        _, local = read_json(root / ".claude" / "settings.local.json")
    except InstallRefused:
        local = {}  # said once, by the server's check
    if not _grants(local):
        # Claude Code honours the committed file's rule only in a workspace the person trusted.
        committed = (
            ", and Claude Code honours the one in .claude/settings.json only in a workspace "
            "you have trusted"
            if _grants(data)
            else ""
        )
        report.notices.append(
            f".claude/settings.local.json: permissions.allow has no {MCP_GRANT}{committed}: "
            f"headless, Claude Code refuses regulator's tools; {_AGAIN['claude-code']}"
        )


def _grants(settings: dict[str, Any]) -> bool:
    """Whether Claude Code settings allow regulator's MCP tools."""
    allow = settings.get("permissions", {})
    allow = allow.get("allow") if isinstance(allow, dict) else None
    return isinstance(allow, list) and any(
        isinstance(rule, str) and (rule == MCP_GRANT or rule.startswith(MCP_GRANT + "__"))
        for rule in allow
    )


def _server(root: Path, plan: _Plan, entry: Any, agent: str, where: str, timeout: float) -> None:
    plan.found = True
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        plan.report.problems.append(f"{where}: {SERVER} has no command")
        return
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        plan.report.problems.append(f"{where}: {SERVER}.args is not a list of strings")
        return
    words = [entry["command"], *args]
    what = f"{where}: the server `{shlex.join(words)}`"
    relative = _absolute(words, agent, what)
    if relative is not None:
        plan.report.problems.append(relative)
        return
    probe = partial(probe_server, root, words, entry.get("env"), timeout)
    plan.probes.append((f"the {where} server", what, probe, ""))


def _claude_servers(root: Path, plan: _Plan, timeout: float) -> None:
    try:
        _, data = read_json(root / ".mcp.json")
    except InstallRefused as exc:
        plan.report.problems.append(str(exc))
        plan.found = True
        return
    servers = data.get("mcpServers")
    if not (isinstance(servers, dict) and SERVER in servers):
        return
    _server(root, plan, servers[SERVER], "claude-code", ".mcp.json", timeout)
    try:
        _, local = read_json(root / ".claude" / "settings.local.json")
    except InstallRefused as exc:
        plan.report.problems.append(str(exc))
        return
    enabled = local.get("enabledMcpjsonServers")
    if not (isinstance(enabled, list) and SERVER in enabled):
        plan.report.notices.append(
            f".claude/settings.local.json does not approve the {SERVER} server "
            "(enabledMcpjsonServers): unless you approved it in Claude Code, it is not started "
            f"headless; {_AGAIN['claude-code']}"
        )


def _codex(root: Path, plan: _Plan, timeout: float) -> None:
    path = root / ".codex" / "config.toml"
    try:
        data = tomllib.loads(read_text(path))
    except (InstallRefused, tomllib.TOMLDecodeError) as exc:
        problem = str(exc) if isinstance(exc, InstallRefused) else f"{path}: not valid TOML: {exc}"
        plan.report.problems.append(problem)
        plan.found = True
        return
    servers = data.get("mcp_servers")
    entry = servers.get(SERVER) if isinstance(servers, dict) else None
    if entry is None:
        return
    _server(root, plan, entry, "codex", ".codex/config.toml", timeout)
    if not isinstance(entry, dict):
        return
    table = f".codex/config.toml: [mcp_servers.{SERVER}]"
    if entry.get("default_tools_approval_mode") != "approve":
        plan.report.notices.append(
            f'{table} has no `default_tools_approval_mode = "approve"`: `codex exec` refuses '
            f"its calls; {_AGAIN['codex']}"
        )
    if entry.get("required") is not True:
        plan.report.notices.append(
            f"{table} has no `required = true`: Codex may start before regulator's tools are "
            f"listed; {_AGAIN['codex']}"
        )


def check_wiring(root: Path, timeout: float = PROBE_TIMEOUT_S) -> WiringReport | None:
    """Regulator's wiring in ``root`` checked and run; ``None`` when there is none."""
    plan = _Plan()
    if os.path.lexists(root / ".claude" / "settings.json"):
        _claude_hooks(root, plan, timeout)
    if os.path.lexists(root / ".mcp.json"):
        _claude_servers(root, plan, timeout)
    if os.path.lexists(root / ".codex" / "config.toml"):
        _codex(root, plan, timeout)
    if not plan.found:
        return None
    report = plan.report
    # Each probe waits on a process of its own: run them side by side.
    with ThreadPoolExecutor(max_workers=max(1, len(plan.probes))) as pool:
        results = list(pool.map(lambda planned: planned[2](), plan.probes))
    for (label, what, _, means), (level, said) in zip(plan.probes, results, strict=True):
        if level == "problem":
            report.problems.append(f"{what} {said}{means}")
        elif level == "notice":
            report.notices.append(f"{what} {said}")
        report.checked.append(f"{label} {'fails' if level == 'problem' else said}")
    return report
