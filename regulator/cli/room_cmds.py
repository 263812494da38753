"""``regulator room``: the only command that imports Textual, and only when it runs."""

from __future__ import annotations

import argparse
import tempfile
import threading
from pathlib import Path

from regulator.cli.errors import CliError
from regulator.store import find_instance


def cmd_room(args: argparse.Namespace) -> int:
    roots: list[Path] = []
    stop = threading.Event()
    if args.demo:
        from regulator.host.demo import build_demo, run_live

        target = Path(tempfile.mkdtemp(prefix="regulator-demo-")) / "calc"
        layout = build_demo(target)
        roots.append(layout.root)
        # The live half of the demo runs beside the room: new units ask questions that wait
        # for it, and answered units are driven again.
        threading.Thread(
            target=run_live, kwargs={"layout": layout, "stop": stop.is_set}, daemon=True
        ).start()
        person = args.person or "alice"
    else:
        person = args.person
        for given in args.instances:
            root = Path(given)
            if not (root / ".regulator").is_dir():
                raise CliError(f"{given}: not an instance (no .regulator/ there)")
            roots.append(root.resolve())
        if not roots:
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

    try:
        RoomApp(
            roots,
            person=person,
            bell=not args.no_bell,
            definition=Path(override) if override else None,
        ).run()
    finally:
        stop.set()
    return 0
