"""S2's thrash detector: a unit rewriting the same file again and again is oscillating.

Writes are counted per file per unit from three sources:

* ``hook``: Claude Code's own Write, Edit, MultiEdit and NotebookEdit tools, which no session
  tool sees. Its ``PreToolUse`` hook records each such call it lets through as an *expected*
  write, with the file's state before it (:meth:`ThrashDetector.expect`); the next hooked call
  of the session (or its end) settles it (:meth:`ThrashDetector.settle`): a file whose state
  changed since was written, one that did not was not (the edit failed, or was refused at
  Claude Code's own prompt). Counted this way no second process runs after the tool (a
  ``PostToolUse`` hook cost some 0.4 s an edit), and a failed edit is not counted;
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
signalled again. A session unit has no loop step to route it: its signal is routed at once
(:func:`route_now`).

The hook's path through here is light: the regulatory log, the ledger and git are imported
only when a signal is written.
"""

from __future__ import annotations

import os
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from regulator.policy import Definition
from regulator.protocol.clock import Clock, now_iso, system_clock
from regulator.store import Layout, RecordNotFound, check_unit_id, locked_log, read_bytes

if TYPE_CHECKING:
    from regulator.protocol.messages import CoordinationSignal

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


def file_state(path: str) -> list[int] | None:
    """What tells a write of ``path`` from none: its modification time, size and inode (``None``
    when there is no file). Read without following a symlink: the link is what was written."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size, st.st_ino]


@dataclass
class WriteCounts:
    """The fold of one unit's writes file."""

    # Per file: writes since its last signal, by source.
    counts: dict[str, Counter[str]] = field(default_factory=dict)
    # Per file: writes the hooks and tools saw since the last scan of the branch.
    live: Counter[str] = field(default_factory=Counter)
    scanned: str | None = None  # the last revision the scan accounted for
    signals: list[str] = field(default_factory=list)
    # Per file: the write the hook let through and has not settled yet (its `expected` event).
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)

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
        elif kind == "expected" and isinstance(path, str):
            self.pending[path] = dict(event)
        elif kind == "settled" and isinstance(path, str):
            self.pending.pop(path, None)
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


@dataclass(frozen=True)
class Expected:
    """A write the hook lets through: the file as the unit names it, where it is, and its
    state before the call."""

    name: str
    file: str
    tool: str
    before: list[int] | None

    @classmethod
    def of(cls, name: str, file: Path, tool: str) -> Expected:
        return cls(name, str(file), tool, file_state(str(file)))


@dataclass(frozen=True)
class Told:
    """An oscillation signal, as the agent is told of it."""

    path: str
    writes: int
    threshold: int

    def text(self) -> str:
        return (
            f"regulator: you have written {self.path} {self.writes} times, past the "
            f"oscillation threshold of {self.threshold}: rewriting one file again and again "
            "usually means the requirement leaves a behaviour undecided. Stop rewriting it; if "
            "you cannot tell which behaviour is wanted, ask a person (ask_human, kind "
            "clarification) rather than trying another variant. The signal is recorded for the "
            "people who supervise this unit."
        )


class ThrashDetector:
    def __init__(
        self, layout: Layout, definition: Definition, *, clock: Clock = system_clock
    ) -> None:
        self.layout = layout
        self.threshold = threshold_of(definition)
        self.clock = clock
        self.told: list[Told] = []  # what the last call signalled, in the agent's words

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

    def expect(self, unit_id: str, attempt: int, expected: Expected) -> list[CoordinationSignal]:
        """The hook lets a write through: settle what is pending (:meth:`settle`), then record
        this one as expected. A write still pending for the same file did not happen: the
        agent's tools on one file run one after another, so it has ended unwritten."""
        if _ours(expected.name) is None:
            return self.settle(unit_id, attempt)
        return self._append(unit_id, attempt, Counter(), source="hook", expect=expected)

    def settle(
        self, unit_id: str, attempt: int, *, final: bool = False
    ) -> list[CoordinationSignal]:
        """Count each pending write whose file has changed since it was expected; ``final``
        (the session ends) drops the rest, as does a later attempt (they were never made)."""
        if not writes_path(self.layout, unit_id).is_file():
            return []  # nothing was ever expected: no lock, no file made
        if not self.counts(unit_id).pending:
            return []
        return self._append(unit_id, attempt, Counter(), source="hook", settle=True, final=final)

    def scan(
        self, unit_id: str, attempt: int, worktree: Path, since: str | None
    ) -> list[CoordinationSignal]:
        """Count the commits of the unit's branch since the last scan (else since ``since``)."""
        from regulator.host import gitops

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
        expect: Expected | None = None,
        settle: bool = False,
        final: bool = False,
    ) -> list[CoordinationSignal]:
        path = writes_path(self.layout, unit_id)
        signals: list[CoordinationSignal] = []
        self.told = []
        with locked_log(path) as log:
            state = self.counts(unit_id)
            at = now_iso(self.clock)
            lines: list[dict[str, Any]] = []

            def add(event: dict[str, Any]) -> None:
                if attempt is not None and event["event"] != "signalled":
                    event["attempt"] = attempt
                lines.append(event)
                state.apply(event)

            tools: dict[str, str] = {}
            if settle or expect is not None:
                # Read under the lock: another hook of the session may have settled them.
                for waiting, pending in sorted(state.pending.items()):
                    file = pending.get("file")
                    wrote = isinstance(file, str) and file_state(file) != pending.get("before")
                    other = pending.get("attempt") != attempt
                    again = expect is not None and expect.name == waiting
                    if wrote and not other:
                        writes[waiting] += 1
                        tools[waiting] = str(pending.get("tool", ""))
                    elif not (final or other or again):
                        continue  # still running, or failed: told apart later
                    wrote = wrote and not other
                    add({"event": "settled", "path": waiting, "wrote": wrote, "at": at})
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
                if tools.get(name) or tool:
                    event["tool"] = tools.get(name) or tool
                add(event)
            if expect is not None:
                add(
                    {
                        "event": "expected",
                        "path": expect.name,
                        "file": expect.file,
                        "before": expect.before,
                        "tool": expect.tool,
                        "at": at,
                    }
                )
            if revision is not None:
                add({"event": "scanned", "revision": revision, "at": at})
            for name in sorted({str(e["path"]) for e in lines if e["event"] == "write"}):
                if state.total(name) > self.threshold:
                    written = state.total(name)
                    signal = self._signal(unit_id, name, state.counts[name])
                    signals.append(signal)
                    self.told.append(Told(name, written, self.threshold))
                    add(
                        {
                            "event": "signalled",
                            "path": name,
                            "writes": written,
                            "signal": signal.id,
                            "at": at,
                        }
                    )
            if signals:
                from regulator.rules.ledger import Ledger

                with Ledger(self.layout, clock=self.clock).transaction() as txn:
                    for signal in signals:
                        txn.append_raw(signal)
            if lines:
                log.append([orjson.dumps(line) for line in lines])
        return signals

    def _signal(self, unit_id: str, name: str, by_source: Counter[str]) -> CoordinationSignal:
        from regulator.protocol.evidence import EvidenceRef
        from regulator.protocol.messages import CoordinationSignal

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


def route_now(
    layout: Layout, definition: Definition, unit_id: str, *, clock: Clock = system_clock
) -> bool:
    """Route the log now when ``unit_id`` is a session unit (whether it was): no loop step
    follows a session's writes to route its signal, as none follows its questions. A unit the
    loop drives is routed by the loop, after the attempt."""
    from regulator.host.delivery import route_and_deliver
    from regulator.host.session_units import is_session_unit
    from regulator.rules.execution import ExecutionStore
    from regulator.rules.ledger import Ledger

    unit = ExecutionStore(layout, clock).find_unit(unit_id)
    if unit is None or not is_session_unit(unit):
        return False
    route_and_deliver(Ledger(layout, clock=clock), definition)
    return True


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


def absolute(raw: str, cwd: Path) -> Path:
    path = Path(raw)
    return Path(os.path.normpath(path if path.is_absolute() else cwd / path))
