"""``init``, ``doctor`` and ``status``."""

from __future__ import annotations

import argparse
from pathlib import Path

from regulator.cli.context import definition, instance_root, print_json
from regulator.cli.errors import CliError
from regulator.protocol.errors import CorruptState, RegulatorError, message_of
from regulator.protocol.text import visible


def cmd_init(args: argparse.Namespace) -> int:
    from regulator.host.instance import init_instance

    override = getattr(args, "definition", None)
    result = init_instance(
        Path(args.dir),
        by=args.by,
        definition=Path(override) if override is not None else None,
    )
    manifest = result.manifest
    print(
        visible(
            f"instance ready at {result.root}/.regulator (initialized by {manifest.initialized_by})"
        )
    )
    print(visible(f"definition: {manifest.definition.root}"))
    print(f"canaries: {result.canaries} value(s) from .env")
    if result.person_policy is not None:
        where = result.person_policy.relative_to(result.root)
        print(
            visible(
                f"people: {result.person} may answer and decide everything here, only as OS user "
                f"{result.person_os_user} (wrote {where}; add the others who may answer there)"
            )
        )
    if result.commit:
        said = "; ".join(
            f"{path} ignores .regulator/" if path == ".gitignore" else f"{path} names who decides"
            for path in result.committed
        )
        print(visible(f"committed {result.commit[:7]}: {said}"))
    else:
        print(".gitignore already ignores .regulator/; nothing to commit")
    print("next: `regulator doctor`, then `regulator status`")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from regulator.host.session_units import Settled, settle_gone_sessions
    from regulator.store import Layout
    from regulator.views.doctor import run_doctor

    root = instance_root(args)
    # A session whose agent was killed before it could settle it is settled here, the next
    # time someone looks; one whose agent may still run never is.
    settled: list[Settled] | str
    try:
        settled = settle_gone_sessions(Layout(root))
    except RegulatorError as exc:
        settled = message_of(exc)
    report = run_doctor(root, definition(args, root), settled)
    if args.json:
        print_json(report.to_json())
    else:
        marks = {"ok": "ok     ", "notice": "notice ", "problem": "PROBLEM"}
        for check in report.checks:
            # Details and problems quote files, records and policies: shown, never acted on.
            print(visible(f"{marks[check.level]} {check.name:<17} {check.detail}"))
            for problem in check.problems:
                print(visible(f"        {'':<17} {problem}"))
            # Beside a problem, a notice says it is one; alone, the mark already does.
            prefix = "notice: " if check.problems else ""
            for notice in check.notices:
                print(visible(f"        {'':<17} {prefix}{notice}"))
        notices = f", {report.notice_count} notice(s)" if report.notice_count else ""
        print(f"{report.problem_count} problem(s){notices}")
    # Notices are normal states (owed, not yet delivered): only a problem fails the check.
    return 0 if report.problem_count == 0 else 1


def cmd_status(args: argparse.Namespace) -> int:
    import sys

    from regulator.store import Layout
    from regulator.views.redaction import Redactor
    from regulator.views.status import build_status, render_status_text, write_status_json

    root = instance_root(args)
    defn = definition(args, root)
    status = build_status(root, defn, obligations=False)
    # Canaries and credential-shaped strings an agent wrote never reach the output.
    redactor = Redactor.for_layout(Layout(root))
    if args.json:
        out = getattr(sys.stdout, "buffer", None)
        sys.stdout.flush()
        write_status_json(
            status,
            redactor,
            out.write if out is not None else lambda b: print(bytes(b).decode(), end=""),
        )
    else:
        print(redactor.lines(render_status_text(status)), end="")
    # The view is still shown, but a refused policy, or an entry under .regulator/ the store
    # refuses (a FIFO, a symlink where a unit's directory or a lease belongs), is corrupt
    # state: say so and exit 4. (A file the view reads refuses it before anything is shown.)
    refused = [*status.view["definition"]["problems"], *status.misplaced]
    if refused:
        raise CorruptState("\n".join(refused))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    import sys
    import time

    from regulator.host.demo import build_demo, run_live

    started = time.monotonic()
    target = Path(args.dir)
    try:
        layout = build_demo(target, log=lambda line: print(visible(line), file=sys.stderr))
    except FileExistsError as exc:
        raise CliError(str(exc)) from None
    print(visible(f"demo instance ready at {layout.root} in {time.monotonic() - started:.1f} s"))
    print(visible(f"look at it: regulator status --instance {layout.root}"))
    if args.live:
        print("live: a new unit every few seconds; Ctrl-C stops")
        try:
            run_live(layout, log=lambda line: print(visible(line), flush=True))
        except KeyboardInterrupt:
            return 0
    return 0
