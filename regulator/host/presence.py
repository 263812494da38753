"""Who is in the control room: ``presence/<host>-<pid>.json``, refreshed while a room is open.

A session that asks a person looks here first. A fresh presence file means someone can answer
now, so ``ask_human`` waits (up to the kind's timeout) instead of pausing at once. A file is
stale after three missed heartbeats: a room that crashed stops counting as a person present.
"""

from __future__ import annotations

import os
import socket
from datetime import timedelta

from regulator.protocol.clock import Clock, now_iso, parse_iso, system_clock
from regulator.protocol.entry import load_record
from regulator.protocol.ours import Presence
from regulator.store import Layout, read_bytes, remove_file, write_json_atomic

HEARTBEAT_S = 2.0
STALE_AFTER_S = 3 * HEARTBEAT_S


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

    def beat(self) -> None:
        record = Presence(
            person=self.person,
            host=self.host,
            pid=self.pid,
            since=self.since,
            heartbeat_at=now_iso(self.clock),
        )
        write_json_atomic(self.path, record.to_json_dict())

    def close(self) -> None:
        remove_file(self.path)


def present(layout: Layout, clock: Clock = system_clock) -> list[Presence]:
    """The people with a fresh presence file on this instance."""
    now = clock()
    fresh = []
    for path in layout.list_presence():
        try:
            record = load_record(Presence, read_bytes(path))
            beat = parse_iso(record.heartbeat_at)
        except Exception:  # a half-written or foreign file is simply not a presence
            continue
        if now - beat <= timedelta(seconds=STALE_AFTER_S):
            fresh.append(record)
    return fresh
