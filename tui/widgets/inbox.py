"""The Inbox tab: obligations across every instance, a filter, and the selected one's detail.

``InboxTable`` renders its own rows from the ``InboxIndex`` it is given; ``InboxView`` owns the
filter (debounced, and narrowing what is shown when more is typed) and the preset; the screen
watches what it counts (``InboxView.counts``, so the tab's label changes in the frame that
shows the rows, not one later), and it tells which row rests under the cursor
(``InboxView.Rested``), so the App can act on it. When the rows change under the cursor (a
filter, a preset, a fold) the detail follows at once, in the same frame as the rows; only a
cursor moved by keys waits to rest, so that scrolling fast draws only the rows.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.timer import Timer
from textual.widgets import Input

from regulator.protocol.clock import Clock
from regulator.protocol.vocab import TERMINAL_STATUSES

from ..inbox_index import PRESETS, InboxIndex
from ..keys import RowKey
from ..model import SEVERITY_GLYPH, STATUS_GLYPH, Changes, InstanceView, age
from ..render import one_line, plain
from .detail import ObligationDetail
from .rowtable import Column, RowTable

#: Keystrokes closer than this are a burst, filtered once it pauses this long (the last one
#: wins); a keystroke on its own filters at once (a substring test per row).
FILTER_DEBOUNCE_S = 0.05
REST_S = 0.08
STALE_RETRY_S = 0.1


class InboxTable(RowTable[RowKey]):
    EMPTY = "nothing owed here right now"

    def __init__(self, index: InboxIndex, clock: Clock, new: set[RowKey], **kw: Any) -> None:
        several = len(index.models) > 1
        columns = [
            Column("severity", 10),
            Column("veto", 6, gives_way=4),
            Column("status", 6, gives_way=5),
            Column("owed", 5, gives_way=3),
            Column("concern", 11, gives_way=6),
            Column("subject", None),
            Column("unit", 14, gives_way=2),
            # With several instances, which one is never dropped: the same subject may be owed
            # in two of them.
            *([Column("instance", 8)] if several else []),
            Column("age", 5, gives_way=1),
            Column("delivery", 10, gives_way=8),
        ]
        super().__init__(columns, **kw)
        self.index = index
        self.clock = clock
        self.new = new
        self.marked = new
        self.several = several

    def locate(self, key: RowKey) -> int | None:
        # The index keeps its rows sorted: a bisection, not a dict of every row.
        return self.index.position(key)

    def render_row(self, key: RowKey) -> Sequence[Text]:
        model = self.index.models[key.instance]
        o = model.log.obligations[key.oid]
        style = self.style_for
        closed = o.status in TERMINAL_STATUSES
        vetoes = o.blocks and not closed
        seen = model.seen.get(o.id)
        if seen:
            delivery = f"seen {','.join(sorted(seen))}"
        elif o.deliveries:
            reminded = " +rem" if any(d.reminder for d in o.deliveries) else ""
            delivery = f"×{len(o.deliveries)}{reminded}"
        else:
            delivery = "not sent" if o.consumer == "human" and not closed else ""
        subject = plain(one_line(o.subject, model.redactor))
        return [
            Text(f"{SEVERITY_GLYPH[o.severity]} {o.severity}", style=style(o.severity)),
            Text("■ veto" if vetoes else "", style=style("veto")),
            Text(f"{STATUS_GLYPH[o.status]} {o.status[:4]}"),
            Text(model.owed_to(o)),
            Text(o.concern.replace("-signal", "").replace("-decision", "")),
            # "new" until opened, and not once closed: nothing is left to attend to there.
            (Text("● new ", style=style("new")) + subject)
            if key in self.new and not closed
            else subject,
            plain(o.unit or "(instance)", model.redactor),
            *([Text(model.name[:8])] if self.several else []),
            Text(age(o.opened_at, self.clock())),
            Text(delivery, style=style("ok") if seen else style("dim")),
        ]


@dataclass(frozen=True)
class Counts:
    """``shown`` rows, ``vetoes`` of them vetoing, under ``preset``; ``of`` and ``of_vetoes``:
    the same before the filter (what ``shown`` can reach)."""

    shown: int
    vetoes: int
    preset: str
    of: int
    of_vetoes: int


class InboxView(Vertical):
    """Attributes down (``preset``, ``person``), up: ``counts`` (watched) and ``Rested``."""

    preset = reactive(0, init=False)
    person: reactive[str | None] = reactive(None, init=False)

    #: Rows whose searchable text is made between two frames when the filter opens.
    WARM_SLICE = 2000

    #: What the inbox shows now (None until it first shows rows).
    counts: reactive[Counts | None] = reactive(None, init=False)

    class Rested(Message):
        """The cursor came to rest on ``key`` (the detail follows; bindings may change)."""

        def __init__(self, key: RowKey | None) -> None:
            super().__init__()
            self.key = key

    def __init__(
        self, models: list[InstanceView], clock: Clock, new: set[RowKey], **kw: Any
    ) -> None:
        super().__init__(**kw)
        self.models = models
        self.clock = clock
        self.new = new
        self.index = InboxIndex(models, new.__contains__)
        self._filter_timer: Timer | None = None
        self._rest_timer: Timer | None = None
        self._retry: Timer | None = None
        self._rested: RowKey | None = None
        self._last_typed = 0.0

    def compose(self) -> ComposeResult:
        yield Input(
            placeholder="filter: text, is:blocking, kind:consent, unit:…, owed:human, !…",
            id="filter",
            classes="filter hidden",
        )
        with Horizontal(classes="split"):
            yield InboxTable(self.index, self.clock, self.new, id="inbox-table")
            with VerticalScroll(id="detail-pane", classes="detail"):
                yield ObligationDetail(self.models, id="detail")

    @property
    def table(self) -> InboxTable:
        return self.query_one(InboxTable)

    @property
    def detail(self) -> ObligationDetail:
        return self.query_one(ObligationDetail)

    # -- attributes down ----------------------------------------------------------------------

    def watch_preset(self, preset: int) -> None:
        self.index.preset = preset
        self.rebuild()

    def watch_person(self, person: str | None) -> None:
        self.index.person = person
        self.rebuild()

    def rebuild(self) -> None:
        self.index.rebuild()
        self._show()

    def _rebuild_stale(self) -> None:
        self._retry = None
        if self.index.stale:
            self.rebuild()

    def apply(self, index: int, changes: Changes) -> None:
        """A fold of instance ``index`` finished: move the rows it touched, or all of them."""
        if changes.full or self.index.stale:
            if changes.full:
                self.index.forget_text()  # every obligation was read again
            self.index.rebuild()
        elif changes.touched:
            changed = self.index.update(index, changes.touched)
            self.table.invalidate(changed)
        else:
            return
        self._show()
        self.detail.version += 1
        # What may be done to the selected obligation can have changed with it.
        self.post_message(self.Rested(self.table.current_key))

    def _show(self) -> None:
        if self.index.stale and self._retry is None:
            # An instance's lock was held by other work than a fold (the inspector's replay,
            # the opening's per-unit lists), whose end brings no rebuild: try again shortly.
            self._retry = self.set_timer(STALE_RETRY_S, self._rebuild_stale)
        table = self.table
        table.set_rows(self.index.keys)
        index = self.index
        shown, vetoes = len(index), index.vetoes()
        self.counts = Counts(
            shown,
            vetoes,
            PRESETS[index.preset],
            max(shown, index.base_count()),
            max(vetoes, index.base_vetoes()),
        )
        self.detail.empty = (
            "Nothing owed to a person right now."
            if PRESETS[self.index.preset] == "owed to me"
            else "Nothing here."
        )
        # The rows changed under the cursor, not the cursor under a key: the detail follows
        # now, drawn with the rows (a rest would add its wait to what a keystroke costs).
        key = table.current_key
        if key != self._rested:
            self._rest(key)

    # -- the filter ------------------------------------------------------------------------------

    def open_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.remove_class("hidden")
        box.cursor_blink = False
        box.focus()
        self._warm()

    @work(exclusive=True, group="inbox-warm")
    async def _warm(self) -> None:
        """The rows' searchable text, made a slice at a time between frames and keys, so the
        first keystroke does not make them all.

        Then what the room holds by now (the screen's parts and their caches, the rows and
        their texts: tens of thousands of long-lived objects) is moved out of the cycle
        collector's sight: each of its full collections walked them all again, a pause of
        60-160 ms on a 1M-line instance that fell on whichever keystroke came next. A full
        collection runs first, once, while the filter is still empty: garbage frozen would
        never be freed (a closed inspector holds megabytes), and the room stays open for days."""
        if self.index.warm(self.WARM_SLICE):
            return  # made when the filter was last opened: nothing new to move
        while not self.index.warm(self.WARM_SLICE):
            await asyncio.sleep(0)
        gc.collect()
        gc.freeze()

    def close_filter(self) -> bool:
        """Esc: clears and hides the filter; False when it was not open."""
        box = self.query_one("#filter", Input)
        if box.has_class("hidden"):
            return False
        box.value = ""
        box.add_class("hidden")
        self._apply_filter("")
        self.table.focus()
        return True

    def set_filter(self, text: str) -> None:
        self.query_one("#filter", Input).value = text
        self._apply_filter(text)

    @on(Input.Changed, "#filter")
    def _typed(self, event: Input.Changed) -> None:
        event.stop()
        if self._filter_timer is not None:
            self._filter_timer.stop()
            self._filter_timer = None
        value = event.value
        now = time.monotonic()
        burst = now - self._last_typed < FILTER_DEBOUNCE_S
        self._last_typed = now
        if not burst:
            # A key on its own filters at once, drawn with its character.
            self._apply_filter(value)
            return
        # Keystrokes in a burst are one filtering, when it pauses; the last one wins.
        self._filter_timer = self.set_timer(FILTER_DEBOUNCE_S, lambda: self._apply_filter(value))

    @on(Input.Submitted, "#filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        event.stop()
        self._apply_filter(event.value)
        self.table.focus()

    def _apply_filter(self, text: str) -> None:
        if self._filter_timer is not None:
            self._filter_timer.stop()
            self._filter_timer = None
        if text == self.index.query:
            return
        self.index.set_query(text)
        self._show()

    @property
    def filtering(self) -> bool:
        """A filter typed and not applied yet."""
        return self._filter_timer is not None

    # -- the cursor -----------------------------------------------------------------------------

    @on(InboxTable.Highlighted, "#inbox-table")
    def _highlight(self, event: InboxTable.Highlighted) -> None:
        event.stop()
        # Moving fast through a long inbox re-renders only the cursor; the detail pane and the
        # footer follow once the cursor rests (a re-layout per key press is what costs).
        if self._rest_timer is not None:
            self._rest_timer.stop()
            self._rest_timer = None
        key = event.key
        if key == self._rested:
            return  # already shown (the rows changed and ``_show`` rested on it)
        self._rest_timer = self.set_timer(REST_S, lambda: self._rest(key))

    def _rest(self, key: RowKey | None) -> None:
        if self._rest_timer is not None:
            self._rest_timer.stop()
        self._rest_timer = None
        self._rested = key
        self.detail.key = key
        self.detail.version += 1
        self.post_message(self.Rested(key))


__all__ = ["InboxTable", "InboxView"]
