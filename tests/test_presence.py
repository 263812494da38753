"""Presence: a room killed outright stops counting as a person present at once, on this host."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from regulator.host.agent_process import process_start
from regulator.host.presence import STALE_AFTER_S, PresenceFile, present
from regulator.protocol.clock import parse_iso
from regulator.store import Layout

# A room in a child process: it writes its presence once, says so, then waits on stdin.
ROOM = """
import sys
from regulator.host.presence import PresenceFile
from regulator.store import Layout
PresenceFile(Layout(sys.argv[1], env={}), "bob").beat()
print("present", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    (tmp_path / ".regulator").mkdir()
    return Layout(tmp_path, env={})


@pytest.fixture
def room(layout: Layout) -> Iterator[subprocess.Popen[str]]:
    child = subprocess.Popen(
        [sys.executable, "-c", ROOM, str(layout.root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline() == "present\n"  # an empty line if the child died instead
    yield child
    child.kill()
    child.wait(timeout=30)


def at_its_heartbeat(layout: Layout) -> datetime:
    """The time the child's file was written: no file is stale then."""
    (path,) = layout.list_presence()
    return parse_iso(json.loads(path.read_text())["heartbeatAt"])


def test_a_room_killed_with_sigkill_is_not_present_at_once_and_its_file_is_removed(
    layout: Layout, room: subprocess.Popen[str]
) -> None:
    then = at_its_heartbeat(layout)
    assert [p.person for p in present(layout, lambda: then)] == ["bob"]
    room.send_signal(signal.SIGKILL)
    room.wait(timeout=30)
    assert present(layout, lambda: then) == []
    assert layout.list_presence() == []


@pytest.mark.skipif(not hasattr(os, "waitid"), reason="needs waitid to leave a zombie")
def test_a_killed_room_not_yet_reaped_by_its_parent_is_not_present(
    layout: Layout, room: subprocess.Popen[str]
) -> None:
    then = at_its_heartbeat(layout)
    room.send_signal(signal.SIGKILL)
    # Wait for it to die but leave it unreaped: its pid still answers a signal 0.
    os.waitid(os.P_PID, room.pid, os.WEXITED | os.WNOWAIT)
    assert present(layout, lambda: then) == []
    assert layout.list_presence() == []


def test_a_room_opening_removes_the_file_a_killed_room_left(
    layout: Layout, room: subprocess.Popen[str]
) -> None:
    room.send_signal(signal.SIGKILL)
    room.wait(timeout=30)
    mine = PresenceFile(layout, "alice")
    mine.beat()
    assert layout.list_presence() == [mine.path]


def write(layout: Layout, host: str, pid: int, start: int | None, at: datetime) -> Path:
    path = layout.presence(host, pid)
    path.parent.mkdir(exist_ok=True)
    record = {
        "person": "carol",
        "host": host,
        "pid": pid,
        "since": at.isoformat(),
        "heartbeatAt": at.isoformat(),
        **({"processStart": start} if start is not None else {}),
    }
    path.write_text(json.dumps(record))
    return path


@pytest.mark.skipif(process_start(os.getpid()) is None, reason="needs /proc/<pid>/stat")
def test_a_live_process_that_reused_a_dead_rooms_pid_does_not_keep_it_present(
    layout: Layout,
) -> None:
    now = datetime.now().astimezone()
    start = process_start(os.getpid())
    assert start is not None
    host = socket.gethostname()
    path = write(layout, host, os.getpid(), start + 1, now)
    assert present(layout, lambda: now) == []
    assert not path.exists()
    write(layout, host, os.getpid(), start, now)
    assert [p.person for p in present(layout, lambda: now)] == ["carol"]


def test_another_hosts_room_counts_until_its_heartbeat_is_stale_and_its_file_is_left_alone(
    layout: Layout,
) -> None:
    now = datetime.now().astimezone()
    # A pid no process here has: another host's rooms cannot be probed from this one.
    path = write(layout, "elsewhere.invalid", 2**22 + 1, 1, now)
    assert [p.person for p in present(layout, lambda: now)] == ["carol"]
    later = now + timedelta(seconds=STALE_AFTER_S + 1)
    assert present(layout, lambda: later) == []
    assert path.exists()


def test_a_presence_with_pid_zero_is_not_a_presence_and_signals_no_process_group(
    layout: Layout,
) -> None:
    now = datetime.now().astimezone()
    path = layout.presence(socket.gethostname(), 1)
    path.parent.mkdir()
    path.write_text(
        json.dumps(
            {
                "person": "mallory",
                "host": socket.gethostname(),
                "pid": 0,
                "since": now.isoformat(),
                "heartbeatAt": now.isoformat(),
            }
        )
    )
    assert present(layout, lambda: now) == []
