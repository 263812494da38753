"""The one-line descriptions the CLI prints, in the original's shapes (upstream-core §8.1)."""

from __future__ import annotations

from regulator.protocol.obligations import ObligationState
from regulator.protocol.vocab import TERMINAL_STATUSES
from regulator.text import visible


def delivery_text(o: ObligationState) -> str:
    if o.deliveries:
        last = o.deliveries[-1]
        return f"delivered ×{len(o.deliveries)} ({last.channel} {last.at[:16]})"
    if o.consumer == "human" and o.status not in TERMINAL_STATUSES:
        return "not delivered"
    return ""


def describe_obligation(o: ObligationState) -> str:
    """``status consumer severity veto id8  concern  subject  (unit u)  delivered …`` + details.

    Record text (subject, question, rationale) is made visible: no escape sequence it holds
    reaches the terminal as one.
    """
    return visible(_describe(o), newlines=True)


def _describe(o: ObligationState) -> str:
    veto = "veto " if o.blocks and o.status not in TERMINAL_STATUSES else "     "
    line = (
        f"{o.status:<12} {o.consumer:<5} {o.severity:<8} {veto}{o.id[:8]}  {o.concern}  {o.subject}"
    )
    if o.unit is not None:
        line += f"  (unit {o.unit})"
    delivery = delivery_text(o)
    if delivery:
        line += f"  {delivery}"
    if o.question:
        line += f"\n      question: {o.question}"
    if o.status == "resolved":
        line += f"\n      {o.disposition} by {o.closed_by}: {o.rationale}"
    elif o.status in TERMINAL_STATUSES:
        line += f"\n      {o.status} by {o.closed_by} → {(o.successor or '')[:8]}: {o.rationale}"
    return line
