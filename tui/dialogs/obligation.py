"""The other acts on an obligation: resolve (a disposition the person may use, and a
rationale), acknowledge (seen, the veto stands) and escalate (to a consumer or one person)."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.widgets import Button, Input, OptionList, Static
from textual.widgets.option_list import Option

from regulator.protocol.vocab import CONSUMERS, DISPOSITIONS
from regulator.rules.authority import check_disposition_authority, owed_to_s5
from regulator.rules.dispositions import addressee_refusal
from regulator.views.words import CONSUMER_ROLE, DISPOSITION_MEANS

from ..model import AckAct, EscalateAct, ResolveAct
from ..render import plain
from .base import Done, ObligationDialog


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
