"""The inspector's timeline: a unit's replay, grouped by attempt, rendered a screenful at a time.

The rows are kept as data (``TimelineRow``) and a line is made only when it scrolls into view,
so a unit with 50,000 records costs what a screenful costs to show.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text

from regulator.views.redaction import Redactor
from regulator.views.timeline import TimelineRow

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
        self.rows: dict[str, TimelineRow] = {}
        self.kinds: set[str] = set()
        self.FLEX_MIN = 30

    def show(self, rows: dict[str, TimelineRow], kinds: set[str] | None = None) -> None:
        """Show ``rows`` (time order), only ``kinds`` when given, a header per attempt."""
        self.rows = rows
        if kinds is not None:
            self.kinds = kinds
        keys: list[TimelineKey] = []
        current: int | str | None = "start"
        for ref, r in rows.items():
            if self.kinds and r.kind not in self.kinds:
                continue
            if r.attempt != current:
                # A group header where the attempt changes: the replay reads attempt by attempt.
                keys.append(TimelineKey(f"group-{len(keys)}", r.attempt, group=True))
                current = r.attempt
            keys.append(TimelineKey(ref, r.attempt))
        self.set_rows(keys)

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
