"""The session an agent's tool call belongs to, found from the environment the loop set.

``unit drive`` starts an agent with ``REGULATOR_INSTANCE``, ``REGULATOR_UNIT`` and
``REGULATOR_ATTEMPT``; the MCP server, ``regulator tool`` and ``regulator hook`` read them back
and open the one :class:`SessionTools` of that unit's attempt. The gates' state lives on disk
(the session journal, the budget ledger), so every process of the attempt sees the same pause.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from regulator.clock import Clock, system_clock
from regulator.execution import ExecutionStore, UnitNotFound
from regulator.policy import Definition
from regulator.store import Layout, is_valid_unit_id
from regulator.tools import SessionTools
from regulator.workload import load_workload

INSTANCE_ENV = "REGULATOR_INSTANCE"
UNIT_ENV = "REGULATOR_UNIT"
ATTEMPT_ENV = "REGULATOR_ATTEMPT"


class SessionUnavailable(Exception):
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
        raise SessionUnavailable(
            f"{UNIT_ENV}={address.unit_id}: no such unit in {layout.root}"
        ) from None
    contract = store.current_contract(unit.unit_id)
    if contract is None:
        raise SessionUnavailable(f"unit {unit.unit_id} has no contract")
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
    )
