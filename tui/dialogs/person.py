"""Who is acting: the picker of the policy's people (at start, and on ``P``)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from ..widgets.footer import RoomFooter

NOBODY = ""
"""What the person picker returns for "look without acting" (``None`` is a cancel)."""


class PersonPicker(ModalScreen[str | None]):
    """Who is acting, when neither --as, REGULATOR_PERSON nor the OS user names someone.

    Dismissed with a name, with ``NOBODY`` for looking only, or with ``None`` when cancelled:
    the caller decides what a cancel means (at start: looking only; on ``P``: no change).
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "cancel", id="picker.cancel")
    ]

    def __init__(
        self,
        people: list[tuple[str, str]],
        reason: str,
        *,
        current: str | None = None,
        escape_means: str = "look without acting",
    ) -> None:
        super().__init__()
        self.people = people
        self.reason = reason
        self.current = current
        self.escape_means = escape_means

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Who is acting?", classes="dialog-title")
            yield Static(Text(self.reason, style="dim"))
            yield OptionList(
                *[
                    Option(Text.assemble((name, "bold"), f"  {grants}"), id=f"p-{i}")
                    for i, (name, grants) in enumerate(self.people)
                ],
                Option(Text("nobody: look without acting", style="italic"), id="nobody"),
                id="people",
            )
            yield Static(Text(f"enter picks · esc: {self.escape_means}", style="dim"))
        yield RoomFooter()

    def on_mount(self) -> None:
        names = [name for name, _ in self.people]
        if self.current in names:
            self.query_one("#people", OptionList).highlighted = names.index(self.current)

    @on(OptionList.OptionSelected, "#people")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        if event.option.id == "nobody":
            self.dismiss(NOBODY)
        else:
            self.dismiss(self.people[event.option_index][0])

    def action_cancel(self) -> None:
        self.dismiss(None)
