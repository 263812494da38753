"""What the session gates know about one attempt, kept on disk: ``sessions/<unit>/a<N>.ndjson``.

An attempt's tools are called from more than one process: the MCP server the agent started,
``regulator tool`` run once per call from a shell, and ``regulator hook`` for the agent's own
tools. The pause gate and the attention budget must hold across all of them, so what the gates
know (questions asked, the pause, the test runs a report may cite, whether a report was made)
is an append-only journal of our own, folded on every call. The original has no such file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
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

    paused: str | None = None
    blocking_asked: int = 0
    reported: bool = False
    runs: list[Run] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)  # obligation ids this attempt opened

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
        elif kind == "asked":
            self.asked.append(str(event.get("obligation", "")))
            if event.get("blocking") is True:
                self.blocking_asked += 1
        elif kind == "paused":
            # The first pause stands: nothing in the attempt lifts it.
            if self.paused is None:
                self.paused = str(event.get("reason", "a question went unanswered"))
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
        with self.locked() as (_, append):
            append(event)

    @contextmanager
    def locked(self) -> Iterator[tuple[SessionState, Callable[[dict[str, Any]], None]]]:
        """The state as it stands under the journal's lock, and a way to append to it.

        Two processes of one attempt asking at once cannot both pass the attention budget.
        """
        with locked_log(self.path) as log:
            state = self.read()

            def append(event: dict[str, Any]) -> None:
                log.append([orjson.dumps(event)])
                state.apply(event)

            yield state, append
