"""The effect journal, ``effects.ndjson`` (docs/design.md#the-effect-journal).

A line is written *before* a side-effecting tool acts and again after, so that a harness that
died in between can find out whether the effect happened instead of doing it twice. The state
of an effect is the fold of its lines by ``key``.
"""

from __future__ import annotations

from regulator.protocol.base import Record
from regulator.protocol.entry import load_record
from regulator.protocol.evidence import NonEmptyStr
from regulator.protocol.vocab import EffectStatus


class EffectJournalEntry(Record):
    # The idempotency key: the same intended effect always has the same key.
    key: NonEmptyStr
    unit_id: NonEmptyStr | None = None
    tool: NonEmptyStr
    description: NonEmptyStr
    status: EffectStatus
    at: NonEmptyStr
    # ``sent <ISO>``, ``delivered <ISO>``: on ``committed`` lines (and when reconciliation has one).
    result: NonEmptyStr | None = None


def parse_effect_line(line: bytes | str) -> EffectJournalEntry:
    """One line of ``effects.ndjson``; ``ValueError`` with a short message if it is not one."""
    return load_record(EffectJournalEntry, line)
