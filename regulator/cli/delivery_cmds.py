"""``remind``, ``watch`` and ``effects``: delivery to people and the effect journal."""

from __future__ import annotations

import argparse
import sys
import time

from regulator.cli.context import definition, instance_root, print_json
from regulator.cli.errors import CliError, UsageError
from regulator.protocol.text import visible
from regulator.store import Layout, StoreError


def _safe(text: str) -> str:
    # Records may hold terminal escapes (ANSI CSI, OSC 52): show them, never let them act.
    # One line each: a record's newline must not start a line that looks like ours.
    return visible(text)


def cmd_remind(args: argparse.Namespace) -> int:
    from regulator.host.delivery import remind_due
    from regulator.rules.effect_journal import EffectJournal
    from regulator.rules.ledger import Ledger
    from regulator.views.describe import describe_obligation

    root = instance_root(args)
    defn = definition(args, root)
    policy = defn.interaction
    layout = Layout(root)
    items = remind_due(Ledger(layout), EffectJournal(layout), layout, policy)
    for item in items:
        word = "reminded" if item.reminder else "delivered"
        print(f"{word:<9} {describe_obligation(item.obligation)}")
    print(f"{len(items)} delivered")
    return 0


def cmd_watch(args: argparse.Namespace) -> int:
    from regulator.host.delivery import watch_tick
    from regulator.rules.effect_journal import EffectJournal, EffectJournalError
    from regulator.rules.ledger import Ledger, LedgerError

    once: bool = args.once
    command: list[str] | None = args.exec_command
    if command is not None:
        # Everything after --exec is the command, except a literal --once (the original's rule).
        once = once or "--once" in command
        command = [part for part in command if part != "--once"]
        if not command:
            raise UsageError("--exec needs a command: --exec CMD [ARG…]")
    if args.interval < 1:
        raise UsageError(f"--interval must be at least 1 ms, not {args.interval}")
    root = instance_root(args)
    defn = definition(args, root)
    policy = defn.interaction
    layout = Layout(root)
    ledger = Ledger(layout)
    journal = EffectJournal(layout)
    try:
        while True:
            try:
                report = watch_tick(ledger, journal, layout, policy, command=command)
            except (StoreError, LedgerError, EffectJournalError, OSError) as exc:
                if once:
                    raise CliError(str(exc)) from None
                # A watcher is a process nothing restarts: say what went wrong and keep going.
                print(f"regulator: {_safe(str(exc))}", file=sys.stderr, flush=True)
            else:
                print(_safe(report.summary()), flush=True)
                for note in report.notes:
                    print(f"regulator watch: {_safe(note)}", file=sys.stderr, flush=True)
                if once:
                    return 1 if report.failed else 0
            time.sleep(args.interval / 1000)
    except KeyboardInterrupt:
        return 0  # interrupting is how a watcher is stopped


def cmd_effects(args: argparse.Namespace) -> int:
    from regulator.rules.effect_journal import EffectJournal

    layout = Layout(instance_root(args))
    journal = EffectJournal(layout)
    states = journal.states()
    for problem in journal.problems:
        print(f"problem: {_safe(str(problem))}", file=sys.stderr)
    if args.json:
        print_json([state.to_json() for state in states])
        return 0
    if not states:
        print("no effects journaled")
    for s in states:
        result = f" — {s.result}" if s.result else ""
        print(
            _safe(
                f"{s.status:<9} {s.key}  {s.tool}  {s.unit_id or '-'}  {s.intended_at}  "
                f"{s.description}{result}"
            )
        )
    return 0
