"""The answer to a unit's question: one widget per kind (choice, consent, uat, free text),
and what the answer will be recorded as before it is sent."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Button, Input, OptionList, Static
from textual.widgets.option_list import Option

from regulator.protocol.obligations import ObligationState
from regulator.rules.answers import disposition_for_answer
from regulator.rules.ledger import Actor

from ..model import AnswerAct, InstanceView
from ..render import one_line, plain
from .base import Done, ObligationDialog


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
