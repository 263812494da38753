"""The S3 loop: contract → dispatch → verify → route → close (docs/design.md#the-loop).

``dispatch`` runs one attempt behind the dispatch gate (attempt ceiling, veto, contract
checks), records how it ended, and on a report runs the closeout: the host's own checks at the
committed revision, a verdict, the report's signals, the veto before close, reintegration.
``route`` asks the recovery policy what to do with a blocked unit and applies what the loop
itself may apply. ``drive`` repeats the two while the answer is retry or repair, and stops at
the first decision it cannot apply. A unit paused on a person's question is never routed —
unless the interaction policy sets ``waitCeilingMs`` and the wait has run past it.
"""

from __future__ import annotations

import platform
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Literal

from regulator.host import gitops
from regulator.host.agent_process import run_registered
from regulator.host.conventions import discover
from regulator.host.delivery import route_and_deliver
from regulator.host.identity import identity_text
from regulator.host.leases import LeaseError, LeaseStore
from regulator.host.prompt import Fact, render_prompt
from regulator.host.session_definition import take_snapshot
from regulator.host.sessions import SessionAdapter, SessionResult, SessionRun
from regulator.host.thrash import ThrashDetector
from regulator.host.tools import SessionTools
from regulator.host.worktree import (
    BaseNotReady,
    Conflicted,
    Merged,
    WorktreeError,
    abandon_unit,
    conflict_signal,
    head_of,
    resume_unit,
    start_unit,
)
from regulator.host.writes import changed_paths
from regulator.policy import Definition
from regulator.policy.workload import Workload, load_workload, unenforced_refusal
from regulator.protocol.audit import EvidenceRecord, TechnicalVerdict
from regulator.protocol.clock import Clock, now_iso, parse_iso, system_clock
from regulator.protocol.execution import (
    AttemptRecord,
    ContractRef,
    RecoveryDecision,
    UnitRecord,
    WorkContract,
)
from regulator.protocol.manifest import InstanceManifest
from regulator.protocol.messages import AuditFinding
from regulator.protocol.obligations import ObligationState
from regulator.rules.audit_log import AuditLog, audit_finding_for_verdict, summarize_verdict
from regulator.rules.authority import check_disposition_authority, owed_to_s5, process_os_user
from regulator.rules.budget import BudgetGuard, available_models, choose_models, no_model_error
from regulator.rules.dispositions import Refusal, resolve
from regulator.rules.execution import (
    ExecutionError,
    ExecutionStore,
    check_contract,
    check_replan,
    check_result_report,
    report_signals,
)
from regulator.rules.ledger import Actor, Ledger
from regulator.rules.memory_store import MemoryStore
from regulator.rules.recovery import (
    Classification,
    Waiting,
    awaiting_decision,
    blocked_reason,
    cite,
    classify_failure,
    disposition_by_decision_in,
    escalation_signal,
    make_decision,
    waiting_on,
)
from regulator.rules.regulatory_log import RegulatoryLog
from regulator.rules.veto import progression_veto
from regulator.rules.writes import WriteBounds, describe_bounds, write_problems
from regulator.store import CorruptRecord, Layout, StoreError
from regulator.store.logs import read_record

Status = Literal["closed", "refused", "blocked", "held"]


@dataclass
class Outcome:
    """How one dispatch (or close) ended."""

    status: Status
    unit: UnitRecord | None
    problems: list[str] = field(default_factory=list)
    attempt: AttemptRecord | None = None
    reason: str | None = None
    merged: str | None = None


@dataclass
class Driven:
    outcome: Outcome
    decisions: list[RecoveryDecision] = field(default_factory=list)


class Loop:
    #: How the person accepted, for this run, what regulator does not enforce of a unit type,
    #: as the verdict says it ("with --accept-unenforced", "in the room by alice"); ``None``:
    #: not accepted, and the gate refuses such a unit type. Set by the caller for one command,
    #: never read from anything the unit could write.
    accept_unenforced: str | None = None

    def __init__(
        self,
        layout: Layout,
        definition: Definition,
        *,
        adapters: dict[str, SessionAdapter] | None = None,
        clock: Clock = system_clock,
        models: Container[str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        wait_for_person: bool = True,
    ) -> None:
        self.layout = layout
        self.definition = definition
        self.clock = clock
        self.sleep = sleep
        self.adapters = adapters or {}
        self.models = models if models is not None else available_models()
        self.wait_for_person = wait_for_person
        self.store = ExecutionStore(layout, clock)
        self.ledger = Ledger(layout, clock=clock)
        self.audit = AuditLog(layout)
        self.workload: Workload = load_workload(definition)

    # -- helpers ----------------------------------------------------------------------------

    @property
    def log(self) -> RegulatoryLog:
        return self.ledger.refresh()

    def _route(self) -> None:
        route_and_deliver(self.ledger, self.definition)

    def _ceiling(self, unit_type: str) -> int:
        return self.definition.budget.ceiling_for(unit_type).attempts

    def adapter_for(self, unit_type: str) -> SessionAdapter:
        kind = self.workload.unit_types[unit_type].session.adapter
        adapter = self.adapters.get(unit_type) or self.adapters.get(kind)
        if adapter is None:
            if kind == "command":
                from regulator.host.sessions.command import CommandAdapter

                command: SessionAdapter = CommandAdapter(
                    self.workload.unit_types[unit_type].session
                )
                return command
            raise ExecutionError(
                f"unit type {unit_type} runs scripted sessions: give the scenario with --script"
            )
        return adapter

    # -- the dispatch gate ------------------------------------------------------------------

    def gate(self, contract: WorkContract, *, before: str = "dispatch") -> list[str]:
        """Every reason this contract may not be dispatched now (empty: it may)."""
        problems = [str(p) for p in check_contract(contract)]
        wl = contract.workload
        if (wl.name, wl.version) != (self.workload.name, self.workload.version):
            problems.append(
                f"workload: contract is for {wl.name} v{wl.version}, the definition runs "
                f"{self.workload.label}"
            )
        if contract.unit_type in self.workload.unit_types:
            try:
                self.adapter_for(contract.unit_type)
            except (ExecutionError, ValueError) as exc:
                problems.append(f"session: {exc}")
            problems += self.unaccepted(contract.unit_type)
        if contract.unit_type not in self.workload.unit_types:
            problems.append(
                f"unitType: {contract.unit_type!r} is not a unit type of {self.workload.label}"
            )
        unit = self.store.find_unit(contract.unit_id)
        if unit is not None:
            if unit.status not in ("contracted", "blocked"):
                problems.append(
                    f"unit: {unit.unit_id} is {unit.status}; "
                    "only a blocked unit is dispatched again"
                )
            if (unit.contract.id, unit.contract.version) != (contract.id, contract.version):
                runs = f"{unit.unit_id} runs {unit.contract.id} v{unit.contract.version}"
                if contract.id == unit.contract.id and contract.version < unit.contract.version:
                    problems.append(
                        f"contract: {runs}; v{contract.version} was replanned: drive the version "
                        "in force"
                    )
                else:
                    problems.append(
                        f"contract: {runs}; {contract.id} v{contract.version} would be a "
                        f"replan: `regulator unit replan {unit.unit_id} --contract FILE`"
                    )
            ceiling = self._ceiling(unit.unit_type)
            used = self.attempts_under_contract(unit)
            if used >= ceiling:
                under = f" under v{unit.contract.version}" if used != unit.attempts else ""
                problems.append(
                    f"attempts: {unit.unit_id} has used {used} of {ceiling} attempt(s){under}"
                )
        problems += [
            f"{p.path}: {p.message}"
            for p in progression_veto(self.log, contract.unit_id, before=before)
        ]
        return problems

    # -- one attempt -------------------------------------------------------------------------

    def dispatch(self, contract: WorkContract, *, hint: str | None = None) -> Outcome:
        self._route()
        problems = self.gate(contract)
        if problems:
            return Outcome("refused", self.store.find_unit(contract.unit_id), problems)
        unit = self.store.find_unit(contract.unit_id) or self.store.create_unit(
            contract, self.workload
        )
        unit_id = unit.unit_id
        try:
            if self.layout.worktree(unit_id).is_dir():
                started = resume_unit(self.layout, unit_id, clock=self.clock)
            else:
                started = start_unit(self.layout, unit_id, clock=self.clock)
        except (WorktreeError, LeaseError, gitops.GitError) as exc:
            reason = f"dispatch error: {exc}"
            unit = self.store.set_status(unit_id, "blocked", reason)
            return Outcome("blocked", unit, reason=reason)
        worktree = started.path
        started_revision = head_of(worktree)
        attempt = unit.attempts + 1
        if hint is None:
            hint = self.redispatch_hint(unit)
        started_at = now_iso(self.clock)
        # The session's processes read the definition as it is now, whatever changes after.
        take_snapshot(self.layout, unit_id, attempt, self.definition)
        self.store.set_status(unit_id, "dispatched")
        route = self.definition.budget.route_for(unit.unit_type)
        models = choose_models(route, self.models)
        ceiling = self.definition.budget.ceiling_for(unit.unit_type)
        guard = BudgetGuard.start(
            self.layout,
            unit_id,
            attempt,
            ceiling,
            clock=self.clock,
            model=models[0] if models else None,
        )
        result: SessionResult | None = None
        error: str | None = None
        if not models:
            error = no_model_error(route)
        else:
            prompt = self._prompt(contract, unit, attempt, hint)
            prompt_path = self.layout.unit_dir(unit_id) / f"prompt.a{attempt}.md"
            prompt_path.write_text(prompt, encoding="utf-8")
            tools = SessionTools(
                self.layout,
                self.definition,
                contract=contract,
                attempt=attempt,
                worktree=worktree,
                grants=self.workload.grants(unit.unit_type),
                guard=guard,
                clock=self.clock,
                sleep=self.sleep,
                wait_for_person=self.wait_for_person,
            )
            try:
                result, error = self._run_session(
                    self.adapter_for(unit.unit_type),
                    models,
                    SessionRun(
                        contract,
                        attempt,
                        worktree,
                        prompt,
                        prompt_path,
                        models[0],
                        tools,
                        guard,
                        self.clock,
                        self.layout.root,
                        self.sleep,
                    ),
                )
            except Exception as exc:  # a session that crashes is an attempt that ended in error
                error = f"the session failed: {type(exc).__name__}: {exc}"
        guard.tick()
        ended_at = now_iso(self.clock)
        self._scan_writes(unit_id, attempt, worktree, started_revision)
        self._route()
        session_id = result.session_id if result is not None else None
        return self._settle(
            contract, unit_id, attempt, started_at, ended_at, session_id, guard, error, worktree
        )

    def _run_session(
        self, adapter: SessionAdapter, models: list[str], run: SessionRun
    ) -> tuple[SessionResult | None, str | None]:
        """Run on the first model; a provider failure moves to the next, in a fresh session."""
        result: SessionResult | None = None
        error: str | None = None
        for model in models:
            run.guard.record_model(model)
            run.model = model
            result = adapter.run(run)
            if result.provider_error is None:
                return result, result.error
            error = f"provider error on {model}: {result.provider_error}"
        return result, error or "every model of the route failed"

    def _settle(
        self,
        contract: WorkContract,
        unit_id: str,
        attempt: int,
        started_at: str,
        ended_at: str,
        session_id: str | None,
        guard: BudgetGuard,
        error: str | None,
        worktree: Path,
    ) -> Outcome:
        def record(outcome: str, reason: str | None, detail: str | None = None) -> Outcome:
            rec = self.store.record_attempt(
                unit_id,
                contract_version=contract.version,
                started_at=started_at,
                ended_at=ended_at,
                outcome=outcome,  # type: ignore[arg-type]
                session_id=session_id,
                detail=detail,
            )
            unit = self.store.set_status(unit_id, "blocked", reason)
            self._route()
            return Outcome("blocked", unit, attempt=rec, reason=reason)

        waiting = [
            o for o in self.log.open_obligations(unit_id) if o.concern == "interaction" and o.blocks
        ]
        if waiting:
            detail = _paused_detail(waiting)
            return record("paused", f"paused: awaiting a person — {detail}", detail)
        if guard.exhausted is not None:
            dimension = guard.exhausted.dimension
            return record("budget-exhausted", f"budget exhausted: {dimension}", dimension)
        if error is not None:
            return record("error", f"dispatch error: {error}", error)
        report = self.store.report(unit_id, contract.version, attempt)
        if report is None:
            return record("no-report", "the unit ended without calling report_result")
        if check_result_report(contract, report, unit_id):
            return record("invalid-report", "the result report does not honour the contract")
        verdict = self._closeout(contract, unit_id, attempt, worktree)
        if verdict.verdict != "pass":
            return record(
                "check-failure",
                f"audit refused closeout: {summarize_verdict(verdict)}",
                summarize_verdict(verdict),
            )
        rec = self.store.record_attempt(
            unit_id,
            contract_version=contract.version,
            started_at=started_at,
            ended_at=ended_at,
            outcome="reported",
            session_id=session_id,
        )
        with self.ledger.transaction() as txn:
            for signal in report_signals(contract, report, self.clock):
                txn.append_raw(signal)
        self.store.set_status(unit_id, "reported")
        outcome = self.close(unit_id)
        outcome.attempt = rec
        return outcome

    # -- closeout ---------------------------------------------------------------------------

    def _closeout(
        self, contract: WorkContract, unit_id: str, attempt: int, worktree: Path
    ) -> TechnicalVerdict:
        """The host's own checks, at the committed revision, recorded as S3* evidence."""
        revision = head_of(worktree)
        kind = self.workload.unit_types[contract.unit_type]
        evidence: list[EvidenceRecord] = []
        criteria = [e.id for e in contract.expected_evidence if e.class_ == "test"]
        if "tests" in kind.checks:
            evidence.append(self._run_tests_at(contract, unit_id, attempt, revision, criteria))
        writes = self._check_writes_at(contract, unit_id, attempt, revision, worktree)
        if writes is not None:
            evidence.append(writes)
        # What the workload asks that no check here runs: said in the verdict, as the person
        # accepted it for this run; never accepted, it fails (the gate refuses it before this).
        gaps = self.workload.unenforced(contract.unit_type)
        unaccepted = bool(gaps) and self.accept_unenforced is None
        unenforced: list[str] = []
        if unaccepted:
            unenforced.append(f"not enforced here and not accepted: {'; '.join(gaps)}")
        elif gaps:
            unenforced.append(
                f"not enforced here, accepted for this run {self.accept_unenforced} (OS user "
                f"{process_os_user()}): {'; '.join(gaps)}"
            )
        failed = [e.id for e in evidence if e.verdict == "fail"]
        # What no check can observe is a person's to accept, at this revision.
        accepted: dict[str, str] = {}
        for a in self.audit.audit_for(unit_id).acceptances:
            if a.revision == revision:
                accepted[a.criterion] = a.disposition
        judged = [
            e
            for e in contract.expected_evidence
            if e.required and e.class_ in ("semantic", "runtime")
        ]
        awaiting = [e.id for e in judged if e.id not in accepted]
        refused = [e.id for e in judged if accepted.get(e.id) == "rejected"]
        state = (
            "fail" if failed or refused or unaccepted else ("inconclusive" if awaiting else "pass")
        )
        verdict = TechnicalVerdict.from_json_dict(
            {
                "id": str(uuid.uuid4()),
                "unitId": unit_id,
                "attempt": attempt,
                "contract": {"id": contract.id, "version": contract.version},
                "revision": revision,
                "verdict": state,
                "evidence": [e.id for e in evidence],
                # Each check by the criteria it speaks to, or by its own name if none.
                "satisfied": [c for e in evidence if e.verdict == "pass" for c in _cited(e)],
                "failed": [c for e in evidence if e.verdict == "fail" for c in _cited(e)]
                + refused
                + (["unenforced"] if unaccepted else []),
                "missing": [],
                "stale": [],
                "contradicted": [],
                "awaitingAcceptance": awaiting,
                "reasons": [
                    e.observation.splitlines()[0]
                    for e in evidence
                    if e.verdict == "fail" and e.observation
                ]
                + [f"{c} was rejected by a person" for c in refused]
                + [f"{c} awaits a person's acceptance (regulator unit accept)" for c in awaiting]
                + unenforced,
                "decidedBy": "S3*",
                "at": now_iso(self.clock),
            }
        )
        self.audit.append_evidence(*evidence)
        self.audit.append_verdict(verdict)
        if verdict.verdict != "pass":
            finding = audit_finding_for_verdict(verdict, self.clock, evidence)
            with self.ledger.transaction() as txn:
                txn.append_raw(finding)
        return verdict

    def unaccepted(self, unit_type: str) -> list[str]:
        """The gate's refusal of a unit type with gates regulator does not enforce, unless the
        person accepted them for this run."""
        gaps = self.workload.unenforced(unit_type)
        if not gaps or self.accept_unenforced is not None:
            return []
        return [unenforced_refusal(unit_type, gaps)]

    def _write_bounds(self, unit_type: str) -> list[WriteBounds]:
        """The unit type's profile's writablePaths and the manifest's declared paths.

        A manifest that does not load is a bound nothing can satisfy: what it declared cannot
        be known, so the check fails closed (``CorruptRecord``).
        """
        bounds: list[WriteBounds] = []
        writable = self.workload.writable_paths(unit_type)
        if writable is not None:
            profile = self.workload.unit_types[unit_type].profile
            bounds.append(WriteBounds(f"profile {profile}", tuple(writable)))
        manifest, problem = read_record(self.layout, self.layout.manifest, InstanceManifest)
        if manifest is None:
            raise CorruptRecord(
                f"the instance manifest does not load ({problem})", self.layout.manifest
            )
        assert isinstance(manifest, InstanceManifest)
        if manifest.writable_paths is not None or manifest.protected_paths:
            bounds.append(
                WriteBounds(
                    "the instance manifest",
                    tuple(manifest.writable_paths) if manifest.writable_paths is not None else None,
                    tuple(manifest.protected_paths or ()),
                )
            )
        return bounds

    def _check_writes_at(
        self, contract: WorkContract, unit_id: str, attempt: int, revision: str, worktree: Path
    ) -> EvidenceRecord | None:
        """Every path the unit changed, against where it may write; ``None``: no limit is set."""
        try:
            bounds = self._write_bounds(contract.unit_type)
            if not bounds:
                return None
            paths = changed_paths(self.layout.root, worktree)
        except (gitops.GitError, WorktreeError, StoreError, OSError) as exc:
            verdict, observation = "fail", f"where the unit wrote cannot be checked: {exc}"
        else:
            problems = write_problems(paths, bounds)
            if problems:
                verdict, observation = "fail", "; ".join(problems)
            else:
                changed = f"{len(paths)} path(s) changed" if paths else "nothing changed"
                verdict, observation = "pass", f"{changed}, {describe_bounds(bounds)}"
            if paths:
                observation += "\n" + "\n".join(paths)
        return self._evidence(
            unit_id, attempt, contract, "writable_paths", "file", verdict, observation, revision
        )

    def _run_tests_at(
        self, contract: WorkContract, unit_id: str, attempt: int, revision: str, criteria: list[str]
    ) -> EvidenceRecord:
        """Run the project's test command in a clean checkout of exactly ``revision``."""
        with tempfile.TemporaryDirectory(prefix="regulator-check-") as tmp:
            checkout = Path(tmp) / "tree"
            gitops.git(
                self.layout.root, "worktree", "add", "--detach", "--quiet", str(checkout), revision
            )
            try:
                conventions = discover(checkout)
                command = conventions.test_command
                if command is None:
                    verdict, observation = "pass", f"no test command ({conventions.test_source})"
                else:
                    try:
                        done = run_registered(
                            self.layout,
                            command,
                            unit_id=unit_id,
                            attempt=attempt,
                            by="host-check",
                            timeout=900,
                            cwd=checkout,
                        )
                        output = (done.stdout + done.stderr).strip()
                        verdict = "pass" if done.returncode == 0 else "fail"
                        observation = (
                            f"{' '.join(command)}: exit {done.returncode}\n{output[-2000:]}"
                        )
                    except (OSError, subprocess.TimeoutExpired) as exc:
                        verdict, observation = "fail", f"{' '.join(command)}: {exc}"
            finally:
                gitops.git(
                    self.layout.root, "worktree", "remove", "--force", str(checkout), check=False
                )
        return self._evidence(
            unit_id,
            attempt,
            contract,
            "run_tests",
            "test",
            verdict,
            observation,
            revision,
            criteria=criteria,
            command=command,
        )

    def _evidence(
        self,
        unit_id: str,
        attempt: int,
        contract: WorkContract | ContractRef,
        check: str,
        kind: str,
        verdict: str,
        observation: str,
        revision: str,
        *,
        criteria: list[str] | None = None,
        command: list[str] | None = None,
    ) -> EvidenceRecord:
        """One piece of S3* evidence the host made itself, stamped with where and when."""
        data = {
            "id": str(uuid.uuid4()),
            "unitId": unit_id,
            "attempt": attempt,
            "contract": {"id": contract.id, "version": contract.version},
            "check": check,
            "class": kind,
            "criteria": criteria or [],
            "verdict": verdict,
            "observation": observation,
            "revision": revision,
            "environment": _environment(),
            "producedBy": "S3*",
            "at": now_iso(self.clock),
        }
        if command is not None:
            data["command"] = command
        return EvidenceRecord.from_json_dict(data)

    def close(self, unit_id: str) -> Outcome:
        """The veto before close, then reintegration by merge; a post-merge red base is audited."""
        unit = self.store.unit(unit_id)
        held = progression_veto(self.log, unit_id, before="close")
        if held:
            return Outcome(
                "held",
                unit,
                [f"{p.path}: {p.message}" for p in held],
                reason="held by what is owed",
            )
        result = finish_unit_safely(self.layout, unit_id, self.clock)
        if isinstance(result, str):
            unit = self.store.set_status(unit_id, "blocked", result)
            self._route()
            return Outcome("blocked", unit, reason=result)
        if isinstance(result, Conflicted):
            with self.ledger.transaction() as txn:
                txn.append_raw(
                    conflict_signal(unit_id, result.branch, result.base, result.files, self.clock)
                )
            reason = f"{result.blocked_reason}: {', '.join(result.files)}"
            unit = self.store.set_status(unit_id, "blocked", reason)
            self._route()
            return Outcome("blocked", unit, reason=reason)
        if not isinstance(result, Merged):
            unit = self.store.set_status(unit_id, "blocked", result.blocked_reason)
            self._route()
            return Outcome("blocked", unit, reason=result.blocked_reason)
        unit = self.store.set_status(unit_id, "closed")
        self.verify_base(f"after reintegrating unit/{unit.unit_id}", unit=unit)
        self._route()
        return Outcome("closed", unit, merged=result.sha)

    def verify_base(self, when: str, *, unit: UnitRecord | None = None) -> bool:
        """After a merge, the base must still pass its tests; if not, every unit is held.

        When it passes again, S3 dispositions its own earlier findings that the base was red:
        the evidence that raised them no longer holds. After a unit's merge, the tests run as
        that unit's (its agent wrote the code they run).
        """
        conventions = discover(self.layout.root)
        if conventions.test_command is None:
            return True
        try:
            if unit is not None:
                done = run_registered(
                    self.layout,
                    conventions.test_command,
                    unit_id=unit.unit_id,
                    attempt=max(unit.attempts, 1),
                    by="host-check",
                    timeout=900,
                    cwd=self.layout.root,
                )
            else:
                done = subprocess.run(
                    conventions.test_command,
                    cwd=self.layout.root,
                    capture_output=True,
                    text=True,
                    timeout=900,
                )
        except (OSError, subprocess.TimeoutExpired) as exc:
            ok, output = False, str(exc)
        else:
            ok, output = done.returncode == 0, (done.stdout + done.stderr).strip()
        if ok:
            red = [
                o
                for o in self.log.open_obligations()
                if o.unit is None
                and o.concern == "audit-finding"
                and o.subject.startswith("the base fails its tests")
            ]
            if red:
                with self.ledger.transaction() as txn:
                    for o in red:
                        txn.resolve(
                            o.id,
                            "S3",
                            "fixed",
                            f"the base passes its tests again at {head_of(self.layout.root)[:7]}",
                        )
            return True
        finding = AuditFinding.from_json_dict(
            {
                "id": str(uuid.uuid4()),
                "timestamp": now_iso(self.clock),
                "source": "S3*",
                "subject": f"the base fails its tests {when}",
                "kind": "audit-finding",
                "channel": "audit",
                "destination": "S3",
                "severity": "blocking",
                "observation": (
                    f"{' '.join(conventions.test_command)} failed at "
                    f"{head_of(self.layout.root)[:7]}: {output[-500:]}"
                ),
                "evidence": [{"class": "test", "ref": " ".join(conventions.test_command)}],
                "suggestedAction": "repair the base, then disposition this finding",
            }
        )
        with self.ledger.transaction() as txn:
            txn.append_raw(finding)
        return False

    # -- the hint -------------------------------------------------------------------------------

    def redispatch_hint(self, unit: UnitRecord) -> str | None:
        """After an answer or a disposition since the last attempt: what the next one is told."""
        attempts = self.store.attempts(unit.unit_id)
        if not attempts:
            return None
        since = attempts[-1].ended_at
        resolved = [
            o
            for o in self.log.obligations.values()
            if o.unit == unit.unit_id
            and o.concern in ("recovery-decision", "interaction")
            and o.status == "resolved"
            and (o.closed_at or "") > since
        ]
        if not resolved:
            # `unit route` then `unit dispatch`: the decision's hint, as drive would pass it.
            decisions = [
                d for d in self.store.decisions(unit.unit_id) if d.decided_at > since and d.hint
            ]
            return decisions[-1].hint if decisions else None
        o = max(resolved, key=lambda s: s.closed_at or "")
        if o.concern == "interaction":
            asked = f"{o.subject}: {o.question}" if o.question else o.subject
            refused = ". Do not perform what was refused." if o.disposition == "rejected" else ""
            return (
                f"Your question ({asked}) was answered by {o.closed_by} — "
                f"{o.disposition}: {o.rationale}{refused}"
            )
        return (
            f"Obligation {o.id[:8]} on this unit ({o.subject}) was resolved by "
            f"{o.closed_by} as {o.disposition}: {o.rationale}"
        )

    def _prompt(
        self, contract: WorkContract, unit: UnitRecord, attempt: int, hint: str | None
    ) -> str:
        facts = [
            Fact(s.entry.subject, s.entry.note, s.entry.review_by)
            for s in MemoryStore(self.layout, self.clock).current(unit.unit_type)
        ]
        identity = identity_text(self.layout.root)
        return render_prompt(
            contract,
            attempt=attempt,
            hint=hint,
            facts=facts,
            identity=identity,
            tools=self.workload.grants(unit.unit_type),
        )

    # -- routing a blocked unit -------------------------------------------------------------

    def route(self, unit_id: str) -> RecoveryDecision | None:
        """Decide what a blocked unit needs next; ``None`` when there is nothing to decide.

        A unit already waiting on its recovery decision is not routed again (nothing written):
        each route counts an occurrence and would open another wait.
        """
        if self.awaiting_decision(unit_id) is not None:
            return None
        self._route()
        unit = self.store.unit(unit_id)
        if unit.status != "blocked":
            return None
        attempts = self.store.attempts(unit_id)
        log = self.log
        waiting = [
            o for o in log.open_obligations(unit_id) if o.concern == "interaction" and o.blocks
        ]
        if waiting:
            classification = self._past_wait_ceiling(unit, attempts)
            if classification is None:
                return None  # a paused unit is waiting for a person, not failing
            LeaseStore(self.layout, self.clock).release(unit_id)
        else:
            last = attempts[-1].attempt if attempts else None
            observed = [o for o in self.store.observations(unit_id) if o.attempt == last]
            classification = classify_failure(unit, attempts, observed, log.messages.values())
        recovery = self.definition.recovery
        decision = make_decision(
            recovery,
            unit,
            classification,
            self.decisions_under_contract(unit),
            self._ceiling(unit.unit_type),
            clock=self.clock,
            attempts_used=self.attempts_under_contract(unit),
        )
        self.store.record_decision(decision)
        self._apply(unit, decision)
        self._route()
        return decision

    def _past_wait_ceiling(
        self, unit: UnitRecord, attempts: list[AttemptRecord]
    ) -> Classification | None:
        ceiling = self.definition.interaction.wait_ceiling_ms
        if ceiling is None or not attempts or attempts[-1].outcome != "paused":
            return None
        paused_at = parse_iso(attempts[-1].ended_at)
        waited = self.clock() - paused_at
        if waited < timedelta(milliseconds=ceiling):
            return None
        return Classification(
            "timeout",
            [
                f"attempt {attempts[-1].attempt}: paused — {attempts[-1].detail or ''}".rstrip(
                    " —"
                ),
                (
                    f"waited {int(waited.total_seconds())} s, "
                    f"past the interaction policy's waitCeilingMs {ceiling} ms"
                ),
            ],
        )

    def _apply(self, unit: UnitRecord, decision: RecoveryDecision) -> None:
        routing = self.definition.routing
        reason = blocked_reason(decision)
        if decision.action == "abort":
            abandon_unit(self.layout, unit.unit_id, clock=self.clock)
            self.store.set_status(unit.unit_id, "aborted", reason)
        elif reason is not None:
            self.store.set_status(unit.unit_id, "blocked", reason)
        with self.ledger.transaction() as txn:
            cites: list[str] = []
            if decision.action == "escalate":
                signal = escalation_signal(decision, unit.unit_id, self.clock)
                txn.append_raw(signal)
                cites.append(signal.id)
            disposition_by_decision_in(
                txn, decision, routing, cites, interaction_policy=self.definition.interaction
            )

    # -- the autoloop ------------------------------------------------------------------------

    def drive(self, contract: WorkContract) -> Driven:
        driven = Driven(Outcome("refused", None))
        hint: str | None = None
        while True:
            outcome = self.dispatch(contract, hint=hint)
            driven.outcome = outcome
            if outcome.status != "blocked":
                return driven
            decision = self.route(contract.unit_id)
            if decision is None:
                return driven
            driven.decisions.append(decision)
            if decision.action not in ("retry", "repair"):
                return driven
            hint = decision.hint

    def reaudit(self, unit_id: str) -> Outcome:
        """``unit close``: audit the last attempt's committed work again, and close on a pass."""
        self._route()
        unit = self.store.unit(unit_id)
        if unit.status == "reported":
            return self.close(unit_id)
        if unit.status != "blocked" or unit.attempts == 0:
            return Outcome(
                "refused", unit, [f"unit: {unit_id} is {unit.status}; there is nothing to close"]
            )
        contract = self.store.contract(unit_id, unit.contract.version)
        report = self.store.report(unit_id, unit.contract.version, unit.attempts)
        worktree = self.layout.worktree(unit_id)
        if contract is None or report is None or not worktree.is_dir():
            return Outcome(
                "refused",
                unit,
                [f"report: attempt {unit.attempts} of {unit_id} left no report to close on"],
            )
        unaccepted = self.unaccepted(unit.unit_type)
        if unaccepted:
            return Outcome("refused", unit, unaccepted)
        verdict = self._closeout(contract, unit_id, unit.attempts, worktree)
        if verdict.verdict != "pass":
            reason = f"audit refused closeout: {summarize_verdict(verdict)}"
            unit = self.store.set_status(unit_id, "blocked", reason)
            self._route()
            return Outcome("blocked", unit, reason=reason)
        with self.ledger.transaction() as txn:
            for signal in report_signals(contract, report, self.clock):
                txn.append_raw(signal)
        self.store.set_status(unit_id, "reported")
        return self.close(unit_id)

    def awaiting_decision(self, unit_id: str) -> ObligationState | None:
        return awaiting_decision(self.log, unit_id)

    def waiting_on(self, unit_id: str) -> Waiting | None:
        """The recovery action a blocked unit waits on, and the obligation that holds it."""
        return waiting_on(self.log, self.store.decisions(unit_id), unit_id)

    # -- the contract in force -----------------------------------------------------------------

    def _replanned_at(self, unit: UnitRecord) -> str | None:
        """When the contract in force replaced its predecessor; ``None``: never replanned."""
        contract = self.store.contract(unit.unit_id, unit.contract.version)
        if contract is None or contract.provenance.predecessor is None:
            return None
        return contract.provenance.created_at

    def attempts_under_contract(self, unit: UnitRecord) -> int:
        """Attempts the ceiling counts: all of them, or after a replan those of the new version."""
        if self._replanned_at(unit) is None:
            return unit.attempts
        version = unit.contract.version
        return sum(1 for a in self.store.attempts(unit.unit_id) if a.contract_version == version)

    def decisions_under_contract(self, unit: UnitRecord) -> list[RecoveryDecision]:
        """The decisions occurrences count over: after a replan, those made since."""
        decisions = self.store.decisions(unit.unit_id)
        since = self._replanned_at(unit)
        if since is None:
            return decisions
        moment = parse_iso(since)
        return [d for d in decisions if parse_iso(d.decided_at) >= moment]

    # -- acting on a waiting decision ----------------------------------------------------------

    def _authorize(
        self, actor: Actor, by: str, severity: str, disposition: str, wait: ObligationState | None
    ) -> None:
        policy = self.definition.interaction
        s5 = wait is not None and owed_to_s5(self.log.obligations, wait, policy)
        refusal = check_disposition_authority(
            policy, by, severity=severity, disposition=disposition, s5=s5, os_user=actor.os_user
        )
        if refusal is not None:
            raise Refusal(refusal)

    def replan(
        self,
        unit_id: str,
        contract: WorkContract,
        by: str,
        actor: Actor,
        *,
        reason: str | None = None,
    ) -> Replanned:
        """S3's replan, made by a person: the contract's next version governs the unit.

        ``contract`` may be the current version edited in place (it is written as the next
        one) or the next version itself. Its predecessor is the version in force, with
        ``reason`` (or the reason the contract gives). The replan gate (:func:`check_replan`)
        and the person's authority are checked before anything is written; then the version is
        written and the unit's waiting ``replan`` decision, if any, resolved as ``replan``.
        """
        self._route()
        unit = self.store.unit(unit_id)
        if unit.status not in ("blocked", "contracted"):
            raise ExecutionError(
                f"unit {unit_id} is {unit.status}; only a blocked unit is replanned"
            )
        current = self.store.contract(unit_id, unit.contract.version)
        if current is None:
            raise ExecutionError(f"unit {unit_id} has no contract v{unit.contract.version}")
        waiting = self.waiting_on(unit_id)
        wait = waiting.obligation if waiting is not None and waiting.action == "replan" else None
        given = contract.provenance.predecessor
        why = (reason or "").strip() or (given.reason if given is not None else "")
        if not why and waiting is not None and wait is not None:
            why = f"replan after {cite(waiting.decision)}"
        version = current.version + 1 if contract.version == current.version else contract.version
        data = contract.to_json_dict()
        data["version"] = version
        data["provenance"] = {
            **data["provenance"],
            "createdBy": "S3",
            "createdAt": now_iso(self.clock),
            "predecessor": {
                "version": given.version if given is not None else current.version,
                "reason": why,
            },
        }
        try:
            new = WorkContract.from_json_dict(data)
        except ValueError as exc:
            raise ReplanRefused([f"contract: {exc}"]) from None
        problems = [str(p) for p in check_replan(current, new)]
        if new.unit_type not in self.workload.unit_types:
            problems.append(
                f"unitType: {new.unit_type!r} is not a unit type of {self.workload.label}"
            )
        if (new.workload.name, new.workload.version) != (
            self.workload.name,
            self.workload.version,
        ):
            problems.append(
                f"workload: contract is for {new.workload.name} v{new.workload.version}, the "
                f"definition runs {self.workload.label}"
            )
        if problems:
            raise ReplanRefused(problems)
        self._authorize(actor, by, wait.severity if wait else "blocking", "replan", wait)
        self.store.add_contract_version(new)
        resolved = None
        if wait is not None:
            resolved = resolve(
                self.ledger,
                self.definition.interaction,
                wait.id,
                by,
                actor,
                disposition="replan",
                rationale=f"{new.id} v{new.version} replaces v{current.version}: {why}",
            )
        unit = self.store.set_status(
            unit_id, "blocked", f"replanned: {new.id} v{new.version} replaces v{current.version}"
        )
        self._route()
        return Replanned(unit, current, new, resolved)

    def remediate(
        self,
        unit_id: str,
        by: str,
        actor: Actor,
        note: str,
        *,
        run: list[str] | None = None,
        timeout_s: float = 600,
    ) -> Remediated:
        """A person records the remediation a ``remediate`` decision waits on.

        With ``run``, the command is run first (in the unit's worktree, else the repository)
        and must pass: its output is S3* evidence of the remediation. A failing command, a
        refusal of authority, or a unit not waiting on remediate writes nothing. The wait is
        resolved as ``fixed``, with the note (and the command) as its rationale, which is what
        the next attempt is told.
        """
        if not note.strip():
            raise ExecutionError("--note: say what was remediated")
        self._route()
        unit = self.store.unit(unit_id)
        waiting = self.waiting_on(unit_id)
        if waiting is None or waiting.action != "remediate":
            what = (
                f"it waits on {waiting.action} (obligation {waiting.obligation.id[:8]})"
                if waiting is not None
                else f"it is {unit.status}, with no recovery decision open"
            )
            raise ExecutionError(f"unit {unit_id} waits on no remediate decision: {what}")
        wait = waiting.obligation
        self._authorize(actor, by, wait.severity, "fixed", wait)
        evidence: EvidenceRecord | None = None
        rationale = f"remediated: {note.strip()}"
        if run:
            worktree = self.layout.worktree(unit_id)
            where = worktree if worktree.is_dir() else self.layout.root
            shown = " ".join(run)
            try:
                done = subprocess.run(
                    run, cwd=where, capture_output=True, text=True, timeout=timeout_s
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise RemediationFailed(f"{shown}: {exc}", "") from None
            output = (done.stdout + done.stderr).strip()
            if done.returncode != 0:
                raise RemediationFailed(
                    f"{shown}: exit {done.returncode}; the remediation is not recorded", output
                )
            evidence = self._evidence(
                unit_id,
                max(1, unit.attempts),
                unit.contract,
                "remediate",
                "command",
                "pass",
                f"{shown}: exit 0\n{output[-2000:]}",
                gitops.head(where) or "none",
                command=run,
            )
            self.audit.append_evidence(evidence)
            rationale += f"; ran `{shown}`: exit 0 (evidence {evidence.id[:8]})"
        resolved = resolve(
            self.ledger,
            self.definition.interaction,
            wait.id,
            by,
            actor,
            disposition="fixed",
            rationale=rationale,
        )
        self._route()
        return Remediated(resolved, evidence)

    def current_contract(self, unit_id: str) -> WorkContract:
        contract = self.store.current_contract(unit_id)
        if contract is None:
            raise ExecutionError(f"unit {unit_id} has no contract in force")
        return contract

    # -- S2: the thrash detector -----------------------------------------------------------------

    def _scan_writes(self, unit_id: str, attempt: int, worktree: Path, since: str) -> None:
        """Count the attempt's commits; a file rewritten past the threshold is signalled."""
        try:
            ThrashDetector(self.layout, self.definition, clock=self.clock).scan(
                unit_id, attempt, worktree, since
            )
        except (gitops.GitError, OSError, StoreError) as exc:
            # Counting is S2's observation, never a reason for the attempt to fail.
            sys.stderr.write(f"regulator: the thrash detector could not scan {unit_id}: {exc}\n")

    def owed(self, unit_id: str) -> list[ObligationState]:
        return self.log.open_obligations(unit_id)


class ReplanRefused(ExecutionError):
    """The replan gate refused the new version; nothing was written."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class RemediationFailed(ExecutionError):
    """The remediation's command did not pass; nothing was written."""

    def __init__(self, message: str, output: str) -> None:
        super().__init__(message)
        self.output = output


@dataclass
class Replanned:
    unit: UnitRecord
    predecessor: WorkContract
    contract: WorkContract
    resolved: ObligationState | None


@dataclass
class Remediated:
    obligation: ObligationState
    evidence: EvidenceRecord | None


def _environment() -> dict[str, str]:
    return {
        "node": f"python {platform.python_version()}",
        "platform": sys.platform,
        "arch": platform.machine() or "unknown",
    }


def finish_unit_safely(
    layout: Layout, unit_id: str, clock: Clock
) -> Merged | BaseNotReady | Conflicted | str:
    """Reintegrate; a git failure becomes a reintegration block reason, not a crash."""
    from regulator.host.worktree import finish_unit

    try:
        return finish_unit(layout, unit_id, clock=clock)
    except (WorktreeError, gitops.GitError) as exc:
        return f"reintegration: {exc}"


def _cited(evidence: EvidenceRecord) -> list[str]:
    return evidence.criteria or [evidence.check]


def _paused_detail(waiting: list[ObligationState]) -> str:
    first = waiting[0]
    text = f"{first.subject} — {first.question}" if first.question else first.subject
    more = f", +{len(waiting) - 1}" if len(waiting) > 1 else ""
    return f"{text} (obligation {first.id[:8]}{more})"
