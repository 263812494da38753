"""The veto: what holds a unit (docs/design.md#the-veto).

``progression_veto`` is a check over open records, nothing more: every open obligation that
blocks and names this unit, plus every one that blocks and names no unit at all — an audit
finding about the instance itself holds every unit until it is dispositioned.
"""

from __future__ import annotations

from dataclasses import dataclass

from regulator.protocol.obligations import ObligationState
from regulator.rules.regulatory_log import RegulatoryLog


@dataclass(frozen=True)
class VetoProblem:
    obligation: ObligationState
    message: str
    path: str = "obligations"


def vetoes(o: ObligationState, unit: str | None = None) -> bool:
    """Whether an open obligation holds ``unit`` (any unit, when ``unit`` is None)."""
    if not o.blocks or o.status not in ("open", "acknowledged"):
        return False
    return o.unit is None or unit is None or o.unit == unit


def progression_veto(
    log: RegulatoryLog, unit: str, *, before: str = "dispatch"
) -> list[VetoProblem]:
    held = [o for o in log.open_obligations() if o.blocks and (o.unit == unit or o.unit is None)]
    return [
        VetoProblem(
            o,
            f"obligation {o.id[:8]} ({o.consumer}, {o.severity}, {o.concern}): {o.subject} "
            f"must be dispositioned before {before}",
        )
        for o in held
    ]


def instance_wide(log: RegulatoryLog) -> list[ObligationState]:
    """The open blocking obligations that name no unit: each holds every dispatch."""
    return [o for o in log.open_obligations() if o.blocks and o.unit is None]
