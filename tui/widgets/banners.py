"""The banners over the tabs: an instance held as a whole, and a session waiting for a person.

Each reads what the models keep as they fold (instance-wide vetoes, the questions asked through
the room with their deadlines), so showing them costs nothing per obligation. The waiting
banner counts down on its own one-second timer; both hide when there is nothing to say.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from ..model import InstanceModel
from ..render import one_line, plain


class Banner(Widget):
    DEFAULT_CSS = """
    Banner { height: auto; padding: 0 1; text-style: bold; color: $text; }
    """
    #: Bumped by the screen when any instance changed.
    version = reactive(0, init=False)

    def __init__(self, models: list[InstanceModel], **kw: Any) -> None:
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
        self._text = self.message()
        self.display = bool(self._text.plain)
        self.refresh(layout=True)

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

    def on_mount(self) -> None:
        super().on_mount()
        self.set_interval(1.0, self.update)

    def message(self) -> Text:
        waiting = sorted(
            ((m, w) for m in self.models for w in m.waiting_sessions()), key=lambda mw: mw[1][2]
        )
        if not waiting:
            return Text()
        m, (o, _i, left) = waiting[0]
        secs = int(left)
        return Text.assemble(
            ("⏳ a session is waiting: ", "bold"),
            plain(one_line(o.subject, m.redactor)),
            f" ({o.unit}) — {secs // 60}:{secs % 60:02d} left — w goes to it, a answers",
        )


__all__ = ["Banner", "VetoBanner", "WaitingBanner"]
