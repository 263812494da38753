"""Operational memory, ``memory.ndjson`` (upstream-core §9.2).

What the system has learned about its environment: durable, agent-writable, and deliberately
not identity. Every entry has a review-by date; a retraction is a later line, never an edit.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Literal

from pydantic import Field, TypeAdapter

from regulator.protocol.base import DEFERRED, Record
from regulator.protocol.entry import loads_json, validate_tagged
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


class MemoryRecorded(Record):
    type: Literal["memory-recorded"] = "memory-recorded"
    entry: MemoryEntry


class MemoryRetracted(Record):
    type: Literal["memory-retracted"] = "memory-retracted"
    id: NonEmptyStr
    memory_id: NonEmptyStr
    by: NonEmptyStr
    at: NonEmptyStr
    reason: NonEmptyStr


MemoryEvent = Annotated[MemoryRecorded | MemoryRetracted, Field(discriminator="type")]

MEMORY_EVENT_MODELS: Mapping[str, type[Record]] = MappingProxyType(
    {
        "memory-recorded": MemoryRecorded,
        "memory-retracted": MemoryRetracted,
    }
)

MEMORY_EVENT_ADAPTER: TypeAdapter[MemoryEvent] = TypeAdapter(MemoryEvent, config=DEFERRED)


def parse_memory_line(line: bytes | str) -> MemoryEvent:
    """One line of ``memory.ndjson`` as its record; ``ValueError`` with a short message if not."""
    return validate_tagged(
        MEMORY_EVENT_ADAPTER, loads_json(line), MEMORY_EVENT_MODELS, (("type", "line type"),)
    )
