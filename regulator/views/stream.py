"""``regulator stream``: an instance's changes as JSON lines, for a room on another machine.

A room that opens ``ssh://host/path`` runs ``ssh host regulator stream --since CURSOR`` and
reads one JSON object per line. The remote host folds its own log (the same fold ``regulator
obligations --json`` prints), so the room needs no second copy of the fold logic, and every act
goes back as a remote CLI command (``ssh host regulator answer …``), so authority and
provenance are the remote host's. Protocol 1 (docs/reaching-people.md, "Remote instances"):

``hello``       first line: ``protocol``, ``instance``, ``host``, ``osUser``, ``pid``,
                ``cursor`` (where this stream starts) and ``reset`` (true when the cursor given
                could not be continued and the stream starts over: drop what you hold).
``obligation``  an obligation's whole folded state (``obligation``), for each one opened or
                changed since the cursor; the newest state wins.
``interaction`` a question and its answers (``interaction``) when one was asked or answered.
``message``     a new message of the regulatory log (``message``).
``delivery``    a record of ``deliveries.ndjson`` (where a delivery went, whether it failed).
``provenance``  a record of ``provenance.ndjson`` (who typed an event: OS user, host, via).
``problem``     a line that could not be read (``problem``: ``file:line: message``).
``sync``        the end of a batch: everything up to ``cursor`` has been sent. Store it, and
                reconnect with ``--since`` it: nothing is sent twice, nothing is missed.
``heartbeat``   every ``--heartbeat`` seconds without a batch (``at``, ``cursor``), so a
                reader can tell a quiet instance from a dead connection.

A cursor is ``s<n>.d<n>.p<n>``: byte offsets into ``signals.ndjson``, ``deliveries.ndjson``
and ``provenance.ndjson``, each at a line's end. ``0`` is the start of all three. A file that
shrank below its offset (replaced) restarts the stream with ``reset: true``.

Every string passes through the instance's redactor (canaries, credential shapes, channel
secrets) before it leaves the host: the room at the other end does not know them.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from regulator.host.channels import deliveries_path
from regulator.protocol.clock import Clock, now_iso, system_clock
from regulator.protocol.errors import Refused
from regulator.rules.authority import process_os_user
from regulator.rules.regulatory_log import RegulatoryLog
from regulator.store import Layout, RecordNotFound, read_bytes
from regulator.views.redaction import Redactor

PROTOCOL = 1
_CURSOR = re.compile(r"^s(\d+)\.d(\d+)\.p(\d+)$")

Emit = Callable[[dict[str, Any]], None]


class BadCursor(Refused):
    pass


@dataclass(frozen=True, slots=True)
class Cursor:
    signals: int = 0
    deliveries: int = 0
    provenance: int = 0

    def __str__(self) -> str:
        return f"s{self.signals}.d{self.deliveries}.p{self.provenance}"

    @classmethod
    def parse(cls, text: str) -> Cursor:
        if text.strip() == "0":
            return cls()
        match = _CURSOR.match(text.strip())
        if match is None:
            raise BadCursor(
                f"--since: {text!r} is not a cursor (0, or s<n>.d<n>.p<n> from a sync line)"
            )
        return cls(int(match.group(1)), int(match.group(2)), int(match.group(3)))


def _tail(path: Path, offset: int) -> tuple[bytes, int, bool]:
    """Complete lines after ``offset``, the new offset, and whether the file shrank below it."""
    try:
        data = read_bytes(path)
    except RecordNotFound:
        return b"", 0, offset > 0
    if offset > len(data) or (offset > 0 and data[offset - 1 : offset] != b"\n"):
        return b"", 0, True
    end = data.rfind(b"\n", offset) + 1
    if end <= offset:
        return b"", offset, False
    return data[offset:end], end, False


def _lines(chunk: bytes) -> list[bytes]:
    return [line for line in chunk.split(b"\n") if line.strip()]


class Streamer:
    """Emits an instance's changes after a cursor, batch by batch."""

    def __init__(
        self,
        layout: Layout,
        since: Cursor,
        emit: Emit,
        *,
        redactor: Redactor | None = None,
        clock: Clock = system_clock,
    ) -> None:
        self.layout = layout
        self.cursor = since
        self.clock = clock
        self.redactor = redactor if redactor is not None else Redactor.for_layout(layout)
        self._emit_raw = emit
        self.log = RegulatoryLog(layout)

    def emit(self, item: dict[str, Any]) -> None:
        self._emit_raw(self.redactor.redact_json(item))

    def hello(self) -> None:
        reset = self._shrunk()
        if reset:
            self.cursor = Cursor()
        self.emit(
            {
                "type": "hello",
                "protocol": PROTOCOL,
                "instance": str(self.layout.root),
                "host": socket.gethostname(),
                "osUser": process_os_user(),
                "pid": os.getpid(),
                "cursor": str(self.cursor),
                "reset": reset,
            }
        )

    def _shrunk(self) -> bool:
        return any(_tail(path, offset)[2] for path, offset in self._files())

    def _files(self) -> list[tuple[Path, int]]:
        return [
            (self.layout.signals, self.cursor.signals),
            (deliveries_path(self.layout), self.cursor.deliveries),
            (self.layout.provenance, self.cursor.provenance),
        ]

    def heartbeat(self) -> None:
        self.emit({"type": "heartbeat", "at": now_iso(self.clock), "cursor": str(self.cursor)})

    def batch(self) -> bool:
        """Emit what arrived after the cursor, then ``sync``; False (and nothing) when nothing
        did."""
        if self._shrunk():
            self.cursor = Cursor()
            self.log = RegulatoryLog(self.layout)
            self.emit({"type": "reset", "reason": "a file was replaced or shrank"})
        signals, s_end, _ = _tail(self.layout.signals, self.cursor.signals)
        deliveries, d_end, _ = _tail(deliveries_path(self.layout), self.cursor.deliveries)
        provenance, p_end, _ = _tail(self.layout.provenance, self.cursor.provenance)
        if not (signals or deliveries or provenance):
            return False
        problems_before = len(self.log.problems)
        # Folded after the bytes were read: the states are at least as new as the lines.
        self.log.refresh()
        self._signals(signals)
        for problem in self.log.problems[problems_before:]:
            self.emit({"type": "problem", "problem": str(problem)})
        self._records("delivery", deliveries, deliveries_path(self.layout))
        self._records("provenance", provenance, self.layout.provenance)
        self.cursor = Cursor(s_end, d_end, p_end)
        self.emit({"type": "sync", "cursor": str(self.cursor), "at": now_iso(self.clock)})
        return True

    def _signals(self, chunk: bytes) -> None:
        obligations: dict[str, None] = {}
        interactions: dict[str, None] = {}
        for raw in _lines(chunk):
            try:
                item = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue  # the fold reports it as a problem
            if not isinstance(item, dict):
                continue
            if "kind" in item and isinstance(item.get("id"), str):
                message = self.log.messages.get(item["id"])
                if message is not None:
                    self.emit({"type": "message", "message": message.to_json_dict()})
                continue
            kind = item.get("type")
            if kind == "obligation-opened" and isinstance(item.get("obligation"), dict):
                obligations[str(item["obligation"].get("id"))] = None
            elif isinstance(item.get("obligationId"), str):
                obligations[item["obligationId"]] = None
            elif kind == "interaction-requested" and isinstance(item.get("request"), dict):
                interactions[str(item["request"].get("id"))] = None
            elif kind == "interaction-answered" and isinstance(item.get("requestId"), str):
                interactions[item["requestId"]] = None
        for request_id in interactions:
            state = self.log.interactions.get(request_id)
            if state is not None:
                obligations[state.request.obligation_id] = None
                self.emit({"type": "interaction", "interaction": state.to_json()})
        for obligation_id in obligations:
            o = self.log.obligations.get(obligation_id)
            if o is not None:
                self.emit({"type": "obligation", "obligation": o.to_json_dict()})

    def _records(self, kind: str, chunk: bytes, path: Path) -> None:
        for raw in _lines(chunk):
            try:
                record = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                self.emit(
                    {"type": "problem", "problem": f"{self.layout.label(path)}: not JSON ({exc})"}
                )
                continue
            self.emit({"type": kind, kind: record})


def follow(streamer: Streamer, stop: Any, *, heartbeat_s: float = 15.0, once: bool = False) -> None:
    """``hello``, a first batch (with ``sync`` even when empty), then every change until
    ``stop`` (a ``threading.Event``) is set, with a heartbeat when quiet."""
    import time

    import watchfiles

    streamer.hello()
    if not streamer.batch():
        streamer.emit(
            {"type": "sync", "cursor": str(streamer.cursor), "at": now_iso(streamer.clock)}
        )
    if once:
        return
    names = {
        streamer.layout.signals.name,
        deliveries_path(streamer.layout).name,
        streamer.layout.provenance.name,
    }
    last = time.monotonic()
    for _changes in watchfiles.watch(
        streamer.layout.state,
        watch_filter=lambda _c, path: Path(path).name in names,
        debounce=30,
        step=20,
        stop_event=stop,
        rust_timeout=400,
        yield_on_timeout=True,
        raise_interrupt=False,
        recursive=False,
    ):
        if stop.is_set():
            return
        # Every wake-up compares offsets too: a missed change event costs one wake-up, not data.
        if streamer.batch():
            last = time.monotonic()
        elif time.monotonic() - last >= heartbeat_s:
            streamer.heartbeat()
            last = time.monotonic()
