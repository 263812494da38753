"""``memory`` and ``memory retract``: operational memory, with the original's lines."""

from __future__ import annotations

import argparse
import sys

from regulator.cli.context import acting_definition, instance_root, print_done, print_json
from regulator.protocol.text import visible
from regulator.rules.memory_store import MemoryState


def memory_line(state: MemoryState) -> str:
    """``status id8  subject: note  (by who in unit @rev7, recorded → review date)``."""
    e = state.entry
    where = f" in {e.unit}" if e.unit else ""
    rev = f" @{e.revision[:7]}" if e.revision else ""
    # Visible line by line: a note's own newline must not start a line that looks like ours.
    line = visible(
        f"{state.status:<9} {e.id[:8]}  {e.subject}: {e.note}  "
        f"(by {e.recorded_by}{where}{rev}, {e.recorded_at[:10]} → review {e.review_by[:10]})"
    )
    if state.retraction is not None:
        r = state.retraction
        line += "\n" + visible(f"          retracted by {r.by}: {r.reason}")
    return line


def cmd_memory(args: argparse.Namespace) -> int:
    from regulator.rules.memory_store import MemoryStore
    from regulator.store import Layout

    store = MemoryStore(Layout(instance_root(args)))
    states = store.states()
    shown = states if args.all else [s for s in states if s.status == "current"]
    for problem in store.problems:
        print(f"regulator: {visible(str(problem))}", file=sys.stderr)
    if args.json:
        print_json([s.to_json() for s in shown])
        return 0
    if not shown:
        print(
            "nothing current; --all shows expired and retracted entries"
            if states
            else "no memory recorded"
        )
    for state in shown:
        print(memory_line(state))
    print(f"{len(shown)} shown of {len(states)}")
    return 0


def cmd_retract(args: argparse.Namespace) -> int:
    from regulator.host.instance import os_user
    from regulator.rules.ledger import Actor
    from regulator.rules.memory_store import MemoryStore, retract_memory
    from regulator.store import Layout

    root = instance_root(args)
    policy = acting_definition(args, root).interaction
    event = retract_memory(
        MemoryStore(Layout(root)),
        policy,
        args.id,
        args.by,
        Actor(via="cli", os_user=os_user()),
        args.reason,
    )
    if args.json:
        # What was done as one object, as the acts on an obligation print it (docs/triage.md):
        # the retraction as memory.ndjson holds it.
        print_done(root, {"act": "retract", "retraction": event.to_json_dict()})
        return 0
    print(visible(f"memory {event.memory_id[:8]} retracted by {event.by}: {event.reason}"))
    return 0
