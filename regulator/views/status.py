"""``regulator status``: the first read model of an instance.

A view of what the files hold — units with their records, obligations, interactions, unrouted
messages, leases — and every problem the readers met, as JSON in the on-disk camelCase shapes
or as text. It reads and never writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from regulator.policy import POLICY_KINDS, Definition, PolicyError
from regulator.protocol.clock import now_iso
from regulator.protocol.execution import (
    AttemptRecord,
    BudgetLedger,
    Lease,
    RecoveryDecision,
    UnitRecord,
    WorkContract,
)
from regulator.protocol.manifest import InstanceManifest
from regulator.protocol.obligations import ObligationState
from regulator.protocol.text import visible
from regulator.rules.regulatory_log import RegulatoryLog
from regulator.store import Layout, StoreError, list_dir
from regulator.store.logs import LogSpec, model_parser, read_log, read_record
from regulator.views.describe import describe_obligation


def _unit_view(
    layout: Layout, unit_id: str, log: RegulatoryLog, problems: list[str]
) -> dict[str, Any]:
    unit, problem = read_record(layout, layout.unit_record(unit_id), UnitRecord)
    if problem is not None:
        problems.append(problem)
    view: dict[str, Any] = {"unit": unit.to_json_dict() if unit else {"unitId": unit_id}}
    if unit is not None:
        contract, problem = read_record(
            layout, layout.contract(unit_id, unit.contract.version), WorkContract
        )
        if contract is not None:
            view["contract"] = contract.to_json_dict()
        elif problem is not None:
            problems.append(problem)
    for key, path, model in (
        ("attemptRecords", layout.attempts(unit_id), AttemptRecord),
        ("decisions", layout.decisions(unit_id), RecoveryDecision),
    ):
        items, found = read_log(layout, LogSpec(path, model_parser(model)))
        view[key] = [item.to_json_dict() for item in items]
        problems += [str(p) for p in found]
    budgets = layout.list_budgets(unit_id)
    if budgets:
        ledger, problem = read_record(layout, layout.budget(unit_id, budgets[-1]), BudgetLedger)
        if ledger is not None:
            view["budget"] = ledger.to_json_dict()
        elif problem is not None:
            problems.append(problem)
    view["obligations"] = [o.to_json_dict() for o in log.obligations.values() if o.unit == unit_id]
    return view


@dataclass(frozen=True)
class Status:
    """The read model: ``view`` in the on-disk camelCase shapes, and the folded obligations
    it was built from, so the text view need not parse the JSON view back."""

    view: dict[str, Any]
    obligations: list[ObligationState]


def build_status(root: Path, definition: Definition) -> Status:
    layout = Layout(root)
    problems: list[str] = []
    policy_problems: list[str] = []
    policies: dict[str, Any] = {}
    for kind in POLICY_KINDS:
        try:
            policy: Any = getattr(definition, kind)
            policies[kind] = {
                "name": policy.name,
                "version": policy.version,
                "file": str(definition.source(kind)),
            }
        except PolicyError as exc:
            # A definition refused as a whole (policies/ a FIFO) is refused once, not per kind.
            policy_problems += [p for p in exc.problems if p not in policy_problems]
    log = RegulatoryLog(layout)
    log.refresh()
    instance: dict[str, Any] = {"dir": str(root)}
    manifest, problem = read_record(layout, layout.manifest, InstanceManifest)
    if manifest is not None:
        instance["manifest"] = manifest.to_json_dict()
    else:
        instance["manifestProblem"] = problem
    # Symlinks, FIFOs, misplaced directories: listings skip them, so name them here.
    problems += layout.misplaced()
    instance["units"] = [_unit_view(layout, u, log, problems) for u in layout.list_units()]
    leases = []
    try:  # list_dir, not glob: a symlinked leases/ is refused, not followed
        names = list_dir(layout.leases_dir, kind="file")
    except StoreError:
        names = []  # named by misplaced() above
    for name in names:
        if name.endswith(".json"):
            path = layout.leases_dir / name
            lease, problem = read_record(layout, path, Lease)
            if lease is not None:
                leases.append({"lease": lease.to_json_dict()})
            elif problem is not None:
                problems.append(problem)
    instance["leases"] = leases
    instance["signals"] = [m.to_json_dict() for m in log.unrouted()]
    instance["obligations"] = [o.to_json_dict() for o in log.obligations.values()]
    instance["interactions"] = [i.to_json() for i in log.interactions.values()]
    instance["problems"] = policy_problems + [str(p) for p in log.problems] + problems
    view = {
        "generatedAt": now_iso(),
        "definition": {
            "dir": str(definition.policies_dir.parent),
            "policies": policies,
            "problems": policy_problems,
        },
        "instance": instance,
    }
    return Status(view, list(log.obligations.values()))


def render_status_text(status: Status) -> str:
    """The text view. Every value taken from a record or a file is made visible on its own."""
    view = status.view
    inst = view["instance"]
    out: list[str] = []
    manifest = inst.get("manifest")
    if manifest:
        out.append(
            f"instance {v(inst['dir'])} · initialized {v(manifest['initializedAt'][:10])} by "
            f"{v(manifest['initializedBy'])}"
        )
    else:
        out.append(f"instance {v(inst['dir'])} · {v(inst.get('manifestProblem'))}")
    policies = view["definition"]["policies"]
    out.append(
        "policies: "
        + ", ".join(f"{v(k)} {v(p['name'])} v{v(p['version'])}" for k, p in policies.items())
    )
    states = status.obligations
    open_ = [o for o in states if o.status in ("open", "acknowledged")]
    out.append(f"units: {len(inst['units'])}")
    for unit_view in inst["units"]:
        unit = unit_view["unit"]
        attempts = unit_view.get("attemptRecords", [])
        last = f" ({v(attempts[-1]['outcome'])})" if attempts else ""
        owed = sorted(
            {o.consumer + ("!" if o.blocks else "") for o in open_ if o.unit == unit.get("unitId")}
        )
        line = (
            f"  {v(unit.get('status', '?')):<10} {v(unit.get('unitId'))}  "
            f"{v(unit.get('unitType', ''))}  attempts {v(unit.get('attempts', 0))}{last}"
        )
        if owed:
            line += "  owed " + v(",".join(owed))
        if unit.get("reason"):
            line += f"  — {v(unit['reason'])}"
        out.append(line)
    for lease in inst["leases"]:
        held = lease["lease"]
        out.append(f"  lease {v(held['unitId'])} held by {v(held['owner'])} on {v(held['branch'])}")
    out.append(f"obligations: {len(open_)} open of {len(states)}")
    out += [f"  {describe_obligation(o)}".replace("\n", "\n  ") for o in open_]
    interactions = inst["interactions"]
    unanswered = sum(
        1 for i in interactions if not any(a["outcome"] == "answered" for a in i["answers"])
    )
    out.append(f"interactions: {len(interactions)} asked, {unanswered} unanswered")
    out.append(f"unrouted messages: {len(inst['signals'])}")
    for m in inst["signals"]:
        level = m.get("severity", m.get("impact", ""))
        out.append(f"  {v(m['kind'])}  {v(level)}  {v(m['subject'])}")
    out.append(f"problems: {len(inst['problems'])}")
    out += [f"  {v(p)}" for p in inst["problems"]]
    return "\n".join(out) + "\n"


def v(value: Any) -> str:
    """A value from the read model, as text no terminal acts on."""
    return visible(str(value))
