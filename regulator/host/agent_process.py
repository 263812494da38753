"""Which agent a process runs for: the agent processes regulator registered, and the process tree.

An agent regulator supervises runs as the same OS user as the person, so nothing it can set —
an environment variable, its own child processes — may say which unit it acts for. What
regulator itself recorded does: the loop registers the agent process it starts for a unit's
attempt, Claude Code's ``SessionStart`` hook registers the Claude Code process of a session
unit, and ``regulator mcp`` registers the agent that started it when it makes a session unit of
its own. Every later process of that agent (the MCP server, ``regulator tool`` from its shell,
a hook) descends from the registered process and finds the registration among its ancestors.

A registration names the process by its pid and its start time, so a pid the kernel hands to a
later process is not taken for the agent. The files are ``.regulator/sessions/agents/<pid>.json``
(ours; the original has no such record).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import orjson

from regulator.host.presence import proc_stat, process_start
from regulator.store import (
    Layout,
    RecordNotFound,
    StoreError,
    is_valid_unit_id,
    read_bytes,
    remove_file,
    write_json_atomic,
)

# Processes between an agent and the command it runs that are not the agent itself.
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "fish", "ksh", "env", "timeout", "nohup"})
# The executables of the agents regulator knows, as the kernel names them (``/proc/<pid>/comm``).
KNOWN_AGENTS = frozenset({"claude", "codex"})
_DEPTH = 64


@dataclass(frozen=True)
class Registration:
    """An agent process and the unit it runs for."""

    unit_id: str
    pid: int
    process_start: int | None
    agent: str
    by: str  # who registered it: loop, hook or mcp


def agents_dir(layout: Layout) -> Path:
    return layout.state / "sessions" / "agents"


def ancestors(pid: int | None = None) -> list[int]:
    """``pid`` (default: this process) and its ancestors, nearest first.

    Read from ``/proc``; where there is none, this process and its parent only.
    """
    start = os.getpid() if pid is None else pid
    chain = [start]
    current = start
    for _ in range(_DEPTH):
        stat = proc_stat(current)
        if stat is None:
            if current == os.getpid():
                chain.append(os.getppid())
            break
        if stat.parent <= 1:
            break
        chain.append(stat.parent)
        current = stat.parent
    return chain


def process_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def agent_pid() -> int:
    """The agent this process runs for: the nearest ancestor that is not a shell."""
    for pid in ancestors()[1:]:
        if process_name(pid) not in SHELLS:
            return pid
    return os.getppid()


def register(layout: Layout, unit_id: str, pid: int, *, agent: str, by: str) -> Registration:
    """Record that process ``pid`` is an agent running for ``unit_id``."""
    registration = Registration(unit_id, pid, process_start(pid), agent, by)
    write_json_atomic(
        agents_dir(layout) / f"{pid}.json",
        {
            "unitId": unit_id,
            "pid": pid,
            "processStart": registration.process_start,
            "agent": agent,
            "by": by,
        },
    )
    return registration


def unregister(layout: Layout, pid: int) -> None:
    remove_file(agents_dir(layout) / f"{pid}.json")


def registration(layout: Layout, pid: int) -> Registration | None:
    """The registration of process ``pid``, if it is there and names this very process."""
    try:
        data = orjson.loads(read_bytes(agents_dir(layout) / f"{pid}.json"))
    except (RecordNotFound, StoreError, orjson.JSONDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    unit_id = data.get("unitId")
    started = data.get("processStart")
    if not isinstance(unit_id, str) or not is_valid_unit_id(unit_id) or data.get("pid") != pid:
        return None
    if started is not None and not isinstance(started, int):
        return None
    now = process_start(pid)
    if now is not None and started != now:
        return None  # a later process was given the registered pid
    return Registration(
        unit_id, pid, started, str(data.get("agent") or "agent"), str(data.get("by") or "")
    )


def registered_ancestor(layout: Layout, pid: int | None = None) -> Registration | None:
    """The nearest ancestor of ``pid`` (default: this process) registered as an agent."""
    for ancestor in ancestors(pid)[1:]:
        found = registration(layout, ancestor)
        if found is not None:
            return found
    return None


def known_agent_ancestor(pid: int | None = None) -> tuple[int, str] | None:
    """The nearest ancestor whose executable is an agent regulator knows (``claude``,
    ``codex``), registered or not."""
    for ancestor in ancestors(pid)[1:]:
        name = process_name(ancestor)
        if name in KNOWN_AGENTS:
            return ancestor, name
    return None
