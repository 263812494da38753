"""Who can answer now without the room: ``regulator serve`` with answer pages, and a channel.

A person counts as present for a question when they may answer it and have a live way to:
the control room open (:mod:`regulator.host.presence`), or ``regulator serve --http`` running
and a channel of theirs that takes this question now (its severity, kinds and quiet hours),
whose message will carry a link to the answer page. Then the asking call waits the kind's
timeout as it does for a room.

``serve.json`` says that a server runs. It is refreshed every :data:`HEARTBEAT_S` while the
server's loop and its answer pages are alive, and read like a presence file: stale after three
missed heartbeats, ignored at once on this host when its process is gone or a later process
has its pid. A crashed server cannot keep anyone reachable for longer than that. Whatever
wrote the file, believing it only ever makes a question wait (never answers it): the answer
still needs the link, which only the person's channel received.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from regulator.host.agent_process import process_start
from regulator.host.presence import ended
from regulator.protocol.clock import Clock, now_iso, parse_iso, system_clock
from regulator.protocol.entry import load_record
from regulator.protocol.interaction import severity_for_kind
from regulator.protocol.ours import ServeLiveness
from regulator.protocol.policies import InteractionPolicy
from regulator.store import (
    Layout,
    RecordNotFound,
    StoreError,
    read_bytes,
    remove_file,
    write_json_atomic,
)

if TYPE_CHECKING:
    from regulator.host.channels import ChannelDelivery

SERVE_FILE = "serve.json"
HEARTBEAT_S = 2.0
STALE_AFTER_S = 3 * HEARTBEAT_S


def serve_path(layout: Layout) -> Path:
    return layout.state / SERVE_FILE


class ServeBeat:
    """This server's ``serve.json``: written by :meth:`beat`, removed by :meth:`close`."""

    def __init__(self, layout: Layout, answer_url: str | None, clock: Clock = system_clock):
        self.layout = layout
        self.clock = clock
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.answer_url = answer_url
        self.since = now_iso(clock)
        self.process_start = process_start(self.pid)

    def record(self) -> ServeLiveness:
        return ServeLiveness(
            host=self.host,
            pid=self.pid,
            since=self.since,
            heartbeat_at=now_iso(self.clock),
            process_start=self.process_start,
            answer_url=self.answer_url,
        )

    def beat(self) -> None:
        write_json_atomic(serve_path(self.layout), self.record().to_json_dict())

    def close(self) -> None:
        """Remove the file if it is still this process's (serve.lock keeps it so)."""
        try:
            current = load_record(ServeLiveness, read_bytes(serve_path(self.layout)))
        except Exception:
            return
        if current.pid == self.pid and current.host == self.host:
            remove_file(serve_path(self.layout))


class ServeHeartbeat:
    """Beats ``serve.json`` on a thread of its own while ``alive()`` says the server works."""

    def __init__(
        self, beat: ServeBeat, alive: Callable[[], bool], every: float = HEARTBEAT_S
    ) -> None:
        self.beats = beat
        self.alive = alive
        self.every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="serve-heartbeat", daemon=True)

    def start(self) -> ServeHeartbeat:
        self._beat_once()
        self._thread.start()
        return self

    def _beat_once(self) -> None:
        if not self.alive():
            return  # no beat: the file goes stale and nobody waits on a server that hangs
        try:
            self.beats.beat()
        except (OSError, StoreError):
            pass  # tried again at the next beat

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self._beat_once()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        try:
            self.beats.close()
        except (OSError, StoreError):
            pass


def serving(layout: Layout, clock: Clock = system_clock) -> ServeLiveness | None:
    """The running server of this instance, if its file is fresh and its process not gone."""
    try:
        record = load_record(ServeLiveness, read_bytes(serve_path(layout)))
        beat = parse_iso(record.heartbeat_at)
    except (RecordNotFound, StoreError, OSError):
        return None
    except Exception:  # a half-written or foreign file says nothing runs
        return None
    if ended(record, socket.gethostname()):
        return None
    if clock() - beat > timedelta(seconds=STALE_AFTER_S):
        return None
    return record


@dataclass(frozen=True, slots=True)
class Reached:
    person: str
    channel: str


def reachable(
    layout: Layout,
    policy: InteractionPolicy | None,
    kind: str,
    clock: Clock = system_clock,
    *,
    concern: str = "interaction",
) -> list[Reached]:
    """Who may answer a question of ``kind`` and would get its link on a channel now.

    Empty without a policy, without a live server with answer pages, or when every channel
    that could carry it is in quiet hours or does not take it.
    """
    if policy is None or not any(p.channels for p in policy.people):
        return []
    server = serving(layout, clock)
    if server is None or server.answer_url is None:
        return []
    # Only now: a hook asks this before every call that may write, and mostly no server runs.
    from regulator.host.channels import in_quiet_hours, takes
    from regulator.rules.authority import check_disposition_authority

    severity = severity_for_kind(kind)  # type: ignore[arg-type]
    now = clock()
    found: list[Reached] = []
    for person in policy.people:
        if check_disposition_authority(policy, person.name, severity=severity) is not None:
            continue
        for channel in person.channels or []:
            if not takes(channel, severity, concern, kind):
                continue
            if in_quiet_hours(channel, now, severity):
                continue
            found.append(Reached(person.name, channel.label))
    return found


def where_asked(sent: Sequence[ChannelDelivery], now: datetime) -> str | None:
    """``asked alice on phone, 0:42 ago``: where the latest delivery of a question went."""
    went = [d for d in sent if d.outcome == "sent"]
    if not went:
        return None
    latest = max(d.delivery for d in went)
    went = [d for d in went if d.delivery == latest]
    people: dict[str, list[str]] = {}
    for d in went:
        people.setdefault(d.person, []).append(d.channel)
    where = "; ".join(f"{p} on {' and '.join(chs)}" for p, chs in people.items())
    try:
        first = min(parse_iso(d.at) for d in went)
    except ValueError:
        return f"asked {where}"
    secs = max(0, int((now - first).total_seconds()))
    return f"asked {where}, {secs // 60}:{secs % 60:02d} ago"
