"""``obligations``, ``obligation show|ack|resolve|escalate``, ``answer``, ``signals route``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from regulator.cli.context import definition, instance_root, print_json, refusals
from regulator.cli.main import CliError, UsageError
from regulator.describe import describe_obligation
from regulator.instance import os_user
from regulator.ledger import Actor, Ledger, LedgerError, definition_label, find_obligation
from regulator.protocol.obligations import ObligationState
from regulator.protocol.policies import InteractionPolicy
from regulator.protocol.vocab import CONSUMERS, DISPOSITIONS, TERMINAL_STATUSES
from regulator.store import Layout


@contextmanager
def _refused() -> Iterator[None]:
    with refusals():
        try:
            yield
        except LedgerError as exc:
            raise CliError(str(exc)) from None


def _ledger(args: argparse.Namespace) -> tuple[Ledger, Layout]:
    layout = Layout(instance_root(args))
    return Ledger(layout), layout


def _actor(args: argparse.Namespace) -> Actor:
    # The definition is recorded: `--definition` can bring people of its own.
    defn = definition(args, instance_root(args))
    return Actor(via="cli", os_user=os_user(), definition=definition_label(defn.root))


def _may_proceed(o: ObligationState) -> str:
    return (
        f"; unit {o.unit} may proceed if nothing else is owed on it" if o.unit and o.blocks else ""
    )


def _warn_problems(log: object) -> None:
    """A reader's problems go to stderr: the listing is still shown, but not silently partial."""
    import sys

    from regulator.text import visible

    problems = getattr(log, "problems", [])
    for problem in problems[:5]:
        print(f"regulator: {visible(str(problem))}", file=sys.stderr)
    if len(problems) > 5:
        print(
            f"regulator: … {len(problems) - 5} more; `regulator doctor` lists them", file=sys.stderr
        )


def cmd_obligations(args: argparse.Namespace) -> int:
    if args.owed_to is not None and args.owed_to not in CONSUMERS:
        raise UsageError(f"--owed-to: {args.owed_to!r} is not one of {', '.join(CONSUMERS)}")
    ledger, _ = _ledger(args)
    with _refused():
        log = ledger.refresh()
    _warn_problems(log)
    every = list(log.obligations.values())
    shown = [
        o
        for o in every
        if (args.all or o.status not in TERMINAL_STATUSES)
        and (args.owed_to is None or o.consumer == args.owed_to)
        and (args.unit is None or o.unit == args.unit)
    ]
    if args.json:
        print_json([o.to_json_dict() for o in shown])
        return 0
    for o in shown:
        print(describe_obligation(o))
    unrouted = len(log.unrouted())
    if not every:
        print("no obligations")
    elif not shown and not args.all:
        print("nothing open; --all shows what was dispositioned")
    hint = " — run `regulator signals route`" if unrouted else ""
    print(f"{len(shown)} shown of {len(every)}; {unrouted} unrouted message(s){hint}")
    return 0


def _event_line(event: object) -> str:
    kind = getattr(event, "type", "?").removeprefix("obligation-")
    line = f"  {getattr(event, 'at', '')}  {kind} by {getattr(event, 'by', '?')}"
    if getattr(event, "successor", None):
        line += f" → {event.successor}"  # type: ignore[attr-defined]
    for field in ("note", "rationale"):
        value = getattr(event, field, None)
        if value:
            line += f" — {value}"
    if kind == "delivered":
        reminder = " (reminder)" if getattr(event, "reminder", False) else ""
        line += f" via {getattr(event, 'channel', '')}{reminder}"
    return line


def cmd_show(args: argparse.Namespace) -> int:
    ledger, _ = _ledger(args)
    with _refused():
        log = ledger.refresh()
        _warn_problems(log)
        o = find_obligation(log, args.id)
    sources = [log.messages[s] for s in o.sources if s in log.messages]
    if args.json:
        print_json(
            {
                "obligation": o.to_json_dict(),
                "sources": [m.to_json_dict() for m in sources],
                "interaction": i.to_json() if (i := log.interaction_for(o.id)) else None,
            }
        )
        return 0
    print(describe_obligation(o))
    print(f"  id {o.id}; opened {o.opened_at} by {o.opened_by}; sources {', '.join(o.sources)}")
    for m in sources:
        print(f"  source {m.kind} {m.id[:8]}: {m.subject}")
    interaction = log.interaction_for(o.id)
    if interaction is not None:
        req = interaction.request
        print(f"  asked: {req.kind} by {req.raised_by} at {req.raised_at} (via {req.channel})")
        if req.options:
            print(f"  options: {' | '.join(req.options)}")
        if req.action:
            print(f"  a yes authorizes: {req.action}")
        for a in interaction.answers:
            said = f": {a.answer}" if a.answer else ""
            print(f"  {a.at}  {a.outcome} by {a.by} via {a.channel}{said}")
    for event in o.history:
        print(_event_line(event))
    return 0


def _context(args: argparse.Namespace) -> tuple[Ledger, InteractionPolicy]:
    ledger, layout = _ledger(args)
    defn = definition(args, layout.root)
    with _refused():
        return ledger, defn.interaction


def cmd_ack(args: argparse.Namespace) -> int:
    from regulator import dispositions

    ledger, policy = _context(args)
    with _refused():
        o = dispositions.acknowledge(ledger, policy, args.id, args.by, _actor(args), args.note)
    print(f"obligation {o.id[:8]} acknowledged by {args.by}: received, not resolved")
    return 0


def cmd_resolve(args: argparse.Namespace) -> int:
    from regulator import dispositions

    if args.disposition not in DISPOSITIONS:
        raise UsageError(
            f"--disposition: {args.disposition!r} is not one of {', '.join(DISPOSITIONS)}"
        )
    ledger, policy = _context(args)
    with _refused():
        o = dispositions.resolve(
            ledger,
            policy,
            args.id,
            args.by,
            _actor(args),
            disposition=args.disposition,
            rationale=args.rationale,
        )
    print(f"obligation {o.id[:8]} resolved by {args.by} as {args.disposition}{_may_proceed(o)}")
    return 0


def cmd_escalate(args: argparse.Namespace) -> int:
    from regulator import dispositions

    if args.to not in CONSUMERS:
        raise UsageError(f"--to: {args.to!r} is not one of {', '.join(CONSUMERS)}")
    ledger, policy = _context(args)
    with _refused():
        done = dispositions.escalate(
            ledger, policy, args.id, args.by, _actor(args), to=args.to, rationale=args.rationale
        )
    print(
        f"obligation {done.predecessor.id[:8]} escalated by {args.by} to {args.to}: "
        f"successor {done.successor.id[:8]} is now what is owed"
    )
    return 0


def cmd_answer(args: argparse.Namespace) -> int:
    from regulator import dispositions

    ledger, policy = _context(args)
    with _refused():
        done = dispositions.answer(
            ledger, policy, args.id, args.by, _actor(args), args.answer, note=args.note
        )
    line = f"{done.kind} answered by {args.by} ({done.disposition}): {done.answer}"
    if done.obligation.unit:
        line += (
            f"; unit {done.obligation.unit} may proceed if nothing else is owed on it, "
            "and the next attempt carries the answer"
        )
    print(line)
    return 0


def cmd_route(args: argparse.Namespace) -> int:
    from regulator.router import route_and_deliver

    ledger, layout = _ledger(args)
    defn = definition(args, layout.root)
    with _refused():
        result = route_and_deliver(ledger, defn)
    for o in result.routing.opened:
        print(f"opened  {describe_obligation(o)}")
    for noted in result.routing.noted:
        print(f"noted   {noted.message.kind}  {noted.message.subject}: {noted.reason}")
    for problem in result.routing.problems:  # a floor that ran out of time, applied anyway
        print(f"regulator: {problem}", file=sys.stderr)
    print(
        f"{len(result.routing.opened)} obligation(s) opened, "
        f"{len(result.routing.noted)} message(s) noted, "
        f"{result.delivered} delivered to the outbox"
    )
    return 0
