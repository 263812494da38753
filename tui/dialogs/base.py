"""The frame every dialog that acts shares: a title, a body, the refusal line, the buttons.

Each acts through the same core functions as the CLI (``regulator.rules.dispositions``), so the
same authority checks refuse the same things with the same words. A refusal is shown inside
the dialog, which stays open; nothing is written. A live refresh never closes a dialog or
loses what was typed; if the obligation is closed elsewhere meanwhile, the dialog says so and
stops accepting.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from regulator.protocol.errors import RegulatorError, message_of
from regulator.protocol.obligations import ObligationState
from regulator.protocol.vocab import TERMINAL_STATUSES
from regulator.rules.ledger import Actor, definition_label

from ..messages import Keep
from ..model import InstanceView
from ..render import one_line
from ..widgets.footer import RoomFooter


@dataclass(frozen=True)
class Done:
    """What a dialog did, for the toast: ``answered 3f2a… by alice (accepted)``."""

    message: str
    obligation_id: str


class ActDialog(ModalScreen[Done | None]):
    """The frame every dialog that acts shares: title, body, refusal line, buttons."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "cancel", id="dialog.cancel")
    ]
    TITLE_TEXT = "Obligation"

    def __init__(self, model: InstanceView, person: str, actor: Actor) -> None:
        super().__init__()
        self.model = model
        self.person = person
        # Provenance names the definition of the instance acted on, not the room's first one.
        self.actor = replace(actor, definition=definition_label(model.definition_root))
        self.redactor = model.redactor
        self.closed_elsewhere = False

    def title_text(self) -> str:
        return self.TITLE_TEXT

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(Text(self.title_text()), classes="dialog-title")
            with VerticalScroll(classes="dialog-body"):
                yield from self.body()
            yield Static("", id="closed-banner", classes="banner hidden")
            yield Static("", id="refusal", classes="refusal hidden")
            with Horizontal(classes="dialog-buttons"):
                yield from self.buttons()
        yield RoomFooter()

    def body(self) -> ComposeResult:
        yield Static("")

    def buttons(self) -> ComposeResult:
        yield Button("Cancel (esc)", id="cancel")

    def refuse(self, message: str) -> None:
        refusal = self.query_one("#refusal", Static)
        refusal.update(Text(f"✖ {message}"))
        refusal.remove_class("hidden")
        keep_refusal(self, message, f"{self.TITLE_TEXT.lower()} refused", self.unit_of())

    def unit_of(self) -> str | None:
        """The unit acted on, for the notifications log."""
        return None

    def clear_refusal(self) -> None:
        self.query_one("#refusal", Static).add_class("hidden")

    def instance_changed(self, _model: InstanceView) -> None:
        """The room read a change of an instance (``RoomApp.on_folded``)."""
        self.obligation_changed()

    def obligation_changed(self) -> None:
        """Called on a live refresh (a dialog on an obligation sees whether it was closed)."""

    def closed_by_someone(self, obligation_id: str) -> None:
        """The obligation acted on was closed by someone else: say so, and stop accepting."""
        state = self.model.log.obligations.get(obligation_id)
        if state is None or state.status not in TERMINAL_STATUSES or self.closed_elsewhere:
            return
        self.closed_elsewhere = True
        banner = self.query_one("#closed-banner", Static)
        banner.update(
            Text(
                f"{state.status} by {state.closed_by} at {(state.closed_at or '')[11:16]}:"
                " nothing more to do here"
            )
        )
        banner.remove_class("hidden")
        for button in self.query(Button):
            if button.id != "cancel":
                button.disabled = True

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(None)

    def act(self, run: object) -> None:
        """Run a core act; a refusal stays in the dialog, success dismisses it."""
        if self.closed_elsewhere:
            return
        try:
            done = run() if callable(run) else None
        except RegulatorError as exc:  # a refusal, corrupt state or a host failure: its words
            self.refuse(message_of(exc))
            return
        if isinstance(done, Done):
            self.dismiss(done)


class ObligationDialog(ActDialog):
    """A dialog on one obligation: its subject and unit in the title."""

    def __init__(
        self, model: InstanceView, obligation: ObligationState, person: str, actor: Actor
    ) -> None:
        super().__init__(model, person, actor)
        self.obligation = obligation

    def title_text(self) -> str:
        unit = f" (unit {self.obligation.unit})" if self.obligation.unit else ""
        return f"{self.TITLE_TEXT} — {one_line(self.obligation.subject, self.redactor)}{unit}"

    def unit_of(self) -> str | None:
        return self.obligation.unit

    def obligation_changed(self) -> None:
        """Called on a live refresh: the obligation may have been closed by someone else."""
        self.closed_by_someone(self.obligation.id)


def keep_refusal(screen: ModalScreen[Any], message: str, title: str, unit: str | None) -> None:
    """What a dialog refused, for the room's notifications log: sent up to the App, which
    keeps it (``RoomApp.keep``)."""
    screen.post_message(Keep(message, title, unit))
