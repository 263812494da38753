"""``identity accept`` and ``identity reject``: the S5 decision on a policy proposal."""

from __future__ import annotations

import argparse
from pathlib import Path

from regulator.cli.context import acting_definition, instance_root, print_done
from regulator.cli.errors import UsageError
from regulator.protocol.text import visible


def _decide(args: argparse.Namespace, *, accept: bool) -> str | None:
    """What was decided, as the line printed; None when ``--json`` printed it as an object."""
    from regulator.host.identity import (
        IdentityUsageError,
        accept_proposal,
        reject_proposal,
    )
    from regulator.host.instance import os_user
    from regulator.rules.ledger import Actor, Ledger
    from regulator.store import Layout

    root = instance_root(args)
    actor = Actor(via="cli", os_user=os_user())
    policy = acting_definition(args, root).interaction
    ledger = Ledger(Layout(root))
    try:
        if accept:
            done = accept_proposal(
                ledger,
                policy,
                args.id,
                args.by,
                actor,
                file=args.file,
                source=Path(args.from_path),
                rationale=args.rationale,
            )
            if args.json:
                print_done(
                    root,
                    {
                        "act": "accept-proposal",
                        "obligation": done.obligation.to_json_dict(),
                        "path": done.path,
                        "commit": done.sha,
                        "branch": done.branch,
                    },
                )
                return None
            return (
                f"proposal {done.obligation.id[:8]} accepted by {args.by} (S5): "
                f"{done.path} committed as {done.sha[:7]} on {done.branch}; "
                "the obligation is resolved as accepted"
            )
        state = reject_proposal(ledger, policy, args.id, args.by, actor, rationale=args.rationale)
        if args.json:
            print_done(root, {"act": "reject-proposal", "obligation": state.to_json_dict()})
            return None
        return (
            f"proposal {state.id[:8]} rejected by {args.by} (S5): {args.rationale}; "
            "identity unchanged"
        )
    except IdentityUsageError as exc:
        raise UsageError(str(exc)) from None


def cmd_accept(args: argparse.Namespace) -> int:
    line = _decide(args, accept=True)
    if line is not None:
        print(visible(line))
    return 0


def cmd_reject(args: argparse.Namespace) -> int:
    line = _decide(args, accept=False)
    if line is not None:
        print(visible(line))
    return 0
