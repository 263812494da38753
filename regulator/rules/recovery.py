"""The recovery router: what S3 does with a failed attempt (docs/design.md#recovery-policy).

A blocked unit's records are normalized to exactly one cause (:func:`classify_failure`); the
versioned recovery policy maps that cause and how often it has recurred on the unit to exactly
one action (:func:`decide`); the result is an immutable :class:`RecoveryDecision` that cites the
policy version (:func:`make_decision`). Everything up to there is pure: it reads what it is given
and writes nothing.

Applying a decision is the loop's job. This module gives it the pieces that must read the same
everywhere: the block reason (:func:`blocked_reason`), the algedonic signal of an escalation
(:func:`escalation_signal`) and the obligations a decision resolves or opens
(:func:`disposition_by_decision_in`, inside the caller's ledger transaction).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, cast

from regulator.protocol.clock import Clock, now_iso, system_clock
from regulator.protocol.evidence import EvidenceRef
from regulator.protocol.execution import (
    AttemptRecord,
    FailureObservation,
    PolicyRef,
    RecoveryDecision,
    UnitRecord,
)
from regulator.protocol.interaction import InteractionRequest
from regulator.protocol.messages import AlgedonicSignal, CoordinationSignal, VsmMessage
from regulator.protocol.obligations import ObligationState
from regulator.protocol.policies import InteractionPolicy, RecoveryPolicy, RoutingPolicy
from regulator.protocol.vocab import (
    ATTEMPT_ACTIONS,
    TERMINAL_STATUSES,
    WAITING_ACTIONS,
    FailureCause,
    RecoveryAction,
)
from regulator.rules.ledger import Ledger, Transaction
from regulator.rules.regulatory_log import RegulatoryLog

__all__ = [
    "RECOVERY_DECISION_CONCERN",
    "Classification",
    "Decided",
    "Waiting",
    "alternation",
    "ask_clarification_in",
    "blocked_reason",
    "cause_from_error",
    "cite",
    "classify_failure",
    "decide",
    "disposition_by_decision",
    "disposition_by_decision_in",
    "escalation_signal",
    "hint_for",
    "make_decision",
    "paused_on_question",
    "question_for",
    "recover",
    "waiting_on",
]

RECOVERY_DECISION_CONCERN = "recovery-decision"

# --- from error text to a cause ---------------------------------------------------------------

# The same two patterns the session's failure observer uses, so that an error routed from the
# orchestrator's record and one observed in the session normalize alike.
_TIMEOUT = re.compile(r"timed? ?out|ETIMEDOUT|deadline", re.IGNORECASE)
_ENVIRONMENT = re.compile(
    r"ENOENT|EACCES|EPERM|not found|no such file|cannot find module|missing dependency"
    r"|command not found|no model in the route|not available|ECONNREFUSED|ENOTFOUND",
    re.IGNORECASE,
)


def cause_from_error(text: str) -> FailureCause:
    """``timeout``, ``environment`` or ``tool-error`` for an error message (timeout first)."""
    if _TIMEOUT.search(text):
        return "timeout"
    if _ENVIRONMENT.search(text):
        return "environment"
    return "tool-error"


# --- from the records to a cause --------------------------------------------------------------

# The causes a session's observation may refine a silent end into.
_REFINING_CAUSES: frozenset[str] = frozenset(
    {"environment", "timeout", "tool-error", "check-failure", "invalid-report"}
)
# How many of the failed attempt's observations the evidence quotes.
_OBSERVATIONS_QUOTED = 3


@dataclass(frozen=True)
class Classification:
    """The one cause a failure is routed by, and the recorded facts that support it."""

    cause: FailureCause
    evidence: list[str] = field(default_factory=list)


def _evidence(
    unit: UnitRecord, last: AttemptRecord | None, observed: Sequence[FailureObservation]
) -> list[str]:
    evidence: list[str] = []
    if last is not None:
        tail = f" — {last.detail}" if last.detail else ""
        evidence.append(f"attempt {last.attempt}: {last.outcome}{tail}")
    if unit.reason:
        evidence.append(f"unit: {unit.reason}")
    for o in observed[-_OBSERVATIONS_QUOTED:]:
        tool = f" {o.tool_name}" if o.tool_name else ""
        evidence.append(f"{o.source}{tool}: {o.cause} — {o.message}")
    return evidence


def classify_failure(
    unit: UnitRecord,
    attempts: Sequence[AttemptRecord],
    observations: Sequence[FailureObservation],
    messages: Iterable[VsmMessage],
) -> Classification:
    """The cause of a blocked unit's failure, by a fixed precedence (first match wins).

    ``attempts`` and ``observations`` are the unit's, in file order; ``messages`` may be the
    whole regulatory log, routed or not: only those naming this unit are read. Reintegration
    comes first, then the last attempt's outcome, then an oscillation signal, then the
    session's own observations of the last attempt. A ``paused`` outcome is ``unknown``: a
    paused unit should not have been routed at all.
    """
    last = attempts[-1] if attempts else None
    observed = [o for o in observations if last is not None and o.attempt == last.attempt]
    evidence = _evidence(unit, last, observed)
    reason = unit.reason or ""
    outcome = last.outcome if last is not None else None

    def found(cause: FailureCause) -> Classification:
        return Classification(cause, evidence)

    if reason.startswith("reintegration: conflict"):
        return found("conflict")
    if reason.startswith("reintegration:"):
        return found("environment")
    if outcome in ("budget-exhausted", "invalid-report", "check-failure"):
        return found(cast(FailureCause, outcome))
    if last is not None and outcome == "error":
        return found(cause_from_error(last.detail) if last.detail else "dispatch-error")
    if any(
        isinstance(m, CoordinationSignal)
        and m.unit == unit.unit_id
        and m.coordination == "oscillation"
        for m in messages
    ):
        return found("oscillation")
    if outcome == "no-report":
        # A silent end is routed by what went wrong in the session, when it saw something.
        refined = observed[-1].cause if observed else None
        if refined is not None and refined in _REFINING_CAUSES:
            return found(refined)
        return found("no-report")
    if last is None and reason:
        # Refused before any attempt ran: the environment, or the dispatch itself.
        env = cause_from_error(reason) == "environment"
        return found("environment" if env else "dispatch-error")
    return found("unknown")


# --- from a cause to an action ----------------------------------------------------------------


class Decided(NamedTuple):
    action: RecoveryAction
    occurrence: int
    rationale: str


def decide(
    policy: RecoveryPolicy,
    cause: FailureCause,
    prior: Iterable[RecoveryDecision],
    attempts_used: int,
    attempt_ceiling: int,
) -> Decided:
    """The policy's action for this cause's next occurrence on the unit.

    ``prior`` is the unit's earlier decisions: occurrences count per cause, however many other
    failures came between. The last action listed repeats. An attempt-spending action when the
    unit has used its attempts becomes ``escalate``: the policy cannot buy an attempt the budget
    does not allow.
    """
    prior = list(prior)
    occurrence = sum(1 for d in prior if d.cause == cause) + 1
    rule = policy.rule_for(cause)
    actions = rule.actions if rule is not None else policy.fallback
    action = actions[min(occurrence, len(actions)) - 1]
    source = f"rule for {cause}" if rule is not None else f"fallback (no rule for {cause})"
    head = f"{policy.label} {source}, occurrence {occurrence}"
    pair = alternation(policy, [d.cause for d in prior], cause)
    if pair is not None and action not in ("escalate", "abort"):
        window = policy.alternation_window
        return Decided(
            "escalate",
            occurrence,
            f"{head} names {action}, but the unit's last {window} decisions alternate between "
            f"{pair[0]} and {pair[1]}: counted per cause, neither would reach its last action "
            f"(alternationWindow {window}) → escalate",
        )
    if action in ATTEMPT_ACTIONS and attempts_used >= attempt_ceiling:
        return Decided(
            "escalate",
            occurrence,
            f"{head} names {action}, but the unit has used {attempts_used} of "
            f"{attempt_ceiling} attempt(s): the policy is exhausted → escalate",
        )
    repeats = " (last action repeats)" if occurrence > len(actions) else ""
    return Decided(action, occurrence, f"{head} → {action}{repeats}")


def alternation(
    policy: RecoveryPolicy, prior_causes: Sequence[str], cause: str
) -> tuple[str, str] | None:
    """The two causes the unit alternates between (A, B, A, B…), when the policy watches for it.

    Ours, off unless the policy sets ``alternationWindow``: the last ``window`` causes, this
    one included, must be exactly two causes taking turns.
    """
    window = policy.alternation_window
    if window is None:
        return None
    recent = [*prior_causes[-(window - 1) :], cause] if window > 1 else [cause]
    if len(recent) < window:
        return None
    first, second = recent[0], recent[1]
    if first == second:
        return None
    if all(c == (first if i % 2 == 0 else second) for i, c in enumerate(recent)):
        return first, second
    return None


def _detail(evidence: Sequence[str], missing: str) -> str:
    return "; ".join(evidence) or missing


def hint_for(cause: str, action: str, evidence: Sequence[str]) -> str | None:
    """What the next attempt is told; only retry and repair spend one, so only they get one."""
    if action not in ATTEMPT_ACTIONS:
        return None
    detail = _detail(evidence, "nothing more was recorded")
    match cause:
        case "invalid-report":
            return (
                f"The last attempt's result report was not accepted ({detail}). Your work in "
                "the worktree is kept: correct the report so that it answers the contract, "
                "and call report_result again. Do not change the contract's decisions."
            )
        case "check-failure":
            return (
                f"Closeout verification failed on the last attempt ({detail}). The host's own "
                "checks decide, not the report. Fix the code until the checks pass on the "
                "committed tree, commit, run run_tests and run_checks, then report again."
            )
        case "conflict":
            return (
                f"Your branch no longer merges cleanly into the base ({detail}). Bring the "
                "base into the unit's branch, resolve the conflicts while keeping every fixed "
                "decision of the contract, run the checks and commit."
            )
        case "budget-exhausted":
            return (
                f"The last attempt hit its budget ceiling ({detail}). What is committed in "
                "the worktree is kept: do not redo it. Go directly to what is still missing "
                "and report before the budget runs out again."
            )
        case "timeout":
            return (
                f"The last attempt ran out of time ({detail}). Use narrower commands and "
                "bounded test runs, and report before the wall-clock ceiling."
            )
        case _:
            return (
                f"The last attempt ended without an accepted report ({cause}: {detail}). "
                "Pick up from the worktree as it stands and call report_result before "
                "you stop."
            )


def question_for(cause: str, evidence: Sequence[str]) -> str:
    """What someone outside the unit must answer before a clarify can be lifted."""
    if cause == "oscillation":
        return (
            "The unit keeps rewriting the same files, which usually means the requirement "
            "leaves a behaviour undecided. Which behaviour is wanted? "
            f"({_detail(evidence, 'see the unit signals')})"
        )
    return (
        f"The unit cannot proceed without a decision from outside it ({cause}): "
        f"{_detail(evidence, 'see the unit record')}"
    )


def make_decision(
    policy: RecoveryPolicy,
    unit: UnitRecord,
    classification: Classification,
    prior: Sequence[RecoveryDecision],
    attempt_ceiling: int,
    *,
    clock: Clock = system_clock,
    attempts_used: int | None = None,
) -> RecoveryDecision:
    """The immutable record of one routed failure (the caller appends it to decisions.ndjson).

    ``attempts_used`` defaults to all the unit's attempts; after a replan the loop counts those
    of the contract version in force.
    """
    cause, evidence = classification.cause, list(classification.evidence)
    used = unit.attempts if attempts_used is None else attempts_used
    decided = decide(policy, cause, prior, used, attempt_ceiling)
    return RecoveryDecision(
        id=str(uuid.uuid4()),
        unit_id=unit.unit_id,
        attempt=max(1, unit.attempts),
        cause=cause,
        occurrence=decided.occurrence,
        evidence=evidence,
        action=decided.action,
        policy=PolicyRef(name=policy.name, version=policy.version),
        rationale=decided.rationale,
        hint=hint_for(cause, decided.action, evidence),
        question=question_for(cause, evidence) if decided.action == "clarify" else None,
        decided_at=now_iso(clock),
        decided_by="S3",
    )


def recover(
    policy: RecoveryPolicy,
    unit: UnitRecord,
    attempts: Sequence[AttemptRecord],
    observations: Sequence[FailureObservation],
    messages: Iterable[VsmMessage],
    prior: Sequence[RecoveryDecision],
    attempt_ceiling: int,
    *,
    clock: Clock = system_clock,
) -> RecoveryDecision | None:
    """Classify and decide for a blocked unit; ``None`` for a unit that is not blocked.

    Whether the unit is paused on a question (and so must not be routed) is for the caller to
    check first, with :func:`paused_on_question`.
    """
    if unit.status != "blocked":
        return None
    classification = classify_failure(unit, attempts, observations, messages)
    return make_decision(policy, unit, classification, prior, attempt_ceiling, clock=clock)


# --- applying a decision ----------------------------------------------------------------------


def _policy_label(decision: RecoveryDecision, policy: PolicyRef | RecoveryPolicy | None) -> str:
    ref = policy if policy is not None else decision.policy
    return f"{ref.name} v{ref.version}"


def blocked_reason(
    decision: RecoveryDecision, policy: PolicyRef | RecoveryPolicy | None = None
) -> str | None:
    """The unit's reason after the decision; ``None`` for retry/repair (the reason stands).

    ``policy`` defaults to the one the decision cites.
    """
    label = _policy_label(decision, policy)
    if decision.action == "abort":
        return f"aborted under {label}: {decision.cause}"
    if decision.action == "escalate":
        return f"escalated to S5: {decision.cause} ({label})"
    if decision.action in WAITING_ACTIONS:
        return f"awaiting {decision.action}: {decision.cause} ({label})"
    return None


def escalation_signal(
    decision: RecoveryDecision, unit_id: str, clock: Clock = system_clock
) -> AlgedonicSignal:
    """The algedonic signal an escalation sends to S5; its id is the decision's, so the router
    recognizes it among the recovery obligation's sources and opens nothing more for it."""
    observation = decision.rationale
    if decision.evidence:
        observation += ". Evidence: " + "; ".join(decision.evidence)
    return AlgedonicSignal(
        id=decision.id,
        timestamp=now_iso(clock),
        source="S3",
        channel="algedonic",
        destination="S5",
        subject=f"unit {unit_id}: recovery policy exhausted",
        unit=unit_id,
        severity="blocking",
        observation=observation,
        evidence=[
            EvidenceRef.from_json_dict(
                {"class": "file", "ref": f".regulator/units/{unit_id}/decisions.ndjson"}
            )
        ],
        requires_human_attention=True,
    )


def cite(decision: RecoveryDecision) -> str:
    """``recovery v1: check-failure (occurrence 1) → repair``."""
    return (
        f"{decision.policy.name} v{decision.policy.version}: {decision.cause} "
        f"(occurrence {decision.occurrence}) → {decision.action}"
    )


def _owed_by_s3(txn: Transaction, unit_id: str) -> list[ObligationState]:
    """The unit's open S3 obligations, bar recovery waits, as this transaction sees them."""

    def mine(o: ObligationState) -> bool:
        return (
            o.unit == unit_id
            and o.consumer == "S3"
            and o.concern != RECOVERY_DECISION_CONCERN
            and o.status not in TERMINAL_STATUSES
            and o.id not in txn.closed
        )

    found = [o for o in txn.log.open_obligations(unit_id) if mine(o)]
    # Obligations opened earlier in the same act are not in the fold yet.
    found += [o for oid, o in txn.opened.items() if oid not in txn.log.obligations and mine(o)]
    return found


def disposition_by_decision_in(
    txn: Transaction,
    decision: RecoveryDecision,
    routing_policy: RoutingPolicy,
    cites: Sequence[str] = (),
    interaction_policy: InteractionPolicy | None = None,
) -> ObligationState | None:
    """Settle what S3 owes on the unit according to the decision, inside ``txn``.

    retry, repair and abort dispose of S3's open obligations on the unit (rework, or rejected on
    abort) and return ``None``. A waiting action opens the one blocking ``recovery-decision``
    obligation the unit now waits on, owed to the routing policy's consumer for that action,
    escalates S3's obligations into it (so the wait has a single owner) and returns it.
    ``cites`` are further sources, such as the escalation's algedonic signal id. A clarify
    decision's question is then asked as a clarification (:func:`ask_clarification_in`); the
    obligation returned is the question's.
    """
    mine = _owed_by_s3(txn, decision.unit_id)
    cited = cite(decision)
    if decision.action not in WAITING_ACTIONS:
        disposition = "rejected" if decision.action == "abort" else "rework"
        for o in mine:
            txn.resolve(o.id, "S3", disposition, f"{cited}. {decision.rationale}")
        return None
    consumer: str = getattr(routing_policy.recovery, decision.action)
    wait = txn.open(
        subject=f"unit {decision.unit_id}: {decision.action} ({decision.cause})",
        unit=decision.unit_id,
        concern=RECOVERY_DECISION_CONCERN,
        sources=[decision.id, *cites, *(o.id for o in mine)],
        severity="blocking",
        consumer=consumer,
        blocks=True,
        question=decision.question,
        opened_by="S3",
    )
    for o in mine:
        txn.escalate(
            o.id, "S3", f"{cited}; S3 cannot resolve this inside the loop", successor=wait.id
        )
    if decision.action == "clarify" and decision.question:
        return ask_clarification_in(txn, decision, wait, interaction_policy)
    return wait


def ask_clarification_in(
    txn: Transaction,
    decision: RecoveryDecision,
    wait: ObligationState,
    interaction_policy: InteractionPolicy | None = None,
) -> ObligationState:
    """Ours: a clarify decision asks its question as a ``clarification`` interaction.

    The recovery wait is escalated into the question's obligation, owed to the same consumer,
    so the question is answered the way any unit's question is (``regulator answer``, the
    room), and the answer reaches the next attempt as every answer does.
    """
    subject = f"unit {decision.unit_id}: {decision.cause}"
    question = decision.question or wait.question or subject
    asked = txn.open(
        subject=f"clarification: {subject}",
        unit=decision.unit_id,
        concern="interaction",
        sources=[f"ask:{uuid.uuid4()}", decision.id, wait.id],
        severity=wait.severity,
        consumer=wait.consumer,
        blocks=True,
        question=question,
        opened_by="S3",
    )
    timeout = (
        interaction_policy.timeouts_ms.for_kind("clarification")
        if interaction_policy is not None
        else 0
    )
    request = InteractionRequest.from_json_dict(
        {
            "id": str(uuid.uuid4()),
            "kind": "clarification",
            "subject": subject,
            "question": question,
            "severity": wait.severity,
            "unit": decision.unit_id,
            "attempt": decision.attempt,
            "obligationId": asked.id,
            "evidence": [
                {"class": "file", "ref": f".regulator/units/{decision.unit_id}/decisions.ndjson"}
            ],
            "raisedBy": "S3",
            "raisedAt": txn.now,
            "timeoutMs": timeout,
            "channel": "none",
        }
    )
    txn.request_interaction(request, by="S3")
    txn.escalate(
        wait.id,
        "S3",
        f"{cite(decision)}; asked of {wait.consumer} as a clarification",
        successor=asked.id,
    )
    return asked


def disposition_by_decision(
    ledger: Ledger,
    decision: RecoveryDecision,
    routing_policy: RoutingPolicy,
    cites: Sequence[str] = (),
) -> ObligationState | None:
    """:func:`disposition_by_decision_in` as one transaction of its own."""
    with ledger.transaction() as txn:
        return disposition_by_decision_in(txn, decision, routing_policy, cites)


def paused_on_question(log: RegulatoryLog, unit_id: str) -> bool:
    """Whether the unit waits on an unanswered blocking question: such a unit is not routed."""
    return any(o.concern == "interaction" and o.blocks for o in log.open_obligations(unit_id))


def awaiting_decision(log: RegulatoryLog, unit_id: str) -> ObligationState | None:
    """The open recovery decision the unit waits on, if any: routing it again would decide a
    second time what is already someone's to decide."""
    return next(
        (o for o in log.open_obligations(unit_id) if o.concern == RECOVERY_DECISION_CONCERN),
        None,
    )


@dataclass(frozen=True)
class Waiting:
    """What a blocked unit waits on after a waiting decision: the action, who owes it, and the
    decision. For a clarify, ``obligation`` is the clarification question's."""

    action: RecoveryAction
    obligation: ObligationState
    decision: RecoveryDecision


def waiting_on(
    log: RegulatoryLog, decisions: Sequence[RecoveryDecision], unit_id: str
) -> Waiting | None:
    """The open wait a recovery decision left on the unit, newest decision first."""
    by_id = {d.id: d for d in decisions}
    open_ = log.open_obligations(unit_id)
    for o in sorted(open_, key=lambda s: s.opened_at, reverse=True):
        if o.concern not in (RECOVERY_DECISION_CONCERN, "interaction"):
            continue
        decision = next((by_id[s] for s in o.sources if s in by_id), None)
        if decision is not None:
            return Waiting(decision.action, o, decision)
    return None
