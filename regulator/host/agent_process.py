"""Which agent a process runs for: the agent processes regulator registered, and the process tree.

An agent regulator supervises runs as the same OS user as the person, so nothing it can set —
an environment variable, its own child processes — may say which unit it acts for. What
regulator itself recorded does: the loop registers the agent process it starts for a unit's
attempt, Claude Code's ``SessionStart`` hook registers the Claude Code process of a session
unit, and ``regulator mcp`` registers the agent that started it when it makes a session unit of
its own. Every later process of that agent (the MCP server, ``regulator tool`` from its shell,
a hook) descends from the registered process and finds the registration among its ancestors.

A registration names the process by its pid and its start time, so a pid the kernel hands to a
later process is not taken for the agent, and by the machine's boot and the pid namespace the
pid was read in, so that a process whose registration another machine or container wrote is
never taken for gone (:func:`process_gone`). The files are
``.regulator/sessions/agents/<pid>.json`` (ours; the original has no such record).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    # Loaded by the functions that start a process: the hook finds registrations, never starts.
    import subprocess

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
class ProcStat:
    state: str  # R, S, Z, …
    parent: int
    start: int  # clock ticks after boot


def proc_stat(pid: int) -> ProcStat | None:
    """Process ``pid``'s state, parent and start time, from ``/proc/<pid>/stat``; ``None``
    where there is no such file (not Linux, or no such pid)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    # Field 2, the command name, is in parentheses and may itself hold spaces and ")".
    fields = stat[stat.rfind(b")") + 1 :].split()
    try:
        return ProcStat(fields[0].decode("ascii"), int(fields[1]), int(fields[19]))
    except (IndexError, ValueError, UnicodeDecodeError):
        return None


def process_start(pid: int) -> int | None:
    """When process ``pid`` started, where ``/proc`` says; ``None`` elsewhere."""
    stat = proc_stat(pid)
    return stat.start if stat is not None else None


def pid_space() -> str | None:
    """Where this process's pids mean something: the machine's boot and this process's pid
    namespace (``None`` without ``/proc``). A pid read in another space names another
    process, or none."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        namespace = str(Path("/proc/self/ns/pid").readlink())
    except OSError:
        return None
    return f"{boot} {namespace}" if boot and namespace else None


@dataclass(frozen=True)
class Registration:
    """An agent process and the unit it runs for."""

    unit_id: str
    pid: int
    process_start: int | None
    agent: str
    # Who registered it: `loop` (a unit's session), `host-check` (the project's own code the
    # host runs at closeout: the agent wrote it), `hook` or `mcp` (a session a person started).
    by: str
    attempt: int | None = None  # the attempt the loop started it for
    space: str | None = None  # the pid space the pid was read in (:func:`pid_space`)


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


def register(
    layout: Layout, unit_id: str, pid: int, *, agent: str, by: str, attempt: int | None = None
) -> Registration:
    """Record that process ``pid`` is an agent running for ``unit_id``."""
    registration = Registration(
        unit_id, pid, process_start(pid), agent, by, attempt, space=pid_space()
    )
    write_json_atomic(
        agents_dir(layout) / f"{pid}.json",
        {
            "unitId": unit_id,
            "pid": pid,
            "processStart": registration.process_start,
            "agent": agent,
            "by": by,
            "attempt": attempt,
            "pidSpace": registration.space,
        },
    )
    return registration


def unregister(layout: Layout, pid: int) -> None:
    remove_file(agents_dir(layout) / f"{pid}.json")


def _recorded(layout: Layout, pid: int) -> Registration | None:
    """What ``<pid>.json`` says, whether or not that process still runs."""
    try:
        data = orjson.loads(read_bytes(agents_dir(layout) / f"{pid}.json"))
    except (RecordNotFound, StoreError, orjson.JSONDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    unit_id = data.get("unitId")
    started = data.get("processStart")
    attempt = data.get("attempt")
    space = data.get("pidSpace")
    if not isinstance(unit_id, str) or not is_valid_unit_id(unit_id) or data.get("pid") != pid:
        return None
    if started is not None and not isinstance(started, int):
        return None
    if attempt is not None and not isinstance(attempt, int):
        return None
    agent, by = str(data.get("agent") or "agent"), str(data.get("by") or "")
    return Registration(
        unit_id, pid, started, agent, by, attempt, space if isinstance(space, str) else None
    )


def registration(layout: Layout, pid: int) -> Registration | None:
    """The registration of process ``pid``, if it is there and names this very process."""
    found = _recorded(layout, pid)
    if found is None:
        return None
    now = process_start(pid)
    if now is not None and found.process_start != now:
        return None  # a later process was given the registered pid
    return found


def registrations(layout: Layout) -> list[Registration]:
    """Every registration on record, of processes running or gone."""
    try:
        names = sorted(p.name for p in agents_dir(layout).iterdir())
    except OSError:  # none yet, or unreadable: nothing to go by
        return []
    found = []
    for name in names:
        stem, dot, ext = name.partition(".")
        if dot and ext == "json" and stem.isdigit():
            recorded = _recorded(layout, int(stem))
            if recorded is not None:
                found.append(recorded)
    return found


def process_gone(registered: Registration) -> bool:
    """Whether the registered process is known to have ended: its pid, read in the same pid
    space, now names no process, a zombie, or a process started at another time.

    ``False`` whenever that cannot be known (no ``/proc``, a registration without its start
    time or its pid space, one written on another machine or in another container): a
    process that may still run is never taken for gone.
    """
    if registered.process_start is None or registered.space is None:
        return False
    if registered.space != pid_space():
        return False
    stat = proc_stat(registered.pid)
    return stat is None or stat.state in ("Z", "X") or stat.start != registered.process_start


def forget_gone(layout: Layout, registered: Registration) -> None:
    """Remove ``registered``'s file, unless a later process has been registered under the same
    pid since it was read."""
    if not process_gone(registered):
        return
    current = _recorded(layout, registered.pid)
    if current is not None and current.process_start == registered.process_start:
        unregister(layout, registered.pid)


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


def spawn(
    layout: Layout,
    argv: list[str],
    *,
    unit_id: str,
    attempt: int,
    agent: str,
    by: str,
    env: Mapping[str, str] | None = None,
    **popen: Any,
) -> subprocess.Popen[Any]:
    """Start ``argv`` as a registered agent process of ``unit_id``'s ``attempt``.

    The process is registered before it runs an instruction of its own: a shell waits on a
    pipe (its standard input) until the registration is written, then replaces itself with
    ``argv`` (the pid stays).
    Otherwise a quick agent could call regulator before its registration exists. A command that
    cannot be found raises ``FileNotFoundError``, as ``Popen`` does.
    """
    import shutil
    import subprocess

    path = (env or os.environ).get("PATH")
    if shutil.which(argv[0], path=path) is None:
        raise FileNotFoundError(2, "No such file or directory", argv[0])
    gate, release = os.pipe()
    try:
        # The wait is on standard input, which the agent then inherits at its end: a command
        # run unattended reads nothing from the terminal of whoever started the loop.
        proc = subprocess.Popen(
            ["/bin/sh", "-c", 'read -r _ && exec "$@"', "regulator-agent", *argv],
            stdin=gate,
            env=env,
            **popen,
        )
    finally:
        os.close(gate)
    try:
        register(layout, unit_id, proc.pid, agent=agent, by=by, attempt=attempt)
        os.write(release, b"go\n")
    except BaseException:
        proc.kill()  # never let it run unregistered
        proc.wait()
        raise
    finally:
        os.close(release)
    return proc


def run_registered(
    layout: Layout,
    argv: list[str],
    *,
    unit_id: str,
    attempt: int,
    by: str,
    timeout: float,
    cwd: Path,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` to its end as a registered process of ``unit_id`` (as ``subprocess.run``
    with captured text output; ``TimeoutExpired`` after ``timeout`` seconds, the process
    killed).

    For the project's own code the host runs at closeout (its tests): the agent wrote that code,
    so whatever it starts is known as the unit's, and never as a person.
    """
    import subprocess

    proc = spawn(
        layout,
        argv,
        unit_id=unit_id,
        attempt=attempt,
        agent=Path(argv[0]).name,
        by=by,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    finally:
        unregister(layout, proc.pid)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)
