"""``regulator doctor``: is this instance sound enough to run?

Each check says ok, or names its problems and its notices. A problem is something wrong with
the instance or its definition (a file that does not load, a symlink under ``.regulator/``, a
veto holding every unit) and makes the command exit 1. A notice is a normal state worth
knowing (an obligation owed to a person that the next ``remind`` will deliver, a policy that is
a symlink, a definition file the TypeScript regulator (the original) would refuse or ignore, a
person anyone on the machine may act as) and does not. The checks read and never write; the
agent wiring's check runs the hook and the MCP servers an agent would run, with a ``Read``
and a tool listing, which record nothing. The command settles, before the checks, the session
units whose agent has gone (:func:`regulator.host.session_units.settle_gone_sessions`), and
the report says which.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from regulator.host import gitops
from regulator.host.instance import read_canaries
from regulator.host.session_units import Settled
from regulator.policy import POLICY_KINDS, Definition, PolicyError
from regulator.policy.loader import (
    display_path,
    read_definition_data,
    shipped_policies_dir,
    symlink_note,
)
from regulator.policy.original import ORIGINAL_FILES, original_differences
from regulator.protocol.manifest import InstanceManifest
from regulator.rules.regulatory_log import RegulatoryLog
from regulator.store import Layout, StoreError
from regulator.store.logs import instance_logs, instance_records, read_log, read_record


@dataclass
class Check:
    name: str
    ok: bool  # no problem (notices allowed)
    detail: str
    problems: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    @property
    def level(self) -> str:
        """``problem``, ``notice`` or ``ok``: the worst of what the check found."""
        if not self.ok:
            return "problem"
        return "notice" if self.notices else "ok"


@dataclass
class DoctorReport:
    checks: list[Check]

    @property
    def problem_count(self) -> int:
        return sum(max(1, len(c.problems)) for c in self.checks if not c.ok)

    @property
    def notice_count(self) -> int:
        return sum(len(c.notices) for c in self.checks)

    def to_json(self) -> dict[str, Any]:
        """``{"checks": [{name, level, ok, detail, problems, notices}], "problems": N,
        "notices": N}``; the command exits 1 exactly when ``problems`` is not 0."""
        return {
            "checks": [
                {
                    "name": c.name,
                    "level": c.level,
                    "ok": c.ok,
                    "detail": c.detail,
                    "problems": c.problems,
                    "notices": c.notices,
                }
                for c in self.checks
            ],
            "problems": self.problem_count,
            "notices": self.notice_count,
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


def _as_the_original(kind: str, path: Path) -> tuple[list[str], list[str]]:
    """A definition file beside the original's schema: (notices of what it would refuse, what
    is ours on purpose, for the check's detail)."""
    shown = display_path(path)
    try:
        _, data = read_definition_data(kind, path)
    except PolicyError:
        return [], []  # refused here already: a problem, not a comparison
    found = original_differences(kind, data)
    notices = [
        f"{shown}: the TypeScript regulator would refuse this file: {line}"
        for line in found.refused
    ]
    ours = []
    if found.ours:
        them = "it" if len(found.ours) == 1 else "them"
        ours.append(f"{', '.join(found.ours)} (its closed schema refuses {them})")
    expected = ORIGINAL_FILES[kind]
    if kind in POLICY_KINDS and path.name != Path(expected).name:
        ours.append(f"the file name (it reads {expected} only)")
    return notices, ours


def _detail(label: str, where: str, ours: list[str], *more: str) -> str:
    parts = [f"{label} from {where}", *more] + (
        [f"beyond the TypeScript regulator: {'; '.join(ours)}"] if ours else []
    )
    return "; ".join(parts)


def _policies(definition: Definition) -> list[Check]:
    checks = []
    for kind in POLICY_KINDS:
        try:
            source = definition.source(kind)
        except PolicyError as exc:
            checks.append(Check(f"policy {kind}", False, "cannot be found", exc.problems))
            continue
        problems = definition.check()[kind]
        shipped = definition.is_shipped(kind)
        where = display_path(source) + (" (shipped)" if shipped else "")
        if problems:
            checks.append(Check(f"policy {kind}", False, f"{where} is refused", problems))
            continue
        policy: Any = getattr(definition, kind)
        link = symlink_note(source)
        notices = [link] if link else []
        ours: list[str] = []
        # The shipped files are this project's own; a definition's own files are compared.
        if not shipped:
            refused, ours = _as_the_original(kind, source)
            notices += refused
        checks.append(
            Check(f"policy {kind}", True, _detail(policy.label, where, ours), [], notices)
        )
    return checks


def _people(definition: Definition) -> list[Check]:
    """Who may decide, and whether anyone on the machine may act as them.

    Every listed person may decide something (acknowledge, resolve at ``info``, answer), and
    without ``osUsers`` the name is all that is checked: any OS user of this machine may type
    it. A notice, not a problem: on a machine with one user it may be meant.
    """
    try:
        people = definition.interaction.people
    except PolicyError:
        return []  # the interaction policy's own check says why
    unpinned = [p.name for p in people if p.os_users is None]
    detail = (
        f"{len(people)} person(s) may decide; {len(unpinned)} without osUsers"
        if people
        else "nobody may decide (the interaction policy lists no people)"
    )
    notices = [
        f"anyone on this machine may act as {name}: give {name} osUsers (docs/policies.md)"
        for name in unpinned
    ]
    return [Check("people", True, detail, [], notices)]


def _workload(definition: Definition) -> Check:
    from regulator.policy.workload import (
        is_original_format,
        load_workload,
        profile_files,
        workload_path,
    )

    try:
        path = workload_path(definition)
    except PolicyError as exc:
        return Check("workload", False, "cannot be found", exc.problems)
    try:
        workload = load_workload(definition)
    except PolicyError as exc:
        return Check("workload", False, f"{display_path(path)} is refused", exc.problems)
    shipped = path.parent == shipped_policies_dir()
    link = symlink_note(path)
    notices = [link] if link else []
    ours: list[str] = []
    more: list[str] = []
    if is_original_format(path):
        assert definition.root is not None
        notices, ours = _as_the_original("workload", path)
        notices = ([link] if link else []) + notices
        for profile in profile_files(definition.root):
            notices += _as_the_original("profile", profile)[0]
        more.append("the original's format")
        if workload.scripted_by_default:
            scripted = ", ".join(workload.scripted_by_default)
            more.append(f"given no `session`, {scripted} run scripted sessions")
    elif not shipped:
        ours.append("this project's workload format (it reads workload/<name>.json only)")
    notices += workload.notes
    where = display_path(path) + (" (shipped)" if shipped else "")
    return Check("workload", True, _detail(workload.label, where, ours, *more), [], notices)


def _agents(definition: Definition) -> Check:
    from regulator.policy.agent_effects import effects_path, load_agent_effects

    path = effects_path(definition)
    shown = display_path(path)
    try:
        effects = load_agent_effects(definition)
    except PolicyError as exc:
        return Check("agents", False, f"{shown} is refused", exc.problems)
    shipped = path.parent == shipped_policies_dir()
    link = symlink_note(path)
    ours = [] if shipped else ["it has no hooks and no agents.yaml"]
    where = shown + (" (shipped)" if shipped else "")
    label = f"{effects.name} v{effects.version}"
    return Check("agents", True, _detail(label, where, ours), [], [link] if link else [])


def _wiring(root: Path) -> list[Check]:
    # Imported here: doctor's other checks start no process.
    from regulator.host.wiring import check_wiring

    found = check_wiring(root)
    if found is None:
        return []  # no agent is wired to this repository
    return [Check("agent wiring", not found.problems, found.detail, found.problems, found.notices)]


def _files(layout: Layout) -> Check:
    misplaced = layout.misplaced()
    if misplaced:
        return Check(
            "files",
            False,
            f"{len(misplaced)} entr{'y' if len(misplaced) == 1 else 'ies'} under .regulator/ "
            "the store refuses",
            misplaced,
        )
    return Check("files", True, "no symlink, FIFO or misplaced directory under .regulator/")


def _canaries(layout: Layout) -> Check:
    if not os.path.lexists(layout.canaries):
        return Check(
            "canaries",
            True,
            "no canaries file",
            [],
            [".regulator/canaries is missing: secrets are redacted by shape only, not by value"],
        )
    try:
        values = read_canaries(layout)
    except StoreError as exc:
        return Check("canaries", False, "the canaries cannot be read", [str(exc)])
    return Check("canaries", True, f"{len(values)} value(s) redacted wherever text is shown")


def _logs(layout: Layout, log: RegulatoryLog) -> Check:
    problems = [str(p) for p in log.problems]
    count = 1
    try:
        logs = instance_logs(layout)
        records = instance_records(layout)
    except StoreError as exc:  # units/ or leases/ refused: the rest is still checked
        problems.append(str(exc))
        logs, records = [], []
    for spec in logs:
        if os.path.lexists(spec.path):
            count += 1
            try:
                _, found = read_log(layout, spec)
            except StoreError as exc:  # a FIFO, a symlink: named, and the next log read
                problems.append(str(exc))
                continue
            problems += [str(p) for p in found]
    for path, model in records:
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
    # Normal until the next delivery tick (`remind`, `watch`, the loop): worth knowing only.
    notices = [
        f"{o.id[:8]} owed to a person is not delivered yet (the next `regulator remind` "
        f"delivers it): {o.subject}"
        for o in undelivered
    ]
    return Check("obligations", not problems, detail, problems, notices)


def _sessions(settled: list[Settled] | str) -> Check:
    if isinstance(settled, str):  # the instance's files could not be read to settle them
        return Check("sessions", False, "the session units could not be checked", [settled])
    if not settled:
        return Check("sessions", True, "no running session unit's agent has gone")
    notices = [
        f"{s.unit_id} settled ({s.became}): its agent process "
        f"{', '.join(str(p) for p in s.pids)} had ended without settling it"
        for s in settled
    ]
    return Check("sessions", True, f"{len(settled)} session unit(s) settled now", [], notices)


def run_doctor(
    root: Path, definition: Definition, settled: list[Settled] | str | None = None
) -> DoctorReport:
    """The report. ``settled``: the session units the command settled before (or why it could
    not); ``None`` leaves that check out."""
    layout = Layout(root)
    checks = [
        _python(),
        _git(root),
        _manifest(layout),
        _files(layout),
        _canaries(layout),
        *_policies(definition),
        *_people(definition),
        _workload(definition),
        _agents(definition),
        *_wiring(root),
        *([] if settled is None else [_sessions(settled)]),
    ]
    try:
        log = RegulatoryLog(layout)
        log.refresh()
        checks.append(_logs(layout, log))
        checks.append(_obligations(log))
    except StoreError as exc:  # e.g. a symlinked directory under .regulator/
        checks.append(Check("logs", False, "the instance's files cannot be read", [str(exc)]))
    return DoctorReport(checks)
