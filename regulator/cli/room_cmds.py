"""``regulator room``: the only command that imports Textual, and only when it runs."""

from __future__ import annotations

import argparse
import tempfile
import threading
from pathlib import Path

from regulator.cli.errors import CliError
from regulator.store import find_instance


def _remote(given: str) -> str:
    """``ssh://[user@]host[:port]/path``, checked here so a typo, or a host that would be an
    option to ssh, fails before the room opens."""
    from regulator.host.remote import parse_target

    try:
        parse_target(given)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    return given


def cmd_room(args: argparse.Namespace) -> int:
    roots: list[Path] = []
    remotes: list[str] = []
    stop = threading.Event()
    if args.demo:
        from regulator.host.demo import build_demo, run_live, write_finish_scenario

        target = Path(tempfile.mkdtemp(prefix="regulator-demo-")) / "calc"
        layout = build_demo(target)
        # Beside the project, not in it: what the drive dialog offers for a scripted unit.
        scenario = str(write_finish_scenario(target.parent / "scenarios" / "finish.yaml"))
        roots.append(layout.root)
        # The live half of the demo runs beside the room: new units ask questions that wait
        # for it, and answered units are driven again.
        threading.Thread(
            target=run_live, kwargs={"layout": layout, "stop": stop.is_set}, daemon=True
        ).start()
        person = args.person or "alice"
    else:
        scenario = None
        person = args.person
        for given in args.instances:
            if given.startswith("ssh://"):
                remotes.append(_remote(given))
                continue
            root = Path(given)
            if not (root / ".regulator").is_dir():
                raise CliError(f"{given}: not an instance (no .regulator/ there)")
            roots.append(root.resolve())
        if not roots and not remotes:
            found = find_instance(Path.cwd())
            if found is None:
                raise CliError(
                    f"{Path.cwd()}: no instance here or above; pass INSTANCE, or try "
                    "`regulator room --demo`"
                )
            roots.append(found)
    override = getattr(args, "definition", None)
    if override:
        from regulator.policy import load_definition
        from regulator.policy.loader import acting_people_check

        for root in roots:  # a person acts in the room under each instance's own people
            acting_people_check(load_definition(root, Path(override)), root)
    try:
        # installed from a wheel
        from regulator.room.app import RoomApp  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ModuleNotFoundError:
        from tui.app import RoomApp  # a source checkout or an editable install

    app = RoomApp(
        [*roots, *remotes],
        person=person,
        bell=not args.no_bell,
        definition=Path(override) if override else None,
        scenario=scenario,
    )
    try:
        app.run()
    finally:
        stop.set()
    if app.open_error is not None:  # the instance could not be opened: said as any error is
        raise app.open_error
    return 0
