"""Operational memory, ``memory.ndjson`` (docs/design.md#operational-memory).

What the system has learned about its environment: durable, agent-writable, and deliberately
not identity. Every entry has a review-by date; a retraction is a later line, never an edit.
"""

from __future__ import annotations

from regulator.protocol.base import Record, TypedRecord
from regulator.protocol.entry import LineDecoder
from regulator.protocol.evidence import EvidenceRef, NonEmptyStr


class MemoryEntry(Record):
    id: NonEmptyStr
    subject: NonEmptyStr
    # The fact, as a sentence a future unit can act on.
    note: NonEmptyStr
    evidence: list[EvidenceRef]
    unit: NonEmptyStr | None = None
    # The repository revision the fact was observed at.
    revision: NonEmptyStr | None = None
    # ``S1`` for a unit's tool call, else a person's name.
    recorded_by: NonEmptyStr
    recorded_at: NonEmptyStr
    # After this the entry is stale: no longer rendered to units.
    review_by: NonEmptyStr
    # Unit types it is rendered to; absent or empty = every unit. (Writers omit it when empty.)
    scope: list[NonEmptyStr] | None = None


class MemoryRecorded(TypedRecord, tag="memory-recorded"):
    entry: MemoryEntry


class MemoryRetracted(TypedRecord, tag="memory-retracted"):
    id: NonEmptyStr
    memory_id: NonEmptyStr
    by: NonEmptyStr
    at: NonEmptyStr
    reason: NonEmptyStr


MemoryEvent = MemoryRecorded | MemoryRetracted

_MEMORY_LINE: LineDecoder[MemoryEvent] = LineDecoder(MemoryEvent)


def parse_memory_line(line: bytes | str) -> MemoryEvent:
    """One line of ``memory.ndjson`` as its record; ``ValueError`` with a short message if not."""
    event: MemoryEvent = _MEMORY_LINE.decode(line)
    return event
