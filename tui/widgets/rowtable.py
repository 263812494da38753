"""A table that renders only the rows on screen, keyed so the cursor survives updates.

Textual's DataTable builds every row up front (about 0.12 ms a row), which is seconds for an
inbox of 100,000 obligations. This one keeps the rows as keys and renders a line when it is
shown (the line API), so a refresh or a key press costs the same at 100 rows or 100,000.

Each subclass renders its own rows (``render_row``) from the data it was given; the table
caches the rendered lines and drops the cache whenever its styles change (a theme switch), so
no row keeps the colours of a theme that is gone; a focus change, which recolours only the
cursor, drops only the cursor's line. The keys may be any sequence (a view that makes a key
when one is read): the table reads only those it draws, and finds a key's row through
``locate``, which a subclass that knows its order can answer without a dict of every row.
Columns carry a priority: where the width does not hold them all, the least important give
way first, so that the column that takes the rest (a subject) stays readable.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import BindingType
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ..bindings import TABLE

K = TypeVar("K", bound=Hashable)
# How many drawn lines (and rows' cells) a table keeps: a few screens' worth.
CACHED_LINES = 300


@dataclass(frozen=True)
class Column:
    title: str
    width: int | None  # None: takes what the others leave
    # 0 never gives way; higher numbers give way first when the width is short.
    gives_way: int = 0


class RowTable(ScrollView, Generic[K], can_focus=True):
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "rowtable--header",
        "rowtable--cursor",
        "rowtable--marked",
        "rowtable--critical",
        "rowtable--blocking",
        "rowtable--advisory",
        "rowtable--info",
        "rowtable--veto",
        "rowtable--dim",
        "rowtable--new",
        "rowtable--ok",
    }
    DEFAULT_CSS = """
    RowTable { height: 1fr; overflow-x: hidden; }
    RowTable > .rowtable--header { text-style: bold; background: $panel; }
    RowTable > .rowtable--cursor { background: $accent 40%; }
    RowTable:focus > .rowtable--cursor { background: $accent; color: $text; }
    RowTable > .rowtable--marked { text-style: bold; }
    RowTable > .rowtable--critical { color: $error; text-style: bold; }
    RowTable > .rowtable--blocking { color: $warning; }
    RowTable > .rowtable--advisory { color: $primary; }
    RowTable > .rowtable--info { color: $text-muted; }
    RowTable > .rowtable--veto { color: $error; }
    RowTable > .rowtable--dim { color: $text-muted; }
    RowTable > .rowtable--new { color: $success; text-style: bold; }
    RowTable > .rowtable--ok { color: $success; }
    """
    BINDINGS: ClassVar[list[BindingType]] = list(TABLE)
    #: What the flexible column keeps before others give way.
    FLEX_MIN = 24
    EMPTY = "nothing here"

    cursor = reactive(0, repaint=False, init=False)

    class Highlighted(Message):
        def __init__(self, table: RowTable[Any], key: Any) -> None:
            super().__init__()
            self.table = table
            self.key = key

        @property
        def control(self) -> RowTable[Any]:
            return self.table

    class Selected(Message):
        def __init__(self, table: RowTable[Any], key: Any) -> None:
            super().__init__()
            self.table = table
            self.key = key

        @property
        def control(self) -> RowTable[Any]:
            return self.table

    def __init__(self, columns: Sequence[Column], **kw: Any) -> None:
        super().__init__(**kw)
        self.columns = list(columns)
        self.keys: Sequence[K] = []
        self._index: dict[K, int] | None = None  # made when first asked (``locate``)
        self.marked: set[K] = set()
        self.empty = self.EMPTY
        # The lines drawn lately, by (row, width, under the cursor): a few screens' worth, the
        # least recently drawn going first (each kept line is a dozen objects the cycle
        # collector walks).
        self._cache: LRUCache[tuple[K, int, bool], Strip] = LRUCache(CACHED_LINES)
        # Each row's cells as ``render_row`` made them: a focus change or a resize draws the
        # lines again from these, without asking the subclass (whose rows may cost a scan).
        self._cells: LRUCache[K, Sequence[Text]] = LRUCache(CACHED_LINES)
        self._layout: tuple[int, list[int], list[int]] | None = None
        self._styles_seen: tuple[Style, ...] = ()
        self._width_seen = 0

    # -- what a subclass provides ----------------------------------------------------------------

    def render_row(self, key: K) -> Sequence[Text]:
        """The cells of one row, one per column (``self.style_for`` gives theme colours)."""
        raise NotImplementedError

    # -- data -------------------------------------------------------------------------------

    def set_rows(self, keys: Sequence[K], *, changed: bool = True) -> None:
        """Show ``keys`` in this order; the cursor stays on the row it was on when it can.

        The table keeps ``keys`` as given (no copy): pass a sequence nobody changes later."""
        current = self.current_key
        self.keys = keys
        self._index = None
        if changed:
            self._cache.clear()
            self._cells.clear()
        self.virtual_size = Size(self.size.width, len(self.keys) + 1)
        at = self.locate(current) if current is not None else None
        if at is not None:
            self.set_reactive(RowTable.cursor, at)
        else:
            self.set_reactive(RowTable.cursor, min(self.cursor, max(0, len(self.keys) - 1)))
        self.scroll_to_cursor()
        self.refresh()
        self.post_message(self.Highlighted(self, self.current_key))

    def invalidate(self, keys: object = None) -> None:
        """Rows changed: render them again (every row when ``keys`` is None)."""
        if keys is None:
            self._cache.clear()
            self._cells.clear()
        else:
            wanted = set(keys) if isinstance(keys, set | frozenset | list | tuple) else {keys}
            for cached in [k for k in self._cache.keys() if k[0] in wanted]:  # noqa: SIM118 (no __iter__)
                self._cache.discard(cached)
            for key in wanted:
                self._cells.discard(key)  # type: ignore[arg-type]
        self.refresh()

    @property
    def current_key(self) -> K | None:
        return self.keys[self.cursor] if 0 <= self.cursor < len(self.keys) else None

    def locate(self, key: K) -> int | None:
        """The row of ``key`` among the keys shown (None: not shown)."""
        if self._index is None:
            self._index = {k: i for i, k in enumerate(self.keys)}
        return self._index.get(key)

    def move_to(self, key: K) -> bool:
        index = self.locate(key)
        if index is None:
            return False
        self.cursor = index
        self.scroll_to_cursor()
        return True

    # -- rendering ----------------------------------------------------------------------------

    def notify_style_update(self) -> None:
        # A theme switch: cached lines hold the old colours, so they go. A focus change
        # recolours only the cursor: the other lines stay (drawing them all again is what a
        # switch of tabs would cost).
        super().notify_style_update()
        seen = (
            self.rich_style,
            *(
                # (before the first styling there are none yet: a blank stands in)
                self.get_component_rich_style(c, default=Style())
                for c in sorted(self.COMPONENT_CLASSES)
                if c != "rowtable--cursor"
            ),
        )
        if seen != self._styles_seen:
            self._styles_seen = seen
            self._cache.clear()
            self._cells.clear()  # their colours are the old theme's too
        else:
            for cached in [k for k in self._cache.keys() if k[2]]:  # noqa: SIM118 (no __iter__)
                self._cache.discard(cached)
        self.refresh()

    def _columns_for(self, width: int) -> tuple[list[int], list[int]]:
        """(the visible columns' indexes, their widths) for ``width``."""
        if self._layout is not None and self._layout[0] == width:
            return self._layout[1], self._layout[2]
        shown = list(range(len(self.columns)))
        order = sorted(
            (i for i, c in enumerate(self.columns) if c.gives_way),
            key=lambda i: -self.columns[i].gives_way,
        )
        while True:
            fixed = sum(self.columns[i].width or 0 for i in shown) + len(shown) - 1
            flex = [i for i in shown if self.columns[i].width is None]
            room = (width - fixed) // max(1, len(flex)) if flex else width - fixed
            if room >= (self.FLEX_MIN if flex else 0) or not order:
                break
            shown.remove(order.pop(0))
        share = max(6, room) if flex else 0
        widths = [self.columns[i].width or share for i in shown]
        self._layout = (width, shown, widths)
        return shown, widths

    def _line(self, cells: Sequence[Text], width: int) -> Text:
        line = Text(no_wrap=True, overflow="ellipsis")
        if len(cells) == 1 and len(self.columns) > 1:  # one cell: a heading across the row
            line.append_text(cells[0])
            line.truncate(width, overflow="ellipsis", pad=True)
            return line
        shown, widths = self._columns_for(width)
        for n, (i, w) in enumerate(zip(shown, widths, strict=True)):
            if n:
                line.append(" ")
            piece = cells[i].copy() if i < len(cells) else Text("")
            piece.no_wrap = True
            piece.truncate(w, overflow="ellipsis", pad=True)
            line.append_text(piece)
        return line

    def _strip(self, text: Text, width: int, style: Style | None = None) -> Strip:
        # The row's own style first (the cursor, the header), then the widget's: what is set
        # on a segment wins, so the cursor shows and every other cell gets the theme's colours.
        # The widget's style as of its last styling (``rich_style`` walks the ancestors).
        base = self._styles_seen[0] if self._styles_seen else self.rich_style
        strip = Strip(list(text.render(self.app.console, end="")))
        if style is not None:
            strip = strip.apply_style(style)
        return strip.apply_style(base).crop_extend(0, width, base + style if style else base)

    def style_for(self, name: str) -> Style:
        # Only the foreground: a cell must not paint its own background over the cursor's.
        style = self.get_component_rich_style(f"rowtable--{name}")
        return Style(color=style.color, bold=style.bold, italic=style.italic, dim=style.dim)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width  # less the scrollbar, when there is one
        if y == 0:
            header = self._line([Text(c.title) for c in self.columns], width)
            return self._strip(header, width, self.get_component_rich_style("rowtable--header"))
        if not self.keys:
            if y == 1:
                return self._strip(Text(self.empty, style="italic"), width)
            return Strip.blank(width, self.rich_style)
        index = self.scroll_offset.y + y - 1
        if index >= len(self.keys):
            return Strip.blank(width, self.rich_style)
        key = self.keys[index]
        selected = index == self.cursor
        cache_key = (key, width, selected)
        cached = self._cache.get(cache_key)
        if cached is not None:
            return cached
        style = self.get_component_rich_style("rowtable--cursor") if selected else None
        cells = self._cells.get(key)
        if cells is None:
            try:
                cells = self.render_row(key)
            except (KeyError, RuntimeError):  # gone, or being folded on a worker: next time
                return self._strip(Text("…", style="dim"), width)
            self._cells.set(key, cells)
        line = self._line(cells, width)
        if selected:
            line.spans = []  # the cursor's colours alone, so nothing vanishes into them
        elif key in self.marked:
            line.stylize(self.style_for("marked"))
        strip = self._strip(line, width, style)
        self._cache.set(cache_key, strip)
        return strip

    def on_resize(self, event: events.Resize) -> None:
        self.virtual_size = Size(event.size.width, len(self.keys) + 1)
        # A tab shown again is resized to the width it had: its lines (kept by width) stay.
        width = event.size.width
        if width and width != self._width_seen:
            self._width_seen = width
            self._cache.clear()
            self._layout = None
        self.call_after_refresh(self.scroll_to_cursor)

    # -- moving -------------------------------------------------------------------------------

    def watch_cursor(self, old: int, new: int) -> None:
        # Nothing cached goes: a line is kept for the cursor on it and off it alike.
        self.scroll_to_cursor()
        self.refresh()
        self.post_message(self.Highlighted(self, self.current_key))

    def scroll_to_cursor(self) -> None:
        """Keep the cursor's row in view (the header takes the first line)."""
        visible = max(1, self.scrollable_content_region.height - 1)
        top = self.scroll_offset.y
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + visible:
            self.scroll_to(y=self.cursor - visible + 1, animate=False, immediate=True)

    def action_cursor(self, delta: int) -> None:
        if self.keys:
            self.cursor = max(0, min(len(self.keys) - 1, self.cursor + delta))

    def action_page(self, direction: int) -> None:
        self.action_cursor(direction * max(1, self.scrollable_content_region.height - 2))

    def action_edge(self, end: int) -> None:
        if self.keys:
            self.cursor = len(self.keys) - 1 if end else 0

    def action_select(self) -> None:
        key = self.current_key
        if key is not None:
            self.post_message(self.Selected(self, key))

    def on_click(self, event: events.Click) -> None:
        index = self.scroll_offset.y + event.y - 1
        if 0 <= index < len(self.keys):
            self.cursor = index
            if event.chain >= 2:
                self.action_select()


__all__ = ["Column", "RowTable"]
