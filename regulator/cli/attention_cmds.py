"""``attention``: what the instance's questions have cost the people who answer them."""

from __future__ import annotations

import argparse

from regulator.cli.context import definition, instance_root, print_json
from regulator.cli.errors import UsageError
from regulator.protocol.text import visible


def cmd_attention(args: argparse.Namespace) -> int:
    from regulator.host.session_units import SESSION_TYPE
    from regulator.protocol.clock import system_clock
    from regulator.rules.execution import ExecutionStore
    from regulator.rules.regulatory_log import RegulatoryLog
    from regulator.store import Layout
    from regulator.views.attention import attention_report, parse_age, render_attention

    try:
        since = parse_age(args.since)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    root = instance_root(args)
    attention = definition(args, root).interaction.attention
    layout = Layout(root)
    log = RegulatoryLog(layout)
    log.refresh()
    # The log does not say which units are sessions, counted per hour rather than per attempt.
    sessions = {u.unit_id for u in ExecutionStore(layout).units() if u.unit_type == SESSION_TYPE}
    report = attention_report(
        log,
        system_clock(),
        since=since,
        person=args.person,
        blocking_per_attempt=attention.blocking_per_attempt,
        session_units=sessions,
        blocking_per_hour=attention.for_sessions.blocking_per_hour,
    )
    if args.json:
        print_json(report.to_json())
    else:
        for line in render_attention(report):
            print(visible(line))  # it names people and subjects from the log
    return 0
