"""The S3* audit log, ``.regulator/audit.ndjson`` (docs/design.md#the-audit-log).

Three line types: evidence a host check observed at an exact revision, the technical verdict
derived from it, and a person's acceptance of a criterion no check can observe. Append-only,
under the log's lock; read incrementally, so a long-lived reader (the control room, a loop that
audits many units) folds only what was appended since it last looked. A line that does not
validate is a problem, skipped, and every valid line around it is still read.

A verdict other than ``pass`` is also an audit finding on the regulatory log
(:func:`audit_finding_for_verdict`), so that routing turns a refused closeout into an
obligation beside the unit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from regulator.protocol.audit import (
    AuditAcceptanceEntry,
    AuditEntry,
    AuditEvidenceEntry,
    AuditVerdictEntry,
    EvidenceRecord,
    HumanAcceptance,
    TechnicalVerdict,
    parse_audit_line,
)
from regulator.protocol.clock import Clock, now_iso, system_clock
from regulator.protocol.entry import record_to_json_line
from regulator.protocol.evidence import EvidenceRef
from regulator.protocol.messages import AuditFinding
from regulator.store import Layout, Problem, TailReader, append_lines

# The invariant a refused closeout cites: closeout rests on fresh host evidence.
CLOSEOUT_INVARIANT = "INV-003"


@dataclass
class UnitAudit:
    """Everything the log holds about one unit, in the order it was recorded."""

    evidence: list[EvidenceRecord] = field(default_factory=list)
    verdicts: list[TechnicalVerdict] = field(default_factory=list)
    acceptances: list[HumanAcceptance] = field(default_factory=list)

    @property
    def latest_verdict(self) -> TechnicalVerdict | None:
        return self.verdicts[-1] if self.verdicts else None


class AuditLog:
    """Appends to, and follows, one instance's ``audit.ndjson``."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.path = layout.audit
        self._reader = TailReader(self.path, parse_audit_line, label=layout.label(self.path))
        self._entries: list[AuditEntry] = []

    # -- writing ---------------------------------------------------------------------------

    def append(self, entries: Iterable[AuditEntry]) -> None:
        """Append ``entries`` as one batch: one write, one fsync (evidence and its verdict)."""
        lines = [record_to_json_line(entry).rstrip(b"\n") for entry in entries]
        if lines:
            append_lines(self.path, lines)

    def append_evidence(self, *records: EvidenceRecord) -> None:
        self.append(AuditEvidenceEntry(record=record) for record in records)

    def append_verdict(self, verdict: TechnicalVerdict) -> None:
        self.append([AuditVerdictEntry(verdict=verdict)])

    def append_acceptance(self, acceptance: HumanAcceptance) -> None:
        self.append([AuditAcceptanceEntry(acceptance=acceptance)])

    # -- reading ---------------------------------------------------------------------------

    def refresh(self) -> list[AuditEntry]:
        """Read what was appended since the last refresh; every entry read so far."""
        while True:
            batch = self._reader.refresh()
            if batch.restarted:
                self._entries = []
            self._entries.extend(batch.items)
            if not batch.more:
                return self._entries

    @property
    def problems(self) -> list[Problem]:
        return list(self._reader.problems)

    def entries(self) -> list[AuditEntry]:
        return list(self.refresh())

    def audit_for(self, unit_id: str) -> UnitAudit:
        """The unit's evidence, verdicts and acceptances, oldest first."""
        audit = UnitAudit()
        for entry in self.refresh():
            if isinstance(entry, AuditEvidenceEntry):
                if entry.record.unit_id == unit_id:
                    audit.evidence.append(entry.record)
            elif isinstance(entry, AuditVerdictEntry):
                if entry.verdict.unit_id == unit_id:
                    audit.verdicts.append(entry.verdict)
            elif entry.acceptance.unit_id == unit_id:
                audit.acceptances.append(entry.acceptance)
        return audit


# --- what a verdict says, and the finding a refusal becomes -----------------------------------


def summarize_verdict(verdict: TechnicalVerdict) -> str:
    """``fail (2 satisfied, 1 failed, 1 missing)``: the verdict and its non-empty lists."""
    counts = [
        (len(verdict.satisfied), "satisfied"),
        (len(verdict.failed), "failed"),
        (len(verdict.missing), "missing"),
        (len(verdict.stale), "stale"),
        (len(verdict.contradicted), "contradicted"),
        (len(verdict.awaiting_acceptance), "awaiting acceptance"),
    ]
    shown = ", ".join(f"{n} {what}" for n, what in counts if n)
    return f"{verdict.verdict} ({shown})" if shown else verdict.verdict


def _first_line(text: str) -> str:
    return text.split("\n", 1)[0]


def audit_finding_for_verdict(
    verdict: TechnicalVerdict,
    clock: Clock = system_clock,
    evidence: Sequence[EvidenceRecord] = (),
) -> AuditFinding:
    """The audit finding a non-pass verdict emits: same id, ``fail`` blocking, else advisory.

    ``evidence`` is what this audit observed, cited by check and first line of output.
    """
    if verdict.verdict == "pass":
        raise ValueError(f"verdict {verdict.id} passed: a pass refuses nothing")
    failed = verdict.verdict == "fail"
    return AuditFinding(
        id=verdict.id,
        timestamp=now_iso(clock),
        source="S3*",
        channel="audit",
        destination="S3",
        subject=f"unit {verdict.unit_id}: closeout refused ({verdict.verdict})",
        unit=verdict.unit_id,
        severity="blocking" if failed else "advisory",
        invariant=CLOSEOUT_INVARIANT,
        observation="; ".join(verdict.reasons) or summarize_verdict(verdict),
        evidence=[
            EvidenceRef(
                class_=record.class_,
                ref=record.check,
                observation=_first_line(record.observation),
                source_revision=record.revision,
            )
            for record in evidence
        ],
        suggested_action=(
            "repair: the checks fail at the committed revision"
            if failed
            else "produce the missing evidence, or have a person accept the criteria no check "
            "can observe, then run `regulator unit close`"
        ),
    )
