"""S2's thrash detector: a unit rewriting the same file again and again is oscillating.

Writes are counted per file per unit from three sources:

* ``hook``: Claude Code's ``PostToolUse`` for its own Write, Edit, MultiEdit and NotebookEdit
  tools (:func:`post_tool_use`), which no session tool sees;
* ``tool``: whatever a session tool or adapter reports writing (:meth:`ThrashDetector.record`);
* ``diff``: the commits on the unit's branch between attempts (:meth:`ThrashDetector.scan`),
  so that files edited through a shell are seen too. A file's commits count only beyond the
  writes the other two sources already saw since the last scan: the larger figure stands,
  never the sum.

The counts live in ``.regulator/sessions/<unit>/writes.ndjson``, a file of our own, so a new
session of the same unit (another attempt, a resumed agent) continues them. Past the budget
policy's ``coordination.oscillationThreshold`` (4 when the policy sets none) S2 appends one
``oscillation`` coordination signal for the file, which the recovery router reads as the
``oscillation`` cause; the file's count then starts again, so a unit that keeps at it is
signalled again.
"""

from __future__ import annotations

import os
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from regulator.host import gitops
from regulator.policy import Definition
from regulator.protocol.clock import Clock, now_iso, system_clock
from regulator.protocol.evidence import EvidenceRef
from regulator.protocol.messages import CoordinationSignal
from regulator.rules.execution import ExecutionStore
from regulator.rules.ledger import Ledger
from regulator.store import (
    Layout,
    RecordNotFound,
    StoreError,
    check_unit_id,
    locked_log,
    read_bytes,
)

DEFAULT_THRESHOLD = 4
# Claude Code's own tools that write a file, and the input field naming it.
WRITE_TOOLS: Mapping[str, str] = {
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}
SOURCES = ("hook", "tool", "diff")


def writes_path(layout: Layout, unit_id: str) -> Path:
    return layout.state / "sessions" / check_unit_id(unit_id) / "writes.ndjson"


def threshold_of(definition: Definition) -> int:
    coordination = definition.budget.coordination
    return coordination.oscillation_threshold if coordination is not None else DEFAULT_THRESHOLD


@dataclass
class WriteCounts:
    """The fold of one unit's writes file."""

    # Per file: writes since its last signal, by source.
    counts: dict[str, Counter[str]] = field(default_factory=dict)
    # Per file: writes the hooks and tools saw since the last scan of the branch.
    live: Counter[str] = field(default_factory=Counter)
    scanned: str | None = None  # the last revision the scan accounted for
    signals: list[str] = field(default_factory=list)

    def total(self, path: str) -> int:
        return sum(self.counts.get(path, Counter()).values())

    def apply(self, event: Mapping[str, Any]) -> None:
        kind = event.get("event")
        path = event.get("path")
        if kind == "write" and isinstance(path, str):
            n = event.get("count", 1)
            n = n if isinstance(n, int) and n > 0 else 1
            source = str(event.get("source", "tool"))
            self.counts.setdefault(path, Counter())[source] += n
            if source != "diff":
                self.live[path] += n
        elif kind == "scanned":
            self.live = Counter()
            revision = event.get("revision")
            self.scanned = revision if isinstance(revision, str) else self.scanned
        elif kind == "signalled" and isinstance(path, str):
            self.counts.pop(path, None)
            self.signals.append(str(event.get("signal", "")))


def fold(data: bytes) -> WriteCounts:
    state = WriteCounts()
    for line in data.splitlines():
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue  # a torn line of a killed writer: keep what reads
        if isinstance(event, dict):
            state.apply(event)
    return state


class ThrashDetector:
    def __init__(
        self, layout: Layout, definition: Definition, *, clock: Clock = system_clock
    ) -> None:
        self.layout = layout
        self.threshold = threshold_of(definition)
        self.clock = clock

    def counts(self, unit_id: str) -> WriteCounts:
        try:
            return fold(read_bytes(writes_path(self.layout, unit_id)))
        except RecordNotFound:
            return WriteCounts()

    def record(
        self,
        unit_id: str,
        attempt: int | None,
        paths: Iterable[str],
        *,
        source: str = "tool",
        tool: str | None = None,
    ) -> list[CoordinationSignal]:
        """Count one write of each of ``paths``; the signals this appended (usually none)."""
        return self._append(unit_id, attempt, Counter(paths), source=source, tool=tool)

    def scan(
        self, unit_id: str, attempt: int, worktree: Path, since: str | None
    ) -> list[CoordinationSignal]:
        """Count the commits of the unit's branch since the last scan (else since ``since``)."""
        head = gitops.head(worktree)
        if head is None:
            return []
        base = self.counts(unit_id).scanned or since
        touched: Counter[str] = Counter()
        if base is not None and base != head:
            done = gitops.git(
                worktree,
                "log",
                "--no-merges",
                "--no-renames",
                "--pretty=format:",
                "--name-only",
                "-z",
                f"{base}..{head}",
                check=False,
            )
            if done.returncode == 0:
                touched = Counter(
                    name.strip("\n") for name in done.stdout.split("\0") if name.strip("\n")
                )
        return self._append(unit_id, attempt, touched, source="diff", revision=head)

    # -- the one locked write ----------------------------------------------------------------

    def _append(
        self,
        unit_id: str,
        attempt: int | None,
        writes: Counter[str],
        *,
        source: str,
        tool: str | None = None,
        revision: str | None = None,
    ) -> list[CoordinationSignal]:
        path = writes_path(self.layout, unit_id)
        signals: list[CoordinationSignal] = []
        with locked_log(path) as log:
            state = self.counts(unit_id)
            at = now_iso(self.clock)
            lines: list[dict[str, Any]] = []
            for raw, n in sorted(writes.items()):
                name = _ours(raw)
                if name is None:
                    continue
                if source == "diff":
                    # What the hooks and tools already counted is not counted twice.
                    n = max(0, n - state.live.get(name, 0))
                if n <= 0:
                    continue
                event: dict[str, Any] = {
                    "event": "write",
                    "unit": unit_id,
                    "path": name,
                    "source": source,
                    "count": n,
                    "at": at,
                }
                if attempt is not None:
                    event["attempt"] = attempt
                if tool:
                    event["tool"] = tool
                lines.append(event)
                state.apply(event)
            if revision is not None:
                scanned: dict[str, Any] = {"event": "scanned", "revision": revision, "at": at}
                if attempt is not None:
                    scanned["attempt"] = attempt
                lines.append(scanned)
                state.apply(scanned)
            for name in sorted({str(e["path"]) for e in lines if e["event"] == "write"}):
                if state.total(name) > self.threshold:
                    signal = self._signal(unit_id, name, state.counts[name])
                    signals.append(signal)
                    done = {
                        "event": "signalled",
                        "path": name,
                        "writes": state.total(name),
                        "signal": signal.id,
                        "at": at,
                    }
                    lines.append(done)
                    state.apply(done)
            if signals:
                with Ledger(self.layout, clock=self.clock).transaction() as txn:
                    for signal in signals:
                        txn.append_raw(signal)
            if lines:
                log.append([orjson.dumps(line) for line in lines])
        return signals

    def _signal(self, unit_id: str, name: str, by_source: Counter[str]) -> CoordinationSignal:
        total = sum(by_source.values())
        seen = ", ".join(
            f"{by_source[s]} {label}"
            for s, label in (
                ("hook", "from the agent's own tools"),
                ("tool", "from the session"),
                ("diff", "in commits between attempts"),
            )
            if by_source.get(s)
        )
        return CoordinationSignal(
            id=str(uuid.uuid4()),
            timestamp=now_iso(self.clock),
            source="S2",
            channel="signal",
            destination="S3",
            subject=f"unit {unit_id} keeps rewriting {name}",
            unit=unit_id,
            severity="advisory",
            coordination="oscillation",
            observation=(
                f"{name} was written {total} times ({seen}), past the oscillation threshold "
                f"of {self.threshold} (coordination.oscillationThreshold)"
            ),
            evidence=[
                EvidenceRef.from_json_dict({"class": "file", "ref": name}),
                EvidenceRef.from_json_dict(
                    {"class": "file", "ref": f".regulator/sessions/{unit_id}/writes.ndjson"}
                ),
            ],
            resource=name,
        )


def _ours(name: str) -> str | None:
    """A repository path as counted; the instance's own state is not the unit's work."""
    while name.startswith("./"):
        name = name[2:]
    if not name or name.startswith(".regulator/") or name == ".regulator":
        return None
    return name


def relative_to_unit(raw: str, *, worktree: Path | None, root: Path, cwd: Path) -> str:
    """The path a hook names, as the branch names it: relative to the worktree, else the root."""
    path = Path(raw)
    if not path.is_absolute():
        path = cwd / path
    path = Path(os.path.normpath(path))
    for base in (worktree, root):
        if base is None:
            continue
        try:
            return path.relative_to(os.path.normpath(base)).as_posix()
        except ValueError:
            continue
    return path.as_posix()


def post_tool_use(
    payload: Mapping[str, Any],
    layout: Layout,
    definition: Definition,
    *,
    env: Mapping[str, str],
    key: str | None,
    cwd: Path,
    clock: Clock = system_clock,
) -> dict[str, Any]:
    """Claude Code's ``PostToolUse``: count a Write or Edit of the session's unit.

    A hook must never fail the agent: anything we cannot place is ignored, and the reply is
    always empty (the tool has run; there is nothing left to allow or deny).
    """
    from regulator.host.agent_session import SessionUnavailable, find_session

    tool = str(payload.get("tool_name") or "")
    field_name = WRITE_TOOLS.get(tool)
    raw_input = payload.get("tool_input")
    if field_name is None or not isinstance(raw_input, dict):
        return {}
    target = raw_input.get(field_name)
    if not isinstance(target, str) or not target:
        return {}
    try:
        # The write happened whatever the unit's state: count it for the unit the agent was
        # registered for (`unit drive`), else for the session unit of this agent.
        session = find_session(layout, definition, agent="claude-code", env=env, key=key)
        address = session.address
        if address is not None:
            unit = ExecutionStore(layout, clock).find_unit(address.unit_id)
            if unit is None:
                return {}
            unit_id = unit.unit_id
            attempt = address.attempt if address.attempt is not None else unit.attempts + 1
        else:
            session.cwd = cwd
            tools = session.tools()
            unit_id, attempt = tools.unit_id, tools.attempt
    except (SessionUnavailable, StoreError, ValueError, OSError):
        return {}
    worktree = layout.worktree(unit_id)
    name = relative_to_unit(
        target, worktree=worktree if worktree.is_dir() else None, root=layout.root, cwd=cwd
    )
    ThrashDetector(layout, definition, clock=clock).record(
        unit_id, attempt, [name], source="hook", tool=tool
    )
    return {}
