"""The keys rows are known by: small frozen values, never strings split apart again.

An obligation is known by its instance's position in the room and its id; a unit likewise; a
timeline row by the record it shows, or by the attempt whose group it heads.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, order=True)
class RowKey:
    """An obligation row: which instance (its index in the room) and the obligation's id."""

    instance: int
    oid: str


@dataclass(frozen=True, slots=True, order=True)
class UnitKey:
    instance: int
    unit_id: str


@dataclass(frozen=True, slots=True)
class TimelineKey:
    """A timeline row: a record (``ref``), or the header of an attempt's group."""

    ref: str
    attempt: int | None = None
    group: bool = False


__all__ = ["RowKey", "TimelineKey", "UnitKey"]
