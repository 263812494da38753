"""The dialogs: answer, resolve, acknowledge, escalate — and help, problems, who is acting.

Each acts through the same core functions as the CLI (``regulator.rules.dispositions``), so the
same authority checks refuse the same things with the same words. A refusal is shown inside
the dialog, which stays open; nothing is written. A live refresh never closes a dialog or
loses what was typed; if the obligation is closed elsewhere meanwhile, the dialog says so and
stops accepting.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import events, on, work
from textual.app import App, ComposeResult, SuspendNotSupported
from textual.binding import Binding, BindingType
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from regulator.host.loop import Loop, RemediationFailed, ReplanRefused
from regulator.host.sessions.script import ScriptAdapter, load_scenario
from regulator.protocol.entry import load_record
from regulator.protocol.errors import RegulatorError, message_of
from regulator.protocol.execution import WorkContract
from regulator.protocol.obligations import ObligationState
from regulator.protocol.vocab import CONSUMERS, DISPOSITIONS, TERMINAL_STATUSES
from regulator.rules.answers import disposition_for_answer
from regulator.rules.authority import check_disposition_authority, owed_to_s5
from regulator.rules.dispositions import addressee_refusal
from regulator.rules.execution import contract_changes
from regulator.rules.ledger import Actor, definition_label
from regulator.rules.recovery import RECOVERY_DECISION_CONCERN, waiting_on
from regulator.views.words import CONSUMER_ROLE, DISPOSITION_MEANS

from .messages import Notice

if TYPE_CHECKING:
    from .app import RoomApp
from .model import AckAct, AnswerAct, EscalateAct, InstanceModel, InstanceView, ResolveAct
from .render import one_line, plain
from .widgets.footer import RoomFooter


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
        _keep(self, message, f"{self.TITLE_TEXT.lower()} refused", self.unit_of())

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


def _keep(screen: ModalScreen[Any], message: str, title: str, unit: str | None) -> None:
    """What a dialog refused, kept in the room's notifications log (``RoomApp.keep``)."""
    keep = getattr(screen.app, "keep", None)
    if keep is not None:
        keep(message, title=title, severity="error", unit=unit)


def _question_body(model: InstanceView, obligation: ObligationState) -> ComposeResult:
    redactor = model.redactor
    interaction = model.interaction(obligation.id)
    request = interaction.request if interaction is not None else None
    if request is not None:
        yield Static(plain(request.question, redactor), classes="question")
        if request.action:
            yield Static(
                Text("A yes authorizes: ", style="bold") + plain(request.action, redactor),
                classes="authorizes",
            )
        if request.evidence:
            yield Static(
                Text("Evidence: ")
                + plain(", ".join(f"{e.class_} {e.ref}" for e in request.evidence), redactor),
                classes="evidence",
            )
        attempt = f", attempt {request.attempt}" if request.attempt else ""
        yield Static(
            Text(
                f"asked by {request.raised_by}"
                f" at {request.raised_at[:19].replace('T', ' ')}{attempt}",
                style="dim",
            )
        )
    elif obligation.question:
        yield Static(plain(obligation.question, redactor), classes="question")


class AnswerDialog(ObligationDialog):
    """An answer to a unit's question: one widget per kind, and what it will be recorded as."""

    # No answer rides on a default key: a consent or uat is answered only by ctrl+y / ctrl+n or
    # by pressing one of its buttons; Enter in its note field answers nothing.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "cancel", id="dialog.cancel"),
        Binding("ctrl+s", "submit", "answer", id="answer.submit"),
        Binding("ctrl+y", "yes", "yes", id="answer.yes"),
        Binding("ctrl+n", "no", "no", id="answer.no"),
    ]

    def __init__(
        self, model: InstanceView, obligation: ObligationState, person: str, actor: Actor
    ) -> None:
        super().__init__(model, obligation, person, actor)
        interaction = model.interaction(obligation.id)
        self.request = interaction.request if interaction is not None else None
        self.kind = self.request.kind if self.request is not None else "clarification"

    @property
    def TITLE_TEXT(self) -> str:  # type: ignore[override]
        return {
            "consent": "Consent",
            "uat": "Acceptance",
            "recap": "Recap",
            "choice": "Choice",
        }.get(self.kind, "Question")

    def title_text(self) -> str:
        subject = self.request.subject if self.request is not None else self.obligation.subject
        unit = f" (unit {self.obligation.unit})" if self.obligation.unit else ""
        return f"{self.TITLE_TEXT} — {one_line(subject, self.redactor)}{unit}"

    def body(self) -> ComposeResult:
        yield from _question_body(self.model, self.obligation)
        yield Static("", id="countdown", classes="countdown hidden")
        if self.kind == "choice" and self.request is not None and self.request.options:
            yield OptionList(
                *[
                    Option(Text(f"{i}. ") + plain(o, self.redactor), id=f"opt-{i - 1}")
                    for i, o in enumerate(self.request.options, start=1)
                ],
                id="options",
            )
            # A note travels with the option picked, as with a consent's.
            yield Input(placeholder="a note (optional): it is recorded with the answer", id="note")
        elif self.yes_no:
            placeholder = (
                "a reason, if you refuse (optional): it is recorded with the answer"
                if self.kind == "consent"
                else "a note (optional): it is recorded with the answer"
            )
            yield Input(placeholder=placeholder, id="note")
        else:
            yield Input(placeholder="your answer", id="answer")
        yield Static("", id="recorded-as", classes="recorded-as")

    @property
    def yes_no(self) -> bool:
        return self.kind in ("consent", "uat")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # The footer shows only the keys that answer this kind of question.
        if action in ("yes", "no"):
            return self.yes_no
        if action == "submit":
            return not self.yes_no
        return True

    def buttons(self) -> ComposeResult:
        # The refusal comes first: Tab out of the note lands on it, never on the authorization.
        if self.kind == "consent":
            yield Button("No, refuse (ctrl+n)", id="no", variant="error")
            yield Button("Yes, authorize (ctrl+y)", id="yes", variant="success")
        elif self.kind == "uat":
            yield Button("Rejected (ctrl+n)", id="no", variant="error")
            yield Button("Verified (ctrl+y)", id="yes", variant="success")
        else:
            yield Button("Answer (enter)", id="submit", variant="primary")
        yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        self._show_recorded_as()
        self._tick()
        self.set_interval(1.0, self._tick)
        for widget in self.query(Input):
            widget.cursor_blink = False
        if self.yes_no:
            self.query_one("#note", Input).focus()
        elif self.query("#options"):
            # Nothing is highlighted at first, so a stray Enter picks nothing.
            options = self.query_one("#options", OptionList)
            options.highlighted = None
            options.focus()
        else:
            self.query_one("#answer", Input).focus()

    def _tick(self) -> None:
        waiting = [w for w in self.model.waiting_sessions() if w[0].id == self.obligation.id]
        countdown = self.query_one("#countdown", Static)
        if waiting:
            left = int(waiting[0][2])
            countdown.update(
                Text(
                    "⏳ the unit's session is waiting for this answer:"
                    f" {left // 60}:{left % 60:02d} left"
                )
            )
            countdown.remove_class("hidden")
        else:
            countdown.add_class("hidden")

    def _answer_text(self) -> str | None:
        if self.kind == "choice":
            options = self.query_one("#options", OptionList)
            if options.highlighted is None or self.request is None or not self.request.options:
                return None
            return self.request.options[options.highlighted]
        if self.kind in ("consent", "uat"):
            return None
        return self.query_one("#answer", Input).value

    def _show_recorded_as(self, answer: str | None = None) -> None:
        label = self.query_one("#recorded-as", Static)
        if self.yes_no:
            yes = "accepted" if self.kind == "consent" else "verified"
            label.update(
                Text(
                    f"ctrl+y answers yes (recorded as {yes}); ctrl+n answers no (rejected),"
                    " each with your note. Enter answers nothing; esc closes without answering."
                )
            )
        elif self.kind == "choice":
            text = self._answer_text()
            label.update(
                Text(f"enter answers: {one_line(text, self.redactor)} (recorded as fixed)")
                if text
                else Text("pick an option (↑ ↓ or its number), then enter", style="dim")
            )
        else:
            text = answer if answer is not None else self._answer_text()
            if text:
                label.update(
                    Text(f"will be recorded as: {disposition_for_answer(self.kind, text)}")
                )
            else:
                label.update(Text("an empty answer is no answer: nothing is recorded", style="dim"))

    @on(Input.Changed, "#answer")
    def _typed(self, event: Input.Changed) -> None:
        self.clear_refusal()
        self._show_recorded_as(event.value)

    @on(OptionList.OptionHighlighted, "#options")
    def _picked(self) -> None:
        self._show_recorded_as()

    @on(Input.Submitted, "#answer")
    @on(OptionList.OptionSelected, "#options")
    @on(Button.Pressed, "#submit")
    def action_submit(self) -> None:
        text = self._answer_text()
        if self.kind == "choice" and not text:
            self.refuse("pick an option first: ↑ ↓ or its number, then enter")
            return
        if not text or not text.strip():
            self.refuse("an answer cannot be empty: silence is not an answer")
            answer_input = self.query("#answer")
            if answer_input:
                answer_input.first().add_class("-invalid")
            return
        note = None
        if self.kind == "choice" and self.query("#note"):
            note = self.query_one("#note", Input).value.strip() or None
        self._send(text, note=note)

    def on_key(self, event: events.Key) -> None:
        # A choice's number highlights that option; Enter still has to answer it.
        # ASCII digits only: "²" or "٣" is a digit to str.isdigit, and int() fails on the one or
        # reads the other as 3.
        if self.kind != "choice":
            return
        options = self.query("#options")
        if not options:
            return
        option_list = options.first(OptionList)
        if self.focused is not option_list:
            return  # typing in the note: its digits are the note's
        if event.key == "enter" and option_list.highlighted is None:
            # Nothing picked: Enter answers nothing, and says so.
            self.refuse("pick an option first: ↑ ↓ or its number, then enter")
            event.stop()
            return
        key = event.character
        if not key or not (key.isascii() and key.isdigit()):
            return
        index = int(key) - 1
        if 0 <= index < option_list.option_count:
            option_list.highlighted = index
            event.stop()

    @on(Input.Submitted, "#note")
    def _enter_in_note(self) -> None:
        if self.kind == "choice":  # Enter in a choice's note answers with the option picked
            self.action_submit()
            return
        yes = "authorize" if self.kind == "consent" else "verify"
        self.refuse(
            f"Enter answers nothing here: ctrl+y to {yes}, ctrl+n to refuse, with your note"
        )

    def action_yes(self) -> None:
        if self.yes_no:
            self._yes_no(True)

    def action_no(self) -> None:
        if self.yes_no:
            self._yes_no(False)

    @on(Button.Pressed, "#yes")
    def _yes(self) -> None:
        self._yes_no(True)

    @on(Button.Pressed, "#no")
    def _no(self) -> None:
        self._yes_no(False)

    def _yes_no(self, yes: bool) -> None:
        # The answer is the bare word; what was typed travels beside it as its note.
        note = self.query_one("#note", Input).value.strip()
        self._send("yes" if yes else "no", note=note or None)

    def _send(self, text: str, note: str | None = None) -> None:
        policy = self.model.interaction_policy()
        if policy is None and not self.model.remote:  # the remote host decides
            self.refuse("the interaction policy does not load: nobody may answer")
            return

        def run() -> Done:
            done = self.model.acts.answer(
                AnswerAct(self.obligation.id, self.person, self.actor, text, note=note)
            )
            return Done(
                f"{done.kind} {self.obligation.id[:8]} answered by {self.person}"
                f" ({done.disposition})",
                self.obligation.id,
            )

        self.act(run)


class ResolveDialog(ObligationDialog):
    TITLE_TEXT = "Resolve"

    def body(self) -> ComposeResult:
        o = self.obligation
        yield Static(Text(f"{o.severity} · {o.concern} · owed to {o.consumer}"))
        if o.question:
            yield Static(plain(o.question, self.redactor), classes="question")
        policy = self.model.interaction_policy()
        # S5's to decide also when it took over from an S5 obligation someone moved without
        # the right to (the core refuses it; the dialog must not offer it either).
        s5 = policy is not None and owed_to_s5(self.model.log.obligations, o, policy)
        options: list[Option] = []
        self.allowed: list[str] = []
        blanket: str | None = None
        if policy is None:  # a remote host decides there: offer every disposition
            if not self.model.remote:
                blanket = "the interaction policy does not load: nobody may disposition"
        else:
            blanket = check_disposition_authority(
                policy,
                self.person,
                severity=o.severity,
                s5=s5,
                os_user=self.actor.os_user,
            )
        for d in DISPOSITIONS:
            reason = blanket
            if reason is None and policy is not None:
                reason = check_disposition_authority(
                    policy,
                    self.person,
                    severity=o.severity,
                    disposition=d,
                    s5=s5,
                    os_user=self.actor.os_user,
                )
            means = DISPOSITION_MEANS.get(d, "")
            if reason is None:
                self.allowed.append(d)
                options.append(
                    Option(Text.assemble((f"{d:<19} ", "bold"), (means, "italic")), id=d)
                )
            else:
                options.append(Option(Text(f"{d} — {reason}", style="dim"), id=d, disabled=True))
        if blanket is not None:
            yield Static(Text(f"✖ {blanket}"), classes="refusal")
        yield OptionList(*options, id="dispositions")
        yield Input(placeholder="rationale (required)", id="rationale")

    def buttons(self) -> ComposeResult:
        yield Button("Resolve", id="resolve", variant="primary", disabled=not self.allowed)
        yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        for widget in self.query(Input):
            widget.cursor_blink = False
        options = self.query_one("#dispositions", OptionList)
        if self.allowed:
            options.highlighted = DISPOSITIONS.index(self.allowed[0])
        options.focus()

    @on(Input.Submitted, "#rationale")
    @on(Button.Pressed, "#resolve")
    def _resolve(self) -> None:
        options = self.query_one("#dispositions", OptionList)
        if options.highlighted is None:
            self.refuse("pick a disposition")
            return
        disposition = DISPOSITIONS[options.highlighted]
        rationale = self.query_one("#rationale", Input).value
        if not rationale.strip():
            self.query_one("#rationale", Input).add_class("-invalid")
            self.refuse("a disposition needs a rationale")
            return
        policy = self.model.interaction_policy()
        if policy is None and not self.model.remote:  # the remote host decides
            return

        def run() -> Done:
            self.model.acts.resolve(
                ResolveAct(
                    self.obligation.id,
                    self.person,
                    self.actor,
                    disposition=disposition,
                    rationale=rationale,
                )
            )
            return Done(
                f"{self.obligation.id[:8]} resolved by {self.person} as {disposition}",
                self.obligation.id,
            )

        self.act(run)


class AcknowledgeDialog(ObligationDialog):
    TITLE_TEXT = "Acknowledge"

    def body(self) -> ComposeResult:
        yield Static(Text("Seen by someone who may handle it: not agreement, and the veto stands."))
        yield Input(placeholder="a note (optional)", id="note")

    def buttons(self) -> ComposeResult:
        yield Button("Acknowledge", id="ack", variant="primary")
        yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        note = self.query_one("#note", Input)
        note.cursor_blink = False
        note.focus()

    @on(Input.Submitted, "#note")
    @on(Button.Pressed, "#ack")
    def _ack(self) -> None:
        policy = self.model.interaction_policy()
        if policy is None and not self.model.remote:  # the remote host decides
            return
        note = self.query_one("#note", Input).value.strip() or None

        def run() -> Done:
            self.model.acts.acknowledge(AckAct(self.obligation.id, self.person, self.actor, note))
            return Done(
                f"{self.obligation.id[:8]} acknowledged by {self.person}", self.obligation.id
            )

        self.act(run)


class EscalateDialog(ObligationDialog):
    """Hand the obligation to another consumer: each shown as a role, with the people of the
    policy who may decide it there, then to one person (owed to ``human``, addressed to them)
    for each person the policy lets decide it; on success the dialog closes and the room says
    the successor (kept in the notifications log)."""

    TITLE_TEXT = "Escalate"

    def holders(self, consumer: str) -> str:
        """Who of the policy's people may decide this obligation once it is owed to
        ``consumer`` (the grant reaching its severity; for S5, acting as S5)."""
        policy = self.model.interaction_policy()
        if policy is None:
            return "the policy does not load"
        severity = self.obligation.severity
        names = [
            p.name
            for p in policy.people
            if check_disposition_authority(
                policy, p.name, severity=severity, s5=consumer == "S5", os_user=None
            )
            is None
        ]
        return ", ".join(names) if names else f"nobody in the policy may decide it at {severity}"

    def people(self) -> list[str]:
        """The people this obligation may be escalated to by name: those the policy lets
        disposition it at its severity (the check the escalation itself makes)."""
        policy = self.model.interaction_policy()
        if policy is None:  # a remote instance's people are its own policy's: none offered
            return []
        severity = self.obligation.severity
        return [
            p.name for p in policy.people if addressee_refusal(policy, p.name, severity) is None
        ]

    def body(self) -> ComposeResult:
        yield Static(
            Text(
                f"Owed to {self.model.owed_to(self.obligation)} now."
                " A successor is opened for the consumer or the person you pick;"
                " this one closes as escalated."
            )
        )
        consumers = [c for c in CONSUMERS if c != self.obligation.consumer]
        self.consumers = consumers
        # What each option escalates to: (consumer, the one person or None).
        self.targets: list[tuple[str, str | None]] = [(c, None) for c in consumers]
        self.targets += [("human", name) for name in self.people()]
        yield OptionList(
            *[
                Option(
                    Text.assemble(
                        (f"{c:<6}", "bold"),
                        (CONSUMER_ROLE.get(c, ""), "italic"),
                        (f" — may decide: {self.holders(c)}", "dim"),
                    ),
                    id=c.replace("*", "star"),
                )
                for c in consumers
            ],
            *[
                Option(
                    Text.assemble(
                        ("a person: ", "bold"),
                        (name, "bold"),
                        (" — owed to human, delivered to this person alone", "dim"),
                    ),
                    id=f"person-{i}",
                )
                for i, (_, name) in enumerate(self.targets[len(consumers) :])
                if name is not None
            ],
            id="consumers",
        )
        yield Input(placeholder="rationale (required)", id="rationale")

    def buttons(self) -> ComposeResult:
        yield Button("Escalate", id="escalate", variant="warning")
        yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        for widget in self.query(Input):
            widget.cursor_blink = False
        options = self.query_one("#consumers", OptionList)
        options.highlighted = self.consumers.index("human") if "human" in self.consumers else 0
        options.focus()

    @on(Input.Submitted, "#rationale")
    @on(Button.Pressed, "#escalate")
    def _escalate(self) -> None:
        options = self.query_one("#consumers", OptionList)
        to, person = self.targets[options.highlighted or 0]
        rationale = self.query_one("#rationale", Input).value
        if not rationale.strip():
            self.query_one("#rationale", Input).add_class("-invalid")
            self.refuse("an escalation needs a rationale")
            return
        policy = self.model.interaction_policy()
        if policy is None and not self.model.remote:  # the remote host decides
            return

        def run() -> Done:
            result = self.model.acts.escalate(
                EscalateAct(
                    self.obligation.id,
                    self.person,
                    self.actor,
                    to=to,
                    rationale=rationale,
                    person=person,
                )
            )
            whom = f"{to} ({person})" if person is not None else to
            return Done(
                f"{self.obligation.id[:8]} escalated to {whom}: successor"
                f" {result.successor.id[:8]} is now what is owed",
                result.successor.id,
            )

        self.act(run)


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


# -- acting on what a unit waits on: replan, remediate -------------------------------------------


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
        _keep(self, message, f"drive {self.unit_id}", self.unit_id)

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


def drive_unit(
    app: RoomApp, model: InstanceView, loop: Loop, unit_id: str, accepted: str | None = None
) -> None:
    """Drive the unit under its contract in force, on a worker thread; the room stays usable
    and is told when it starts and how it ended (a notification about the unit, kept in the
    log), and reads the instance again. ``accepted``: how the person accepted, for this
    drive, what regulator does not enforce of the unit type (the gate refuses it else)."""
    app.notify(f"driving unit {unit_id} …", title=f"drive {unit_id}", unit=unit_id)
    loop.accept_unenforced = accepted
    index = app.models.index(model)

    def said(text: str, severity: str) -> None:
        app.notify(text, title=f"drive {unit_id}", severity=severity, unit=unit_id)
        app.request_fold(index, None)

    def drive() -> None:
        try:
            contract = loop.current_contract(unit_id)
            outcome = loop.drive(contract).outcome
        except RegulatorError as exc:
            app.call_from_thread(said, message_of(exc), "error")
            return
        if outcome.status == "closed":
            text, severity = f"unit {unit_id} closed under v{contract.version}", "information"
        else:
            problems = "; ".join(outcome.problems)
            text = f"unit {unit_id}: {outcome.reason or outcome.status}" + (
                f" ({problems})" if problems else ""
            )
            severity = "warning" if outcome.status != "refused" else "error"
        app.call_from_thread(said, text, severity)

    app.run_worker(drive, thread=True, group=f"drive-{unit_id}", exit_on_error=False)
