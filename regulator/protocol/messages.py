"""The eight message kinds of the regulatory log (docs/design.md#messages).

Every message carries the envelope (``id``, ``timestamp``, ``source``, ``subject``, ``unit?``)
and a fixed ``kind``, ``channel`` and ``destination``. Each kind narrows ``source`` (and
``destination``) to the systems the original allows for it. ``kind`` is the union's tag
(written first); ``channel`` and the single-valued ``source`` and ``destination`` are fields a
writer gives, since a field left at a default is not written. All eight are closed.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from regulator.protocol.base import Record
from regulator.protocol.evidence import EvidenceRef, NonEmptyStr
from regulator.protocol.vocab import (
    Confidence,
    CoordinationKind,
    FollowUp,
    Impact,
    Severity,
    VsmSystem,
)


class MessageEnvelope(Record, tag_field="kind"):
    """The fields every message shares. Not a record on its own: each kind narrows it."""

    kind: ClassVar[str]

    id: NonEmptyStr
    timestamp: NonEmptyStr
    source: VsmSystem
    subject: NonEmptyStr
    # Absent = a message about the instance itself (e.g. the post-merge check).
    unit: str | None = None


class AuditFinding(MessageEnvelope, tag="audit-finding"):
    """Independent evidence from S3* (the closeout audit, the post-merge check)."""

    source: Literal["S3*"]
    channel: Literal["audit"]
    destination: Literal["S3"]
    severity: Severity
    invariant: str | None = None
    observation: NonEmptyStr
    evidence: list[EvidenceRef]
    suggested_action: str | None = None


class PolicyProposal(MessageEnvelope, tag="policy-proposal"):
    """A request to change identity or policy; it never carries the authority to do so."""

    source: Literal["S1", "S3", "S4"]
    channel: Literal["proposal"]
    destination: Literal["S5"]
    severity: Severity
    rationale: NonEmptyStr
    # Any JSON value, ``null`` included: the original declares it unknown.
    requested_change: Any
    evidence: list[EvidenceRef]


class Constraint(MessageEnvelope, tag="constraint"):
    """A downward constraint issued by S5. (The original has no emitter for it.)"""

    source: Literal["S5"]
    channel: Literal["constraint"]
    destination: Literal["S4", "S3", "S2", "S1"]
    severity: Severity
    rule: NonEmptyStr
    rationale: str | None = None


class OperationalSignal(MessageEnvelope, tag="operational-signal"):
    """Ordinary feedback from S1 (at close: emergent decisions and deviations of a report)."""

    source: Literal["S1"]
    channel: Literal["signal"]
    destination: Literal["S3"]
    severity: Severity
    observation: NonEmptyStr
    evidence: list[EvidenceRef]


class CoordinationSignal(MessageEnvelope, tag="coordination-signal"):
    """S2 to S3: units oscillating, colliding or conflicting. S2 detects; S3 decides."""

    source: Literal["S2"]
    channel: Literal["signal"]
    destination: Literal["S3"]
    severity: Severity
    coordination: CoordinationKind
    observation: NonEmptyStr
    evidence: list[EvidenceRef]
    resource: str | None = None


class IntelligenceSignal(MessageEnvelope, tag="intelligence-signal"):
    """Environment-facing intelligence from S4: advice, never a decision."""

    source: Literal["S4"]
    channel: Literal["intelligence"]
    destination: Literal["S3", "S5"]
    severity: Severity
    observation: NonEmptyStr
    evidence: list[EvidenceRef]
    expires_at: str | None = None
    claim: NonEmptyStr | None = None
    confidence: Confidence | None = None
    observed_at: NonEmptyStr | None = None
    affected_units: list[NonEmptyStr] | None = None


class AlgedonicSignal(MessageEnvelope, tag="algedonic-signal"):
    """The exceptional path straight to S5; only blocking or critical."""

    source: Literal["S1", "S2", "S3", "S3*", "S4"]
    channel: Literal["algedonic"]
    destination: Literal["S5"]
    severity: Literal["blocking", "critical"]
    observation: NonEmptyStr
    evidence: list[EvidenceRef]
    requires_human_attention: bool


class UncertaintySignal(MessageEnvelope, tag="uncertainty-signal"):
    """A decision S1 could not settle. It has no ``severity``: the router maps ``impact``."""

    source: Literal["S1"]
    channel: Literal["signal"]
    destination: Literal["S3"]
    decision: NonEmptyStr
    reason: NonEmptyStr
    alternatives: list[NonEmptyStr]
    consequence: NonEmptyStr
    impact: Impact
    recommended_follow_up: FollowUp | None = None
    evidence: list[EvidenceRef]


VsmMessage = (
    AuditFinding
    | PolicyProposal
    | Constraint
    | OperationalSignal
    | CoordinationSignal
    | IntelligenceSignal
    | AlgedonicSignal
    | UncertaintySignal
)

# For ``isinstance`` and for building unions elsewhere, in the original's order.
MESSAGE_MODELS: tuple[type[MessageEnvelope], ...] = (
    AuditFinding,
    PolicyProposal,
    Constraint,
    OperationalSignal,
    CoordinationSignal,
    IntelligenceSignal,
    AlgedonicSignal,
    UncertaintySignal,
)


def message_severity(message: MessageEnvelope) -> Severity | None:
    """The severity a message claims; ``None`` for an uncertainty signal, which has none."""
    severity: Severity | None = getattr(message, "severity", None)
    return severity


def is_exceptional(message: MessageEnvelope) -> bool:
    """The original's ``isExceptional``: the algedonic channel, or a critical severity."""
    return getattr(message, "channel", None) == "algedonic" or message_severity(message) == (
        "critical"
    )
