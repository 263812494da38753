"""Session units: an agent a person started by hand becomes a unit on its first call.

A person running Claude Code, Codex or a shell script in their own repository has no contract
and no ``unit drive``; their agent's questions must still reach the room, under the same veto,
pause and attention rules as any unit's. So the first call of such a session creates a unit of
the workload's ``session`` type, with a generated contract that says who started it, where and
when. The unit is dispatched while the session runs and settled when it ends (Claude Code's
``SessionEnd`` hook, ``regulator session end``, or the end of the MCP server or ``ask``): a
session that left a question unanswered stays blocked with its question owed, like any paused
unit; one that did not is closed.

An agent killed outright (SIGKILL, a crash, a closed terminal) settles nothing. Its session is
settled the next time someone looks: when a session would join it (a resumed Claude Code
session with the same key), when any new session unit is made, and by ``regulator doctor``
(:func:`settle_gone_sessions`). Only a
session whose every registered agent process is known to have ended is settled
(:func:`regulator.host.agent_process.process_gone`): one whose process may still run, or that
no process was registered for, never is.

Which unit a call belongs to is :mod:`regulator.host.agent_session`'s to say.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from regulator.host.agent_process import (
    Registration,
    forget_gone,
    process_gone,
    registrations,
)
from regulator.host.session_definition import (
    candidates,
    take_snapshot,
    unit_id_for,
)
from regulator.policy import Definition
from regulator.policy.workload import Workload, load_workload
from regulator.protocol.clock import Clock, now_iso, system_clock
from regulator.protocol.errors import Refused
from regulator.protocol.execution import UnitRecord, WorkContract
from regulator.rules.authority import process_os_user
from regulator.rules.execution import ExecutionStore, UnitExists
from regulator.rules.pause import attempt_questions
from regulator.rules.regulatory_log import RegulatoryLog
from regulator.store import Layout, locked_directory

SESSION_TYPE = "session"


class SessionUnitError(Refused):
    """A session unit cannot be made: the message says what the definition lacks."""


@dataclass(frozen=True)
class SessionUnit:
    unit_id: str
    created: bool


def _session_type(workload: Workload) -> None:
    if SESSION_TYPE not in workload.unit_types:
        raise SessionUnitError(
            f"the workload {workload.label} has no unit type `{SESSION_TYPE}` for agents a "
            "person runs by hand; add one (see docs/agents.md) or start the agent with "
            "`regulator unit drive`"
        )


def session_contract(
    unit_id: str, workload: Workload, *, agent: str, cwd: Path, clock: Clock
) -> WorkContract:
    user = process_os_user()
    at = now_iso(clock)
    return WorkContract.from_json_dict(
        {
            "kind": "task",
            "id": f"{unit_id}-c",
            "version": 1,
            "unitId": unit_id,
            "unitType": SESSION_TYPE,
            "workload": {"name": workload.name, "version": workload.version},
            "objective": (
                f"an interactive {agent} session started by {user} at {at} in {cwd}: its "
                "questions are owed to a person, under the same rules as any unit's"
            ),
            "constraintRefs": [],
            "fixed": [],
            "delegated": [],
            "unresolved": [],
            "expectedEvidence": [],
            "provenance": {"createdBy": "S3", "createdAt": at},
        }
    )


def current_unit(layout: Layout, key: str, clock: Clock = system_clock) -> UnitRecord | None:
    """The latest session unit made for ``key`` (a resumed session gets a new one)."""
    store = ExecutionStore(layout, clock)
    latest = None
    for candidate in candidates(unit_id_for(key)):
        unit = store.find_unit(candidate)
        if unit is None:
            break
        latest = unit
    return latest


def start_session_unit(
    layout: Layout,
    definition: Definition,
    key: str,
    *,
    agent: str,
    cwd: Path,
    clock: Clock = system_clock,
) -> SessionUnit:
    """The running session unit for ``key``, made and dispatched if there is none.

    A key whose unit has ended (closed, or blocked on what it left owed) gets a new unit:
    a resumed agent session is a new run, and an ended unit is never reopened.
    """
    workload = load_workload(definition)
    _session_type(workload)
    store = ExecutionStore(layout, clock)
    for unit_id in candidates(unit_id_for(key)):
        found = store.find_unit(unit_id)
        if found is not None:
            # A running unit is joined, unless the agent that ran it has gone (killed before it
            # could settle it): then it is settled now, and this run gets the next unit.
            if found.status == "dispatched" and _settle_if_gone(layout, unit_id, clock) is None:
                return SessionUnit(unit_id, created=False)
            continue
        # A new session is a look at the others: those whose agent has gone are settled.
        settle_gone_sessions(layout, clock)
        contract = session_contract(unit_id, workload, agent=agent, cwd=cwd, clock=clock)
        try:
            store.create_unit(contract, workload)
        except UnitExists:  # another process of the same session made it first
            return SessionUnit(unit_id, created=False)
        # The definition in force now is the one this session runs under to its end.
        take_snapshot(layout, unit_id, 1, definition)
        store.set_status(unit_id, "dispatched")
        return SessionUnit(unit_id, created=True)
    raise SessionUnitError(f"too many runs of session {key}")


def end_session_unit(
    layout: Layout, unit_id: str, *, clock: Clock = system_clock, only_running: bool = False
) -> str:
    """Settle a session unit; what it became (closed, or blocked while something is owed).

    Ending a session records its one attempt. Ending it again once what it left owed has been
    dispositioned closes it (unless ``only_running``); otherwise it writes nothing.
    """
    store = ExecutionStore(layout, clock)
    unit = store.unit(unit_id)
    if unit.unit_type != SESSION_TYPE:
        raise SessionUnitError(f"{unit_id} is a {unit.unit_type} unit, not a session unit")
    # One settler at a time: the session's own end and a later look at a session whose agent
    # has gone may meet, and the attempt must be recorded once.
    with locked_directory(layout.state / "sessions" / unit_id):
        return _end(layout, store, unit_id, clock, only_running)


def _end(
    layout: Layout, store: ExecutionStore, unit_id: str, clock: Clock, only_running: bool
) -> str:
    unit = store.unit(unit_id)  # read again, under the lock
    if only_running and unit.status != "dispatched":
        return unit.status
    log = RegulatoryLog(layout)
    log.refresh()
    waiting = [o for o in log.open_obligations(unit_id) if o.blocks]
    if unit.status == "blocked" and not waiting:
        store.set_status(unit_id, "closed", "the interactive session ended")
        return "closed"
    if unit.status != "dispatched":
        return unit.status  # already settled: ending twice writes nothing
    attempt = unit.attempts + 1
    paused = attempt_questions(layout.signals, unit_id, attempt).paused
    store.record_attempt(
        unit_id,
        contract_version=unit.contract.version,
        started_at=unit.created_at,
        ended_at=now_iso(clock),
        outcome="paused" if paused else "no-report",
        detail=paused or "the interactive session ended",
    )
    if waiting:
        store.set_status(
            unit_id, "blocked", f"the session ended with {len(waiting)} obligation(s) owed"
        )
        return "blocked"
    store.set_status(unit_id, "closed", "the interactive session ended")
    return "closed"


@dataclass(frozen=True)
class Settled:
    """A session unit settled because its agent had gone: what it became, and the agent
    processes that had ended."""

    unit_id: str
    became: str
    pids: tuple[int, ...]


def _settle_if_gone(
    layout: Layout,
    unit_id: str,
    clock: Clock,
    registered: list[Registration] | None = None,
) -> Settled | None:
    """Settle the running session unit ``unit_id`` when every agent process registered for it
    has ended; ``None`` (nothing written) when one may still run, or none was registered."""
    if registered is None:
        registered = registrations(layout)
    mine = [r for r in registered if r.unit_id == unit_id]
    if not mine or not all(process_gone(r) for r in mine):
        return None
    unit = ExecutionStore(layout, clock).find_unit(unit_id)
    if unit is None or unit.unit_type != SESSION_TYPE or unit.status != "dispatched":
        return None
    # Only while it still runs: its own end may have settled it since it was read.
    became = end_session_unit(layout, unit_id, clock=clock, only_running=True)
    for gone in mine:
        forget_gone(layout, gone)
    return Settled(unit_id, became, tuple(r.pid for r in mine))


def settle_gone_sessions(layout: Layout, clock: Clock = system_clock) -> list[Settled]:
    """Settle every running session unit whose agent processes have all ended (killed, or
    crashed, before they could settle it), and forget the registrations of ended processes."""
    registered = registrations(layout)
    settled = []
    for unit_id in sorted({r.unit_id for r in registered}):
        done = _settle_if_gone(layout, unit_id, clock, registered)
        if done is not None:
            settled.append(done)
    for gone in registered:
        forget_gone(layout, gone)
    return settled


def session_grants(definition: Definition) -> set[str]:
    """The session tools a session unit made under ``definition`` has."""
    return set(load_workload(definition).grants(SESSION_TYPE))


def is_session_unit(unit: UnitRecord) -> bool:
    return unit.unit_type == SESSION_TYPE
