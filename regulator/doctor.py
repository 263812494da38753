"""``regulator doctor``: is this instance sound enough to run?

Each check says ok or names its problems; any problem makes the command exit 1. The checks
read and never write.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from regulator import gitops
from regulator.logs import instance_logs, instance_records, read_log, read_record
from regulator.policy import POLICY_KINDS, Definition, PolicyError
from regulator.policy.loader import display_path
from regulator.protocol.manifest import InstanceManifest
from regulator.regulatory_log import RegulatoryLog
from regulator.store import Layout, StoreError


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    problems: list[str] = field(default_factory=list)


@dataclass
class DoctorReport:
    checks: list[Check]

    @property
    def problem_count(self) -> int:
        return sum(max(1, len(c.problems)) for c in self.checks if not c.ok)

    def to_json(self) -> dict[str, Any]:
        return {
            "checks": [c.__dict__ for c in self.checks],
            "problems": self.problem_count,
        }


def _python() -> Check:
    version = ".".join(map(str, sys.version_info[:3]))
    ok = sys.version_info >= (3, 11)
    return Check("python", ok, version if ok else f"{version}; regulator needs 3.11 or later")


def _git(root: Path) -> Check:
    if shutil.which("git") is None:
        return Check("git", False, "git is not on PATH")
    top = gitops.toplevel(root)
    if top is None:
        return Check("git", False, f"{root} is not a git repository")
    return Check("git", True, gitops.version() or "git")


def _manifest(layout: Layout) -> Check:
    record, problem = read_record(layout, layout.manifest, InstanceManifest)
    if problem is not None:
        return Check("manifest", False, "the instance manifest does not load", [problem])
    assert isinstance(record, InstanceManifest)
    return Check(
        "manifest",
        True,
        f"initialized {record.initialized_at} by {record.initialized_by}",
    )


def _policies(definition: Definition) -> list[Check]:
    checks = []
    for kind in POLICY_KINDS:
        try:
            source = definition.source(kind)
        except PolicyError as exc:
            checks.append(Check(f"policy {kind}", False, "cannot be found", exc.problems))
            continue
        problems = definition.check()[kind]
        where = display_path(source) + (" (shipped)" if definition.is_shipped(kind) else "")
        if problems:
            checks.append(Check(f"policy {kind}", False, f"{where} is refused", problems))
        else:
            policy: Any = getattr(definition, kind)
            checks.append(Check(f"policy {kind}", True, f"{policy.label} from {where}"))
    return checks


def _logs(layout: Layout, log: RegulatoryLog) -> Check:
    problems = [str(p) for p in log.problems]
    count = 1
    for spec in instance_logs(layout):
        if spec.path.exists():
            count += 1
            _, found = read_log(layout, spec)
            problems += [str(p) for p in found]
    for path, model in instance_records(layout):
        _, problem = read_record(layout, path, model)
        if problem is not None:
            problems.append(problem)
    detail = f"{log.lines} line(s) in signals.ndjson; {count} log(s) read"
    return Check("logs", not problems, detail, problems)


def _obligations(log: RegulatoryLog) -> Check:
    open_ = log.open_obligations()
    human = [o for o in open_ if o.consumer == "human"]
    undelivered = [o for o in human if not o.deliveries]
    instance_wide = [o for o in open_ if o.blocks and o.unit is None]
    detail = (
        f"{len(open_)} open; {len(human)} owed to a person, {len(undelivered)} not delivered; "
        f"{len(instance_wide)} holding the whole instance"
    )
    problems = [
        f"{o.id[:8]} holds every unit: {o.subject} (owed to {o.consumer})" for o in instance_wide
    ]
    problems += [
        f"{o.id[:8]} owed to a person was never delivered: {o.subject}" for o in undelivered
    ]
    return Check("obligations", not problems, detail, problems)


def run_doctor(root: Path, definition: Definition) -> DoctorReport:
    layout = Layout(root)
    checks = [_python(), _git(root), _manifest(layout), *_policies(definition)]
    try:
        log = RegulatoryLog(layout)
        log.refresh()
        checks += [_logs(layout, log), _obligations(log)]
    except StoreError as exc:  # e.g. a symlinked directory under .regulator/
        checks.append(Check("logs", False, "the instance's files cannot be read", [str(exc)]))
    return DoctorReport(checks)
