"""The session an agent's tool call belongs to, found from what regulator recorded.

An agent regulator supervises runs as the same OS user as the person and may be
prompt-injected, so which unit and attempt a call acts for never comes from something the agent
can set. It comes from the record:

* the agent process regulator registered (:mod:`regulator.host.agent_process`): the loop
  registers the agent it starts for a unit's attempt, Claude Code's ``SessionStart`` hook the
  Claude Code process of a session unit, ``regulator mcp`` the agent that started it; a call
  made by any descendant of that process acts for that unit;
* the attempt in progress: the one the unit's record says is running (``attempts + 1`` while
  it is ``dispatched``), never another.

The environment (``REGULATOR_UNIT``, ``REGULATOR_ATTEMPT``, ``REGULATOR_SESSION``) may say the
same, and is then checked against the record: a variable that names another unit, another
session or another attempt is refused, and ``REGULATOR_UNIT`` without a registered agent
process of that unit above the caller names nothing it may act for. An agent a person starts by
hand with none of these becomes a session unit (:mod:`regulator.host.session_units`) on its
first call that needs one. The gates' state is derived from the regulatory log, so every process
of an attempt sees the same pause.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from regulator.host.agent_process import (
    Registration,
    agent_pid,
    register,
    registered_ancestor,
    unregister,
)
from regulator.host.environment import ATTEMPT_ENV, SESSION_ENV, UNIT_ENV
from regulator.host.session_definition import key_from, names_unit, session_definition
from regulator.host.session_units import (
    SESSION_TYPE,
    SessionUnitError,
    end_session_unit,
    start_session_unit,
)
from regulator.host.tools import SessionTools
from regulator.policy import Definition
from regulator.policy.workload import load_workload
from regulator.protocol.clock import Clock, system_clock
from regulator.protocol.errors import Refused
from regulator.protocol.execution import UnitRecord
from regulator.rules.execution import ExecutionStore, UnitNotFound
from regulator.store import Layout, is_valid_unit_id


class SessionUnavailable(Refused):
    """No session can be opened: the message says which variable or record is wrong."""


@dataclass(frozen=True)
class SessionAddress:
    unit_id: str
    attempt: int | None


def attempt_from(env: Mapping[str, str]) -> int | None:
    """The attempt the environment names, if it names one."""
    raw = env.get(ATTEMPT_ENV, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise SessionUnavailable(f"{ATTEMPT_ENV}={raw!r}: an attempt is a number from 1")
    return int(raw)


def address_from(env: Mapping[str, str]) -> SessionAddress | None:
    """The unit and attempt the environment names, or ``None`` when it names no unit."""
    unit_id = env.get(UNIT_ENV, "").strip()
    if not unit_id:
        return None
    if not is_valid_unit_id(unit_id):
        raise SessionUnavailable(f"{UNIT_ENV}={unit_id!r}: not a valid unit id")
    return SessionAddress(unit_id, attempt_from(env))


def in_progress(unit: UnitRecord) -> int:
    """The attempt a running unit is in: its record holds the attempts that have ended."""
    return unit.attempts + 1


def open_session(
    layout: Layout,
    definition: Definition,
    address: SessionAddress,
    *,
    clock: Clock = system_clock,
    cwd: Path | None = None,
) -> SessionTools:
    """The session tools of the addressed unit's attempt in progress.

    An address that names another attempt than the one in progress is refused: a report, an
    effect or a question is recorded only for the attempt that is running.
    """
    store = ExecutionStore(layout, clock)
    try:
        unit = store.unit(address.unit_id)
    except UnitNotFound:
        raise SessionUnavailable(f"no unit {address.unit_id} in {layout.root}") from None
    contract = store.current_contract(unit.unit_id)
    if contract is None:
        raise SessionUnavailable(f"unit {unit.unit_id} has no contract")
    if unit.status != "dispatched":
        # Only a running session has tools: a blocked unit waits for a person or the loop,
        # and nothing may act for it meanwhile (its veto stands).
        raise SessionUnavailable(
            f"unit {unit.unit_id} is {unit.status}, not running: its session has ended"
        )
    attempt = in_progress(unit)
    if address.attempt is not None and address.attempt != attempt:
        raise SessionUnavailable(
            f"attempt {address.attempt} of unit {unit.unit_id} is not the one in progress "
            f"({attempt}); a unit's tools act only for the attempt that is running"
        )
    worktree = layout.worktree(unit.unit_id)
    # The definition in force when the session started, whatever changed since.
    runs_under = session_definition(layout, unit.unit_id, attempt, definition)
    return SessionTools(
        layout,
        runs_under,
        contract=contract,
        attempt=attempt,
        worktree=worktree if worktree.is_dir() else (cwd or Path.cwd()),
        grants=load_workload(runs_under).grants(unit.unit_type),
        clock=clock,
        contracted=unit.unit_type != SESSION_TYPE,
    )


@dataclass
class AgentSession:
    """The tools of whatever session this process serves, opened when first needed.

    ``owned``: this process made the session unit and ends it when it is done (an MCP server
    or an ``ask`` that found no session to join).
    """

    layout: Layout
    definition: Definition
    agent: str
    address: SessionAddress | None
    key: str | None = None
    clock: Clock = system_clock
    cwd: Path = field(default_factory=Path.cwd)
    owned: bool = False
    # The attempt the environment named: checked against the one in progress when opened.
    attempt: int | None = None
    # The agent process this process registered for the session unit it made (``mcp``).
    registered_pid: int | None = None
    _tools: SessionTools | None = None

    @property
    def grants(self) -> set[str]:
        """What the session's unit type grants, known before any unit exists."""
        if self._tools is not None:
            return self._tools.grants
        workload = load_workload(self.definition)
        if self.address is None:
            return set(workload.grants(SESSION_TYPE))
        unit = ExecutionStore(self.layout, self.clock).find_unit(self.address.unit_id)
        if unit is None:
            raise SessionUnavailable(f"no unit {self.address.unit_id} in {self.layout.root}")
        workload = load_workload(
            session_definition(self.layout, unit.unit_id, in_progress(unit), self.definition)
        )
        extra = {"report_result"} if unit.unit_type != SESSION_TYPE else set()
        return set(workload.grants(unit.unit_type)) | extra

    def tools(self) -> SessionTools:
        if self._tools is None:
            if self.address is None and self.key is None:
                # Looked up again at the first call: the agent's SessionStart hook may have
                # registered its session unit after this process started.
                self.address = _registered(self.layout, self.clock)
            if self.address is None:
                key = self.key or f"{self.agent}-{uuid.uuid4().hex[:8]}"
                try:
                    made = start_session_unit(
                        self.layout,
                        self.definition,
                        key,
                        agent=self.agent,
                        cwd=self.cwd,
                        clock=self.clock,
                    )
                except SessionUnitError as exc:
                    raise SessionUnavailable(str(exc)) from None
                self.owned = made.created and self.key is None
                self.address = SessionAddress(made.unit_id, self.attempt)
                if self.owned and self.agent == "mcp":
                    # The MCP client that started this server is an agent: every other process
                    # it runs (`regulator tool`, a person's act it tries) is known as its own.
                    self.registered_pid = agent_pid()
                    register(self.layout, made.unit_id, self.registered_pid, agent="mcp", by="mcp")
            self._tools = open_session(
                self.layout, self.definition, self.address, clock=self.clock, cwd=self.cwd
            )
        return self._tools

    @property
    def unit_id(self) -> str | None:
        return self.address.unit_id if self.address is not None else None

    def end(self) -> str | None:
        """End the session unit this process made; what it became, or ``None``."""
        if self.registered_pid is not None:
            unregister(self.layout, self.registered_pid)
            self.registered_pid = None
        if not self.owned or self.address is None:
            return None
        self.owned = False
        return end_session_unit(self.layout, self.address.unit_id, clock=self.clock)


def _registered(layout: Layout, clock: Clock) -> SessionAddress | None:
    """The running session unit an ancestor agent registered, if any."""
    found = registered_ancestor(layout)
    if found is None:
        return None
    unit = ExecutionStore(layout, clock).find_unit(found.unit_id)
    if unit is None or unit.status != "dispatched":
        return None  # a registration its session outlived
    return SessionAddress(found.unit_id, found.attempt)


def checked_address(
    registered: Registration | None,
    env: Mapping[str, str],
    key: str | None,
) -> SessionAddress | None:
    """The address the record gives, with every name the environment or the caller gives
    checked against it; ``None`` when nothing names a unit (a session key may still)."""
    named = address_from(env)
    if registered is None:
        if named is not None:
            raise SessionUnavailable(
                f"{UNIT_ENV}={named.unit_id}: no agent process registered for that unit is an "
                "ancestor of this process; a unit's tools are reached only from its own session"
            )
        return None
    if registered.by == "host-check":
        raise SessionUnavailable(
            f"this process runs under the host's checks of unit {registered.unit_id} (the "
            "project's own code, at closeout): its session has ended, and no tool acts for it"
        )
    whose = f"this process runs for unit {registered.unit_id} (agent process {registered.pid})"
    if named is not None and named.unit_id != registered.unit_id:
        raise SessionUnavailable(f"{UNIT_ENV}={named.unit_id} names another unit: {whose}")
    if key is not None and not names_unit(key, registered.unit_id):
        raise SessionUnavailable(f"{SESSION_ENV}={key} names another session: {whose}")
    attempt = registered.attempt
    named_attempt = attempt_from(env)
    if named_attempt is not None:
        if attempt is not None and named_attempt != attempt:
            raise SessionUnavailable(
                f"{ATTEMPT_ENV}={named_attempt} names another attempt: {whose}, attempt {attempt}"
            )
        attempt = named_attempt
    return SessionAddress(registered.unit_id, attempt)


def find_session(
    layout: Layout,
    definition: Definition,
    *,
    agent: str,
    env: Mapping[str, str] | None = None,
    key: str | None = None,
    clock: Clock = system_clock,
) -> AgentSession:
    """The session this process serves: the unit of the agent process regulator registered
    above it, a session unit named by its key, or (``address`` left empty) a new session unit
    made on the first call that needs one.

    ``key``: the agent's own name for its session (a Claude Code hook's ``session_id``), used
    where no registered agent process says which session this is; ``REGULATOR_SESSION`` in
    ``env`` is checked against the registration like the other variables.
    """
    env = os.environ if env is None else env
    named_key = key_from(env)
    registered = registered_ancestor(layout)
    address = checked_address(registered, env, named_key)
    if address is not None:
        assert registered is not None
        if key is not None and registered.by != "loop" and not names_unit(key, registered.unit_id):
            # The agent's own session key (a Claude Code hook's session_id) and the session
            # unit its process was registered for disagree: act for neither.
            raise SessionUnavailable(
                f"session {key} is not the session this agent process ({registered.pid}) was "
                f"registered for ({registered.unit_id})"
            )
        return AgentSession(layout, definition, agent, address, clock=clock)
    return AgentSession(
        layout,
        definition,
        agent,
        None,
        key=key or named_key,
        clock=clock,
        attempt=attempt_from(env),
    )
