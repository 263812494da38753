"""The inspector's timeline: a unit's replay, grouped by attempt, rendered a screenful at a time.

The replay (``Replay``) knows every row's ref, kind and attempt, which is all the table needs to
order, group and filter them; a row's text and record are made (and redacted) when it scrolls
into view, so a unit with 50,000 records costs what a screenful costs to show.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

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
    def keys_for(rows: Replay, kinds: Collection[str] = ()) -> list[TimelineKey]:
        """The table's keys for ``rows``: only ``kinds`` when given, a header per attempt.

        Reads no row's text (any thread may call it, a worker before ``show``)."""
        keys: list[TimelineKey] = []
        current: int | str | None = "start"
        for ref, kind, attempt in zip(rows.refs, rows.kinds, rows.attempts, strict=True):
            if kinds and kind not in kinds:
                continue
            if attempt != current:
                # A group header where the attempt changes: the replay reads attempt by attempt.
                keys.append(TimelineKey(f"group-{len(keys)}", attempt, group=True))
                current = attempt
            keys.append(TimelineKey(ref, attempt))
        return keys

    def show(
        self,
        rows: Replay,
        kinds: set[str] | None = None,
        *,
        keys: list[TimelineKey] | None = None,
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
                f"── attempt {key.attempt} "
                if key.attempt is not None
                else "── outside any attempt "
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

    def group_rows(self) -> list[int]:
        return [i for i, k in enumerate(self.keys) if k.group]


__all__ = ["KIND_GLYPH", "TimelineTable"]
