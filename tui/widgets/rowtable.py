"""A table that renders only the rows on screen, keyed by id so the cursor survives updates.

Textual's DataTable builds every row up front (about 0.12 ms a row), which is seconds for an
inbox of 100,000 obligations. This one keeps the rows as data and renders a line when it is
shown (the line API), so a refresh or a key press costs the same at 100 rows or 100,000.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip


@dataclass(frozen=True)
class Column:
    title: str
    width: int | None  # None: takes what the others leave (at least 10)


# render_row(key, style) -> cells; ``style(name)`` is the theme's style for a component
# class name such as "critical", "blocking", "veto", "dim" or "new".
RowRenderer = Callable[[str, Callable[[str], Style]], Sequence[Text]]


class RowTable(ScrollView, can_focus=True):
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
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "up", show=False),
        Binding("down,j", "cursor(1)", "down", show=False),
        Binding("pageup", "page(-1)", show=False),
        Binding("pagedown", "page(1)", show=False),
        Binding("home,g", "edge(0)", "first", show=False),
        Binding("end,G", "edge(1)", "last", show=False),
        Binding("enter", "select", "open", show=False),
    ]

    cursor = reactive(0, repaint=False, init=False)

    class Highlighted(Message):
        def __init__(self, table: RowTable, key: str | None) -> None:
            super().__init__()
            self.table = table
            self.key = key

        @property
        def control(self) -> RowTable:
            return self.table

    class Selected(Message):
        def __init__(self, table: RowTable, key: str) -> None:
            super().__init__()
            self.table = table
            self.key = key

        @property
        def control(self) -> RowTable:
            return self.table

    def __init__(
        self,
        columns: Sequence[Column],
        render_row: RowRenderer,
        *,
        empty: str = "nothing here",
        **kw: object,
    ) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.columns = list(columns)
        self.render_row = render_row
        self.keys: list[str] = []
        self._index: dict[str, int] = {}
        self.marked: set[str] = set()
        self.empty = empty
        self._cache: dict[tuple[str, int, bool], Strip] = {}

    # -- data -------------------------------------------------------------------------------

    def set_rows(self, keys: Sequence[str], *, changed: bool = True) -> None:
        """Show ``keys`` in this order; the cursor stays on the row it was on when it can."""
        current = self.current_key
        self.keys = list(keys)
        self._index = {k: i for i, k in enumerate(self.keys)}
        if changed:
            self._cache.clear()
        self.virtual_size = Size(self.size.width, len(self.keys) + 1)
        if current is not None and current in self._index:
            self.set_reactive(RowTable.cursor, self._index[current])
        else:
            self.set_reactive(RowTable.cursor, min(self.cursor, max(0, len(self.keys) - 1)))
        self._scroll_to_cursor()
        self.refresh()
        self.post_message(self.Highlighted(self, self.current_key))

    def invalidate(self, key: str | None = None) -> None:
        """A row's content changed: render it again (all rows when ``key`` is None)."""
        if key is None:
            self._cache.clear()
        else:
            for cached in [k for k in self._cache if k[0] == key]:
                del self._cache[cached]
        self.refresh()

    @property
    def current_key(self) -> str | None:
        return self.keys[self.cursor] if 0 <= self.cursor < len(self.keys) else None

    def move_to(self, key: str) -> bool:
        index = self._index.get(key)
        if index is None:
            return False
        self.cursor = index
        return True

    # -- rendering ----------------------------------------------------------------------------

    def _widths(self, width: int) -> list[int]:
        fixed = sum(c.width or 0 for c in self.columns) + len(self.columns) - 1
        flex = [c for c in self.columns if c.width is None]
        share = max(10, (width - fixed) // max(1, len(flex))) if flex else 0
        return [c.width if c.width is not None else share for c in self.columns]

    def _line(self, cells: Sequence[Text], width: int) -> Text:
        line = Text(no_wrap=True, overflow="ellipsis")
        for i, (cell, w) in enumerate(zip(cells, self._widths(width), strict=False)):
            if i:
                line.append(" ")
            piece = cell.copy()
            piece.no_wrap = True
            piece.truncate(w, overflow="ellipsis", pad=True)
            line.append_text(piece)
        return line

    def _strip(self, text: Text, width: int, style: Style | None = None) -> Strip:
        # The row's own style first (the cursor, the header), then the widget's: what is set
        # on a segment wins, so the cursor shows and every other cell gets the theme's colours.
        base = self.rich_style
        strip = Strip(list(text.render(self.app.console, end="")))
        if style is not None:
            strip = strip.apply_style(style)
        return strip.apply_style(base).crop_extend(0, width, base + style if style else base)

    def style_for(self, name: str) -> Style:
        # Only the foreground: a cell must not paint its own background over the cursor's.
        style = self.get_component_rich_style(f"rowtable--{name}")
        return Style(color=style.color, bold=style.bold, italic=style.italic, dim=style.dim)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
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
        line = self._line(self.render_row(key, self.style_for), width)
        if selected:
            line.spans = []  # the cursor's colours alone, so nothing vanishes into them
        elif key in self.marked:
            line.stylize(self.style_for("marked"))
        strip = self._strip(line, width, style)
        if len(self._cache) > 4000:
            self._cache.clear()
        self._cache[cache_key] = strip
        return strip

    def on_resize(self, event: events.Resize) -> None:
        self.virtual_size = Size(event.size.width, len(self.keys) + 1)
        self._cache.clear()

    # -- moving -------------------------------------------------------------------------------

    def watch_cursor(self, old: int, new: int) -> None:
        for index in (old, new):
            if 0 <= index < len(self.keys):
                for cached in [k for k in self._cache if k[0] == self.keys[index]]:
                    del self._cache[cached]
        self._scroll_to_cursor()
        self.refresh()
        self.post_message(self.Highlighted(self, self.current_key))

    def _scroll_to_cursor(self) -> None:
        visible = max(1, self.size.height - 1)
        top = self.scroll_offset.y
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + visible:
            self.scroll_to(y=self.cursor - visible + 1, animate=False, immediate=True)

    def action_cursor(self, delta: int) -> None:
        if self.keys:
            self.cursor = max(0, min(len(self.keys) - 1, self.cursor + delta))

    def action_page(self, direction: int) -> None:
        self.action_cursor(direction * max(1, self.size.height - 2))

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


__all__ = ["Column", "RowTable", "Segment"]
