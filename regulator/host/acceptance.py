"""A person's acceptance of what no check can observe (``unit accept``).

Bound to the revision the unit's work is at, so an acceptance never carries over to other
work; the next closeout reads it. Authority is checked at ``blocking`` before anything is
written, and the criterion must be one of the contract's evidence expectations.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from regulator.host.worktree import head_of
from regulator.protocol.audit import HumanAcceptance
from regulator.protocol.clock import now_iso
from regulator.rules.authority import check_disposition_authority
from regulator.rules.ledger import Actor, LedgerError, write_provenance

if TYPE_CHECKING:
    from regulator.host.loop import Loop


def accept_criterion(
    loop: Loop,
    unit_id: str,
    criterion: str,
    by: str,
    actor: Actor,
    *,
    reject: bool = False,
    note: str | None = None,
) -> HumanAcceptance:
    unit = loop.store.unit(unit_id)
    contract = loop.store.contract(unit_id, unit.contract.version)
    if contract is None:
        raise LedgerError(f"unit {unit_id} has no contract v{unit.contract.version}")
    if criterion not in {e.id for e in contract.expected_evidence}:
        raise LedgerError(
            f'"{criterion}" is not an evidence expectation of {contract.id} v{contract.version}'
        )
    refusal = check_disposition_authority(
        loop.definition.interaction, by, severity="blocking", os_user=actor.os_user
    )
    if refusal is not None:
        raise LedgerError(refusal)
    worktree = loop.layout.worktree(unit_id)
    revision = head_of(worktree if worktree.is_dir() else loop.layout.root)
    acceptance = HumanAcceptance.from_json_dict(
        {
            "id": str(uuid.uuid4()),
            "unitId": unit_id,
            "contract": {"id": contract.id, "version": contract.version},
            "criterion": criterion,
            "revision": revision,
            "disposition": "rejected" if reject else "accepted",
            "by": by,
            "note": note or None,
            "at": now_iso(loop.clock),
        }
    )
    loop.audit.append_acceptance(acceptance)
    write_provenance(loop.layout, [acceptance.id], actor, loop.clock)
    return acceptance
