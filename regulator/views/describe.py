"""The one-line descriptions the CLI prints, in the original's shapes
(docs/design.md#command-output)."""

from __future__ import annotations

from regulator.protocol.execution import FailureObservation
from regulator.protocol.obligations import ObligationState
from regulator.protocol.text import visible as v
from regulator.protocol.vocab import TERMINAL_STATUSES


def delivery_text(o: ObligationState) -> str:
    if o.deliveries:
        last = o.deliveries[-1]
        return f"delivered ×{len(o.deliveries)} ({v(last.channel)} {v(last.at[:16])})"
    if o.consumer == "human" and o.status not in TERMINAL_STATUSES:
        return "not delivered"
    return ""


def describe_obligation(o: ObligationState) -> str:
    """``status consumer severity veto id8  concern  subject  (unit u)  delivered …`` + details.

    Each field taken from the record is made visible on its own, newlines included, so no
    escape sequence reaches the terminal and no record text can start a line of its own.
    """
    veto = "veto " if o.blocks and o.status not in TERMINAL_STATUSES else "     "
    line = (
        f"{v(o.status):<12} {v(o.consumer):<5} {v(o.severity):<8} {veto}{v(o.id[:8])}  "
        f"{v(o.concern)}  {v(o.subject)}"
    )
    if o.unit is not None:
        line += f"  (unit {v(o.unit)})"
    delivery = delivery_text(o)
    if delivery:
        line += f"  {delivery}"
    if o.question:
        line += f"\n      question: {v(o.question)}"
    if o.status == "resolved":
        line += f"\n      {v(f'{o.disposition}')} by {v(f'{o.closed_by}')}: {v(f'{o.rationale}')}"
    elif o.status in TERMINAL_STATUSES:
        line += (
            f"\n      {v(o.status)} by {v(f'{o.closed_by}')} → {v((o.successor or '')[:8])}: "
            f"{v(f'{o.rationale}')}"
        )
    return line


def describe_observation(o: FailureObservation) -> str:
    """``observed AT: cause from source [tool]: message``, the message's further lines indented.

    Every field is made visible; the message keeps its line breaks, each continuation line
    indented under the first so no record text can pass for a line of the CLI's own.
    """
    where = v(o.source) + (f" {v(o.tool_name)}" if o.tool_name else "")
    message = v(o.message.rstrip("\n"), newlines=True).replace("\n", "\n  ")
    return f"observed {v(o.at)}: {v(o.cause)} from {where}: {message}"
