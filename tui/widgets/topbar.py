"""The top bar: who is acting, whether the view is live, how fresh, and how many problems.

What must survive a narrow terminal comes first in what is kept: the live or paused state and
the problem count; the person's grants give way, then the product name.
"""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget


class TopBar(Widget):
    DEFAULT_CSS = """
    TopBar { height: 1; background: $panel; color: $text; padding: 0 1; }
    """

    person: reactive[str | None] = reactive(None)
    grants = reactive("")
    paused = reactive(False)
    watching = reactive(True)
    as_of = reactive("")
    problems = reactive(0)
    reading = reactive(0)  # instances still being read for the first time

    def status(self) -> Text:
        if self.reading:
            live = f"◌ reading {self.reading} instance(s)…"
        elif self.paused:
            live = "⏸ paused (p resumes)"
        else:
            live = "● live" if self.watching else "○ not watching"
        text = Text(live, style="bold" if self.paused else "")
        if self.as_of:
            text.append(f" · as of {self.as_of}")
        text.append(" · ")
        if self.problems:
            text.append(f"{self.problems} problem(s) (!)", style="bold red")
        else:
            text.append("no problems")
        return text

    def render(self) -> Text:
        status = self.status()
        width = max(0, self.size.width)
        name = (self.person or "nobody", "bold")
        grants = (f" ({self.grants})" if self.grants else "") if self.person else " (looking only)"
        for who in (
            Text.assemble(("regulator ", "bold"), "· acting as ", name, grants),
            Text.assemble("acting as ", name, grants),
            Text.assemble("acting as ", name),
            Text.assemble(name),
        ):
            if who.cell_len + 5 + status.cell_len <= width or who.plain == name[0]:
                break
        line = who + Text("  ·  ") + status
        if line.cell_len > width:  # the status first, then as much of the person as fits
            line = status + Text("  ·  ") + who
        line.truncate(width, overflow="ellipsis")
        return line


__all__ = ["TopBar"]
