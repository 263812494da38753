"""The execution store (docs/design.md#the-execution-store): what the S3 loop knows because it wrote
it down.

One directory per unit under ``.regulator/units/<unitId>/``:

* ``unit.json``, the unit record: the only record that is rewritten (atomically, under a lock
  on the unit's directory, so two writers cannot both number attempt N);
* ``contract.v<N>.json`` and ``report.v<N>.a<M>.json``: created exclusively, never rewritten;
* ``attempts.ndjson``, ``decisions.ndjson``, ``observations.ndjson``: append-only;
* ``budget.a<M>.json``: the attempt's ledger, a counter the budget guard rewrites.

Nothing here is regulatory state and nothing is inferred from the repository. Beside the store
are the two deterministic gates on the records it holds: :func:`check_contract` (may this
contract be dispatched at all?) and :func:`check_result_report` (does this report honour the
exact contract version?), and :func:`report_signals`, which turns what a report says that
planning did not allocate into messages for the router.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from regulator.protocol.base import Record
from regulator.protocol.clock import Clock, now_iso, system_clock
from regulator.protocol.entry import (
    load_record,
    record_to_json_line,
    record_to_pretty_json,
    validate_record,
)
from regulator.protocol.errors import Refused
from regulator.protocol.execution import (
    AttemptRecord,
    BudgetLedger,
    ContractRef,
    FailureObservation,
    RecoveryDecision,
    ResultReport,
    UnitRecord,
    WorkContract,
)
from regulator.protocol.messages import OperationalSignal, UncertaintySignal
from regulator.protocol.vocab import AttemptOutcome, Severity, UnitStatus
from regulator.rules.budget import summary as _ledger_summary
from regulator.store import (
    CorruptRecord,
    Layout,
    RecordExists,
    RecordNotFound,
    StoreError,
    TailReader,
    append_lines,
    create_bytes_exclusive,
    locked_directory,
    read_bytes,
    read_each,
    write_bytes_atomic,
)

R = TypeVar("R", bound=Record)


class ExecutionError(Refused):
    """A write the execution store refuses; nothing was written."""


def _readable_by_the_original(contract: WorkContract) -> None:
    """Refuse a contract the original could not read: an expectation's ``inherited-tests``
    check is in the original's newest docs but not in any schema it stores, so one such
    contract makes its ``status`` throw for the whole instance, and regulator does not run the
    check either (docs/instance-format.md#working-with-the-original). Reading one an older
    regulator wrote still works."""
    for index, expectation in enumerate(contract.expected_evidence):
        if expectation.check is not None and expectation.check.kind == "inherited-tests":
            raise ExecutionError(
                f"contract {contract.id} v{contract.version}: expectedEvidence[{index}].check: "
                "kind inherited-tests is refused: the original's schema has no such check, so "
                "its status would refuse the whole instance, and regulator does not run it; "
                "leave the check out (a required `test` expectation is what closeout runs)"
            )


class UnitNotFound(ExecutionError):
    pass


class UnitExists(ExecutionError):
    pass


class WorkloadLike(Protocol):
    """A workload reference or a loaded workload: anything with a name and a version."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> int: ...


@dataclass(frozen=True)
class ContractProblem:
    """One reason a contract may not be dispatched, or a report does not close its unit."""

    # Where in the contract (or report) the problem is: ``unresolved[1]``, ``evidence``.
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


ReportProblem = ContractProblem


def budget_summary(ledger: BudgetLedger) -> str:
    """``<used>/<ceiling> tok (<pct>%), <turns>/<ceiling> turns[, exhausted: <dim>]``."""
    # One formatter for the whole project: the budget guard's.
    return _ledger_summary(ledger)


class ExecutionStore:
    """The units of one instance."""

    def __init__(self, layout: Layout, clock: Clock = system_clock) -> None:
        self.layout = layout
        self.clock = clock

    # -- helpers ---------------------------------------------------------------------------

    def _label(self, path: Path) -> str:
        return self.layout.label(path)

    def _valid(self, record: R) -> R:
        # Records built with ``replace`` skip validation: check what is about
        # to be written against the schema, so that every file re-reads.
        return validate_record(type(record), record.to_json_dict())

    def _load(self, model: type[R], path: Path) -> R | None:
        try:
            raw = read_bytes(path)
        except RecordNotFound:
            return None
        try:
            return load_record(model, raw, label=self._label(path))
        except ValueError as exc:
            raise CorruptRecord(str(exc), path) from None

    def _read_log(self, model: type[R], path: Path) -> list[R]:
        # Bad lines are skipped here and reported by ``doctor`` (logs.py), as for every log.
        reader = TailReader(path, lambda raw: load_record(model, raw), label=self._label(path))
        items: list[R] = []
        while True:
            batch = reader.refresh()
            items.extend(batch.items)
            if not batch.more:
                return items

    def _append(self, path: Path, record: Record) -> None:
        append_lines(path, [record_to_json_line(record).rstrip(b"\n")])

    def _write_unit(self, record: UnitRecord) -> UnitRecord:
        record = self._valid(record)
        write_bytes_atomic(self.layout.unit_record(record.unit_id), record_to_pretty_json(record))
        return record

    def _missing(self, unit_id: str) -> UnitNotFound:
        return UnitNotFound(f'no unit "{unit_id}" in {self.layout.units_dir}')

    def _require_unit(self, unit_id: str) -> None:
        if not self.layout.unit_record(unit_id).is_file():
            raise self._missing(unit_id)

    @contextmanager
    def _locked(self, unit_id: str, *, create: bool = False) -> Iterator[None]:
        directory = self.layout.unit_dir(unit_id)
        if not create and not directory.is_dir():
            # Locking would make the directory, and an empty one would list as a unit.
            raise self._missing(unit_id)
        with locked_directory(directory):
            yield

    # -- units -----------------------------------------------------------------------------

    def create_unit(
        self, contract: WorkContract, workload: WorkloadLike | None = None
    ) -> UnitRecord:
        """Record a new unit under its contract: ``contract.v<N>.json``, then ``unit.json``.

        Refuses a contract that does not validate, one for another workload than ``workload``
        (when given) and a unit that exists. A create that died between its two writes left
        the very same contract behind: running it again completes it.
        """
        contract = self._valid(contract)
        _readable_by_the_original(contract)
        if workload is not None and (contract.workload.name, contract.workload.version) != (
            workload.name,
            workload.version,
        ):
            raise ExecutionError(
                f"contract {contract.id} v{contract.version} is for workload "
                f"{contract.workload.name} v{contract.workload.version}, "
                f"not {workload.name} v{workload.version}"
            )
        unit_id = contract.unit_id
        record_path = self.layout.unit_record(unit_id)  # refuses a bad unit id first
        with self._locked(unit_id, create=True):
            if record_path.exists() or record_path.is_symlink():
                raise UnitExists(f'unit "{unit_id}" already exists')
            data = record_to_pretty_json(contract)
            contract_path = self.layout.contract(unit_id, contract.version)
            try:
                create_bytes_exclusive(contract_path, data)
            except RecordExists:
                if read_bytes(contract_path) != data:
                    raise
            now = now_iso(self.clock)
            record = UnitRecord(
                unit_id=unit_id,
                unit_type=contract.unit_type,
                workload=contract.workload,
                contract=ContractRef(id=contract.id, version=contract.version),
                status="contracted",
                attempts=0,
                created_at=now,
                updated_at=now,
            )
            create_bytes_exclusive(record_path, record_to_pretty_json(record))
        return record

    def find_unit(self, unit_id: str) -> UnitRecord | None:
        return self._load(UnitRecord, self.layout.unit_record(unit_id))

    def unit(self, unit_id: str) -> UnitRecord:
        record = self.find_unit(unit_id)
        if record is None:
            raise self._missing(unit_id)
        return record

    def each_unit(self, unit_ids: list[str]) -> Iterator[tuple[str, UnitRecord | Exception]]:
        """``(id, unit(id))`` for each id, or the error ``unit(id)`` raises for it, the units'
        directory opened once for them all (a room reads thousands of units at a start)."""
        for unit_id, raw in read_each(self.layout.units_dir, unit_ids, "unit.json"):
            if raw is not None:
                try:
                    yield unit_id, load_record(UnitRecord, raw)
                    continue
                except ValueError:
                    pass  # said again below, naming the file
            try:
                yield unit_id, self.unit(unit_id)
            except Exception as exc:  # the caller's to report, as ``unit`` would raise it
                yield unit_id, exc

    def units(self) -> list[UnitRecord]:
        """Every unit whose record reads, by directory name. A bad one is ``doctor``'s."""
        found: list[UnitRecord] = []
        for unit_id in self.layout.list_units():
            try:
                record = self.find_unit(unit_id)
            except (StoreError, OSError, ValueError):
                continue
            if record is not None:
                found.append(record)
        return found

    def set_status(self, unit_id: str, status: UnitStatus, reason: str | None = None) -> UnitRecord:
        """The new status; any old reason goes, ``reason`` (why blocked) comes if given."""
        with self._locked(unit_id):
            unit = self.unit(unit_id)
            if unit.status == "aborted" and status != "aborted":
                raise ExecutionError(f'unit "{unit_id}" is aborted; an aborted unit stays aborted')
            return self._write_unit(
                unit.replace(
                    **{"status": status, "reason": reason, "updated_at": now_iso(self.clock)}
                )
            )

    # -- contracts -------------------------------------------------------------------------

    def contract(self, unit_id: str, version: int) -> WorkContract | None:
        return self._load(WorkContract, self.layout.contract(unit_id, version))

    def current_contract(self, unit_id: str) -> WorkContract | None:
        """The contract version the unit record names."""
        unit = self.unit(unit_id)
        return self.contract(unit_id, unit.contract.version)

    def contract_versions(self, unit_id: str) -> list[int]:
        return self.layout.list_contract_versions(unit_id)

    def add_contract_version(self, contract: WorkContract) -> UnitRecord:
        """A replan: a higher version of the unit's contract, which now governs the unit.

        Same contract id and unit type; the version must be above the current one and is
        created exclusively. The unit's status, reason and attempts stay as they are.
        """
        contract = self._valid(contract)
        _readable_by_the_original(contract)
        unit_id = contract.unit_id
        with self._locked(unit_id):
            unit = self.unit(unit_id)
            current = unit.contract
            if contract.id != current.id:
                raise ExecutionError(
                    f'unit "{unit_id}" is governed by contract {current.id}; '
                    f"a replan keeps the id, not {contract.id}"
                )
            if contract.version <= current.version:
                raise ExecutionError(
                    f"{current.id} is at v{current.version}; a new version must be above it, "
                    f"not v{contract.version}"
                )
            if contract.unit_type != unit.unit_type:
                raise ExecutionError(
                    f'unit "{unit_id}" is a {unit.unit_type} unit; '
                    f"contract v{contract.version} is for {contract.unit_type}"
                )
            create_bytes_exclusive(
                self.layout.contract(unit_id, contract.version), record_to_pretty_json(contract)
            )
            return self._write_unit(
                unit.replace(
                    **{
                        "contract": ContractRef(id=contract.id, version=contract.version),
                        "workload": contract.workload,
                        "updated_at": now_iso(self.clock),
                    }
                )
            )

    # -- attempts --------------------------------------------------------------------------

    def record_attempt(
        self,
        unit_id: str,
        *,
        contract_version: int,
        started_at: str,
        ended_at: str,
        outcome: AttemptOutcome,
        session_id: str | None = None,
        detail: str | None = None,
    ) -> AttemptRecord:
        """Append attempt ``attempts + 1`` and count it in ``unit.json`` (its reason kept)."""
        with self._locked(unit_id):
            unit = self.unit(unit_id)
            path = self.layout.attempts(unit_id)
            # Above any attempt already logged too: a writer that died between the append and
            # the rewrite must not make the next attempt reuse its number.
            logged = max((a.attempt for a in self._read_log(AttemptRecord, path)), default=0)
            fields: dict[str, Any] = {
                "unitId": unit_id,
                "attempt": max(unit.attempts, logged) + 1,
                "contractVersion": contract_version,
                "startedAt": started_at,
                "endedAt": ended_at,
                "outcome": outcome,
                "sessionId": session_id or None,
                "detail": detail or None,
            }
            record = validate_record(
                AttemptRecord, {k: v for k, v in fields.items() if v is not None}
            )
            self._append(path, record)
            self._write_unit(
                unit.replace(**{"attempts": record.attempt, "updated_at": now_iso(self.clock)})
            )
        return record

    def attempts(self, unit_id: str) -> list[AttemptRecord]:
        return self._read_log(AttemptRecord, self.layout.attempts(unit_id))

    # -- reports ---------------------------------------------------------------------------

    def write_report(self, report: ResultReport) -> None:
        """Create ``report.v<N>.a<M>.json``; a second one is refused (``RecordExists``)."""
        report = self._valid(report)
        self._require_unit(report.unit_id)
        path = self.layout.report(report.unit_id, report.contract_version, report.attempt)
        create_bytes_exclusive(path, record_to_pretty_json(report))

    def report(self, unit_id: str, version: int, attempt: int) -> ResultReport | None:
        return self._load(ResultReport, self.layout.report(unit_id, version, attempt))

    def latest_report(self, unit_id: str) -> ResultReport | None:
        """The last attempt's report against the contract version now governing the unit."""
        version = self.unit(unit_id).contract.version
        attempts = [a for v, a in self.layout.list_reports(unit_id) if v == version]
        return self.report(unit_id, version, max(attempts)) if attempts else None

    # -- decisions and observations ---------------------------------------------------------

    def record_decision(self, decision: RecoveryDecision) -> None:
        decision = self._valid(decision)
        self._require_unit(decision.unit_id)
        self._append(self.layout.decisions(decision.unit_id), decision)

    def decisions(self, unit_id: str) -> list[RecoveryDecision]:
        return self._read_log(RecoveryDecision, self.layout.decisions(unit_id))

    def record_observation(self, observation: FailureObservation) -> None:
        observation = self._valid(observation)
        self._require_unit(observation.unit_id)
        self._append(self.layout.observations(observation.unit_id), observation)

    def observations(self, unit_id: str) -> list[FailureObservation]:
        return self._read_log(FailureObservation, self.layout.observations(unit_id))

    # -- budgets ---------------------------------------------------------------------------

    def write_budget(self, ledger: BudgetLedger) -> None:
        ledger = self._valid(ledger)
        self._require_unit(ledger.unit_id)
        write_bytes_atomic(
            self.layout.budget(ledger.unit_id, ledger.attempt), record_to_pretty_json(ledger)
        )

    def budget(self, unit_id: str, attempt: int) -> BudgetLedger | None:
        return self._load(BudgetLedger, self.layout.budget(unit_id, attempt))


# --- the contract gate (§5.5) -----------------------------------------------------------------


def check_contract(contract: WorkContract) -> list[ContractProblem]:
    """Why ``contract`` may not be dispatched; empty when it may.

    Decision ids are unique across fixed, delegated and unresolved; nothing is left to be
    resolved before execution; evidence ids are unique; a predecessor is an earlier version.
    """
    problems: list[ContractProblem] = []
    first_use: dict[str, str] = {}

    def claim(decision_id: str, where: str) -> None:
        if decision_id in first_use:
            problems.append(
                ContractProblem(
                    where,
                    f'decision id "{decision_id}" is already used by {first_use[decision_id]}',
                )
            )
        else:
            first_use[decision_id] = where

    for i, fixed in enumerate(contract.fixed):
        claim(fixed.id, f"fixed[{i}]")
    for i, delegated in enumerate(contract.delegated):
        claim(delegated.id, f"delegated[{i}]")
    for i, unresolved in enumerate(contract.unresolved):
        where = f"unresolved[{i}]"
        claim(unresolved.id, where)
        if unresolved.handling == "resolve-before-execution":
            problems.append(
                ContractProblem(
                    where,
                    f'"{unresolved.subject}" must be resolved before execution: decide it, or '
                    "delegate it with bounds, before the unit is dispatched",
                )
            )
    seen_evidence: set[str] = set()
    for i, expectation in enumerate(contract.expected_evidence):
        if expectation.id in seen_evidence:
            problems.append(
                ContractProblem(
                    f"expectedEvidence[{i}]", f'evidence id "{expectation.id}" is used twice'
                )
            )
        seen_evidence.add(expectation.id)
    predecessor = contract.provenance.predecessor
    if predecessor is not None and predecessor.version >= contract.version:
        problems.append(
            ContractProblem(
                "provenance.predecessor",
                f"the predecessor v{predecessor.version} is not an earlier version than "
                f"v{contract.version}",
            )
        )
    return problems


# --- a replan: the contract's next version ---------------------------------------------------


def _decisions_of(contract: WorkContract) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every decision by id: which list it is in, and what it says."""
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for where, items in (
        ("fixed", contract.fixed),
        ("delegated", contract.delegated),
        ("unresolved", contract.unresolved),
    ):
        for item in items:
            found[item.id] = (where, item.to_json_dict())
    return found


def _named(reason: str, decision_id: str) -> bool:
    # A whole id, not a prefix of a longer one: "d1" is not named by "d10".
    return any(word == decision_id for word in (w.strip(".,;:()[]\"'`") for w in reason.split()))


def check_replan(current: WorkContract, new: WorkContract) -> list[ContractProblem]:
    """Why ``new`` may not replace ``current`` as the unit's contract; empty when it may.

    A replan keeps the unit, the contract id, the unit type and the workload; its version is
    above the current one, and ``provenance.predecessor`` names the current version with a
    reason. Every decision of the current version is carried unchanged, or revisited
    explicitly: a decision that is changed, moved between fixed, delegated and unresolved, or
    dropped must be named by its id in the predecessor's reason. The contract's own checks
    (:func:`check_contract`) come first.
    """
    problems = check_contract(new)
    head = f"{current.id} v{current.version}"
    for field_name, old_value, new_value in (
        ("unitId", current.unit_id, new.unit_id),
        ("id", current.id, new.id),
        ("unitType", current.unit_type, new.unit_type),
    ):
        if old_value != new_value:
            problems.append(
                ContractProblem(
                    field_name, f"a replan keeps {field_name} {old_value!r}, not {new_value!r}"
                )
            )
    if (new.workload.name, new.workload.version) != (
        current.workload.name,
        current.workload.version,
    ):
        problems.append(
            ContractProblem(
                "workload",
                f"a replan keeps the workload {current.workload.name} "
                f"v{current.workload.version}, not {new.workload.name} v{new.workload.version}",
            )
        )
    if new.version <= current.version:
        problems.append(
            ContractProblem(
                "version",
                f"{head} is in force; a replan's version must be above it, not v{new.version}",
            )
        )
    predecessor = new.provenance.predecessor
    if predecessor is None:
        problems.append(
            ContractProblem(
                "provenance.predecessor",
                f"a replan names the version it replaces: {{version: {current.version}, "
                "reason: why}}",
            )
        )
        return problems
    if predecessor.version != current.version:
        problems.append(
            ContractProblem(
                "provenance.predecessor.version",
                f"{head} is in force; the predecessor is v{predecessor.version}",
            )
        )
    if not predecessor.reason.strip():
        problems.append(ContractProblem("provenance.predecessor.reason", "a replan needs a reason"))
    before, after = _decisions_of(current), _decisions_of(new)
    for decision_id, (where, said) in before.items():
        now = after.get(decision_id)
        if now == (where, said) or _named(predecessor.reason, decision_id):
            continue
        change = (
            "is dropped"
            if now is None
            else f"moves from {where} to {now[0]}"
            if now[0] != where
            else "is changed"
        )
        problems.append(
            ContractProblem(
                where,
                f'decision "{decision_id}" of v{current.version} {change} without being '
                "revisited: carry it unchanged, or name it in provenance.predecessor.reason",
            )
        )
    return problems


def contract_changes(old: WorkContract, new: WorkContract) -> list[str]:
    """What changed from ``old`` to ``new``, one line each, for a reader comparing versions."""
    lines: list[str] = []
    a, b = old.to_json_dict(), new.to_json_dict()
    for key in ("objective", "contribution", "constraintRefs"):
        if a.get(key) != b.get(key):
            lines.append(f"{key}: {a.get(key)!r} → {b.get(key)!r}")
    before, after = _decisions_of(old), _decisions_of(new)
    for decision_id, (where, said) in before.items():
        now = after.get(decision_id)
        if now is None:
            lines.append(f"- {where} {decision_id}")
        elif now[0] != where:
            lines.append(f"~ {decision_id}: {where} → {now[0]}")
        elif now[1] != said:
            fields = sorted(k for k in {*said, *now[1]} if said.get(k) != now[1].get(k))
            lines.append(f"~ {where} {decision_id}: {', '.join(fields)}")
    for decision_id, (where, _) in after.items():
        if decision_id not in before:
            lines.append(f"+ {where} {decision_id}")
    old_evidence = {e.id: e.to_json_dict() for e in old.expected_evidence}
    new_evidence = {e.id: e.to_json_dict() for e in new.expected_evidence}
    for evidence_id in old_evidence.keys() - new_evidence.keys():
        lines.append(f"- expectedEvidence {evidence_id}")
    for evidence_id in new_evidence.keys() - old_evidence.keys():
        lines.append(f"+ expectedEvidence {evidence_id}")
    for evidence_id in old_evidence.keys() & new_evidence.keys():
        if old_evidence[evidence_id] != new_evidence[evidence_id]:
            lines.append(f"~ expectedEvidence {evidence_id}")
    return lines


# --- the report gate (§5.6) -------------------------------------------------------------------


def check_result_report(
    contract: WorkContract, report: ResultReport, unit_id: str | None = None
) -> list[ContractProblem]:
    """Why ``report`` does not close its unit against ``contract``; empty when it does.

    A report for another contract id or version is refused on that alone. Otherwise: the unit
    (``unit_id``, by default the contract's); every delegated id known and every required
    choice reported; every unresolved id known and every unresolved decision given an outcome
    (an unresolved decision left out was settled silently or forgotten); a fixed-decision
    deviation names a fixed decision; each required expectation without a host check has
    evidence of its class. The report is read, never the diff.
    """
    if report.contract_id != contract.id or report.contract_version != contract.version:
        return [
            ContractProblem(
                "contractId",
                f"the report is for {report.contract_id} v{report.contract_version}, "
                f"not {contract.id} v{contract.version}",
            )
        ]
    problems: list[ContractProblem] = []
    expected_unit = unit_id if unit_id is not None else contract.unit_id
    if report.unit_id != expected_unit:
        problems.append(
            ContractProblem(
                "unitId", f'the report names unit "{report.unit_id}", not "{expected_unit}"'
            )
        )

    delegated = {d.id: d for d in contract.delegated}
    for i, result in enumerate(report.delegated_results):
        if result.decision_id not in delegated:
            problems.append(
                ContractProblem(
                    f"delegatedResults[{i}]",
                    f'"{result.decision_id}" is not a delegated decision of this contract',
                )
            )
    chosen = {r.decision_id for r in report.delegated_results}
    for decision in contract.delegated:
        if decision.report_required and decision.id not in chosen:
            problems.append(
                ContractProblem(
                    "delegatedResults",
                    f'delegated decision "{decision.id}" ({decision.subject}) has no reported '
                    "choice",
                )
            )

    unresolved = {d.id for d in contract.unresolved}
    for i, outcome in enumerate(report.unresolved_outcomes):
        if outcome.decision_id not in unresolved:
            problems.append(
                ContractProblem(
                    f"unresolvedOutcomes[{i}]",
                    f'"{outcome.decision_id}" is not an unresolved decision of this contract',
                )
            )
    accounted = {o.decision_id for o in report.unresolved_outcomes}
    for open_decision in contract.unresolved:
        if open_decision.id not in accounted:
            problems.append(
                ContractProblem(
                    "unresolvedOutcomes",
                    f'unresolved decision "{open_decision.id}" ({open_decision.subject}) has no '
                    "outcome: it was settled silently or forgotten, and neither closes the unit",
                )
            )

    fixed = {d.id for d in contract.fixed}
    for i, deviation in enumerate(report.deviations):
        if deviation.kind == "fixed-decision" and (
            deviation.ref is None or deviation.ref not in fixed
        ):
            problems.append(
                ContractProblem(
                    f"deviations[{i}]",
                    "a fixed-decision deviation must name (ref) the fixed decision it departs from",
                )
            )

    cited = {e.class_ for e in report.evidence}
    for expectation in contract.expected_evidence:
        # An expectation with its own check is the host's to observe at closeout, not the
        # report's to cite.
        if expectation.check is None and expectation.required and expectation.class_ not in cited:
            problems.append(
                ContractProblem(
                    "evidence",
                    f'required evidence "{expectation.id}" ({expectation.class_}: '
                    f"{expectation.description}) has no reference of that class",
                )
            )
    return problems


# --- the report's signals (§5.6, emitReportSignals) -------------------------------------------

_CONSEQUENCE_SEVERITY: dict[str, Severity] = {
    "low": "info",
    "medium": "advisory",
    "high": "blocking",
}


def report_signals(
    contract: WorkContract, report: ResultReport, clock: Clock = system_clock
) -> list[OperationalSignal | UncertaintySignal]:
    """What the report says that the contract did not allocate, as messages for the router.

    Each emergent decision is an operational signal (low→info, medium→advisory,
    high→blocking); each deviation a blocking one; each residual uncertainty an uncertainty
    signal whose impact is its consequence. All from S1, on the contract's unit, citing the
    report's evidence. The caller appends them; routing decides what they open.
    """
    head = f"{contract.id} v{contract.version}"
    at = now_iso(clock)
    unit = contract.unit_id
    signals: list[OperationalSignal | UncertaintySignal] = []
    for emergent in report.emergent_decisions:
        signals.append(
            OperationalSignal(
                id=str(uuid.uuid4()),
                timestamp=at,
                source="S1",
                channel="signal",
                destination="S3",
                subject=f"{head}: emergent decision — {emergent.subject}",
                unit=unit,
                severity=_CONSEQUENCE_SEVERITY[emergent.consequence_if_wrong],
                observation=(
                    f"{emergent.subject}: {emergent.choice_or_question} (not allocated by the "
                    f"contract; consequence if wrong: {emergent.consequence_if_wrong})"
                ),
                evidence=report.evidence,
            )
        )
    for deviation in report.deviations:
        ref = f" ({deviation.ref})" if deviation.ref else ""
        signals.append(
            OperationalSignal(
                id=str(uuid.uuid4()),
                timestamp=at,
                source="S1",
                channel="signal",
                destination="S3",
                subject=f"{head}: {deviation.kind} deviation{ref}",
                unit=unit,
                severity="blocking",
                observation=deviation.description,
                evidence=report.evidence,
            )
        )
    for doubt in report.residual_uncertainty:
        signals.append(
            UncertaintySignal(
                id=str(uuid.uuid4()),
                timestamp=at,
                source="S1",
                channel="signal",
                destination="S3",
                subject=f"{head}: residual uncertainty — {doubt.subject}",
                unit=unit,
                decision="left as reported",
                reason=doubt.reason,
                alternatives=[],
                consequence=f"consequence if wrong: {doubt.consequence_if_wrong}",
                impact=doubt.consequence_if_wrong,
                evidence=report.evidence,
            )
        )
    return signals
