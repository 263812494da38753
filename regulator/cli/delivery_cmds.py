"""``remind``, ``watch``, ``effects``, ``serve``, ``stream`` and ``deliveries``: delivery to
people (the outbox and their own channels), the effect journal, and remote rooms."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

from regulator.cli.context import definition, instance_root, print_json, redactor
from regulator.cli.errors import UsageError
from regulator.protocol.errors import HostFailure
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
    ledger, journal = Ledger(layout), EffectJournal(layout)
    items = remind_due(ledger, journal, layout, policy)
    redacted = redactor(root)
    if args.json:
        result = _send_to_channels(ledger, journal, layout, policy, quiet=True)
        done = {
            "act": "remind",
            "delivered": [
                {"obligation": i.obligation.to_json_dict(), "reminder": i.reminder} for i in items
            ],
            "sent": [d.to_json() for d in result.sent] if result else [],
            "failed": [d.to_json() for d in result.failed] if result else [],
        }
        print_json(redacted.redact_json(done))
        return 0
    for item in items:
        word = "reminded" if item.reminder else "delivered"
        print(redacted.lines(f"{word:<9} {describe_obligation(item.obligation)}"))
    print(f"{len(items)} delivered")
    _send_to_channels(ledger, journal, layout, policy)
    return 0


def _scrub(layout: Layout) -> Callable[[str], str]:
    # What a channel message carries leaves the machine: the redactor's shapes apply too.
    return redactor(layout.root).redact


def _send_to_channels(
    ledger: Any, journal: Any, layout: Layout, policy: Any, *, quiet: bool = False
) -> Any:
    """Ours, after the original's outbox pass: each delivery to its owners' channels, said
    line by line unless ``quiet``; what was sent (a ``FanOut``), None when nobody has one."""
    from regulator.host.channels import fan_out, has_channels

    if not has_channels(policy):
        return None
    result = fan_out(ledger, journal, layout, policy, scrub=_scrub(layout))
    if quiet:
        return result
    for d in [*result.sent, *result.failed]:
        said = (
            f"sent     {d.person}/{d.channel} ({d.type})"
            if d.outcome == "sent"
            else (f"FAILED   {d.person}/{d.channel} ({d.type}): {d.error}")
        )
        print(_safe(f"{said}  obligation {d.obligation_id[:8]}"))
    print(f"{len(result.sent)} sent to channels, {len(result.failed)} failed")
    return result


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
    scrub = _scrub(layout)
    try:
        while True:
            try:
                report = watch_tick(ledger, journal, layout, policy, command=command, scrub=scrub)
            except (StoreError, LedgerError, EffectJournalError, OSError) as exc:
                if once:  # its own root's exit status; an OSError is the machine's
                    if isinstance(exc, OSError):
                        raise HostFailure(str(exc)) from None
                    raise
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


def _answer_address(
    args: argparse.Namespace, layout: Layout
) -> tuple[tuple[str, int] | None, str | None]:
    """``--http`` and ``--public-url``, checked: the answer pages answer as the people the
    links go to, so they are served only from a person's terminal, under the instance's own
    people."""
    if args.public_url is not None and args.http is None:
        raise UsageError("--public-url needs --http: it is where the links of the pages point")
    if args.http is None:
        return None, None
    from urllib.parse import urlsplit

    from regulator.cli.context import acting_definition
    from regulator.host.answer_page import parse_address
    from regulator.host.person_acts import refuse_inside_agent

    try:
        address = parse_address(args.http)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    public = args.public_url
    if public is not None:
        parts = urlsplit(public)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.query:
            raise UsageError(
                f"--public-url {public!r}: an http(s) URL without a query, as "
                "https://regulator.example.com"
            )
    refuse_inside_agent([layout], instead="start `regulator serve --http` from your terminal")
    acting_definition(args, layout.root)  # --definition may not bring other people (channels)
    return address, public


def cmd_serve(args: argparse.Namespace) -> int:
    import signal
    import threading

    from regulator.host.serve import Server
    from regulator.policy import load_definition

    if args.interval <= 0:
        raise UsageError(f"--interval must be more than 0 seconds, not {args.interval}")
    root = instance_root(args)
    _ = definition(args, root).interaction  # refuse a bad definition now, not at a pass
    override = getattr(args, "definition", None)
    layout = Layout(root)
    http, public_url = _answer_address(args, layout)

    def say(line: str) -> None:
        print(_safe(line), flush=True)

    def complain(line: str) -> None:
        print(f"regulator serve: {_safe(line)}", file=sys.stderr, flush=True)

    from pathlib import Path

    server = Server(
        layout,
        # Loaded again each pass: an edited policy (a new channel) is used without a restart.
        lambda: load_definition(root, Path(override) if override is not None else None),
        scrub=_scrub(layout),
        interval_s=args.interval,
        say=say,
        complain=complain,
        http=http,
        public_url=public_url,
    )
    stop = threading.Event()

    def stopping(_signum: int, _frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, stopping)
    signal.signal(signal.SIGINT, stopping)
    server.run(stop)
    return 0


def cmd_stream(args: argparse.Namespace) -> int:
    import signal
    import threading

    import orjson

    from regulator.protocol.text import inert_json_text
    from regulator.views.stream import BadCursor, Cursor, Streamer, follow

    try:
        since = Cursor.parse(args.since)
    except BadCursor as exc:
        raise UsageError(str(exc)) from None
    if args.heartbeat <= 0:
        raise UsageError(f"--heartbeat must be more than 0 seconds, not {args.heartbeat}")
    layout = Layout(instance_root(args))

    def emit(item: dict[str, Any]) -> None:
        # One line each; escapes in record text stay inert for whoever pages through it.
        sys.stdout.write(inert_json_text(orjson.dumps(item).decode()) + "\n")
        sys.stdout.flush()

    stop = threading.Event()

    def stopping(_signum: int, _frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, stopping)
    signal.signal(signal.SIGINT, stopping)
    signal.signal(signal.SIGHUP, stopping)  # the ssh connection went away
    follow(Streamer(layout, since, emit), stop, heartbeat_s=args.heartbeat, once=args.once)
    return 0


def cmd_deliveries(args: argparse.Namespace) -> int:
    from regulator.host.channels import read_deliveries
    from regulator.rules.ledger import Ledger, find_obligation
    from regulator.views.redaction import Redactor

    layout = Layout(instance_root(args))
    records, problems = read_deliveries(layout)
    if args.obligation is not None:
        wanted = find_obligation(Ledger(layout).refresh(), args.obligation).id
        records = [r for r in records if r.obligation_id == wanted]
    for problem in problems:
        print(f"regulator: {_safe(problem)}", file=sys.stderr)
    redactor = Redactor.for_layout(layout)
    if args.json:
        print_json(redactor.redact_json([r.to_json() for r in records]))
        return 0
    if not records:
        print("no deliveries to people's channels")
    for r in records:
        kind = "reminder" if r.reminder else "delivery"
        error = f" — {r.error}" if r.error else ""
        code = " (with an answer code)" if r.code else ""
        print(
            redactor.safe(
                f"{r.at}  {r.outcome:<7} {r.obligation_id[:8]} {kind} {r.delivery} to "
                f"{r.person}/{r.channel} ({r.type}: {r.target}){code}{error}"
            )
        )
    return 0
