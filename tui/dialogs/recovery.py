"""Acting on what a unit waits on: a replan (the contract edited in ``$EDITOR``, then a
reason) and a remediation (a note, and a command that must pass), with the checks the core
makes before either."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult, SuspendNotSupported
from textual.widgets import Button, Input, Static

from regulator.host.loop import Loop, RemediationFailed, ReplanRefused
from regulator.protocol.entry import load_record
from regulator.protocol.errors import RegulatorError, message_of
from regulator.protocol.execution import WorkContract
from regulator.protocol.obligations import ObligationState
from regulator.protocol.vocab import TERMINAL_STATUSES
from regulator.rules.authority import check_disposition_authority, owed_to_s5
from regulator.rules.execution import contract_changes
from regulator.rules.ledger import Actor
from regulator.rules.recovery import RECOVERY_DECISION_CONCERN, waiting_on

from ..model import InstanceModel, InstanceView
from ..render import one_line, plain
from .base import ActDialog, Done, ObligationDialog


def waits_on(model: InstanceView, obligation: ObligationState) -> str | None:
    """The recovery action (``replan``, ``remediate``, …) this obligation holds its unit on."""
    if obligation.unit is None or obligation.concern != RECOVERY_DECISION_CONCERN:
        return None
    if obligation.status in TERMINAL_STATUSES or not isinstance(model, InstanceModel):
        return None  # a remote instance's decisions are not carried by its stream yet
    try:
        with model.lock:
            decisions = model.store.decisions(obligation.unit)
            waiting = waiting_on(model.log, decisions, obligation.unit)
    except RegulatorError:  # a decisions file that does not read: offer nothing
        return None
    if waiting is None or waiting.obligation.id != obligation.id:
        return None
    return waiting.action


def recovery_refusal(
    model: InstanceView,
    obligation: ObligationState | None,
    person: str,
    actor: Actor,
    disposition: str,
) -> str | None:
    """What the core would refuse (the same check ``Loop.replan``/``remediate`` make), or None.
    With no obligation waiting (a replan of a unit that spent its attempts), the check is made
    at ``blocking``, as the loop makes it."""
    policy = model.interaction_policy()
    if policy is None:
        return "the interaction policy does not load: nobody may disposition"
    s5 = obligation is not None and owed_to_s5(model.log.obligations, obligation, policy)
    return check_disposition_authority(
        policy,
        person,
        severity=obligation.severity if obligation is not None else "blocking",
        disposition=disposition,
        s5=s5,
        os_user=actor.os_user,
    )


def contract_text(contract: WorkContract) -> str:
    return json.dumps(contract.to_json_dict(), indent=2, ensure_ascii=False) + "\n"


def edit_contract(app: App[None], contract: WorkContract) -> tuple[WorkContract | None, str]:
    """Open ``$VISUAL``/``$EDITOR`` on the contract; the edited contract, or None and why.

    The file is a temporary copy: nothing is written to the instance here. A file that does not
    read is kept, so the edits are not lost, and its path is in the message.
    """
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not editor:
        return None, "set $EDITOR (or $VISUAL) to edit the contract"
    try:
        command = shlex.split(editor)
    except ValueError as exc:
        return None, f"$EDITOR: {exc}"
    handle, name = tempfile.mkstemp(
        prefix=f"{contract.unit_id}.v{contract.version}.", suffix=".json"
    )
    path = Path(name)
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(contract_text(contract))

    def run() -> int:
        return subprocess.run([*command, str(path)], check=False).returncode

    try:
        try:
            with app.suspend():
                code = run()
        except SuspendNotSupported:  # no terminal to hand over (headless): run it as it is
            code = run()
    except OSError as exc:
        path.unlink(missing_ok=True)
        return None, f"$EDITOR {command[0]}: {exc.strerror or exc}"
    if code != 0:
        path.unlink(missing_ok=True)
        return None, f"$EDITOR exited {code}: nothing replanned"
    raw = path.read_bytes()
    if raw.decode("utf-8", "replace") == contract_text(contract):
        path.unlink(missing_ok=True)
        return None, "the contract is unchanged: nothing replanned"
    try:
        edited = load_record(WorkContract, raw, label=str(path))
    except ValueError as exc:
        message = str(exc).splitlines()[0] if str(exc) else "does not read"
        return None, message if str(path) in message else f"{path}: {message}"
    path.unlink(missing_ok=True)
    return edited, ""


class ReplanDialog(ActDialog):
    """The edited contract's changes, and the reason for the replan (typed, never defaulted).

    ``obligation``: the replan decision the unit waits on, resolved as ``replan``; None when
    nothing waits (the unit spent its attempts, and a new version is how it goes on)."""

    TITLE_TEXT = "Replan"

    def __init__(
        self,
        model: InstanceView,
        obligation: ObligationState | None,
        person: str,
        actor: Actor,
        *,
        loop: Loop,
        current: WorkContract,
        edited: WorkContract,
    ) -> None:
        super().__init__(model, person, actor)
        self.obligation = obligation
        self.loop = loop
        self.current = current
        self.edited = edited
        self.refusal = recovery_refusal(model, obligation, person, self.actor, "replan")

    def title_text(self) -> str:
        o = self.obligation
        if o is None:
            return f"Replan — unit {self.current.unit_id}"
        return f"Replan — {one_line(o.subject, self.redactor)} (unit {self.current.unit_id})"

    def obligation_changed(self) -> None:
        if self.obligation is not None:
            self.closed_by_someone(self.obligation.id)

    def unit_of(self) -> str | None:
        return self.current.unit_id

    def body(self) -> ComposeResult:
        old = self.current
        yield Static(
            Text(f"{old.id}: v{old.version} → v{old.version + 1}, written as a new version")
        )
        changes = contract_changes(old, self.edited)
        lines = "\n".join(f"  {c}" for c in changes) if changes else "  (no decision changes)"
        yield Static(plain(lines, self.redactor), id="replan-changes")
        if self.refusal is not None:
            yield Static(Text(f"✖ {self.refusal}"), id="authority", classes="refusal")
        yield Input(placeholder="why the plan changes (required)", id="reason")

    def buttons(self) -> ComposeResult:
        yield Button("Replan", id="replan", variant="primary", disabled=self.refusal is not None)
        yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        reason = self.query_one("#reason", Input)
        reason.cursor_blink = False
        reason.focus()

    @on(Input.Submitted, "#reason")
    @on(Button.Pressed, "#replan")
    def _replan(self) -> None:
        if self.refusal is not None:
            self.refuse(self.refusal)
            return
        reason = self.query_one("#reason", Input).value
        if not reason.strip():
            self.query_one("#reason", Input).add_class("-invalid")
            self.refuse("a replan needs a reason")
            return
        if self.closed_elsewhere:
            return
        unit_id = self.current.unit_id
        try:
            done = self.loop.replan(unit_id, self.edited, self.person, self.actor, reason=reason)
        except ReplanRefused as exc:
            self.refuse(
                "the replan gate refuses it; nothing is written:\n"
                + "\n".join(f"  {p}" for p in exc.problems)
            )
            return
        except RegulatorError as exc:
            self.refuse(message_of(exc))
            return
        new = done.contract
        self.dismiss(
            Done(
                f"unit {unit_id}: {new.id} v{new.version} replaces v{done.predecessor.version}",
                self.obligation.id if self.obligation is not None else "",
            )
        )


class RemediateDialog(ObligationDialog):
    """What was remediated (a note, required) and optionally a command that must pass."""

    TITLE_TEXT = "Remediate"

    def __init__(
        self,
        model: InstanceView,
        obligation: ObligationState,
        person: str,
        actor: Actor,
        *,
        loop: Loop,
    ) -> None:
        super().__init__(model, obligation, person, actor)
        self.loop = loop
        self.refusal = recovery_refusal(model, obligation, person, self.actor, "fixed")
        self.running = False

    def body(self) -> ComposeResult:
        o = self.obligation
        yield Static(Text(f"{o.severity} · owed to {o.consumer} · recorded as fixed"))
        if o.question:
            yield Static(plain(o.question, self.redactor), classes="question")
        if self.refusal is not None:
            yield Static(Text(f"✖ {self.refusal}"), id="authority", classes="refusal")
        yield Input(placeholder="what was remediated (required)", id="note")
        yield Input(
            placeholder="a command that shows it, run in the unit's worktree (optional)",
            id="command",
        )
        yield Static("", id="remediation-output", classes="hidden")

    def buttons(self) -> ComposeResult:
        yield Button(
            "Record and drive", id="remediate", variant="primary", disabled=self.refusal is not None
        )
        yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        for widget in self.query(Input):
            widget.cursor_blink = False
        self.query_one("#note", Input).focus()

    @on(Input.Submitted, "#note")
    @on(Input.Submitted, "#command")
    @on(Button.Pressed, "#remediate")
    def _remediate(self) -> None:
        if self.running or self.closed_elsewhere:
            return
        if self.refusal is not None:
            self.refuse(self.refusal)
            return
        note = self.query_one("#note", Input).value
        if not note.strip():
            self.query_one("#note", Input).add_class("-invalid")
            self.refuse("say what was remediated")
            return
        typed = self.query_one("#command", Input).value
        try:
            command = shlex.split(typed) if typed.strip() else None
        except ValueError as exc:
            self.refuse(f"command: {exc}")
            return
        self.clear_refusal()
        self.query_one("#remediation-output", Static).add_class("hidden")
        self.running = True
        self.query_one("#remediate", Button).disabled = True
        if command:
            self.query_one("#refusal", Static).update(Text(f"running {' '.join(command)} …"))
            self.query_one("#refusal", Static).remove_class("hidden")
        self._run(note, command)

    @work(thread=True, exclusive=True, group="remediate")
    def _run(self, note: str, command: list[str] | None) -> None:
        unit_id = self.obligation.unit or ""
        try:
            self.loop.remediate(unit_id, self.person, self.actor, note, run=command)
        except RemediationFailed as exc:
            self.app.call_from_thread(self._failed, message_of(exc), exc.output)
            return
        except RegulatorError as exc:
            self.app.call_from_thread(self._failed, message_of(exc), "")
            return
        done = Done(f"{self.obligation.id[:8]} remediated by {self.person}", self.obligation.id)
        self.app.call_from_thread(self.dismiss, done)

    def _failed(self, message: str, output: str) -> None:
        self.running = False
        self.query_one("#remediate", Button).disabled = False
        self.refuse(message)
        if output:
            shown = self.query_one("#remediation-output", Static)
            shown.update(plain("\n".join(output.splitlines()[-20:]), self.redactor))
            shown.remove_class("hidden")
