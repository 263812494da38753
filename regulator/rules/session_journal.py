"""What a session did that the report check rests on: ``sessions/<unit>/a<N>.ndjson``.

An attempt's tools are called from more than one process: the MCP server the agent started,
``regulator tool`` run once per call from a shell, and ``regulator hook`` for the agent's own
tools. The test runs a report may cite, and whether a report was made, must be known to all of
them, so they are an append-only journal of our own, folded on every call. The original has no
such file.

The pause and the attention budget are not kept here: they are read from the regulatory log
(:mod:`regulator.rules.pause`), so that emptying or deleting this file loosens nothing. Losing
it only loses the runs a report could cite, which makes the report check stricter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from regulator.store import Layout, RecordNotFound, check_unit_id, locked_log, read_bytes


@dataclass
class Run:
    """A ``run_tests`` or ``run_checks`` run, which a report's evidence may cite."""

    tool: str
    command: list[str]
    passed: bool
    revision: str
    dirty: bool
    summary: str
    at: str


@dataclass
class SessionState:
    """The fold of one attempt's journal."""

    reported: bool = False
    runs: list[Run] = field(default_factory=list)

    def apply(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == "run":
            self.runs.append(
                Run(
                    tool=str(event.get("tool", "")),
                    command=[str(c) for c in event.get("command", [])],
                    passed=event.get("passed") is True,
                    revision=str(event.get("revision", "")),
                    dirty=event.get("dirty") is not False,
                    summary=str(event.get("summary", "")),
                    at=str(event.get("at", "")),
                )
            )
        elif kind == "reported":
            self.reported = True


def journal_path(layout: Layout, unit_id: str, attempt: int) -> Path:
    if attempt < 0:
        raise ValueError(f"attempt must be a non-negative number, not {attempt}")
    return layout.state / "sessions" / check_unit_id(unit_id) / f"a{attempt}.ndjson"


def fold(data: bytes) -> SessionState:
    state = SessionState()
    for line in data.splitlines():
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue  # a torn line of a killed writer: the gates keep what they can read
        if isinstance(event, dict):
            state.apply(event)
    return state


class SessionJournal:
    def __init__(self, layout: Layout, unit_id: str, attempt: int) -> None:
        self.path = journal_path(layout, unit_id, attempt)

    def read(self) -> SessionState:
        try:
            return fold(read_bytes(self.path))
        except RecordNotFound:
            return SessionState()

    def append(self, event: dict[str, Any]) -> None:
        with locked_log(self.path) as log:
            log.append([orjson.dumps(event)])
