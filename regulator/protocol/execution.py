"""The execution store's records (docs/design.md#the-execution-store): units, attempts, budgets,
contracts, reports, leases, failure observations and recovery decisions.

Execution state is what the loop owns; regulatory state (messages, obligations) lives in the
log and is never derived from these.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, get_args

import msgspec

from regulator.protocol.base import Record, field_names
from regulator.protocol.evidence import EvidenceRef, NonEmptyStr
from regulator.protocol.vocab import (
    AttemptOutcome,
    Consequence,
    DeviationKind,
    EvidenceClass,
    FailureCause,
    ObservationSource,
    RecoveryAction,
    UnitStatus,
    UnresolvedHandling,
    UnresolvedOutcome,
)

# A unit id becomes a directory name: nothing that could climb out of ``units/``.
UnitId = Annotated[str, msgspec.Meta(pattern=r"^[a-zA-Z0-9._-]+\Z")]
# Contract and decision ids.
DecisionId = Annotated[str, msgspec.Meta(pattern=r"^[a-zA-Z0-9][a-zA-Z0-9._-]*\Z")]
Version = Annotated[int, msgspec.Meta(ge=1)]
Count = Annotated[int, msgspec.Meta(ge=0)]
Positive = Annotated[int, msgspec.Meta(ge=1)]


# JSON numbers keep their spelling: an integral cost read as 2 is written back as 2, not 2.0.
NonNegativeNumber = Annotated[int, msgspec.Meta(ge=0)] | Annotated[float, msgspec.Meta(ge=0)]

BudgetDimension = Literal["tokens", "cost", "wallClockMs", "turns"]
BUDGET_DIMENSIONS: tuple[str, ...] = get_args(BudgetDimension)


class WorkloadRef(Record):
    name: NonEmptyStr
    version: Version


class ContractRef(Record):
    id: NonEmptyStr
    version: Version


# --- §5.2–5.4 ---------------------------------------------------------------------------------


class UnitRecord(Record):
    """``units/<unitId>/unit.json``: the only execution record that is rewritten."""

    unit_id: UnitId
    unit_type: NonEmptyStr
    workload: WorkloadRef
    contract: ContractRef
    status: UnitStatus
    attempts: Count
    created_at: NonEmptyStr
    updated_at: NonEmptyStr
    # Why the unit is blocked (or aborted), when it is.
    reason: NonEmptyStr | None = None


class AttemptRecord(Record):
    """One line of ``attempts.ndjson``: an attempt happened, whatever it produced."""

    unit_id: NonEmptyStr
    attempt: Positive
    contract_version: Version
    started_at: NonEmptyStr
    ended_at: NonEmptyStr
    outcome: AttemptOutcome
    session_id: NonEmptyStr | None = None
    detail: NonEmptyStr | None = None


class LedgerCeiling(Record):
    """The per-attempt ceiling at dispatch (the policy's ceiling without ``attempts``)."""

    tokens: Positive
    cost: NonNegativeNumber | None = None
    wall_clock_ms: Positive
    turns: Positive


class BudgetConsumed(Record):
    tokens: Count
    cost: NonNegativeNumber
    wall_clock_ms: Count
    turns: Count


class BudgetExhaustion(Record):
    """The first ceiling crossed; set once, and sticky."""

    dimension: BudgetDimension
    at: NonEmptyStr


class Compaction(Record):
    at: NonEmptyStr
    reason: NonEmptyStr
    # Whether the contract block was carried through the compaction.
    preserved: bool


class BudgetLedger(Record):
    """``budget.a<M>.json``: what attempt M consumed against its ceiling (a counter, rewritten)."""

    unit_id: NonEmptyStr
    attempt: Positive
    ceiling: LedgerCeiling
    consumed: BudgetConsumed
    started_at: NonEmptyStr
    updated_at: NonEmptyStr
    # In order; a second entry is a switch or a fallback.
    models: list[NonEmptyStr]
    exhausted: BudgetExhaustion | None = None
    compactions: list[Compaction]


# --- §5.5 the work contract -------------------------------------------------------------------


class FixedDecision(Record):
    id: DecisionId
    subject: NonEmptyStr
    decision: NonEmptyStr
    authority_ref: NonEmptyStr
    rationale: NonEmptyStr | None = None


class DelegatedDecision(Record):
    id: DecisionId
    subject: NonEmptyStr
    bounds: NonEmptyStr
    # Absent means true. Kept absent rather than defaulted, so the file round-trips.
    required_report: bool | None = None

    @property
    def report_required(self) -> bool:
        return self.required_report is not False


class UnresolvedDecision(Record):
    id: DecisionId
    subject: NonEmptyStr
    reason: NonEmptyStr
    handling: UnresolvedHandling
    obligation_ref: NonEmptyStr | None = None


class _Check(Record, tag_field="kind"):
    """A check an expectation names, told apart by its ``kind`` (the tag)."""

    kind: ClassVar[str]


class ExportSignatureCheck(_Check, tag="export-signature"):
    """The host checks that a module still exports a name with the declared arity."""

    # Relative to the worktree.
    module: NonEmptyStr
    export: NonEmptyStr
    arity: Count


class InheritedTestsCheck(_Check, tag="inherited-tests"):
    """The inherited test suite must still pass, bar the exempt tests. (Newer docs only.)"""

    exempt: list[NonEmptyStr]


ExpectationCheck = ExportSignatureCheck | InheritedTestsCheck


class EvidenceExpectation(Record):
    id: DecisionId
    description: NonEmptyStr
    class_: EvidenceClass = msgspec.field(name="class")
    required: bool
    # With a check, only that check's evidence satisfies the expectation.
    check: ExpectationCheck | None = None


class ContractPredecessor(Record):
    version: Version
    reason: NonEmptyStr


class ContractProvenance(Record):
    # Only S3 writes contracts.
    created_by: Literal["S3"]
    created_at: NonEmptyStr
    source_revision: NonEmptyStr | None = None
    predecessor: ContractPredecessor | None = None


class WorkContract(Record):
    """``contract.v<N>.json``: the decisions a unit gets before dispatch. Never rewritten."""

    kind: Literal["task"]
    id: DecisionId
    version: Version
    unit_id: UnitId
    unit_type: NonEmptyStr
    workload: WorkloadRef
    objective: NonEmptyStr
    contribution: NonEmptyStr | None = None
    constraint_refs: list[NonEmptyStr]
    fixed: list[FixedDecision]
    delegated: list[DelegatedDecision]
    unresolved: list[UnresolvedDecision]
    expected_evidence: list[EvidenceExpectation]
    provenance: ContractProvenance


# --- §5.6 the result report -------------------------------------------------------------------


class DelegatedResult(Record):
    decision_id: DecisionId
    choice: NonEmptyStr
    rationale: NonEmptyStr | None = None


class UnresolvedDecisionOutcome(Record):
    decision_id: DecisionId
    # There is no "settled": settling is not S1's to do.
    outcome: UnresolvedOutcome
    note: NonEmptyStr


class EmergentDecision(Record):
    subject: NonEmptyStr
    choice_or_question: NonEmptyStr
    consequence_if_wrong: Consequence


class Deviation(Record):
    kind: DeviationKind
    ref: NonEmptyStr | None = None
    description: NonEmptyStr


class ResidualUncertainty(Record):
    subject: NonEmptyStr
    reason: NonEmptyStr
    consequence_if_wrong: Consequence


class ResultReportInput(Record):
    """What the model supplies to ``report_result``; the host binds it to the contract."""

    summary: NonEmptyStr
    evidence: list[EvidenceRef]
    delegated_results: list[DelegatedResult]
    unresolved_outcomes: list[UnresolvedDecisionOutcome]
    emergent_decisions: list[EmergentDecision]
    deviations: list[Deviation]
    residual_uncertainty: list[ResidualUncertainty]


class ResultReport(Record):
    """``report.v<N>.a<M>.json``: the input, bound by the host. Never revised."""

    contract_id: NonEmptyStr
    contract_version: Version
    unit_id: NonEmptyStr
    attempt: Positive
    reported_at: NonEmptyStr
    summary: NonEmptyStr
    evidence: list[EvidenceRef]
    delegated_results: list[DelegatedResult]
    unresolved_outcomes: list[UnresolvedDecisionOutcome]
    emergent_decisions: list[EmergentDecision]
    deviations: list[Deviation]
    residual_uncertainty: list[ResidualUncertainty]

    @classmethod
    def bind(
        cls,
        report: ResultReportInput,
        *,
        contract_id: str,
        contract_version: int,
        unit_id: str,
        attempt: int,
        reported_at: str,
    ) -> ResultReport:
        """The report as the host writes it: the model's input plus the contract binding."""
        return cls(
            contract_id=contract_id,
            contract_version=contract_version,
            unit_id=unit_id,
            attempt=attempt,
            reported_at=reported_at,
            **{name: getattr(report, name) for name in field_names(ResultReportInput)},
        )

    def as_input(self) -> ResultReportInput:
        """The model-supplied part alone."""
        return ResultReportInput(
            **{name: getattr(self, name) for name in field_names(ResultReportInput)}
        )


# --- §5.7 leases ------------------------------------------------------------------------------


class Lease(Record):
    """``leases/<unitId>.json``. Times are epoch milliseconds, unlike every other record."""

    unit_id: UnitId
    # ``user@host``.
    owner: NonEmptyStr
    # The absolute worktree path the lease grants writes to.
    resource: NonEmptyStr
    branch: NonEmptyStr
    acquired_at: int
    heartbeat_at: int
    expires_at: int

    def is_live(self, now_ms: int) -> bool:
        return self.expires_at > now_ms


# --- §4.1 failures and recovery ---------------------------------------------------------------


class FailureObservation(Record):
    """One line of ``observations.ndjson``: a failure seen during an attempt."""

    unit_id: NonEmptyStr
    attempt: Positive
    at: NonEmptyStr
    source: ObservationSource
    tool_name: NonEmptyStr | None = None
    cause: FailureCause
    message: NonEmptyStr


class PolicyRef(Record):
    name: NonEmptyStr
    version: Version


class RecoveryDecision(Record):
    """One line of ``decisions.ndjson``: one per routed failure, citing the policy version."""

    id: NonEmptyStr
    unit_id: NonEmptyStr
    # The attempt that failed.
    attempt: Positive
    cause: FailureCause
    # How many times this cause has now been routed on this unit, this one included.
    occurrence: Positive
    evidence: list[NonEmptyStr]
    action: RecoveryAction
    policy: PolicyRef
    rationale: NonEmptyStr
    # For retry and repair: what the next attempt is told.
    hint: NonEmptyStr | None = None
    # For clarify: what must be answered before the unit can go on.
    question: NonEmptyStr | None = None
    decided_at: NonEmptyStr
    decided_by: Literal["S3"]
