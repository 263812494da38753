"""What a unit needs next, in one line a person reads: what still holds it, or that it is ready.

The room's inspector puts it on its first line (with the key that acts on it) and
``regulator unit show`` prints it (with the command), so that after any disposition the person
sees what is left: a waiting decision, a question, a veto, spent attempts, or nothing.

It reads what the records say now, never the unit's ``reason``, which is written when the unit
blocks and is not rewritten when someone acts on it ("awaiting remediate" stays there after the
remediation is recorded, until the next attempt).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from regulator.protocol.execution import AttemptRecord, RecoveryDecision, UnitRecord, WorkContract
from regulator.protocol.obligations import ObligationState
from regulator.protocol.text import visible as v
from regulator.rules.execution import ExecutionStore
from regulator.rules.recovery import waiting_on
from regulator.rules.regulatory_log import RegulatoryLog

Act = Literal["answer", "resolve", "replan", "remediate", "drive", "close"]

__all__ = ["Act", "NextStep", "next_step", "next_step_of"]

# What each waiting recovery action asks of a person, and the act that gives it.
_WAITS: dict[str, tuple[str, Act]] = {
    "replan": ("a replan (a new version of its contract)", "replan"),
    "remediate": ("a remediation (fix what it needs, then record it)", "remediate"),
    "clarify": ("an answer to its question", "answer"),
    "escalate": ("a decision (the recovery policy gave up and escalated it)", "resolve"),
    "pause": ("a decision on its pause", "resolve"),
}


@dataclass(frozen=True)
class NextStep:
    """``text``: one line in plain words; ``act``: what acts on it (None: nothing to do now);
    ``obligation``: the obligation that act is on, when it is one."""

    text: str
    act: Act | None = None
    obligation: ObligationState | None = None

    @property
    def ready(self) -> bool:
        return self.act == "drive"


def _attempts_under_contract(
    unit: UnitRecord, contract: WorkContract | None, attempts: Sequence[AttemptRecord]
) -> int:
    # As the loop counts them (``Loop.attempts_under_contract``): after a replan, those of the
    # version in force.
    if contract is None or contract.provenance.predecessor is None:
        return unit.attempts
    return sum(1 for a in attempts if a.contract_version == unit.contract.version)


def _held_by(o: ObligationState) -> str:
    return f"{v(o.concern)} {o.id[:8]} (owed to {v(o.consumer)}): {v(o.subject)}"


def next_step(
    log: RegulatoryLog,
    unit: UnitRecord,
    *,
    decisions: Sequence[RecoveryDecision],
    attempts: Sequence[AttemptRecord],
    contract: WorkContract | None,
    attempt_ceiling: int,
) -> NextStep:
    """The unit's next step, from the log as folded now and the unit's own records."""
    status = unit.status
    if status == "closed":
        return NextStep("closed: nothing more to do")
    if status == "aborted":
        return NextStep("aborted: nothing more to do; a new contract starts it again")
    if status == "dispatched":
        return NextStep("running: an attempt is under way")
    if status == "reported":
        return NextStep("reported: its closeout (audit, then merge) is next", "close")
    unit_id = unit.unit_id
    open_ = log.open_obligations(unit_id)
    if status == "blocked":
        waiting = waiting_on(log, decisions, unit_id)
        if waiting is not None:
            what, act = _WAITS.get(waiting.action, ("a decision", "resolve"))
            o = waiting.obligation
            return NextStep(
                f"waits on {what}, owed to {v(o.consumer)} (obligation {o.id[:8]})",
                act,
                o,
            )
    asked = [o for o in open_ if o.blocks and o.concern == "interaction"]
    if asked:
        o = asked[0]
        return NextStep(
            f"waits on an answer to its question: {v(o.subject)} (obligation {o.id[:8]})",
            "answer",
            o,
        )
    held = [o for o in open_ if o.blocks]
    if held:
        return NextStep(f"held by {_held_by(held[0])}: resolve it to go on", "resolve", held[0])
    everywhere = [o for o in log.open_obligations() if o.blocks and o.unit is None]
    if everywhere:
        o = everywhere[0]
        more = f" (+{len(everywhere) - 1} more)" if len(everywhere) > 1 else ""
        return NextStep(
            f"every dispatch is held by {_held_by(o)}{more}: resolve it first", "resolve", o
        )
    used = _attempts_under_contract(unit, contract, attempts)
    if status == "blocked" and used >= attempt_ceiling:
        under = f" under v{unit.contract.version}" if used != unit.attempts else ""
        return NextStep(
            f"has used {used} of {attempt_ceiling} attempt(s){under}: replan its contract to go on",
            "replan",
        )
    if status == "contracted":
        return NextStep("ready to drive: nothing holds it; it has not run yet", "drive")
    return NextStep(
        f"ready to drive: nothing holds it ({used} of {attempt_ceiling} attempt(s) used)", "drive"
    )


def next_step_of(
    log: RegulatoryLog, store: ExecutionStore, unit: UnitRecord, *, attempt_ceiling: int
) -> NextStep:
    """``next_step`` with the unit's records read from ``store``."""
    unit_id = unit.unit_id
    return next_step(
        log,
        unit,
        decisions=store.decisions(unit_id),
        attempts=store.attempts(unit_id),
        contract=store.contract(unit_id, unit.contract.version),
        attempt_ceiling=attempt_ceiling,
    )
