"""What a part shows while its data is still being read: a still "reading…", not a spinner.

Textual's loading indicator redraws sixteen times a second; the room's tables show it while a
first read runs, and those redraws took the interpreter from the read they were waiting for.
"""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget


class Reading(Widget):
    """Covers a part while it is read (``App.get_loading_widget``); nothing in it moves."""

    DEFAULT_CSS = """
    Reading {
        width: 100%;
        height: 100%;
        min-height: 1;
        content-align: center middle;
        color: $primary;
        text-style: not reverse;
    }
    Reading.-textual-loading-indicator {
        layer: _loading;
        background: $boost;
        dock: top;
    }
    """

    def render(self) -> Text:
        return Text("◌ reading…", style="italic")


__all__ = ["Reading"]
