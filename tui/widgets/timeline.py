"""The inspector's timeline: a unit's replay, grouped by attempt, rendered a screenful at a time.

The replay (``Replay``) knows every row's ref, kind and attempt, which is all the table needs to
order, group and filter them; a row's text and record are made (and redacted) when it scrolls
into view, so a unit with 50,000 records costs what a screenful costs to show.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection, Iterator, Sequence
from typing import Any, overload

from rich.text import Text

from regulator.views.redaction import Redactor
from regulator.views.timeline import Replay

from ..keys import TimelineKey
from ..render import plain
from .rowtable import Column, RowTable

KIND_GLYPH = {
    "unit": "◆",
    "contract": "§",
    "attempt": "▶",
    "budget": "¤",
    "decision": "⚖",
    "obligation": "!",
    "interaction": "?",
    "delivery": "✉",
    "memory": "✎",
    "message": "≈",
    "evidence": "⚙",
    "verdict": "✔",
    "acceptance": "☑",
    "effect": "↯",
    "observation": "⚠",
}


def _place(entry: int) -> int:
    # A group header sits just before the row it heads: the entries' places rise.
    return 2 * entry if entry >= 0 else 2 * (-entry - 1) - 1


class TimelineKeys(Sequence[TimelineKey]):
    """The table's keys, kept as numbers: a row's position in the replay, or ``-1 - position``
    for the header of the attempt that row begins.

    A unit's 50,000 rows are 50,000 numbers the cycle collector never walks (a key object a
    row it walked at each collection on the UI thread); a key is made when it is read."""

    __slots__ = ("_entries", "_rows")

    def __init__(self, rows: Replay, entries: list[int]) -> None:
        self._rows = rows
        self._entries = entries

    def __len__(self) -> int:
        return len(self._entries)

    @overload
    def __getitem__(self, index: int) -> TimelineKey: ...
    @overload
    def __getitem__(self, index: slice) -> list[TimelineKey]: ...
    def __getitem__(self, index: int | slice) -> TimelineKey | list[TimelineKey]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self._entries)))]
        if index < 0:
            index += len(self._entries)
        entry = self._entries[index]  # IndexError past the end, as a list
        if entry >= 0:
            return TimelineKey(self._rows.refs[entry], self._rows.attempts[entry])
        return TimelineKey(f"group-{index}", self._rows.attempts[-entry - 1], group=True)

    def __iter__(self) -> Iterator[TimelineKey]:
        return (self[i] for i in range(len(self._entries)))

    def group_rows(self) -> list[int]:
        return [i for i, entry in enumerate(self._entries) if entry < 0]

    def locate(self, key: TimelineKey) -> int | None:
        """Where ``key`` is among these keys (None: not among them)."""
        if key.group:
            number = key.ref.removeprefix("group-")
            if not number.isdigit() or int(number) >= len(self._entries):
                return None
            place = int(number)
            return place if self._entries[place] < 0 and self[place] == key else None
        position = self._rows.position(key.ref)
        if position is None:
            return None
        at = bisect_left(self._entries, 2 * position, key=_place)
        found = at < len(self._entries) and self._entries[at] == position
        return at if found and self[at] == key else None


class TimelineTable(RowTable[TimelineKey]):
    EMPTY = "no records name this unit"

    def __init__(self, redactor: Redactor, **kw: Any) -> None:
        super().__init__(
            [
                Column("at", 23, gives_way=1),
                Column("", 1),
                Column("kind", 11),
                Column("att", 3, gives_way=2),
                Column("what", None),
            ],
            **kw,
        )
        self.redactor = redactor
        self.rows: Replay = Replay.empty()
        self.kinds: set[str] = set()
        self.FLEX_MIN = 30

    @staticmethod
    def keys_for(rows: Replay, kinds: Collection[str] = ()) -> TimelineKeys:
        """The table's keys for ``rows``: only ``kinds`` when given, a header per attempt.

        Reads no row's text (any thread may call it, a worker before ``show``)."""
        entries: list[int] = []
        add = entries.append
        # A group is the span from an attempt's first row to the next attempt's: what happened
        # between two attempts (a decision, an obligation resolved) stays under the attempt it
        # followed, rather than a header "outside any attempt" between every two rows. A row
        # of an earlier attempt (a late budget line) stays in the group it falls in.
        current = 0
        started = False
        for position, (kind, attempt) in enumerate(zip(rows.kinds, rows.attempts, strict=True)):
            if kinds and kind not in kinds:
                continue
            if not started or (attempt is not None and attempt > current):
                add(-1 - position)
                current = attempt or 0
                started = True
            add(position)
        return TimelineKeys(rows, entries)

    def show(
        self,
        rows: Replay,
        kinds: set[str] | None = None,
        *,
        keys: TimelineKeys | None = None,
    ) -> None:
        """Show ``rows`` (time order), only ``kinds`` when given, a header per attempt.

        ``keys``: ``keys_for(rows, kinds)`` made beforehand (on a worker)."""
        self.rows = rows
        if kinds is not None:
            self.kinds = kinds
        self.set_rows(keys if keys is not None else self.keys_for(rows, self.kinds))

    def render_row(self, key: TimelineKey) -> Sequence[Text]:
        if key.group:
            title = (
                f"── attempt {key.attempt}, and what followed it "
                if key.attempt
                else "── before the first attempt "
            )
            return [Text(title, style="bold")]
        row = self.rows[key.ref]
        return [
            Text(row.at[:23].replace("T", " ")),
            Text(KIND_GLYPH.get(row.kind, "·")),
            Text(row.kind),
            Text(f"a{row.attempt}" if row.attempt else ""),
            plain(f"{row.title}" + (f" — {row.detail}" if row.detail else ""), self.redactor),
        ]

    def locate(self, key: TimelineKey) -> int | None:
        keys = self.keys
        if isinstance(keys, TimelineKeys):
            return keys.locate(key) if isinstance(key, TimelineKey) else None
        return super().locate(key)

    def group_rows(self) -> list[int]:
        keys = self.keys
        if isinstance(keys, TimelineKeys):
            return keys.group_rows()
        return [i for i, k in enumerate(keys) if k.group]


__all__ = ["KIND_GLYPH", "TimelineKeys", "TimelineTable"]
