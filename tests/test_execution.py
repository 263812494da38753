"""The execution store, the contract and report gates, the report's signals, the audit log."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from regulator.protocol.audit import EvidenceRecord, HumanAcceptance, TechnicalVerdict
from regulator.protocol.entry import parse_signal_line, record_to_json_line
from regulator.protocol.execution import (
    BudgetLedger,
    ContractRef,
    FailureObservation,
    RecoveryDecision,
    ResultReport,
    WorkContract,
    WorkloadRef,
)
from regulator.protocol.messages import OperationalSignal, UncertaintySignal
from regulator.rules.audit_log import AuditLog, audit_finding_for_verdict, summarize_verdict
from regulator.rules.execution import (
    ExecutionError,
    ExecutionStore,
    UnitExists,
    UnitNotFound,
    budget_summary,
    check_contract,
    check_result_report,
    report_signals,
)
from regulator.store import CorruptRecord, InvalidUnitId, Layout, RecordExists


class FakeClock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    (tmp_path / ".regulator").mkdir()
    return Layout(tmp_path, env={})


@pytest.fixture
def store(layout: Layout, clock: FakeClock) -> ExecutionStore:
    return ExecutionStore(layout, clock)


def contract_data(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "kind": "task",
        "id": "greet",
        "version": 1,
        "unitId": "u1",
        "unitType": "implementation",
        "workload": {"name": "demo", "version": 1},
        "objective": "add a greeting",
        "constraintRefs": [],
        "fixed": [
            {"id": "lang", "subject": "language", "decision": "python", "authorityRef": "INV-001"}
        ],
        "delegated": [{"id": "name", "subject": "function name", "bounds": "snake_case"}],
        "unresolved": [
            {"id": "locale", "subject": "locale", "reason": "nobody decided", "handling": "defer"}
        ],
        "expectedEvidence": [
            {"id": "tests", "description": "the tests pass", "class": "test", "required": True}
        ],
        "provenance": {"createdBy": "S3", "createdAt": "2026-12-01T09:00:00.000Z"},
    }
    data.update(changes)
    return data


def make_contract(**changes: Any) -> WorkContract:
    return WorkContract.from_json_dict(contract_data(**changes))


def report_data(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "contractId": "greet",
        "contractVersion": 1,
        "unitId": "u1",
        "attempt": 1,
        "reportedAt": "2026-12-01T10:05:00.000Z",
        "summary": "added greet()",
        "evidence": [{"class": "test", "ref": "pytest -q"}],
        "delegatedResults": [{"decisionId": "name", "choice": "greet"}],
        "unresolvedOutcomes": [
            {"decisionId": "locale", "outcome": "preserved", "note": "english only, for now"}
        ],
        "emergentDecisions": [],
        "deviations": [],
        "residualUncertainty": [],
    }
    data.update(changes)
    return data


def make_report(**changes: Any) -> ResultReport:
    return ResultReport.from_json_dict(report_data(**changes))


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


# --- creating units --------------------------------------------------------------------------


def test_creating_a_unit_writes_its_contract_and_a_contracted_record(
    store: ExecutionStore, layout: Layout
) -> None:
    record = store.create_unit(make_contract())
    assert record.status == "contracted"
    assert record.attempts == 0
    on_disk = json.loads(layout.unit_record("u1").read_text())
    assert on_disk == {
        "unitId": "u1",
        "unitType": "implementation",
        "workload": {"name": "demo", "version": 1},
        "contract": {"id": "greet", "version": 1},
        "status": "contracted",
        "attempts": 0,
        "createdAt": "2026-12-01T10:00:00.000Z",
        "updatedAt": "2026-12-01T10:00:00.000Z",
    }
    contract_text = layout.contract("u1", 1).read_text()
    assert json.loads(contract_text) == contract_data()
    assert contract_text.endswith("}\n") and contract_text.startswith('{\n  "kind": "task"')
    assert store.unit("u1") == record
    assert store.contract("u1", 1) == make_contract()
    assert [u.unit_id for u in store.units()] == ["u1"]


def test_creating_an_existing_unit_is_refused_and_changes_nothing(
    store: ExecutionStore, layout: Layout, tmp_path: Path
) -> None:
    store.create_unit(make_contract())
    before = snapshot(tmp_path)
    with pytest.raises(UnitExists, match='unit "u1" already exists'):
        store.create_unit(make_contract(objective="something else"))
    assert snapshot(tmp_path) == before


def test_a_contract_for_another_workload_is_refused(store: ExecutionStore, layout: Layout) -> None:
    with pytest.raises(ExecutionError, match="is for workload demo v1, not demo v2"):
        store.create_unit(make_contract(), WorkloadRef(name="demo", version=2))
    assert layout.list_units() == []


def test_a_create_that_died_before_the_unit_record_completes_when_run_again(
    store: ExecutionStore, layout: Layout
) -> None:
    store.create_unit(make_contract())
    layout.unit_record("u1").unlink()  # as if the process died between the two writes
    assert store.create_unit(make_contract()).status == "contracted"
    # ... but not with a different contract under the same version.
    layout.unit_record("u1").unlink()
    with pytest.raises(RecordExists):
        store.create_unit(make_contract(objective="changed"))


def test_a_unit_id_that_climbs_out_of_units_is_refused(
    store: ExecutionStore, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match="unitId"):
        make_contract(unitId="../x")
    with pytest.raises(InvalidUnitId):
        store.create_unit(make_contract(unitId=".."))
    with pytest.raises(InvalidUnitId):
        store.unit("../x")
    with pytest.raises(InvalidUnitId):
        store.set_status("../x", "blocked", "no")
    assert not (tmp_path / "x").exists()
    assert not (tmp_path / ".regulator" / "units").exists()


def test_an_unknown_unit_is_named_with_the_directory_searched(
    store: ExecutionStore, layout: Layout
) -> None:
    with pytest.raises(UnitNotFound) as caught:
        store.unit("nope")
    assert str(caught.value) == f'no unit "nope" in {layout.units_dir}'
    with pytest.raises(UnitNotFound):
        store.set_status("nope", "blocked", "why")
    assert not layout.unit_dir("nope").exists()  # a refusal makes no directory


def test_a_corrupt_unit_record_is_named_and_left_out_of_the_listing(
    store: ExecutionStore, layout: Layout
) -> None:
    store.create_unit(make_contract())
    store.create_unit(make_contract(unitId="u2"))
    layout.unit_record("u2").write_text('{"unitId": "u2"}\n')
    assert [u.unit_id for u in store.units()] == ["u1"]
    with pytest.raises(CorruptRecord, match=r"\.regulator/units/u2/unit\.json: "):
        store.unit("u2")


# --- status and attempts ---------------------------------------------------------------------


def test_attempts_are_numbered_from_the_unit_record_and_keep_the_reason(
    store: ExecutionStore, clock: FakeClock, layout: Layout
) -> None:
    store.create_unit(make_contract())
    clock.advance(60)
    store.set_status("u1", "blocked", "the unit ended without calling report_result")
    first = store.record_attempt(
        "u1",
        contract_version=1,
        started_at="2026-12-01T10:00:30.000Z",
        ended_at="2026-12-01T10:01:00.000Z",
        outcome="no-report",
    )
    clock.advance(60)
    second = store.record_attempt(
        "u1",
        contract_version=1,
        started_at="2026-12-01T10:01:30.000Z",
        ended_at="2026-12-01T10:02:00.000Z",
        outcome="check-failure",
        session_id="s-2",
        detail="fail (1 failed)",
    )
    assert (first.attempt, second.attempt) == (1, 2)
    unit = store.unit("u1")
    assert unit.attempts == 2
    assert unit.reason == "the unit ended without calling report_result"
    assert unit.updated_at == "2026-12-01T10:02:00.000Z"
    assert store.attempts("u1") == [first, second]
    lines = layout.attempts("u1").read_text().splitlines()
    assert json.loads(lines[0]) == {
        "unitId": "u1",
        "attempt": 1,
        "contractVersion": 1,
        "startedAt": "2026-12-01T10:00:30.000Z",
        "endedAt": "2026-12-01T10:01:00.000Z",
        "outcome": "no-report",
    }


def test_a_new_status_drops_the_old_reason_and_bumps_updated_at(
    store: ExecutionStore, clock: FakeClock, layout: Layout
) -> None:
    store.create_unit(make_contract())
    store.set_status("u1", "blocked", "budget exhausted: tokens")
    clock.advance(5)
    unit = store.set_status("u1", "dispatched")
    assert unit.reason is None
    assert unit.updated_at == "2026-12-01T10:00:05.000Z"
    assert "reason" not in json.loads(layout.unit_record("u1").read_text())


def test_an_aborted_unit_stays_aborted(store: ExecutionStore) -> None:
    store.create_unit(make_contract())
    store.set_status("u1", "aborted", "aborted under recovery v1: conflict")
    with pytest.raises(ExecutionError, match="stays aborted"):
        store.set_status("u1", "dispatched")
    assert store.unit("u1").status == "aborted"


def test_concurrent_attempts_never_share_a_number(store: ExecutionStore) -> None:
    store.create_unit(make_contract())

    def record() -> None:
        for _ in range(5):
            store.record_attempt(
                "u1",
                contract_version=1,
                started_at="2026-12-01T10:00:00.000Z",
                ended_at="2026-12-01T10:00:01.000Z",
                outcome="error",
            )

    threads = [threading.Thread(target=record) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(a.attempt for a in store.attempts("u1")) == list(range(1, 31))
    assert store.unit("u1").attempts == 30


# --- contract versions, reports, decisions, budgets ------------------------------------------


def test_a_replan_must_raise_the_version_and_then_governs_the_unit(
    store: ExecutionStore, layout: Layout
) -> None:
    store.create_unit(make_contract())
    with pytest.raises(ExecutionError, match="must be above it, not v1"):
        store.add_contract_version(make_contract(objective="again"))
    with pytest.raises(ExecutionError, match="keeps the id"):
        store.add_contract_version(make_contract(id="other", version=2))
    v2 = make_contract(
        version=2,
        provenance={
            "createdBy": "S3",
            "createdAt": "2026-12-01T11:00:00.000Z",
            "predecessor": {"version": 1, "reason": "the budget was too small"},
        },
    )
    unit = store.add_contract_version(v2)
    assert unit.contract.version == 2
    assert store.current_contract("u1") == v2
    assert store.contract_versions("u1") == [1, 2]
    with pytest.raises(ExecutionError):
        store.add_contract_version(v2)


def test_a_report_is_written_once_and_never_revised(store: ExecutionStore, layout: Layout) -> None:
    store.create_unit(make_contract())
    store.write_report(make_report())
    path = layout.report("u1", 1, 1)
    before = path.read_bytes()
    with pytest.raises(RecordExists):
        store.write_report(make_report(summary="a better story"))
    assert path.read_bytes() == before
    assert store.report("u1", 1, 1) == make_report()
    assert store.report("u1", 1, 2) is None
    store.write_report(make_report(attempt=3))
    latest = store.latest_report("u1")
    assert latest is not None and latest.attempt == 3


def test_a_report_for_an_unknown_unit_is_refused(store: ExecutionStore, layout: Layout) -> None:
    with pytest.raises(UnitNotFound):
        store.write_report(make_report())
    assert layout.list_units() == []


def test_decisions_and_observations_append_and_read_back_skipping_a_bad_line(
    store: ExecutionStore, layout: Layout
) -> None:
    store.create_unit(make_contract())
    decision = RecoveryDecision.from_json_dict(
        {
            "id": "d-1",
            "unitId": "u1",
            "attempt": 1,
            "cause": "no-report",
            "occurrence": 1,
            "evidence": ["attempt 1: no-report"],
            "action": "retry",
            "policy": {"name": "recovery", "version": 1},
            "rationale": "no-report (occurrence 1) → retry",
            "hint": "call report_result before you stop",
            "decidedAt": "2026-12-01T10:02:00.000Z",
            "decidedBy": "S3",
        }
    )
    store.record_decision(decision)
    with layout.decisions("u1").open("ab") as f:
        f.write(b'{"not": "a decision"}\n')
    store.record_decision(decision.replace(**{"id": "d-2", "occurrence": 2}))
    assert [d.id for d in store.decisions("u1")] == ["d-1", "d-2"]
    observation = FailureObservation(
        unit_id="u1",
        attempt=1,
        at="2026-12-01T10:01:00.000Z",
        source="tool",
        tool_name="run_tests",
        cause="environment",
        message="pytest: command not found",
    )
    store.record_observation(observation)
    assert store.observations("u1") == [observation]


def ledger(**changes: Any) -> BudgetLedger:
    data: dict[str, Any] = {
        "unitId": "u1",
        "attempt": 1,
        "ceiling": {"tokens": 400000, "cost": 2, "wallClockMs": 1200000, "turns": 60},
        "consumed": {"tokens": 120000, "cost": 0.4, "wallClockMs": 30000, "turns": 12},
        "startedAt": "2026-12-01T10:00:00.000Z",
        "updatedAt": "2026-12-01T10:00:30.000Z",
        "models": ["anthropic/claude"],
        "compactions": [],
    }
    data.update(changes)
    return BudgetLedger.from_json_dict(data)


def test_the_budget_ledger_is_rewritten_and_summarised_as_the_original(
    store: ExecutionStore, layout: Layout
) -> None:
    store.create_unit(make_contract())
    store.write_budget(ledger())
    assert store.budget("u1", 1) == ledger()
    assert store.budget("u1", 2) is None
    assert json.loads(layout.budget("u1", 1).read_text())["ceiling"]["cost"] == 2
    assert budget_summary(ledger()) == "120000/400000 tok (30%), 12/60 turns"
    exhausted = ledger(
        consumed={"tokens": 9000000, "cost": 1, "wallClockMs": 1, "turns": 61},
        exhausted={"dimension": "turns", "at": "2026-12-01T10:01:00.000Z"},
    )
    assert budget_summary(exhausted) == "9000000/400000 tok (999%), 61/60 turns, exhausted: turns"


# --- the contract gate -----------------------------------------------------------------------


def test_a_sound_contract_has_no_problems() -> None:
    assert check_contract(make_contract()) == []


def test_a_decision_id_used_twice_across_kinds_is_a_problem() -> None:
    contract = make_contract(
        delegated=[{"id": "lang", "subject": "function name", "bounds": "snake_case"}]
    )
    [problem] = check_contract(contract)
    assert problem.path == "delegated[0]"
    assert '"lang"' in problem.message and "fixed[0]" in problem.message


def test_a_decision_to_resolve_before_execution_refuses_dispatch() -> None:
    contract = make_contract(
        unresolved=[
            {
                "id": "db",
                "subject": "which database",
                "reason": "two candidates",
                "handling": "resolve-before-execution",
            }
        ]
    )
    [problem] = check_contract(contract)
    assert problem.path == "unresolved[0]"
    assert '"which database" must be resolved before execution' in problem.message


def test_duplicate_evidence_ids_and_a_later_predecessor_are_problems() -> None:
    expectation = {"id": "tests", "description": "again", "class": "test", "required": False}
    contract = make_contract(
        expectedEvidence=[*contract_data()["expectedEvidence"], expectation],
        provenance={
            "createdBy": "S3",
            "createdAt": "2026-12-01T09:00:00.000Z",
            "predecessor": {"version": 1, "reason": "replan"},
        },
    )
    assert [p.path for p in check_contract(contract)] == [
        "expectedEvidence[1]",
        "provenance.predecessor",
    ]


# --- the report gate -------------------------------------------------------------------------


def test_a_report_that_honours_the_contract_has_no_problems() -> None:
    assert check_result_report(make_contract(), make_report()) == []


def test_a_report_for_another_version_is_refused_on_that_alone() -> None:
    problems = check_result_report(
        make_contract(), make_report(contractVersion=2, unitId="u9", delegatedResults=[])
    )
    assert [(p.path, p.message) for p in problems] == [
        ("contractId", "the report is for greet v2, not greet v1")
    ]


def test_a_report_naming_another_unit_is_refused() -> None:
    [problem] = check_result_report(make_contract(), make_report(unitId="u2"))
    assert problem.path == "unitId"
    [problem] = check_result_report(make_contract(), make_report(), unit_id="u7")
    assert problem.message == 'the report names unit "u1", not "u7"'


def test_a_settled_unresolved_decision_is_refused() -> None:
    # There is no "settled" outcome: the schema refuses it ...
    with pytest.raises(ValueError, match="outcome: 'settled' is not one of preserved, surfaced"):
        make_report(
            unresolvedOutcomes=[{"decisionId": "locale", "outcome": "settled", "note": "en-GB"}]
        )
    # ... and leaving the decision out of the report is settling it silently.
    [problem] = check_result_report(make_contract(), make_report(unresolvedOutcomes=[]))
    assert problem.path == "unresolvedOutcomes"
    assert 'unresolved decision "locale" (locale) has no outcome' in problem.message


def test_unknown_ids_and_a_missing_delegated_choice_are_problems() -> None:
    report = make_report(
        delegatedResults=[{"decisionId": "colour", "choice": "blue"}],
        unresolvedOutcomes=[
            {"decisionId": "locale", "outcome": "surfaced", "note": "asked"},
            {"decisionId": "tz", "outcome": "preserved", "note": "kept"},
        ],
    )
    assert [p.path for p in check_result_report(make_contract(), report)] == [
        "delegatedResults[0]",
        "delegatedResults",
        "unresolvedOutcomes[1]",
    ]


def test_a_delegated_decision_that_needs_no_report_may_go_unreported() -> None:
    contract = make_contract(
        delegated=[{"id": "name", "subject": "n", "bounds": "any", "requiredReport": False}]
    )
    assert check_result_report(contract, make_report(delegatedResults=[])) == []


def test_a_fixed_decision_deviation_must_name_an_existing_fixed_decision() -> None:
    def deviating(ref: str | None) -> ResultReport:
        deviation: dict[str, Any] = {"kind": "fixed-decision", "description": "used rust"}
        if ref is not None:
            deviation["ref"] = ref
        return make_report(deviations=[deviation])

    assert [p.path for p in check_result_report(make_contract(), deviating(None))] == [
        "deviations[0]"
    ]
    assert [p.path for p in check_result_report(make_contract(), deviating("nope"))] == [
        "deviations[0]"
    ]
    assert check_result_report(make_contract(), deviating("lang")) == []


def test_required_evidence_needs_a_reference_of_its_class_unless_the_host_checks_it() -> None:
    [problem] = check_result_report(
        make_contract(), make_report(evidence=[{"class": "file", "ref": "greet.py"}])
    )
    assert problem.path == "evidence"
    assert 'required evidence "tests" (test: the tests pass)' in problem.message
    checked = make_contract(
        expectedEvidence=[
            {
                "id": "api",
                "description": "greet keeps one argument",
                "class": "test",
                "required": True,
                "check": {
                    "kind": "export-signature",
                    "module": "greet.py",
                    "export": "greet",
                    "arity": 1,
                },
            }
        ]
    )
    assert check_result_report(checked, make_report(evidence=[])) == []


# --- the report's signals --------------------------------------------------------------------


def test_a_reports_emergent_decisions_deviations_and_doubts_become_signals(
    clock: FakeClock,
) -> None:
    report = make_report(
        emergentDecisions=[
            {"subject": "logging", "choiceOrQuestion": "print", "consequenceIfWrong": "low"},
            {"subject": "cache", "choiceOrQuestion": "lru", "consequenceIfWrong": "medium"},
            {"subject": "schema", "choiceOrQuestion": "v2", "consequenceIfWrong": "high"},
        ],
        deviations=[
            {"kind": "fixed-decision", "ref": "lang", "description": "one shell script"},
            {"kind": "scope", "description": "also fixed a typo"},
        ],
        residualUncertainty=[
            {"subject": "unicode", "reason": "untested", "consequenceIfWrong": "medium"}
        ],
    )
    signals = report_signals(make_contract(), report, clock)
    assert [(s.kind, s.subject, getattr(s, "severity", None)) for s in signals] == [
        ("operational-signal", "greet v1: emergent decision — logging", "info"),
        ("operational-signal", "greet v1: emergent decision — cache", "advisory"),
        ("operational-signal", "greet v1: emergent decision — schema", "blocking"),
        ("operational-signal", "greet v1: fixed-decision deviation (lang)", "blocking"),
        ("operational-signal", "greet v1: scope deviation", "blocking"),
        ("uncertainty-signal", "greet v1: residual uncertainty — unicode", None),
    ]
    assert all(s.source == "S1" and s.unit == "u1" for s in signals)
    assert all(s.evidence == report.evidence for s in signals)
    assert all(s.timestamp == "2026-12-01T10:00:00.000Z" for s in signals)
    assert len({s.id for s in signals}) == 6
    emergent = signals[2]
    assert isinstance(emergent, OperationalSignal)
    assert emergent.observation == (
        "schema: v2 (not allocated by the contract; consequence if wrong: high)"
    )
    assert isinstance(signals[3], OperationalSignal)
    assert signals[3].observation == "one shell script"
    doubt = signals[5]
    assert isinstance(doubt, UncertaintySignal)
    assert (doubt.decision, doubt.reason, doubt.alternatives) == (
        "left as reported",
        "untested",
        [],
    )
    assert (doubt.consequence, doubt.impact) == ("consequence if wrong: medium", "medium")
    # Each is a line the regulatory log accepts as it is.
    for signal in signals:
        assert parse_signal_line(record_to_json_line(signal)) == signal


def test_a_report_with_nothing_unallocated_makes_no_signals(clock: FakeClock) -> None:
    assert report_signals(make_contract(), make_report(), clock) == []


# --- the audit log ---------------------------------------------------------------------------


def evidence_record(unit_id: str, check: str = "run_tests") -> EvidenceRecord:
    return EvidenceRecord.from_json_dict(
        {
            "id": f"ev-{unit_id}-{check}",
            "unitId": unit_id,
            "attempt": 1,
            "contract": {"id": "greet", "version": 1},
            "check": check,
            "class": "test",
            "criteria": ["tests"],
            "verdict": "fail",
            "command": ["pytest", "-q"],
            "observation": "1 failed\nmore output",
            "revision": "abc1234",
            "environment": {"node": "python 3.11", "platform": "linux", "arch": "x64"},
            "producedBy": "S3*",
            "at": "2026-12-01T10:03:00.000Z",
        }
    )


def verdict(unit_id: str, outcome: str, reasons: list[str] | None = None) -> TechnicalVerdict:
    return TechnicalVerdict.from_json_dict(
        {
            "id": f"v-{unit_id}-{outcome}",
            "unitId": unit_id,
            "attempt": 1,
            "contract": {"id": "greet", "version": 1},
            "revision": "abc1234",
            "verdict": outcome,
            "evidence": [f"ev-{unit_id}-run_tests"],
            "satisfied": [],
            "failed": ["tests"] if outcome == "fail" else [],
            "missing": ["docs"] if outcome == "inconclusive" else [],
            "stale": [],
            "contradicted": [],
            "awaitingAcceptance": [],
            "reasons": reasons if reasons is not None else ["run_tests: 1 failed"],
            "decidedBy": "S3*",
            "at": "2026-12-01T10:03:01.000Z",
        }
    )


def test_the_audit_log_reads_back_per_unit_and_skips_a_bad_line(layout: Layout) -> None:
    log = AuditLog(layout)
    log.append_evidence(evidence_record("u1"), evidence_record("u2"))
    log.append_verdict(verdict("u1", "fail"))
    with layout.audit.open("ab") as f:
        f.write(b'{"type": "rumour"}\n')
    acceptance = HumanAcceptance(
        id="acc-1",
        unit_id="u1",
        contract=ContractRef(id="greet", version=1),
        criterion="looks right",
        revision="abc1234",
        disposition="accepted",
        by="alice",
        at="2026-12-01T10:04:00.000Z",
    )
    log.append_acceptance(acceptance)
    audit = log.audit_for("u1")
    assert [e.id for e in audit.evidence] == ["ev-u1-run_tests"]
    assert audit.latest_verdict == verdict("u1", "fail")
    assert audit.acceptances == [acceptance]
    assert [e.id for e in log.audit_for("u2").evidence] == ["ev-u2-run_tests"]
    assert [str(p) for p in log.problems] == [
        ".regulator/audit.ndjson:4: unknown line type 'rumour'"
    ]
    # A second reader sees the same; the first one only reads what was appended since.
    log.append_verdict(verdict("u2", "pass", []))
    assert AuditLog(layout).audit_for("u2").verdicts == log.audit_for("u2").verdicts
    assert len(log.entries()) == 5


def test_a_failed_verdict_is_a_blocking_finding_and_an_inconclusive_one_advisory(
    clock: FakeClock,
) -> None:
    failed = audit_finding_for_verdict(verdict("u1", "fail"), clock, [evidence_record("u1")])
    assert failed.id == "v-u1-fail"
    assert (failed.severity, failed.invariant) == ("blocking", "INV-003")
    assert failed.subject == "unit u1: closeout refused (fail)"
    assert failed.unit == "u1" and failed.source == "S3*"
    assert failed.observation == "run_tests: 1 failed"
    [ref] = failed.evidence
    assert (ref.class_, ref.ref, ref.observation, ref.source_revision) == (
        "test",
        "run_tests",
        "1 failed",
        "abc1234",
    )
    unsure = audit_finding_for_verdict(verdict("u1", "inconclusive", []), clock)
    assert unsure.severity == "advisory"
    assert unsure.observation == "inconclusive (1 missing)"
    assert parse_signal_line(record_to_json_line(unsure)) == unsure
    with pytest.raises(ValueError, match="a pass refuses nothing"):
        audit_finding_for_verdict(verdict("u1", "pass", []), clock)
    assert summarize_verdict(verdict("u1", "fail")) == "fail (1 failed)"
