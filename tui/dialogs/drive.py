"""Driving a unit again: the question asked first (what regulator does not enforce of its
type, the scenario a scripted unit plays), and what the dispatch gate would refuse."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from regulator.host.loop import Loop
from regulator.host.sessions.script import ScriptAdapter, load_scenario
from regulator.protocol.errors import RegulatorError, message_of

from ..widgets.footer import RoomFooter
from .base import keep_refusal


class DriveConfirm(ModalScreen[bool]):
    """Drive the unit now under its contract in force, or leave it for later. A unit type with
    gates regulator does not enforce is named with them: driving accepts them for this run.

    A unit type whose sessions are scripted needs the scenario to play (as ``unit drive
    --script``): the dialog asks for its file, prefilled with the last one used. ``check`` is
    run when the person drives: it loads what was given and asks the dispatch gate; what it
    refuses is shown here, and the dialog stays open."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "later", "not now", id="drive.later"),
        Binding("d", "drive", "drive", id="drive.now"),
    ]

    def __init__(
        self,
        unit_id: str,
        version: int,
        unit_type: str = "",
        unenforced: list[str] | None = None,
        *,
        scenario: str | None = None,
        check: Callable[[str | None], str | None] | None = None,
    ) -> None:
        super().__init__()
        self.unit_id = unit_id
        self.version = version
        self.unit_type = unit_type
        self.unenforced = unenforced or []
        self.scenario = scenario
        self.check = check

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(
                Text(f"Drive unit {self.unit_id} under v{self.version}?"), classes="dialog-title"
            )
            yield Static(
                Text(
                    "Driving starts a new attempt (an agent session) now; not now leaves the unit"
                    " blocked until someone drives it."
                )
            )
            if self.unenforced:
                yield Static(
                    Text(
                        f"regulator does not enforce all that {self.unit_type} asks: "
                        f"{'; '.join(self.unenforced)}. Driving it accepts that for this run, "
                        "and the closeout's verdict records it."
                    ),
                    id="unenforced",
                )
            if self.scenario is not None:
                yield Static(
                    Text(
                        f"{self.unit_type} runs scripted sessions: the scenario file to play"
                        " (YAML, as `regulator unit drive --script FILE`); enter drives"
                    ),
                    classes="question",
                )
                yield Input(self.scenario, placeholder="path/to/scenario.yaml", id="scenario")
            yield Static("", id="refusal", classes="refusal hidden")
            with Horizontal(classes="dialog-buttons"):
                label = "Drive without them (d)" if self.unenforced else "Drive now (d)"
                yield Button(label, id="drive", variant="primary")
                yield Button("Not now (esc)", id="later")
        yield RoomFooter()

    def on_mount(self) -> None:
        if self.scenario is not None:
            field = self.query_one("#scenario", Input)
            field.cursor_blink = False
            field.focus()
        else:
            self.query_one("#later", Button).focus()

    def refuse(self, message: str) -> None:
        refusal = self.query_one("#refusal", Static)
        refusal.update(Text(f"✖ {message}"))
        refusal.remove_class("hidden")
        keep_refusal(self, message, f"drive {self.unit_id}", self.unit_id)

    @on(Input.Submitted, "#scenario")
    @on(Button.Pressed, "#drive")
    def action_drive(self) -> None:
        given = None
        if self.scenario is not None:
            given = self.query_one("#scenario", Input).value.strip()
        if given is not None and not given:
            self.refuse("give the scenario file to play")
            return
        refused = self.check(given) if self.check is not None else None
        if refused is not None:
            self.refuse(refused)
            return
        self.dismiss(True)

    def action_later(self) -> None:
        self.dismiss(False)

    @on(Button.Pressed, "#later")
    def _later(self) -> None:
        self.dismiss(False)


class _Everything:
    """Every model counts as available: a scripted session plays the model itself."""

    def __contains__(self, item: object) -> bool:
        return True


def needs_scenario(loop: Loop, unit_type: str) -> bool:
    """The unit type runs scripted sessions and the loop has no scenario for it yet."""
    spec = loop.workload.unit_types.get(unit_type)
    if spec is None or spec.session.adapter != "script":
        return False
    return unit_type not in loop.adapters and "script" not in loop.adapters


def use_scenario(loop: Loop, path: Path) -> None:
    """Play ``path`` for every unit type, as ``regulator unit drive --script`` does."""
    scenario = load_scenario(path)
    adapter = ScriptAdapter(scenario)
    loop.adapters = {**loop.adapters, "script": adapter}
    for unit_type in loop.workload.unit_types:
        loop.adapters[unit_type] = adapter
    loop.models = scenario.get("models") or _Everything()


def drive_refusal(loop: Loop, unit_id: str) -> str | None:
    """What the dispatch gate would refuse now, in one line (None: it may be driven)."""
    try:
        problems = loop.gate(loop.current_contract(unit_id))
    except RegulatorError as exc:
        return message_of(exc)
    if not problems:
        return None
    return "the drive is refused: " + "; ".join(problems)
