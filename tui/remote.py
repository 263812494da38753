"""An instance on another machine, shown like a local one: ``regulator room ssh://host/path``.

A worker thread runs ``ssh -- host regulator stream --instance PATH --since CURSOR`` (the
address and the command line: :mod:`regulator.host.remote`; protocol:
docs/reaching-people.md) and folds each line into the same counts the screens read from a local
``InstanceModel``; the UI thread only drains what changed. The remote host folds its own log,
so nothing of the fold is copied here. Every act goes back as the remote CLI command with
``--json`` over the same transport, so the remote host checks authority and records provenance
(its OS user); what it did is read from the JSON object the command prints, a refusal is its
stderr line. Nothing is written on this disk.

``REGULATOR_SSH`` replaces the ``ssh`` command (tests run the remote side as a local
subprocess); ``REGULATOR_REMOTE`` the ``regulator`` run on the host.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath
from typing import Any

import orjson

from regulator.host.channels import ChannelDelivery
from regulator.host.remote import RemoteTarget, parse_target, remote_command
from regulator.protocol.clock import Clock, system_clock
from regulator.protocol.entry import validate_entry
from regulator.protocol.errors import HostFailure, Refused
from regulator.protocol.execution import UnitRecord
from regulator.protocol.interaction import InteractionRequest
from regulator.protocol.messages import VsmMessage
from regulator.protocol.obligations import ObligationState
from regulator.rules.dispositions import Answered, Escalation
from regulator.rules.memory_store import MemoryState
from regulator.rules.regulatory_log import Answer, FoldedState, InteractionState
from regulator.views.next_step import NextStep
from regulator.views.redaction import Redactor

from .model import (
    AckAct,
    AnswerAct,
    Changes,
    EscalateAct,
    FoldedCounts,
    InstanceModel,
    InstanceView,
    ResolveAct,
)

HEARTBEAT_S = 5.0
# No line (not even a heartbeat) for this long: the connection is dead though nobody said so.
SILENT_S = 4 * HEARTBEAT_S
RETRY_S = (0.5, 1.0, 2.0, 5.0, 10.0)
ACT_TIMEOUT_S = 60.0


class RemoteLog(FoldedState):
    """The folded state as the remote host sent it (a ``FoldedLog``); never reads a file."""

    def __init__(self) -> None:
        self.obligations: dict[str, ObligationState] = {}
        self.interactions: dict[str, InteractionState] = {}
        self.messages: dict[str, VsmMessage] = {}
        self.cited: set[str] = set()
        self.lines = 0  # no lines here: the host folded them
        self._by_obligation: dict[str, str] = {}  # obligation id → interaction request id

    def put_obligation(self, o: ObligationState) -> None:
        self.obligations[o.id] = o
        self.cited.update(o.sources)

    def put_interaction(self, state: InteractionState) -> None:
        self.interactions[state.request.id] = state
        self._by_obligation[state.request.obligation_id] = state.request.id


class RemoteActs:
    """Each act as the remote CLI command with ``--json``: the remote host decides, records who
    did it, and says what it did in one JSON object (docs/triage.md); a refusal is its stderr
    line. The actor given is not sent: provenance there is that host's own (its OS user)."""

    def __init__(self, model: RemoteInstanceModel) -> None:
        self.model = model

    def _run(self, argv_there: list[str]) -> dict[str, Any]:
        target = self.model.target
        argv = remote_command(target, *argv_there, "--json")
        try:
            done = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=ACT_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise HostFailure(
                f"{target.url}: no reply in {ACT_TIMEOUT_S:.0f} s; the act may or may"
                " not have been recorded there (the inbox will show it)"
            ) from None
        except OSError as exc:
            raise HostFailure(f"{argv[0]}: {exc.strerror or exc}") from None
        if done.returncode != 0:
            stderr = done.stderr.decode(errors="replace")
            lines = [line for line in stderr.splitlines() if line.strip()]
            said = lines[-1] if lines else f"exit {done.returncode}, nothing said"
            said = said.removeprefix("regulator: ")
            raise Refused(f"{target.host}: {self.model.redactor.scrub(said)[0]}")
        try:
            value = orjson.loads(done.stdout)
            if not isinstance(value, dict) or not isinstance(value.get("obligation"), dict):
                raise ValueError("not an act's object")
            return value
        except ValueError:
            # It exited 0: the act was most likely recorded there; what it said is not an
            # act's JSON (a regulator there without --json on this command).
            raise HostFailure(
                f"{target.url}: {argv_there[0]} exited 0 but did not say what it did as JSON;"
                " the inbox will show whether it was recorded"
            ) from None

    def _obligation(self, value: dict[str, Any], key: str = "obligation") -> ObligationState:
        return ObligationState.from_json_dict(value[key])

    def answer(self, act: AnswerAct) -> Answered:
        value = self._run(act.argv())
        return Answered(
            self._obligation(value), str(value["kind"]), str(value["disposition"]),
            str(value["answer"]),
        )  # fmt: skip

    def resolve(self, act: ResolveAct) -> ObligationState:
        return self._obligation(self._run(act.argv()))

    def acknowledge(self, act: AckAct) -> ObligationState:
        return self._obligation(self._run(act.argv()))

    def escalate(self, act: EscalateAct) -> Escalation:
        value = self._run(act.argv())
        person = value.get("person")
        return Escalation(
            self._obligation(value),
            self._obligation(value, "successor"),
            person if isinstance(person, str) else None,
        )


class RemoteInstanceModel(FoldedCounts[RemoteLog]):
    """What the screens read, fed by ``regulator stream`` over ssh (see the module)."""

    remote = True

    def __init__(self, target: RemoteTarget, *, clock: Clock = system_clock) -> None:
        super().__init__(RemoteLog(), clock)
        self.target = target
        self.root = PurePosixPath(target.path)
        # That host's canaries and channel secrets are not known here: it redacts its own.
        self.redactor = Redactor(())
        self.acts = RemoteActs(self)
        self.cursor = "0"
        self.connection = "connecting…"
        self.remote_host = target.host
        self.os_user_there: str | None = None
        self.drops = 0
        self.connects = 0
        self._pending = Changes()
        self._stop = threading.Event()
        self._proc: subprocess.Popen[bytes] | None = None
        self._thread: threading.Thread | None = None
        self._on_change: Callable[[], None] = lambda: None

    @property
    def definition_root(self) -> Path | None:
        return None  # authority and provenance are the remote host's

    def current_memory(self) -> list[MemoryState]:
        return []  # not carried by the stream yet

    def unit_summary(self, unit: UnitRecord) -> tuple[str, str, str]:
        return ("—", "—", "—")  # the stream carries no units yet

    def next_step(self, unit_id: str) -> NextStep | None:
        return None

    @property
    def name(self) -> str:
        base = f"{PurePosixPath(self.target.path).name}@{self.target.host}"
        return base if self.connection == "connected" else f"{base} ⚠ {self.connection}"

    def channel_deliveries(self, obligation_id: str) -> list[ChannelDelivery]:
        return []  # the stream carries them, but the room does not show a remote's yet

    @property
    def problems(self) -> list[str]:
        down = [] if self.connection == "connected" else [f"{self.target.url}: {self.connection}"]
        return down + self.record_problems

    def unread_changes(self) -> bool:
        return False  # the stream says when something changed; there are no files here

    def refresh(self, paths: Iterable[Path] | None = None) -> Changes:
        """Hand over what the stream folded since the last call (never waits on the network)."""
        with self.lock:
            changes, self._pending = self._pending, Changes()
            self.problem_count = len(self.problems)
            return changes

    # -- the stream, on its own thread -----------------------------------------------------------

    def start(self, on_change: Callable[[], None]) -> None:
        self._on_change = on_change
        self._thread = threading.Thread(
            target=self._follow, name=f"stream {self.target.url}", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self._kill()

    def _kill(self) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGTERM)  # its own session: the transport and its child

    def _state(self, connection: str) -> None:
        with self.lock:
            if connection == self.connection:
                return
            self.connection = connection
            self._pending.obligations = True  # the instances list and the counts redraw
        self._on_change()

    def _follow(self) -> None:
        attempt = 0
        while not self._stop.is_set():
            reason = self._once()
            if self._stop.is_set():
                return
            self.drops += 1
            delay = RETRY_S[min(attempt, len(RETRY_S) - 1)]
            attempt = 0 if self.connection == "connected" else attempt + 1
            self._state(f"disconnected, retrying in {delay:g} s ({reason})")
            self._stop.wait(delay)

    def _once(self) -> str:
        argv = remote_command(
            self.target, "stream", "--since", self.cursor, "--heartbeat", f"{HEARTBEAT_S:g}"
        )
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            return f"{argv[0]}: {exc.strerror or exc}"
        self._proc = proc
        assert proc.stdout is not None and proc.stderr is not None
        out, err = proc.stdout.fileno(), proc.stderr.fileno()
        buffer, errors = b"", b""
        open_fds = {out, err}
        try:
            while out in open_fds and not self._stop.is_set():
                ready, _, _ = select.select(list(open_fds), [], [], SILENT_S)
                if not ready:
                    return f"nothing heard for {SILENT_S:g} s"
                for fd in ready:
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        open_fds.discard(fd)
                    elif fd == err:
                        errors = (errors + chunk)[-4096:]
                    else:
                        buffer += chunk
                        *lines, buffer = buffer.split(b"\n")
                        for line in lines:
                            if line.strip():
                                self._line(line)
        finally:
            self._kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
            self._proc = None
        said = [x for x in errors.decode(errors="replace").splitlines() if x.strip()]
        end = f"exit {proc.returncode}" if proc.returncode is not None else "ended"
        return f"{end}: {self.redactor.scrub(said[-1])[0]}" if said else end

    def _line(self, raw: bytes) -> None:
        try:
            item = orjson.loads(raw)
            kind = item.get("type")
        except (orjson.JSONDecodeError, AttributeError):
            with self.lock:
                self.record_problems.append(f"{self.target.url}: a stream line is not JSON")
            return
        try:
            with self.lock:
                notify = self._apply(kind, item)
        except Exception as exc:  # one bad record is a problem to show, not a dead stream
            with self.lock:
                self.record_problems.append(f"{self.target.url}: {kind}: {exc}")
            return
        if notify:
            self._on_change()

    def _apply(self, kind: object, item: dict[str, Any]) -> bool:
        """Fold one stream line in (under the lock); True at the end of a batch."""
        pending = self._pending
        if kind == "hello":
            self.os_user_there = str(item.get("osUser"))
            if item.get("reset"):
                self._reset()
            return False
        if kind == "reset":
            self._reset()
        elif kind == "obligation":
            o = ObligationState.from_json_dict(item["obligation"])
            if o.id not in self.log.obligations and self.loaded:
                pending.new_obligations.append(o)
            self.log.put_obligation(o)
            pending.touched.add(o.id)
            pending.obligations = True
            self._account(o)
            self._candidate(o.id)
        elif kind == "interaction":
            data = item["interaction"]
            request = InteractionRequest.from_json_dict(data["request"])
            answers = [
                Answer(
                    at=a["at"],
                    by=a["by"],
                    outcome=a["outcome"],
                    channel=a["channel"],
                    answer=a.get("answer"),
                )
                for a in data.get("answers", [])
            ]
            self.log.put_interaction(InteractionState(request, answers))
            pending.touched.add(request.obligation_id)
            self._candidate(request.obligation_id)
        elif kind == "message":
            message = validate_entry(item["message"])
            self.log.messages[str(getattr(message, "id", ""))] = message  # type: ignore[assignment]
        elif kind == "problem":
            self.record_problems.append(f"{self.target.url}: {item.get('problem')}")
        elif kind == "sync":
            self.cursor = str(item["cursor"])
            first = not self.loaded
            self.loaded = True
            if first:
                pending.full = True
            if self.connection != "connected":
                self.connects += 1
                self.connection = "connected"
                pending.obligations = True
            self.last_change = self.clock() if pending.obligations else self.last_change
            return True
        return False

    def _reset(self) -> None:
        """The remote host started over: drop what is held."""
        self.log = RemoteLog()
        self._recount()
        self.record_problems = []
        self._pending.full = True


def open_model(
    root: Path | str, *, clock: Clock = system_clock, definition: Path | None = None
) -> InstanceView:
    """A local instance's model, or a remote one for ``ssh://…`` (whose definition is its
    host's: ``definition`` is for the local ones)."""
    if isinstance(root, str) and root.startswith("ssh://"):
        return RemoteInstanceModel(parse_target(root), clock=clock)
    return InstanceModel(Path(root), clock=clock, definition=definition)
