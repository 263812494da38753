"""The banners over the tabs: an instance held as a whole, and a session waiting for a person.

Each reads what the models keep as they fold (instance-wide vetoes, the questions asked through
the room with their deadlines), so showing them costs nothing per obligation. The waiting
banner counts down on its own one-second timer, which runs only while it is shown; both hide
when there is nothing to say, and neither redraws (nor lays the screen out again) unless what
it says changed.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.reactive import reactive
from textual.timer import Timer
from textual.widget import Widget

from regulator.host.reach import where_asked

from ..model import InstanceView
from ..render import one_line, plain


class Banner(Widget):
    DEFAULT_CSS = """
    Banner { height: auto; padding: 0 1; text-style: bold; color: $text; }
    """
    #: Bumped by the screen when any instance changed.
    version = reactive(0, init=False)

    def __init__(self, models: list[InstanceView], **kw: Any) -> None:
        super().__init__(**kw)
        self.models = models
        self._text = Text()

    def message(self) -> Text:
        raise NotImplementedError

    def on_mount(self) -> None:
        self.update()

    def watch_version(self) -> None:
        self.update()

    def update(self) -> None:
        text = self.message()
        if text == self._text and self.display == bool(text.plain):
            return
        shown = bool(text.plain)
        same_length = text.cell_len == self._text.cell_len
        self._text = text
        if shown != self.display:
            self.display = shown  # shown or hidden: the screen is laid out again
        else:
            # A countdown's digits keep the height; a longer or shorter text may wrap anew.
            self.refresh(layout=not same_length)
        self.shown_changed(shown)

    def shown_changed(self, shown: bool) -> None:
        """Called after each change of what the banner says."""

    def render(self) -> Text:
        return self._text


class VetoBanner(Banner):
    DEFAULT_CSS = """
    VetoBanner { background: $error 30%; }
    """

    def message(self) -> Text:
        held = [(m, o) for m in self.models for o in m.instance_veto()]
        if not held:
            return Text()
        m, o = held[0]
        more = f" (+{len(held) - 1} more)" if len(held) > 1 else ""
        return Text.assemble(
            ("■ every dispatch is held by ", "bold"),
            f"{o.id[:8]}: ",
            plain(one_line(o.subject, m.redactor)),
            f" — owed to {o.consumer}{more}",
        )


class WaitingBanner(Banner):
    DEFAULT_CSS = """
    WaitingBanner { background: $warning 30%; }
    """

    def __init__(self, models: list[InstanceView], **kw: Any) -> None:
        super().__init__(models, **kw)
        self._ticking: Timer | None = None

    def shown_changed(self, shown: bool) -> None:
        # The countdown ticks only while there is one; a new question comes with a fold (and
        # a version), which shows the banner and starts the tick again.
        if shown and self._ticking is None:
            self._ticking = self.set_interval(1.0, self.update)
        elif not shown and self._ticking is not None:
            self._ticking.stop()
            self._ticking = None

    def message(self) -> Text:
        waiting = sorted(
            ((m, w) for m in self.models for w in m.waiting_sessions()), key=lambda mw: mw[1][2]
        )
        if not waiting:
            return Text()
        m, (o, _i, left) = waiting[0]
        secs = int(left)
        where = where_asked(m.channel_deliveries(o.id), m.clock())
        return Text.assemble(
            ("⏳ a session is waiting: ", "bold"),
            plain(one_line(o.subject, m.redactor)),
            f" ({o.unit}) — ",
            plain(one_line(f"{where} — ", m.redactor)) if where else "",
            f"{secs // 60}:{secs % 60:02d} left — w goes to it, a answers",
        )


__all__ = ["Banner", "VetoBanner", "WaitingBanner"]
