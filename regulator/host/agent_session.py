"""The session an agent's tool call belongs to, found from the environment it runs in.

``unit drive`` starts an agent with ``REGULATOR_INSTANCE``, ``REGULATOR_UNIT`` and
``REGULATOR_ATTEMPT``; the MCP server, ``regulator tool``, ``regulator ask`` and
``regulator hook`` read them back and open the one :class:`SessionTools` of that unit's
attempt. An agent a person started by hand names no unit: its calls go to a session unit
(:mod:`regulator.host.session_units`), made on the first call that needs one. The gates' state
lives on disk (the session journal, the budget ledger), so every process of an attempt sees
the same pause.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from regulator.host.agent_process import registered_ancestor
from regulator.host.environment import ATTEMPT_ENV, UNIT_ENV
from regulator.host.session_units import (
    SESSION_TYPE,
    SessionUnitError,
    end_session_unit,
    key_from,
    start_session_unit,
)
from regulator.host.tools import SessionTools
from regulator.policy import Definition
from regulator.policy.workload import load_workload
from regulator.protocol.clock import Clock, system_clock
from regulator.protocol.errors import Refused
from regulator.rules.execution import ExecutionStore, UnitNotFound
from regulator.store import Layout, is_valid_unit_id


class SessionUnavailable(Refused):
    """No session can be opened: the message says which variable or record is wrong."""


@dataclass(frozen=True)
class SessionAddress:
    unit_id: str
    attempt: int | None


def address_from(env: Mapping[str, str]) -> SessionAddress | None:
    """The unit and attempt the environment names, or ``None`` when it names no unit."""
    unit_id = env.get(UNIT_ENV, "").strip()
    if not unit_id:
        return None
    if not is_valid_unit_id(unit_id):
        raise SessionUnavailable(f"{UNIT_ENV}={unit_id!r}: not a valid unit id")
    raw = env.get(ATTEMPT_ENV, "").strip()
    if not raw:
        return SessionAddress(unit_id, None)
    if not raw.isdigit() or int(raw) < 1:
        raise SessionUnavailable(f"{ATTEMPT_ENV}={raw!r}: an attempt is a number from 1")
    return SessionAddress(unit_id, int(raw))


def open_session(
    layout: Layout,
    definition: Definition,
    address: SessionAddress,
    *,
    clock: Clock = system_clock,
    cwd: Path | None = None,
) -> SessionTools:
    """The session tools of the addressed unit's attempt (the current one when none is given)."""
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
    # While a session runs, its attempt is not recorded yet: the current one is the next.
    attempt = address.attempt if address.attempt is not None else unit.attempts + 1
    worktree = layout.worktree(unit.unit_id)
    return SessionTools(
        layout,
        definition,
        contract=contract,
        attempt=attempt,
        worktree=worktree if worktree.is_dir() else (cwd or Path.cwd()),
        grants=load_workload(definition).grants(unit.unit_type),
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
                self.address = SessionAddress(made.unit_id, None)
            self._tools = open_session(
                self.layout, self.definition, self.address, clock=self.clock, cwd=self.cwd
            )
        return self._tools

    @property
    def unit_id(self) -> str | None:
        return self.address.unit_id if self.address is not None else None

    def end(self) -> str | None:
        """End the session unit this process made; what it became, or ``None``."""
        if not self.owned or self.address is None:
            return None
        self.owned = False
        return end_session_unit(self.layout, self.address.unit_id, clock=self.clock)


def _registered(layout: Layout, clock: Clock) -> SessionAddress | None:
    """The running session unit an ancestor agent registered, if any."""
    found = registered_ancestor(layout)
    if found is None:
        return None
    unit_id = found.unit_id
    unit = ExecutionStore(layout, clock).find_unit(unit_id)
    if unit is None or unit.status != "dispatched":
        return None  # a registration its session outlived
    return SessionAddress(unit_id, None)


def find_session(
    layout: Layout,
    definition: Definition,
    *,
    agent: str,
    env: Mapping[str, str] | None = None,
    key: str | None = None,
    clock: Clock = system_clock,
) -> AgentSession:
    """The session this process serves: the loop's unit, a named or registered session unit,
    or (``address`` left empty) a new session unit made on the first call that needs one."""
    env = os.environ if env is None else env
    address = address_from(env)
    key = key or key_from(env)
    if address is None and key is None:
        address = _registered(layout, clock)
    return AgentSession(layout, definition, agent, address, key=key, clock=clock)
