"""Session adapters: what starts a unit's session, and what it reports back to the loop.

``script`` plays a YAML scenario through the real session tools (the tests, the benchmarks and
the demo drive the real loop with it); ``command`` runs any agent CLI in the unit's worktree.
Either way the loop learns the outcome from the records the session left — the report, the
questions, the budget ledger, the failure observations — never from what the session says.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from regulator.host.tools import SessionTools
from regulator.protocol.clock import Clock
from regulator.protocol.execution import WorkContract
from regulator.rules.budget import BudgetGuard


@dataclass
class SessionRun:
    """Everything one session is started with."""

    contract: WorkContract
    attempt: int
    worktree: Path
    prompt: str
    prompt_path: Path
    model: str
    tools: SessionTools
    guard: BudgetGuard
    clock: Clock
    instance_root: Path
    sleep: Callable[[float], None]


@dataclass
class SessionResult:
    session_id: str
    # The session could not run, or died: an error the recovery router classifies.
    error: str | None = None
    # The model's provider failed: the dispatcher moves to the next model of the route.
    provider_error: str | None = None


class SessionAdapter(Protocol):
    """What starts a session: ``run`` returns when the session has ended."""

    name: str

    def run(self, run: SessionRun) -> SessionResult: ...
