"""Operational memory: ``.regulator/memory.ndjson`` (docs/design.md#operational-memory).

What units have learned about the environment, each fact with provenance and a review-by date.
It is S3's, not S5's: a fact is remembered for at most ``MAX_REVIEW_DAYS`` and then reviewed,
because a fact that should last for ever is policy, and policy is proposed, not remembered. A
retraction is an appended line; nothing is ever deleted.

The store follows the file with an incremental reader, so a long-lived store (the control room)
folds only what was appended since it last looked. As everywhere else, a bad line is a problem,
not a reason to refuse the whole store.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from regulator.protocol.clock import Clock, iso, parse_iso, system_clock
from regulator.protocol.errors import Refused
from regulator.protocol.evidence import EvidenceRef
from regulator.protocol.memory import (
    MemoryEntry,
    MemoryEvent,
    MemoryRecorded,
    MemoryRetracted,
    parse_memory_line,
)
from regulator.protocol.policies import InteractionPolicy
from regulator.rules.authority import check_disposition_authority
from regulator.rules.ledger import Actor, json_line, write_provenance
from regulator.store import Layout, Problem, TailReader, locked_log

MAX_REVIEW_DAYS = 90

MemoryStatus = Literal["current", "expired", "retracted"]


class MemoryRefusal(Refused):
    """A record or retraction the store refuses; nothing was written."""


@dataclass(frozen=True, slots=True)
class Retraction:
    by: str
    at: str
    reason: str


@dataclass(frozen=True, slots=True)
class MemoryState:
    """One entry as it stands at a moment: current, expired (past review) or retracted."""

    entry: MemoryEntry
    status: MemoryStatus
    retraction: Retraction | None = None

    @property
    def id(self) -> str:
        return self.entry.id

    def to_json(self) -> dict[str, Any]:
        """The original's ``MemoryState``: the entry's fields, ``status``, and ``retraction``."""
        out = self.entry.to_json_dict()
        out["status"] = self.status
        if self.retraction is not None:
            r = self.retraction
            out["retraction"] = {"by": r.by, "at": r.at, "reason": r.reason}
        return out


@dataclass(slots=True)
class _Folded:
    entry: MemoryEntry
    review_by: datetime  # parsed once: states() is asked often, the file changes rarely
    retraction: Retraction | None = None


def _ms(moment: datetime) -> datetime:
    # Stored times carry milliseconds: compare at the precision that is written.
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


class MemoryStore:
    """The memory of one instance, kept current by ``refresh()`` (every read refreshes)."""

    def __init__(
        self, layout: Layout, clock: Clock = system_clock, *, max_review_days: int = MAX_REVIEW_DAYS
    ) -> None:
        self.layout = layout
        self.path = layout.memory
        self.clock = clock
        self.max_review_days = max_review_days
        self._reader: TailReader[tuple[int, MemoryEvent]] = TailReader(
            self.path, self._parse, label=layout.label(self.path)
        )
        self._line = 0
        self._restarts_seen = 0
        self._entries: dict[str, _Folded] = {}
        self._fold_problems: list[Problem] = []

    # -- reading ---------------------------------------------------------------------------

    def _parse(self, raw: bytes) -> tuple[int, MemoryEvent]:
        # The reader hands over every physical line in order, bad ones included: counting the
        # calls gives each event its line number for the problems the fold finds.
        if self._reader.restarts != self._restarts_seen:
            self._restarts_seen = self._reader.restarts
            self._line = 0
        self._line += 1
        return self._line, parse_memory_line(raw)

    def refresh(self) -> None:
        while True:
            batch = self._reader.refresh()
            if batch.restarted:
                self._entries.clear()
                self._fold_problems.clear()
            for line, event in batch.items:
                self._fold(event, line)
            if not batch.more:
                return

    @property
    def problems(self) -> list[Problem]:
        """Bad lines and retractions of entries the store never recorded."""
        return [*self._reader.problems, *self._fold_problems]

    def _fold(self, event: MemoryEvent, line: int) -> None:
        if isinstance(event, MemoryRecorded):
            entry = event.entry
            if entry.id in self._entries:
                self._problem(line, f"memory entry {entry.id} is recorded a second time")
                return
            try:
                review_by = parse_iso(entry.review_by)
            except ValueError:
                self._problem(line, f"memory entry {entry.id}: reviewBy is not a date")
                return
            self._entries[entry.id] = _Folded(entry, review_by)
        else:
            folded = self._entries.get(event.memory_id)
            if folded is None:
                self._problem(line, f"retraction of unknown entry {event.memory_id}")
                return
            if folded.retraction is None:
                folded.retraction = Retraction(event.by, event.at, event.reason)

    def _problem(self, line: int, message: str) -> None:
        self._fold_problems.append(Problem(self._reader.label, line, message))

    def states(self, now: datetime | None = None) -> list[MemoryState]:
        """Every entry in the order recorded, each with its status at ``now``."""
        self.refresh()
        moment = now if now is not None else self.clock()
        out: list[MemoryState] = []
        for folded in self._entries.values():
            if folded.retraction is not None:
                out.append(MemoryState(folded.entry, "retracted", folded.retraction))
            elif folded.review_by > moment:
                out.append(MemoryState(folded.entry, "current"))
            else:
                out.append(MemoryState(folded.entry, "expired"))
        return out

    def current(
        self, unit_type: str | None = None, now: datetime | None = None
    ) -> list[MemoryState]:
        """Current entries a unit of ``unit_type`` sees: unscoped ones and those scoped to it.

        Without a unit type, every current entry (what the read model shows).
        """
        return [
            s
            for s in self.states(now)
            if s.status == "current"
            and (unit_type is None or not s.entry.scope or unit_type in s.entry.scope)
        ]

    def find(self, ref: str) -> MemoryState:
        """By full id or unique prefix, with the original's refusals."""
        states = self.states()
        exact = [s for s in states if s.id == ref]
        matches = exact or ([s for s in states if s.id.startswith(ref)] if ref else [])
        if not matches:
            raise MemoryRefusal(f'no memory entry "{ref}"')
        if len(matches) > 1:
            raise MemoryRefusal(f'"{ref}" matches {len(matches)} entries')
        return matches[0]

    # -- writing ---------------------------------------------------------------------------

    def record(
        self,
        *,
        subject: str,
        note: str,
        recorded_by: str,
        review_by: str,
        evidence: Sequence[EvidenceRef] = (),
        unit: str | None = None,
        revision: str | None = None,
        scope: Sequence[str] | None = None,
        actor: Actor | None = None,
    ) -> MemoryEntry:
        """Remember a fact until ``review_by``: strictly in the future, at most 90 days out.

        A fact already stale is not worth remembering; one meant to last longer is identity or
        policy, which is proposed to S5, not remembered.
        """
        now = _ms(self.clock())
        try:
            review = _ms(parse_iso(review_by))
        except ValueError:
            raise MemoryRefusal(f'reviewBy "{review_by}" is not a date') from None
        if review <= now:
            raise MemoryRefusal(
                f"reviewBy {review_by} is not in the future; "
                "a fact that is already stale is not worth remembering"
            )
        if review > now + timedelta(days=self.max_review_days):
            raise MemoryRefusal(
                f"reviewBy {review_by} is more than {self.max_review_days} days out; "
                "operational memory is reviewed, not permanent — "
                "identity is proposed, not remembered"
            )
        try:
            entry = MemoryEntry.from_json_dict(
                {
                    "id": str(uuid.uuid4()),
                    "subject": subject,
                    "note": note,
                    "evidence": list(evidence),
                    "unit": unit,
                    "revision": revision,
                    "recordedBy": recorded_by,
                    "recordedAt": iso(now),
                    "reviewBy": iso(review),
                    # The original omits an empty scope rather than writing [].
                    "scope": list(scope) if scope else None,
                }
            )
        except ValueError as exc:  # the record's own check names the field
            raise MemoryRefusal(f"memory entry refused: {exc}") from None
        event = MemoryRecorded(entry=entry)
        with locked_log(self.path) as out:
            out.append([json_line(event)])
        if actor is not None:
            # A recorded event has no id of its own: its provenance names the entry's.
            self._provenance(entry.id, actor)
        self.refresh()
        return entry

    def _provenance(self, event_id: str, actor: Actor) -> None:
        write_provenance(self.layout, [event_id], actor, self.clock)

    def retract(
        self, ref: str, by: str, reason: str, *, actor: Actor | None = None
    ) -> MemoryRetracted:
        """Retract an entry (full id or unique prefix): it is no longer rendered to units.

        Checked under the memory log's lock, so two people retracting the same entry at once
        cannot both succeed. An expired entry can be retracted; a retracted one cannot, again.
        """
        if not reason.strip():
            raise MemoryRefusal("a retraction needs a reason")
        with locked_log(self.path) as out:
            state = self.find(ref)  # find() refreshes: up to the end, since we hold the lock
            if state.status == "retracted":
                raise MemoryRefusal(f"memory entry {state.id} is already retracted")
            event = MemoryRetracted(
                id=str(uuid.uuid4()),
                memory_id=state.id,
                by=by,
                at=iso(self.clock()),
                reason=reason,
            )
            out.append([json_line(event)])
        if actor is not None:
            self._provenance(event.id, actor)
        self.refresh()
        return event


def retract_memory(
    store: MemoryStore,
    policy: InteractionPolicy,
    ref: str,
    by: str,
    actor: Actor,
    reason: str,
) -> MemoryRetracted:
    """A person's retraction: any listed person may retract (the original checks at info)."""
    refusal = check_disposition_authority(policy, by, severity="info", os_user=actor.os_user)
    if refusal is not None:
        raise MemoryRefusal(refusal)
    return store.retract(ref, by, reason, actor=actor)
