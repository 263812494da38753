"""``obligations``, ``obligation show|ack|resolve|escalate``, ``answer``, ``signals route``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from regulator.cli.context import (
    acting_definition,
    definition,
    instance_root,
    print_done,
    print_json,
    redactor,
)
from regulator.cli.errors import UsageError
from regulator.protocol.obligations import ObligationState
from regulator.protocol.text import visible as v
from regulator.protocol.vocab import CONSUMERS, DISPOSITIONS, TERMINAL_STATUSES
from regulator.rules.ledger import Actor, Ledger, definition_label, find_obligation
from regulator.store import Layout
from regulator.store.collector import collector_paused
from regulator.views.describe import describe_obligation

if TYPE_CHECKING:
    from regulator.protocol.policies import InteractionPolicy


def _ledger(args: argparse.Namespace) -> tuple[Ledger, Layout]:
    layout = Layout(instance_root(args))
    return Ledger(layout), layout


def _actor(args: argparse.Namespace) -> Actor:
    from regulator.host.instance import os_user

    # The definition is recorded: `--definition` can bring people of its own.
    defn = definition(args, instance_root(args))
    return Actor(via="cli", os_user=os_user(), definition=definition_label(defn.root))


def _may_proceed(o: ObligationState, layout: Layout, *, answered: bool = False) -> str:
    """What follows for the unit the obligation held. A session unit (an agent a person runs by
    hand) has one attempt, so no next attempt carries anything: while it runs, a silence
    already recorded keeps it paused to its end; once it has ended, `session end` closes it."""
    if not o.unit:
        return ""
    from regulator.host.session_units import is_session_unit
    from regulator.rules.execution import ExecutionStore

    unit = ExecutionStore(layout).find_unit(o.unit)
    if unit is not None and is_session_unit(unit):
        if not o.blocks:
            return ""  # a recap holds nothing
        if unit.status == "dispatched":
            from regulator.rules.pause import attempt_questions

            paused = attempt_questions(layout.signals, unit.unit_id, unit.attempts + 1).paused
            if paused is not None:
                return (
                    f"; session unit {v(o.unit)} stays paused until its session ends (a session "
                    "has no next attempt), then closes if nothing else is owed on it"
                )
            return f"; session unit {v(o.unit)} gets the answer if it still waits for it"
        if unit.status == "blocked":
            return (
                f"; session unit {v(o.unit)} has ended: `regulator session end {v(o.unit)}` "
                "closes it once nothing else is owed on it"
            )
        return ""
    if not o.blocks and not answered:
        return ""
    line = f"; unit {v(o.unit)} may proceed if nothing else is owed on it"
    return line + (", and the next attempt carries the answer" if answered else "")


def _warn_problems(log: object) -> None:
    """A reader's problems go to stderr: the listing is still shown, but not silently partial."""
    import sys

    problems = getattr(log, "problems", [])
    for problem in problems[:5]:
        print(f"regulator: {v(str(problem))}", file=sys.stderr)
    if len(problems) > 5:
        print(
            f"regulator: … {len(problems) - 5} more; `regulator doctor` lists them", file=sys.stderr
        )


def cmd_obligations(args: argparse.Namespace) -> int:
    if args.owed_to is not None and args.owed_to not in CONSUMERS:
        raise UsageError(f"--owed-to: {args.owed_to!r} is not one of {', '.join(CONSUMERS)}")
    ledger, layout = _ledger(args)
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
    # Subjects and questions are agents' text: a canary, a credential or a channel's secret
    # copied into one is shown redacted.
    redacted = redactor(layout.root)
    if args.json:
        from regulator.views.status import record_json, write_records_json

        # Redacted as `status --json` is, a batch at a time.
        with collector_paused():
            _write_bytes(lambda write: write_records_json(shown, record_json, redacted, write))
        return 0
    with collector_paused():  # each line reads its obligation's deliveries: built here
        for o in shown:
            print(redacted.lines(describe_obligation(o)))
    unrouted = log.unrouted_count()
    if not every:
        print("no obligations")
    elif not shown and not args.all:
        print("nothing open; --all shows what was dispositioned")
    hint = " — run `regulator signals route`" if unrouted else ""
    print(f"{len(shown)} shown of {len(every)}; {unrouted} unrouted message(s){hint}")
    return 0


def _write_bytes(produce: Callable[[Callable[[bytes | memoryview], object]], None]) -> None:
    """What ``produce`` writes, to stdout's bytes (or its text when it has none)."""
    buffer = getattr(sys.stdout, "buffer", None)
    sys.stdout.flush()
    if buffer is None:
        produce(lambda b: sys.stdout.write(bytes(b).decode()))
        return
    produce(buffer.write)
    buffer.flush()


def _event_line(event: object) -> str:
    """One event of an obligation's history; every field from the record made visible."""
    kind = v(str(getattr(event, "type", "?"))).removeprefix("obligation-")
    line = f"  {v(str(getattr(event, 'at', '')))}  {kind} by {v(str(getattr(event, 'by', '?')))}"
    if getattr(event, "successor", None):
        line += f" → {v(str(event.successor))}"  # type: ignore[attr-defined]
    for field in ("note", "rationale"):
        value = getattr(event, field, None)
        if value:
            line += f" — {v(str(value))}"
    if kind == "delivered":
        reminder = " (reminder)" if getattr(event, "reminder", False) else ""
        line += f" via {v(str(getattr(event, 'channel', '')))}{reminder}"
    return line


def cmd_show(args: argparse.Namespace) -> int:
    ledger, layout = _ledger(args)
    log = ledger.refresh()
    _warn_problems(log)
    o = find_obligation(log, args.id)
    sources = [m for s in o.sources if (m := log.message(s)) is not None]
    redacted = redactor(layout.root)
    if args.json:
        print_json(
            redacted.redact_json(
                {
                    "obligation": o.to_json_dict(),
                    "sources": [m.to_json_dict() for m in sources],
                    "interaction": i.to_json() if (i := log.interaction_for(o.id)) else None,
                }
            )
        )
        return 0

    # Record text is agents' text: each field is made visible, so no escape sequence acts and
    # no carriage return or newline can make "a yes authorizes:" read as something else; then
    # each line is redacted.
    def say(line: str) -> None:
        print(redacted.lines(line))

    say(describe_obligation(o))
    say(
        f"  id {v(o.id)}; opened {v(o.opened_at)} by {v(o.opened_by)}; "
        f"sources {', '.join(v(s) for s in o.sources)}"
    )
    for m in sources:
        say(f"  source {v(m.kind)} {v(m.id[:8])}: {v(m.subject)}")
    interaction = log.interaction_for(o.id)
    if interaction is not None:
        req = interaction.request
        say(
            f"  asked: {v(req.kind)} by {v(req.raised_by)} at {v(req.raised_at)} "
            f"(via {v(req.channel)})"
        )
        if req.options:
            say(f"  options: {' | '.join(f'{i}. {v(x)}' for i, x in enumerate(req.options, 1))}")
        if req.action:
            say(f"  a yes authorizes: {v(req.action)}")
        for a in interaction.answers:
            said = f": {v(a.answer)}" if a.answer else ""
            say(f"  {v(a.at)}  {v(a.outcome)} by {v(a.by)} via {v(a.channel)}{said}")
    for event in o.history:
        say(_event_line(event))
    return 0


def _context(args: argparse.Namespace) -> tuple[Ledger, InteractionPolicy]:
    ledger, layout = _ledger(args)
    defn = acting_definition(args, layout.root)
    return ledger, defn.interaction


def _print_done(args: argparse.Namespace, layout: Layout, act: str, **what: object) -> bool:
    """With ``--json``, what an act did as one JSON object on stdout (True: printed).

    ``{"act": ..., "obligation": {...}, ...}``: the obligation acted on as it is now, in its
    on-disk camelCase shape (as ``obligations --json`` lists it), plus what the act adds (a
    successor, an answer, the next step). Redacted as every record a command prints is. A
    refusal never reaches here: it is the one stderr line and exit 1, nothing on stdout.
    """
    if not getattr(args, "json", False):
        return False
    value: dict[str, object] = {"act": act}
    for key, item in what.items():
        value[key] = item.to_json_dict() if isinstance(item, ObligationState) else item
    print_done(layout.root, value)
    return True


def _next(after: str) -> str | None:
    """``_may_proceed``'s clause as a sentence of its own, for JSON (None: nothing follows)."""
    return after.removeprefix("; ") or None


def cmd_ack(args: argparse.Namespace) -> int:
    from regulator.rules import dispositions

    ledger, policy = _context(args)
    o = dispositions.acknowledge(ledger, policy, args.id, args.by, _actor(args), args.note)
    if _print_done(args, ledger.layout, "acknowledge", obligation=o):
        return 0
    print(f"obligation {o.id[:8]} acknowledged by {v(args.by)}: received, not resolved")
    return 0


def cmd_resolve(args: argparse.Namespace) -> int:
    from regulator.rules import dispositions

    if args.disposition not in DISPOSITIONS:
        raise UsageError(
            f"--disposition: {args.disposition!r} is not one of {', '.join(DISPOSITIONS)}"
        )
    ledger, policy = _context(args)
    o = dispositions.resolve(
        ledger,
        policy,
        args.id,
        args.by,
        _actor(args),
        disposition=args.disposition,
        rationale=args.rationale,
    )
    after = _may_proceed(o, ledger.layout)
    if _print_done(args, ledger.layout, "resolve", obligation=o, next=_next(after)):
        return 0
    print(f"obligation {o.id[:8]} resolved by {v(args.by)} as {args.disposition}{after}")
    return 0


def cmd_escalate(args: argparse.Namespace) -> int:
    from regulator.rules import dispositions

    if args.to not in CONSUMERS:
        raise UsageError(f"--to: {args.to!r} is not one of {', '.join(CONSUMERS)}")
    ledger, policy = _context(args)
    person: str | None = args.person
    if person is not None and args.to != "human":
        raise UsageError(
            f"--person: only an escalation --to human is owed to a person, not {args.to}"
        )
    done = dispositions.escalate(
        ledger,
        policy,
        args.id,
        args.by,
        _actor(args),
        to=args.to,
        rationale=args.rationale,
        person=person,
    )
    if _print_done(
        args,
        ledger.layout,
        "escalate",
        obligation=done.predecessor,
        successor=done.successor,
        person=done.person,
    ):
        return 0
    to = f"{args.to} ({v(person)})" if person is not None else args.to
    print(
        f"obligation {done.predecessor.id[:8]} escalated by {v(args.by)} to {to}: "
        f"successor {done.successor.id[:8]} is now what is owed"
    )
    return 0


def cmd_answer(args: argparse.Namespace) -> int:
    from regulator.rules import dispositions

    ledger, policy = _context(args)
    code_id: str | None = None
    code: str | None = getattr(args, "code", None)
    if code is not None:
        # Checked before the answer, spent after it: a refused answer keeps its code usable.
        from regulator.host import answer_codes

        target = find_obligation(ledger.refresh(), args.id)
        code_id = answer_codes.check(ledger.layout, target.id, args.by, code, ledger.clock)
    done = dispositions.answer(
        ledger, policy, args.id, args.by, _actor(args), args.answer, note=args.note
    )
    if code_id is not None:
        from regulator.host import answer_codes

        answer_codes.consume(ledger.layout, code_id, ledger.clock)
    after = _may_proceed(done.obligation, ledger.layout, answered=True)
    if _print_done(
        args,
        ledger.layout,
        "answer",
        obligation=done.obligation,
        kind=done.kind,
        disposition=done.disposition,
        answer=done.answer,
        next=_next(after),
    ):
        return 0
    line = f"{done.kind} answered by {v(args.by)} ({done.disposition}): {v(done.answer)}"
    print(line + after)
    return 0


def cmd_route(args: argparse.Namespace) -> int:
    from regulator.host.delivery import route_and_deliver

    ledger, layout = _ledger(args)
    defn = definition(args, layout.root)
    result = route_and_deliver(ledger, defn)
    redacted = redactor(layout.root)
    for problem in result.routing.problems:  # a floor that ran out of time, applied anyway
        print(f"regulator: {v(problem)}", file=sys.stderr)
    if args.json:
        done = {
            "act": "route",
            "opened": [o.to_json_dict() for o in result.routing.opened],
            "noted": [
                {"message": n.message.to_json_dict(), "reason": n.reason}
                for n in result.routing.noted
            ],
            "delivered": result.delivered,
            "sent": [d.to_json() for d in result.channels.sent],
            "failed": [d.to_json() for d in result.channels.failed],
        }
        print_json(redacted.redact_json(done))
        return 0
    for o in result.routing.opened:
        print(redacted.lines(f"opened  {describe_obligation(o)}"))
    for noted in result.routing.noted:
        said = f"noted   {v(noted.message.kind)}  {v(noted.message.subject)}: {v(noted.reason)}"
        print(redacted.lines(said))
    print(
        f"{len(result.routing.opened)} obligation(s) opened, "
        f"{len(result.routing.noted)} message(s) noted, "
        f"{result.delivered} delivered to the outbox"
    )
    return 0
