"""The recovery router, against the seed "Recovery, budgets and model routes" (002).

Classification and decision are pure and tested on records built in memory; what a decision
does to the obligations is observed on a real instance's regulatory log.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from regulator.policy import load_definition
from regulator.protocol.execution import (
    AttemptRecord,
    ContractRef,
    FailureObservation,
    RecoveryDecision,
    UnitRecord,
    WorkloadRef,
)
from regulator.protocol.messages import CoordinationSignal, VsmMessage
from regulator.protocol.obligations import ObligationState
from regulator.protocol.vocab import FailureCause
from regulator.rules.ledger import Ledger
from regulator.rules.recovery import (
    Classification,
    blocked_reason,
    cause_from_error,
    cite,
    classify_failure,
    decide,
    disposition_by_decision,
    disposition_by_decision_in,
    escalation_signal,
    make_decision,
    paused_on_question,
    recover,
)
from regulator.rules.regulatory_log import RegulatoryLog
from regulator.store import Layout

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
DEFINITION = load_definition(None)
POLICY = DEFINITION.recovery
ROUTING = DEFINITION.routing


def clock() -> datetime:
    return NOW


def unit(*, attempts: int = 1, reason: str | None = None, status: str = "blocked") -> UnitRecord:
    return UnitRecord.from_json_dict(
        {
            "unitId": "u1",
            "unitType": "implement",
            "workload": WorkloadRef(name="software-development", version=1),
            "contract": ContractRef(id="tc-1", version=1),
            "status": status,
            "attempts": attempts,
            "createdAt": "2026-12-01T10:00:00.000Z",
            "updatedAt": "2026-12-01T10:00:00.000Z",
            "reason": reason,
        }
    )


def attempt(outcome: str, detail: str | None = None, n: int = 1) -> AttemptRecord:
    return AttemptRecord.from_json_dict(
        {
            "unitId": "u1",
            "attempt": n,
            "contractVersion": 1,
            "startedAt": "2026-12-01T10:00:00.000Z",
            "endedAt": "2026-12-01T10:05:00.000Z",
            "outcome": outcome,
            "detail": detail,
        }
    )


def observed(
    cause: str, message: str, *, n: int = 1, tool: str | None = "run_tests", source: str = "tool"
) -> FailureObservation:
    return FailureObservation.from_json_dict(
        {
            "unitId": "u1",
            "attempt": n,
            "at": "2026-12-01T10:04:00.000Z",
            "source": source,
            "toolName": tool,
            "cause": cause,
            "message": message,
        }
    )


def oscillation(unit_id: str = "u1") -> CoordinationSignal:
    return CoordinationSignal(
        id=str(uuid.uuid4()),
        timestamp="2026-12-01T10:03:00.000Z",
        source="S2",
        channel="signal",
        destination="S3",
        subject="src/a.py",
        unit=unit_id,
        severity="advisory",
        coordination="oscillation",
        observation="src/a.py rewritten 4 times",
        evidence=[],
    )


def prior(cause: FailureCause, times: int) -> list[RecoveryDecision]:
    """``times`` earlier decisions on the unit for ``cause``."""
    return [
        make_decision(POLICY, unit(attempts=0), Classification(cause, []), [], 3, clock=clock)
        for _ in range(times)
    ]


# --- from cause to action: the seed's table ---------------------------------------------------

# The seed's table, read row by row: the action for the 1st, 2nd and 3rd occurrence.
SEED_TABLE: list[tuple[FailureCause, tuple[str, str, str]]] = [
    ("no-report", ("retry", "retry", "escalate")),
    ("invalid-report", ("repair", "repair", "escalate")),
    ("budget-exhausted", ("retry", "replan", "replan")),
    ("check-failure", ("repair", "repair", "replan")),
    ("tool-error", ("retry", "remediate", "escalate")),
    ("timeout", ("retry", "retry", "escalate")),
    ("environment", ("remediate", "escalate", "escalate")),
    ("conflict", ("repair", "escalate", "escalate")),
    ("oscillation", ("clarify", "clarify", "clarify")),
    ("ambiguity", ("clarify", "clarify", "clarify")),
    ("dispatch-error", ("retry", "remediate", "escalate")),
    ("unknown", ("pause", "pause", "pause")),  # "anything else": the fallback
]


@pytest.mark.parametrize("occurrence", [1, 2, 3])
@pytest.mark.parametrize(("cause", "actions"), SEED_TABLE)
def test_the_nth_occurrence_of_a_cause_takes_the_policys_nth_action(
    cause: FailureCause, actions: tuple[str, str, str], occurrence: int
) -> None:
    decided = decide(POLICY, cause, prior(cause, occurrence - 1), 1, 3)
    assert decided.occurrence == occurrence
    assert decided.action == actions[occurrence - 1]


def test_a_fourth_check_failure_is_replan_again_because_the_last_action_repeats() -> None:
    decided = decide(POLICY, "check-failure", prior("check-failure", 3), 1, 3)
    assert decided.action == "replan"
    assert decided.rationale == (
        "recovery v1 rule for check-failure, occurrence 4 → replan (last action repeats)"
    )


def test_the_rationale_names_the_policy_version_the_rule_and_the_occurrence() -> None:
    decided = decide(POLICY, "check-failure", [], 1, 3)
    assert decided.rationale == "recovery v1 rule for check-failure, occurrence 1 → repair"


def test_a_cause_without_a_rule_takes_the_fallback_and_says_so() -> None:
    decided = decide(POLICY, "unknown", [], 1, 3)
    assert decided.action == "pause"
    assert decided.rationale == "recovery v1 fallback (no rule for unknown), occurrence 1 → pause"


def test_a_retry_when_the_unit_has_used_all_its_attempts_becomes_escalate() -> None:
    decided = decide(POLICY, "no-report", [], 3, 3)
    assert decided.action == "escalate"
    assert decided.rationale.startswith("recovery v1 rule for no-report, occurrence 1 names retry")
    assert "used 3 of 3 attempt(s)" in decided.rationale
    assert "the policy is exhausted" in decided.rationale


def test_a_repair_at_the_attempt_ceiling_becomes_escalate_too() -> None:
    assert decide(POLICY, "check-failure", [], 2, 2).action == "escalate"


def test_an_action_that_spends_no_attempt_is_kept_at_the_ceiling() -> None:
    assert decide(POLICY, "environment", [], 3, 3).action == "remediate"


def test_occurrences_count_per_cause_on_the_unit_whatever_came_between() -> None:
    sequence: list[FailureCause] = [
        "no-report",
        "check-failure",
        "no-report",
        "check-failure",
        "check-failure",
    ]
    decisions: list[RecoveryDecision] = []
    for cause in sequence:
        decisions.append(
            make_decision(POLICY, unit(attempts=1), Classification(cause, []), decisions, 9)
        )
    assert [(d.cause, d.occurrence, d.action) for d in decisions] == [
        ("no-report", 1, "retry"),
        ("check-failure", 1, "repair"),
        ("no-report", 2, "retry"),
        ("check-failure", 2, "repair"),
        ("check-failure", 3, "replan"),
    ]


# --- the decision record ----------------------------------------------------------------------


def test_a_decision_records_cause_occurrence_evidence_action_policy_and_who_decided() -> None:
    evidence = ["attempt 2: check-failure — pytest failed"]
    d = make_decision(
        POLICY, unit(attempts=2), Classification("check-failure", evidence), [], 3, clock=clock
    )
    assert uuid.UUID(d.id).version == 4
    assert (d.unit_id, d.attempt, d.cause, d.occurrence, d.action) == (
        "u1",
        2,
        "check-failure",
        1,
        "repair",
    )
    assert d.evidence == evidence
    assert (d.policy.name, d.policy.version) == ("recovery", 1)
    assert d.decided_by == "S3"
    assert d.decided_at == "2026-12-01T12:00:00.000Z"
    assert d.to_json_dict()["decidedBy"] == "S3"


def test_a_unit_refused_before_any_attempt_is_decided_as_attempt_one() -> None:
    d = make_decision(POLICY, unit(attempts=0), Classification("dispatch-error", []), [], 3)
    assert d.attempt == 1


@pytest.mark.parametrize(
    ("cause", "used", "action"),
    [
        ("no-report", 1, "retry"),
        ("check-failure", 1, "repair"),
        ("environment", 1, "remediate"),
        ("budget-exhausted", 1, "retry"),
        ("oscillation", 1, "clarify"),
        ("unknown", 1, "pause"),
        ("no-report", 3, "escalate"),  # a retry turned escalate carries no hint
    ],
)
def test_only_retry_and_repair_carry_a_hint_and_only_clarify_a_question(
    cause: FailureCause, used: int, action: str
) -> None:
    d = make_decision(POLICY, unit(attempts=used), Classification(cause, ["e"]), [], 3)
    assert d.action == action
    assert (d.hint is not None) == (action in ("retry", "repair"))
    assert (d.question is not None) == (action == "clarify")


def test_hints_are_specific_to_the_cause_and_quote_the_evidence() -> None:
    hints = {
        cause: make_decision(
            POLICY, unit(), Classification(cause, [f"evidence of {cause}"]), [], 3
        ).hint
        for cause in (
            "invalid-report",
            "check-failure",
            "conflict",
            "budget-exhausted",
            "timeout",
            "no-report",
            "tool-error",
        )
    }
    for cause, hint in hints.items():
        assert hint is not None and f"evidence of {cause}" in hint
    specific = [hints[c] for c in hints if c not in ("no-report", "tool-error")]
    assert len(set(specific)) == len(specific)
    assert "report_result" in (hints["invalid-report"] or "")
    assert "run_checks" in (hints["check-failure"] or "")


def test_oscillation_asks_which_behaviour_is_wanted() -> None:
    d = make_decision(POLICY, unit(), Classification("oscillation", ["src/a.py x4"]), [], 3)
    assert d.question is not None and "Which behaviour is wanted?" in d.question


def test_any_other_clarify_says_the_unit_needs_a_decision_from_outside_it() -> None:
    d = make_decision(POLICY, unit(), Classification("ambiguity", ["two readings"]), [], 3)
    assert d.question == (
        "The unit cannot proceed without a decision from outside it (ambiguity): two readings"
    )


# --- from failure to cause --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "cause"),
    [
        ("Test command timed out after 120000 ms", "timeout"),
        ("ETIMEDOUT connecting", "timeout"),
        ("deadline exceeded", "timeout"),
        ("Cannot find module 'left-pad'", "environment"),
        ("bash: pytest: command not found", "environment"),
        ("ECONNREFUSED 127.0.0.1:443", "environment"),
        ("no model in the route is available", "environment"),
        ("something odd happened", "tool-error"),
    ],
)
def test_error_text_normalizes_to_timeout_environment_or_tool_error(text: str, cause: str) -> None:
    assert cause_from_error(text) == cause


PRECEDENCE: list[tuple[str, UnitRecord, list[AttemptRecord], list[FailureObservation], str]] = [
    (
        "a reintegration conflict",
        unit(reason="reintegration: conflict in src/a.py"),
        [attempt("reported")],
        [],
        "conflict",
    ),
    (
        "any other reintegration problem",
        unit(reason="reintegration: dirty base"),
        [attempt("reported")],
        [],
        "environment",
    ),
    (
        "a reintegration conflict over a failed check",
        unit(reason="reintegration: conflict"),
        [attempt("check-failure")],
        [],
        "conflict",
    ),
    ("a halted attempt", unit(), [attempt("budget-exhausted", "tokens")], [], "budget-exhausted"),
    ("a refused report", unit(), [attempt("invalid-report", "no summary")], [], "invalid-report"),
    (
        "a failed check, even when a tool was missing",
        unit(),
        [attempt("check-failure", "pytest failed")],
        [observed("environment", "command not found")],
        "check-failure",
    ),
    ("an error with a detail", unit(), [attempt("error", "ENOENT: git")], [], "environment"),
    ("an error without a detail", unit(), [attempt("error")], [], "dispatch-error"),
    (
        "a silent end with an observed environment cause",
        unit(),
        [attempt("no-report")],
        [observed("environment", "Cannot find module 'left-pad'")],
        "environment",
    ),
    (
        "a silent end refined by a refused report_result",
        unit(),
        [attempt("no-report")],
        [observed("invalid-report", "Report refused", tool="report_result")],
        "invalid-report",
    ),
    (
        "a silent end whose observations belong to another attempt",
        unit(attempts=2),
        [attempt("no-report", n=1), attempt("no-report", n=2)],
        [observed("environment", "old", n=1)],
        "no-report",
    ),
    ("a silent end with nothing observed", unit(), [attempt("no-report")], [], "no-report"),
    (
        "no attempts but an environment reason",
        unit(attempts=0, reason="git: command not found"),
        [],
        [],
        "environment",
    ),
    (
        "no attempts but another reason",
        unit(attempts=0, reason='resource is leased by unit "u2"'),
        [],
        [],
        "dispatch-error",
    ),
    ("a paused attempt", unit(), [attempt("paused")], [], "unknown"),
    ("nothing at all", unit(attempts=0), [], [], "unknown"),
]


@pytest.mark.parametrize(
    ("case", "u", "attempts", "observations", "cause"),
    PRECEDENCE,
    ids=[case for case, *_ in PRECEDENCE],
)
def test_classification_takes_the_first_cause_of_the_fixed_precedence(
    case: str,
    u: UnitRecord,
    attempts: list[AttemptRecord],
    observations: list[FailureObservation],
    cause: str,
) -> None:
    assert classify_failure(u, attempts, observations, []).cause == cause


def test_an_oscillation_signal_on_the_unit_outranks_a_silent_end() -> None:
    found = classify_failure(
        unit(), [attempt("no-report")], [observed("environment", "x")], [oscillation()]
    )
    assert found.cause == "oscillation"


def test_another_units_oscillation_is_not_this_units_cause() -> None:
    found = classify_failure(unit(), [attempt("no-report")], [], [oscillation("u2")])
    assert found.cause == "no-report"


def test_the_attempts_recorded_outcome_outranks_an_oscillation_signal() -> None:
    messages: list[VsmMessage] = [oscillation()]
    found = classify_failure(unit(), [attempt("check-failure")], [], messages)
    assert found.cause == "check-failure"


def test_evidence_quotes_the_attempt_the_units_reason_and_the_last_three_observations() -> None:
    observations = [observed("tool-error", f"exit {i}", tool="bash") for i in range(1, 5)]
    observations.append(observed("timeout", "provider timed out", tool=None, source="provider"))
    observations.append(observed("environment", "other attempt", n=2))
    found = classify_failure(
        unit(reason="budget exhausted: tokens"),
        [attempt("budget-exhausted", "tokens ceiling crossed at t")],
        observations,
        [],
    )
    assert found.evidence == [
        "attempt 1: budget-exhausted — tokens ceiling crossed at t",
        "unit: budget exhausted: tokens",
        "tool bash: tool-error — exit 3",
        "tool bash: tool-error — exit 4",
        "provider: timeout — provider timed out",
    ]


def test_evidence_of_an_attempt_without_detail_is_its_outcome_alone() -> None:
    found = classify_failure(unit(), [attempt("no-report")], [], [])
    assert found.evidence == ["attempt 1: no-report"]


def test_a_unit_that_is_not_blocked_is_not_routed() -> None:
    assert recover(POLICY, unit(status="dispatched"), [attempt("no-report")], [], [], [], 3) is None
    d = recover(POLICY, unit(), [attempt("no-report")], [], [], [], 3)
    assert d is not None and (d.cause, d.action) == ("no-report", "retry")


# --- applying a decision ----------------------------------------------------------------------


def decision(cause: FailureCause, attempts: int = 1, n: int = 0) -> RecoveryDecision:
    return make_decision(
        POLICY, unit(attempts=attempts), Classification(cause, ["e"]), prior(cause, n), 3
    )


def test_the_block_reason_says_what_the_unit_waits_for_under_which_policy() -> None:
    assert blocked_reason(decision("no-report", attempts=3)) == (
        "escalated to S5: no-report (recovery v1)"
    )
    assert blocked_reason(decision("environment"), POLICY) == (
        "awaiting remediate: environment (recovery v1)"
    )
    aborted = decision("no-report").replace(**{"action": "abort"})
    assert blocked_reason(aborted) == "aborted under recovery v1: no-report"
    assert blocked_reason(decision("no-report")) is None


def test_an_escalation_sends_a_blocking_algedonic_signal_with_the_decision_as_evidence() -> None:
    d = decision("no-report", attempts=3)
    signal = escalation_signal(d, "u1", clock)
    assert signal.id == d.id
    assert (signal.source, signal.destination, signal.severity) == ("S3", "S5", "blocking")
    assert signal.subject == "unit u1: recovery policy exhausted"
    assert signal.unit == "u1"
    assert signal.requires_human_attention is True
    assert signal.observation == f"{d.rationale}. Evidence: e"
    assert signal.to_json_dict()["evidence"] == [
        {"class": "file", "ref": ".regulator/units/u1/decisions.ndjson"}
    ]


@pytest.fixture
def ledger(instance: Path) -> Ledger:
    return Ledger(Layout(instance), clock=clock)


def owe(
    ledger: Ledger, *, unit_id: str = "u1", consumer: str = "S3", concern: str = "audit-finding"
) -> ObligationState:
    return ledger.open_obligation(
        subject=f"{concern} on {unit_id}",
        unit=unit_id,
        concern=concern,
        sources=[str(uuid.uuid4())],
        severity="blocking",
        consumer=consumer,
        blocks=True,
    )


def test_a_repair_resolves_the_units_s3_obligations_as_rework_citing_the_decision(
    ledger: Ledger,
) -> None:
    mine = owe(ledger)
    someone_elses = owe(ledger, consumer="human")
    other_unit = owe(ledger, unit_id="u2")
    d = decision("check-failure")
    assert disposition_by_decision(ledger, d, ROUTING) is None
    log = ledger.refresh()
    resolved = log.obligations[mine.id]
    assert (resolved.status, resolved.disposition, resolved.closed_by) == (
        "resolved",
        "rework",
        "S3",
    )
    expected = f"recovery v1: check-failure (occurrence 1) → repair. {d.rationale}"
    assert resolved.rationale == expected
    assert log.obligations[someone_elses.id].status == "open"
    assert log.obligations[other_unit.id].status == "open"


def test_an_abort_rejects_the_units_s3_obligations(ledger: Ledger) -> None:
    mine = owe(ledger)
    d = decision("no-report").replace(**{"action": "abort"})
    disposition_by_decision(ledger, d, ROUTING)
    state = ledger.refresh().obligations[mine.id]
    assert (state.status, state.disposition) == ("resolved", "rejected")


def test_a_waiting_action_opens_one_blocking_wait_owed_to_a_person_and_escalates_s3s_into_it(
    ledger: Ledger,
) -> None:
    first, second = owe(ledger), owe(ledger, concern="operational-signal")
    d = decision("no-report", attempts=3)
    signal = escalation_signal(d, "u1", clock)
    with ledger.transaction() as txn:
        txn.append_raw(signal)
        wait = disposition_by_decision_in(txn, d, ROUTING, [signal.id])
    assert wait is not None
    log = ledger.refresh()
    opened = log.obligations[wait.id]
    assert (opened.concern, opened.severity, opened.consumer, opened.blocks) == (
        "recovery-decision",
        "blocking",
        "human",
        True,
    )
    assert opened.subject == "unit u1: escalate (no-report)"
    assert opened.unit == "u1"
    assert opened.sources == [d.id, signal.id, first.id, second.id]
    for o in (first, second):
        state = log.obligations[o.id]
        assert (state.status, state.successor) == ("escalated", wait.id)
        escalated = state.history[-1]
        assert getattr(escalated, "rationale", None) == (
            f"{cite(d)}; S3 cannot resolve this inside the loop"
        )
    assert [o.id for o in log.open_obligations("u1")] == [wait.id]


def test_remediate_is_owed_to_s3_and_clarify_carries_its_question(ledger: Ledger) -> None:
    remediate = disposition_by_decision(ledger, decision("environment"), ROUTING)
    assert remediate is not None and remediate.consumer == "S3"
    assert remediate.subject == "unit u1: remediate (environment)"
    clarify = decision("oscillation")
    wait = disposition_by_decision(ledger, clarify, ROUTING)
    assert wait is not None and wait.consumer == "human"
    assert wait.question == clarify.question


def test_the_wait_is_not_closed_by_a_later_abort(ledger: Ledger) -> None:
    wait = disposition_by_decision(ledger, decision("environment"), ROUTING)
    assert wait is not None
    aborted = decision("no-report").replace(**{"action": "abort"})
    disposition_by_decision(ledger, aborted, ROUTING)
    assert ledger.refresh().obligations[wait.id].status == "open"


def test_a_unit_waiting_on_a_blocking_question_counts_as_paused(ledger: Ledger) -> None:
    log = RegulatoryLog(ledger.layout)
    assert not paused_on_question(log, "u1")
    owe(ledger, concern="interaction", consumer="human")
    log.refresh()
    assert paused_on_question(log, "u1")
    assert not paused_on_question(log, "u2")
