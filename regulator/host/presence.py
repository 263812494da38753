"""Who is in the control room: ``presence/<host>-<pid>.json``, refreshed while a room is open.

A session that asks a person looks here first. A fresh presence file means someone can answer
now, so ``ask_human`` waits (up to the kind's timeout) instead of pausing at once. A file is
stale after three missed heartbeats: a room that crashed stops counting as a person present.

A room killed outright (SIGKILL, a lost terminal) cannot remove its file. On this host the
reader need not wait for staleness: a file whose process is gone (no such pid, a zombie, or a
later process given the same pid) is ignored at once and removed by the next reader or room.
Another host's processes cannot be probed, so there only the heartbeat tells.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path

from regulator.host.agent_process import proc_stat, process_start
from regulator.protocol.clock import Clock, now_iso, parse_iso, system_clock
from regulator.protocol.entry import load_record
from regulator.protocol.ours import Presence, ServeLiveness
from regulator.store import Layout, StoreError, read_bytes, remove_file, write_json_atomic

HEARTBEAT_S = 2.0
STALE_AFTER_S = 3 * HEARTBEAT_S


def ended(record: Presence | ServeLiveness, host: str) -> bool:
    """Whether the process that wrote ``record`` is known to be gone (only ``host``'s can be)."""
    if record.host != host:
        return False
    try:
        os.kill(record.pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # PermissionError: it exists, as another user's process
        pass
    stat = proc_stat(record.pid)
    if stat is None:
        return False
    if stat.state in ("Z", "X"):  # killed, not yet reaped by its parent
        return True
    return record.process_start is not None and stat.start != record.process_start


class PresenceFile:
    """This process's presence: written on open, refreshed by ``beat()``, removed on close."""

    def __init__(self, layout: Layout, person: str, clock: Clock = system_clock) -> None:
        self.layout = layout
        self.clock = clock
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.path = layout.presence(self.host, self.pid)
        self.person = person
        self.since = now_iso(clock)
        self.process_start = process_start(self.pid)
        self._swept = False

    def beat(self) -> None:
        if not self._swept:  # a room opening clears what rooms killed before it left behind
            self._swept = True
            try:
                present(self.layout, self.clock)
            except (OSError, StoreError):
                pass  # the write below names the problem, if it is the presence directory
        record = Presence(
            person=self.person,
            host=self.host,
            pid=self.pid,
            since=self.since,
            heartbeat_at=now_iso(self.clock),
            process_start=self.process_start,
        )
        write_json_atomic(self.path, record.to_json_dict())

    def close(self) -> None:
        remove_file(self.path)


class Heartbeat:
    """Beats presence files every ``every`` seconds on a thread of its own, until stopped.

    A room's UI thread never waits on the write (a rename and two fsyncs); a failed write is
    tried again at the next beat. ``alive`` says whether the person can still see the room:
    while it says no (a UI that stopped answering), no beat is written, the files go stale,
    and a session asking a question learns that nobody is there rather than waiting on a
    screen nobody can read.
    """

    def __init__(
        self,
        files: Sequence[PresenceFile],
        every: float = HEARTBEAT_S,
        *,
        alive: Callable[[], bool] = lambda: True,
    ) -> None:
        self.files = list(files)
        self.every = every
        self.alive = alive
        self.beats = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="presence", daemon=True)

    def start(self) -> Heartbeat:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            if not self.alive():
                self._stop.wait(self.every)
                continue
            for presence in self.files:
                try:
                    presence.beat()
                except (OSError, StoreError):
                    pass
            self.beats += 1
            self._stop.wait(self.every)

    def stop(self) -> None:
        """No beat after this returns; the files are removed."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        for presence in self.files:
            try:
                presence.close()
            except (OSError, StoreError):
                pass


def _forget(path: Path, data: bytes) -> None:
    """Remove a dead process's file, unless it changed since it was read (a new process given
    the same pid has just written it)."""
    try:
        if read_bytes(path) == data:
            remove_file(path)
    except (OSError, StoreError):  # gone already, or an instance this reader may not change
        pass


def present(layout: Layout, clock: Clock = system_clock) -> list[Presence]:
    """The people with a fresh presence file on this instance, whose process is not gone.

    The files of processes known to be gone are removed on the way.
    """
    now = clock()
    host = socket.gethostname()
    fresh = []
    for path in layout.list_presence():
        try:
            data = read_bytes(path)
            record = load_record(Presence, data)
            beat = parse_iso(record.heartbeat_at)
        except Exception:  # a half-written or foreign file is simply not a presence
            continue
        if ended(record, host):
            _forget(path, data)
        elif now - beat <= timedelta(seconds=STALE_AFTER_S):
            fresh.append(record)
    return fresh
