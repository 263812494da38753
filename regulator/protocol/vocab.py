"""The closed vocabularies of the protocol (docs/design.md, from #the-regulatory-log on).

Each is a ``Literal`` so that a decode refuses anything else and mypy checks every use; the
tuple beside it is the same list at run time, in the original's order, for messages that name
the allowed values.
"""

from __future__ import annotations

from typing import Literal, get_args

VsmSystem = Literal["S1", "S2", "S3", "S3*", "S4", "S5"]
VSM_SYSTEMS: tuple[str, ...] = get_args(VsmSystem)

Channel = Literal["constraint", "signal", "audit", "intelligence", "proposal", "algedonic"]
CHANNELS: tuple[str, ...] = get_args(Channel)

Severity = Literal["info", "advisory", "blocking", "critical"]
SEVERITIES: tuple[str, ...] = get_args(Severity)
SEVERITY_ORDER: dict[str, int] = {name: rank for rank, name in enumerate(SEVERITIES)}

EvidenceClass = Literal["file", "command", "test", "runtime", "semantic", "model"]
EVIDENCE_CLASSES: tuple[str, ...] = get_args(EvidenceClass)

MessageKind = Literal[
    "audit-finding",
    "policy-proposal",
    "constraint",
    "operational-signal",
    "coordination-signal",
    "intelligence-signal",
    "algedonic-signal",
    "uncertainty-signal",
]
MESSAGE_KINDS: tuple[str, ...] = get_args(MessageKind)

Concern = Literal[
    "audit-finding",
    "policy-proposal",
    "constraint",
    "operational-signal",
    "coordination-signal",
    "intelligence-signal",
    "algedonic-signal",
    "uncertainty-signal",
    "recovery-decision",
    "interaction",
]
CONCERNS: tuple[str, ...] = get_args(Concern)

ObligationStatus = Literal["open", "acknowledged", "resolved", "escalated", "superseded"]
OBLIGATION_STATUSES: tuple[str, ...] = get_args(ObligationStatus)
TERMINAL_STATUSES: frozenset[str] = frozenset({"resolved", "escalated", "superseded"})

Disposition = Literal[
    "no-action",
    "accepted-risk",
    "rework",
    "replan",
    "fixed",
    "verified",
    "rejected",
    "accepted",
    "research-requested",
    "audit-requested",
    "policy-clarification-requested",
]
DISPOSITIONS: tuple[str, ...] = get_args(Disposition)

# A consumer is a VSM function or a person.
Consumer = Literal["S1", "S2", "S3", "S3*", "S4", "S5", "human"]
CONSUMERS: tuple[str, ...] = get_args(Consumer)

DeliveryChannel = Literal["outbox", "tui", "rpc", "cli"]
DELIVERY_CHANNELS: tuple[str, ...] = get_args(DeliveryChannel)

InteractionKind = Literal["recap", "choice", "clarification", "consent", "uat"]
INTERACTION_KINDS: tuple[str, ...] = get_args(InteractionKind)

InteractionOutcome = Literal["answered", "timed-out", "cancelled", "unavailable"]
INTERACTION_OUTCOMES: tuple[str, ...] = get_args(InteractionOutcome)

InteractionChannel = Literal["tui", "rpc", "outbox", "cli", "none"]
INTERACTION_CHANNELS: tuple[str, ...] = get_args(InteractionChannel)

FailureCause = Literal[
    "budget-exhausted",
    "no-report",
    "invalid-report",
    "check-failure",
    "tool-error",
    "timeout",
    "ambiguity",
    "environment",
    "conflict",
    "oscillation",
    "dispatch-error",
    "unknown",
]
FAILURE_CAUSES: tuple[str, ...] = get_args(FailureCause)

RecoveryAction = Literal[
    "retry", "repair", "replan", "remediate", "clarify", "pause", "abort", "escalate"
]
RECOVERY_ACTIONS: tuple[str, ...] = get_args(RecoveryAction)
ATTEMPT_ACTIONS: frozenset[str] = frozenset({"retry", "repair"})
WAITING_ACTIONS: frozenset[str] = frozenset({"remediate", "replan", "clarify", "pause", "escalate"})

UnitStatus = Literal["contracted", "dispatched", "reported", "closed", "blocked", "aborted"]
UNIT_STATUSES: tuple[str, ...] = get_args(UnitStatus)

AttemptOutcome = Literal[
    "reported",
    "no-report",
    "invalid-report",
    "budget-exhausted",
    "check-failure",
    "paused",
    "error",
]
ATTEMPT_OUTCOMES: tuple[str, ...] = get_args(AttemptOutcome)

ObservationSource = Literal["tool", "provider", "orchestrator"]

Verdict = Literal["pass", "fail", "inconclusive"]

EffectStatus = Literal["intended", "committed", "confirmed", "absent"]

Confidence = Literal["low", "medium", "high"]
Impact = Literal["low", "medium", "high", "critical"]
IMPACTS: tuple[str, ...] = get_args(Impact)
Consequence = Literal["low", "medium", "high"]
FollowUp = Literal["review", "audit", "research", "clarification", "policy-proposal"]
CoordinationKind = Literal["oscillation", "conflict", "collision", "lease-expired"]
UnresolvedHandling = Literal[
    "resolve-before-execution", "defer", "stub-boundary", "research", "policy-clarification"
]
DeviationKind = Literal["fixed-decision", "constraint", "scope", "interface"]
UnresolvedOutcome = Literal["preserved", "surfaced"]
AcceptanceDisposition = Literal["accepted", "rejected"]


def severity_at_least(severity: str, floor: str) -> bool:
    """True when ``severity`` is at or above ``floor`` in info < advisory < blocking < critical."""
    return SEVERITY_ORDER[severity] >= SEVERITY_ORDER[floor]


def max_severity(a: str, b: str) -> str:
    return a if SEVERITY_ORDER[a] >= SEVERITY_ORDER[b] else b
