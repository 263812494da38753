"""Quitting while a session waits on a person: asked first, and staying is the default."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from ..widgets.footer import RoomFooter


class QuitConfirm(ModalScreen[bool]):
    """Quitting while a session waits on a person: asked first, and staying is the default."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "stay", "stay", id="quit.stay")]

    def __init__(self, waiting: list[Text]) -> None:
        super().__init__()
        self.waiting = waiting

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Quit while a session waits for an answer?", classes="dialog-title")
            with VerticalScroll(classes="dialog-body"):
                for line in self.waiting:
                    yield Static(line, classes="countdown")
                yield Static(
                    Text(
                        "The session is waiting in ask_human for a person. If you quit, nobody"
                        " here answers it: when it times out, its attempt pauses and the"
                        " question stays open."
                    ),
                    classes="question",
                )
            yield Static(
                Text(
                    "enter or esc stays · to quit, tab to Quit anyway and press enter", style="dim"
                )
            )
            with Horizontal(classes="dialog-buttons"):
                yield Button("Stay (esc)", id="stay", variant="primary")
                yield Button("Quit anyway", id="quit", variant="error")
        yield RoomFooter()

    def on_mount(self) -> None:
        self.query_one("#stay", Button).focus()

    def action_stay(self) -> None:
        self.dismiss(False)

    @on(Button.Pressed, "#stay")
    def _stay(self) -> None:
        self.dismiss(False)

    @on(Button.Pressed, "#quit")
    def _quit(self) -> None:
        self.dismiss(True)
