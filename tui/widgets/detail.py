"""The detail pane: the whole obligation under the inbox cursor, rendered by itself.

Question, options, what a yes authorizes, evidence, sources (the message, the decision, the
predecessor or successor), every event of its history, and who has seen it.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from regulator.protocol.vocab import TERMINAL_STATUSES

from ..keys import RowKey
from ..model import SEVERITY_GLYPH, InstanceView
from ..render import plain

# How a question reached people, in words (the channel recorded on the request).
ASKED_VIA = {
    "tui": "asked in the room, while someone was there",
    "outbox": "asked while nobody was in the room: sent to the outbox and people's channels",
    "none": "asked with nobody to answer at once: it waits here in the inbox",
    "cli": "asked from a shell (regulator ask)",
    "rpc": "asked over RPC",
}


class ObligationDetail(Widget):
    DEFAULT_CSS = """
    ObligationDetail { height: auto; }
    """

    key: reactive[RowKey | None] = reactive(None, layout=True)
    #: Bumped when the obligation shown may have changed.
    version = reactive(0, layout=True)
    empty = reactive("Nothing here.", layout=True)

    def __init__(self, models: list[InstanceView], **kw: Any) -> None:
        super().__init__(**kw)
        self.models = models

    def render(self) -> Text:
        key = self.key
        if key is None:
            return Text(self.empty, style="italic")
        model = self.models[key.instance]
        o = model.log.obligations.get(key.oid)
        if o is None:
            return Text("no longer in the log", style="italic")
        r = model.redactor
        text = Text()
        text.append(
            f"{SEVERITY_GLYPH[o.severity]} {o.severity} · {o.status} · owed to {model.owed_to(o)}",
            style="bold",
        )
        if o.blocks and o.status not in TERMINAL_STATUSES:
            text.append(" · ■ vetoes " + (f"unit {o.unit}" if o.unit else "every unit"))
        text.append("\n")
        text.append_text(plain(o.subject, r, "bold"))
        text.append(
            f"\n{o.concern} · {o.unit or 'the instance itself'} · {model.name}"
            f"\nid {o.id}\nopened {o.opened_at} by {o.opened_by}\n"
        )
        interaction = model.interaction(o.id)
        if interaction is not None:
            req = interaction.request
            text.append(f"\n{req.kind} question", style="bold")
            how = ASKED_VIA.get(req.channel, f"asked via {req.channel}")
            text.append(f" (attempt {req.attempt}, {how})\n" if req.attempt else f" ({how})\n")
            text.append_text(plain(req.question, r))
            text.append("\n")
            if req.options:
                text.append("options: ", style="bold")
                text.append_text(plain(" | ".join(req.options), r))
                text.append("\n")
            if req.action:
                text.append("a yes authorizes: ", style="bold")
                text.append_text(plain(req.action, r))
                text.append("\n")
            for e in req.evidence:
                text.append_text(plain(f"evidence: {e.class_} {e.ref}", r))
                text.append("\n")
            for a in interaction.answers:
                text.append_text(
                    plain(
                        f"{a.at[:19]}  {a.outcome} by {a.by} via {a.channel}"
                        + (f": {a.answer}" if a.answer else ""),
                        r,
                    )
                )
                text.append("\n")
        elif o.question:
            text.append("\nquestion: ", style="bold")
            text.append_text(plain(o.question, r))
            text.append("\n")
        text.append("\nsources\n", style="bold")
        # A source named twice (a decision that is also what it cites) is listed once.
        for source in dict.fromkeys(o.sources):
            message = model.log.message(source)
            predecessor = model.log.obligations.get(source)
            if message is not None:
                line = f"  message {message.kind} {source[:8]}: {message.subject}"
            elif predecessor is not None:
                line = f"  predecessor {source[:8]} ({predecessor.status}): {predecessor.subject}"
            else:
                line = f"  {source}"
            text.append_text(plain(line, r))
            text.append("\n")
        if o.successor:
            text.append_text(plain(f"  successor {o.successor[:8]}", r))
            text.append("\n")
        text.append("\nhistory\n", style="bold")
        for event in list(o.history):
            kind = event.type.removeprefix("obligation-")
            line = f"  {event.at[:19].replace('T', ' ')}  {kind} by {event.by}"
            for name in ("disposition", "note", "rationale", "channel"):
                value = getattr(event, name, None)
                if value:
                    line += f" · {value}"
            if getattr(event, "reminder", False):
                line += " (reminder)"
            text.append_text(plain(line, r))
            text.append("\n")
        sent = model.channel_deliveries(o.id)
        if sent:
            text.append("\nsent to people's channels\n", style="bold")
            for d in sent:
                what = "reminder" if d.reminder else "delivery"
                line = (
                    f"  {d.at[:19].replace('T', ' ')}  {d.outcome} · {what} {d.delivery} to "
                    f"{d.person} via {d.channel} ({d.type}: {d.target})"
                    + (f" · {d.error}" if d.error else "")
                )
                style = "bold" if d.outcome != "sent" else ""  # the word says which
                text.append_text(plain(line, r, style))
                text.append("\n")
        if o.unit is not None and o.status in TERMINAL_STATUSES:
            # After a disposition: what the unit needs now (what still holds it, or ready).
            step = model.next_step(o.unit)
            if step is not None:
                text.append(f"\nunit {o.unit} next: ", style="bold")
                text.append_text(plain(step.text, r))
                text.append("\n")
        seen = model.seen.get(o.id)
        if seen:
            text.append(f"\nseen by {', '.join(sorted(seen))}\n", style="italic")
        return text


__all__ = ["ObligationDetail"]
