"""What the room shows and keeps, read only: every key, the readers' problems, and the
notifications log."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from ..messages import Notice
from ..render import plain
from ..widgets.footer import RoomFooter


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "dismiss", "close", id="help.close")
    ]

    def __init__(self, rows: list[tuple[str, str]]) -> None:
        super().__init__()
        self.rows = rows

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Keys", classes="dialog-title")
            # Two columns: a description that wraps stays beside its key.
            with VerticalScroll(classes="dialog-body"), Grid(classes="keys"):
                for key, what in self.rows:
                    yield Static(Text(key, style="bold", justify="right"), classes="key")
                    yield Static(Text(what))
        yield RoomFooter()

    def action_dismiss(self, result: None = None) -> None:  # type: ignore[override]
        self.dismiss(None)


class ProblemsScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "close", id="problems.close")
    ]

    def __init__(self, problems: list[str]) -> None:
        super().__init__()
        self.problems = problems

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(
                f"Problems the readers found ({len(self.problems)})", classes="dialog-title"
            )
            with VerticalScroll(classes="dialog-body"):
                if not self.problems:
                    yield Static("none: every line of every log read")
                for problem in self.problems[:500]:
                    yield Static(plain(problem))
            yield Static(
                Text("each is file:line: message; `regulator doctor` lists them too", style="dim")
            )
        yield RoomFooter()

    def action_close(self) -> None:
        self.dismiss(None)


NOTICE_MARK = {"error": "✖", "warning": "!", "information": "·"}


class NotificationsScreen(ModalScreen[None]):
    """Every notification of this room, newest first: what an act or a drive said, kept after
    its toast has gone."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,n", "close", "close", id="notifications.close")
    ]

    def __init__(self, notices: list[Notice]) -> None:
        super().__init__()
        self.notices = notices

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(f"Notifications ({len(self.notices)})", classes="dialog-title")
            with VerticalScroll(classes="dialog-body"):
                if not self.notices:
                    yield Static("none yet: what an act or a drive says is kept here")
                for notice in reversed(self.notices[-500:]):
                    line = Text.assemble(
                        (f"{NOTICE_MARK.get(notice.severity, '·')} {notice.at} ", "bold"),
                        (f"{notice.title}: " if notice.title else "", "bold"),
                    )
                    line.append_text(plain(notice.message))
                    yield Static(line, classes=f"notice -{notice.severity}")
            yield Static(Text("newest first · esc closes", style="dim"))
        yield RoomFooter()

    def action_close(self) -> None:
        self.dismiss(None)
