"""A demo instance built the same way every time, for the room's tests and screenshots.

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
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from unittest import mock

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


async def settled(pilot: Any, seconds: float = 10) -> None:
    """Until the room has read every instance (it reads on worker threads), and its workers
    (the replay, the attention report) are done."""
    import time

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
