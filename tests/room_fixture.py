"""A demo instance built the same way every time, for the room's tests and screenshots, and
the helpers every room test shares: ``app_for`` (a room over it, quiet and hermetic),
``wait_for``, ``settled``, ``on_the_inbox``, ``held_folds``.

The demo's own code writes it; only its randomness is pinned: the ids (uuid4), the clock, the
host name and git's dates. So an SVG of the room over it is the same on every machine.

Each suite builds it in its own temporary directory (two suites on one machine must not share
one); the room is then shown ``SHOWN_ROOT`` as the instance's path, so the snapshots do not
depend on where the temporary directory happens to be.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest import mock

from textual.app import App
from textual.screen import Screen

import tui
from tui.messages import Keep

if TYPE_CHECKING:
    from regulator.rules.ledger import Actor
    from tui.app import RoomApp
    from tui.model import InstanceModel

END = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
# Only displayed, never written by the tests (screenshots/make.py still builds here).
SHOWN_ROOT = Path("/tmp/regulator-room-fixture/calc")
FIXED_ROOT = SHOWN_ROOT


@contextmanager
def pinned() -> Iterator[None]:
    rng = random.Random(20261201)

    def fixed_uuid4() -> uuid.UUID:
        return uuid.UUID(int=rng.getrandbits(128), version=4)

    dates = {
        "GIT_AUTHOR_DATE": "2026-12-01T07:00:00+00:00",
        "GIT_COMMITTER_DATE": "2026-12-01T07:00:00+00:00",
        "GIT_AUTHOR_NAME": "regulator-demo",
        "GIT_AUTHOR_EMAIL": "demo@regulator.invalid",
        "GIT_COMMITTER_NAME": "regulator-demo",
        "GIT_COMMITTER_EMAIL": "demo@regulator.invalid",
    }
    with (
        mock.patch.object(uuid, "uuid4", fixed_uuid4),
        mock.patch.object(socket, "gethostname", lambda: "host"),
        mock.patch.dict(os.environ, dates),
    ):
        yield


def build_fixture(root: Path) -> Path:
    """The demo at ``root`` (replacing what was there), ending at ``END``."""
    from regulator.host.demo import build_demo

    if root.exists():
        shutil.rmtree(root)
    root.parent.mkdir(parents=True, exist_ok=True)
    with pinned():
        build_demo(root, now=END)
    return root


def fixed_clock() -> datetime:
    # A minute after the story ends: what it wrote last (the reminders) is in the past.
    return END + timedelta(minutes=1)


def copy_fixture(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, symlinks=True)
    return target


def app_for(*roots: Path, person: str | None = "alice", **kw: Any) -> RoomApp:
    """A room over ``roots`` as the tests open it: acting as ``person``, at ``fixed_clock``,
    with no watcher, no presence file and no keymap of the machine's (each can be given)."""
    from tui.app import RoomApp

    kw.setdefault("clock", fixed_clock)
    kw.setdefault("watch", False)
    kw.setdefault("presence", False)
    kw.setdefault("keymap", roots[0].parent / "no-keymap.yaml")
    return RoomApp(list(roots), person=person, **kw)


async def wait_for(
    pilot: Any, condition: Callable[[], bool], seconds: float = 10, step: float = 0.02
) -> None:
    """Let the app run (``step`` seconds at a time) until ``condition()`` holds; fail after
    ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await pilot.pause(step)


async def settled(pilot: Any, seconds: float = 10) -> None:
    """Until the room has read every instance (it reads on worker threads), and its workers
    (the replay, the attention report) are done."""
    app = pilot.app
    deadline = time.monotonic() + seconds
    await pilot.pause()
    while not getattr(app, "loaded", True) or any(
        w.is_running and w.group != "watch" for w in app.workers
    ):
        if time.monotonic() > deadline:
            raise AssertionError("the room did not finish reading in time")
        await pilot.pause(0.02)
    await pilot.pause()


def held_folds(model: Any) -> tuple[threading.Event, threading.Event]:
    """Make ``model``'s folds take as long as the test wants: each waits (at most 15 s) until
    the first event returned is set. The second is set when a fold has started."""
    gate, started = threading.Event(), threading.Event()
    fold = model.refresh

    def held(paths: Any = None) -> Any:
        started.set()
        gate.wait(timeout=15)
        return fold(paths)

    model.refresh = held
    return gate, started


async def on_the_inbox(pilot: Any) -> Any:
    """Once the room has read everything: its main screen, showing the Inbox tab."""
    await settled(pilot)
    main = pilot.app.main
    assert main is not None
    main.action_tab("inbox")
    await pilot.pause()
    return main


def read_model(root: Path) -> InstanceModel:
    """The room's model of the instance at ``root``, read once at ``fixed_clock`` (what the
    room holds once it has read the instance)."""
    from tui.model import InstanceModel

    model = InstanceModel(root, clock=fixed_clock)
    model.refresh(None)
    return model


def room_actor() -> Actor:
    """Who acts, as the room makes it (``RoomApp.actor``): the room, as the OS user."""
    from regulator.host.instance import os_user
    from regulator.rules.ledger import Actor

    return Actor(via="room", os_user=os_user())


class DialogHost(App[None]):
    """One dialog over an empty screen, in the room's styles: for what a dialog does on its
    own (its fields, its keys, what it records), where opening the whole room adds nothing.
    ``results``: what the dialog was dismissed with; ``kept``: what it sent up for the
    notifications log (``tui.messages.Keep``)."""

    CSS_PATH = str(Path(tui.__file__).with_name("room.tcss"))

    def __init__(self, dialog: Screen[Any]) -> None:
        super().__init__()
        self.dialog = dialog
        self.results: list[Any] = []
        self.kept: list[str] = []

    def on_mount(self) -> None:
        self.push_screen(self.dialog, self.results.append)

    def on_keep(self, message: Keep) -> None:
        self.kept.append(message.message)

    async def shown(self, pilot: Any) -> None:
        """Until the dialog is up, its parts mounted."""
        await wait_for(pilot, lambda: self.screen is self.dialog and self.dialog.is_mounted)
        await pilot.pause()
