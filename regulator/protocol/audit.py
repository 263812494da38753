"""The S3* audit log, ``audit.ndjson`` (docs/design.md#the-audit-log).

Evidence the host observed by running a check at an exact revision, the technical verdict
derived from it, and a person's acceptance of what no check can observe: three line types,
kept apart so that an acceptance never stands in for a verdict.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from regulator.protocol.base import Record, TypedRecord
from regulator.protocol.entry import LineDecoder
from regulator.protocol.evidence import NonEmptyStr
from regulator.protocol.execution import ContractRef, Positive
from regulator.protocol.vocab import AcceptanceDisposition, EvidenceClass, Verdict


class EvidenceEnvironment(Record):
    node: NonEmptyStr
    platform: NonEmptyStr
    arch: NonEmptyStr


class EvidenceRecord(Record):
    """One host-run observation, bound to a revision, an environment and its criteria."""

    id: NonEmptyStr
    unit_id: NonEmptyStr
    attempt: Positive
    contract: ContractRef
    # The host check that produced it: ``run_tests``, ``run_checks:<name>``, ``file:<path>``.
    check: NonEmptyStr
    class_: EvidenceClass = msgspec.field(name="class")
    # Ids of the contract's evidence expectations it speaks to; empty = none.
    criteria: list[NonEmptyStr]
    verdict: Verdict
    command: list[NonEmptyStr] | None = None
    observation: str
    revision: NonEmptyStr
    environment: EvidenceEnvironment
    produced_by: Literal["S3*"]
    at: NonEmptyStr


class TechnicalVerdict(Record):
    """Derived from the evidence fresh for the revision; never from what the report says."""

    id: NonEmptyStr
    unit_id: NonEmptyStr
    attempt: Positive
    contract: ContractRef
    revision: NonEmptyStr
    verdict: Verdict
    # Ids of the evidence records considered; the rest are criterion ids or reasons.
    evidence: list[NonEmptyStr]
    satisfied: list[NonEmptyStr]
    failed: list[NonEmptyStr]
    missing: list[NonEmptyStr]
    stale: list[NonEmptyStr]
    contradicted: list[NonEmptyStr]
    awaiting_acceptance: list[NonEmptyStr]
    reasons: list[NonEmptyStr]
    decided_by: Literal["S3*"]
    at: NonEmptyStr


class HumanAcceptance(Record):
    """A person's disposition of one criterion no host check can observe."""

    id: NonEmptyStr
    unit_id: NonEmptyStr
    contract: ContractRef
    criterion: NonEmptyStr
    revision: NonEmptyStr
    disposition: AcceptanceDisposition
    by: NonEmptyStr
    note: NonEmptyStr | None = None
    at: NonEmptyStr


class AuditEvidenceEntry(TypedRecord, tag="evidence"):
    record: EvidenceRecord


class AuditVerdictEntry(TypedRecord, tag="verdict"):
    verdict: TechnicalVerdict


class AuditAcceptanceEntry(TypedRecord, tag="acceptance"):
    acceptance: HumanAcceptance


AuditEntry = AuditEvidenceEntry | AuditVerdictEntry | AuditAcceptanceEntry

_AUDIT_LINE: LineDecoder[AuditEntry] = LineDecoder(AuditEntry)


def parse_audit_line(line: bytes | str) -> AuditEntry:
    """One line of ``audit.ndjson`` as its record; ``ValueError`` with a short message if not."""
    entry: AuditEntry = _AUDIT_LINE.decode(line)
    return entry
