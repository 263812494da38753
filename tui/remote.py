"""An instance on another machine, shown like a local one: ``regulator room ssh://host/path``.

A worker thread runs ``ssh -- host regulator stream --instance PATH --since CURSOR`` (the
address and the command line: :mod:`regulator.host.remote`; protocol:
docs/reaching-people.md) and folds each line into the same counts the screens read from a local
``InstanceModel``; the UI thread only drains what changed. The remote host folds its own log,
so nothing of the fold is copied here. Every act goes back as the remote CLI command over the
same transport, so the remote host checks authority and records provenance (its OS user); a
refusal is its stderr line. Nothing is written on this disk.

``REGULATOR_SSH`` replaces the ``ssh`` command (tests run the remote side as a local
subprocess); ``REGULATOR_REMOTE`` the ``regulator`` run on the host.
"""

from __future__ import annotations

import contextlib
import os
import re
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
from regulator.policy import Definition
from regulator.protocol.clock import Clock, system_clock
from regulator.protocol.entry import validate_entry
from regulator.protocol.errors import HostFailure, Refused
from regulator.protocol.interaction import InteractionRequest
from regulator.protocol.obligations import ObligationState
from regulator.protocol.policies import InteractionPolicy
from regulator.rules.dispositions import Answered, Escalation
from regulator.rules.ledger import Actor, Ledger
from regulator.rules.memory_store import MemoryStore
from regulator.rules.regulatory_log import Answer, InteractionState, RegulatoryLog
from regulator.store import Layout
from regulator.views.redaction import Redactor

from .model import Acts, Changes, InstanceModel

HEARTBEAT_S = 5.0
# No line (not even a heartbeat) for this long: the connection is dead though nobody said so.
SILENT_S = 4 * HEARTBEAT_S
RETRY_S = (0.5, 1.0, 2.0, 5.0, 10.0)
ACT_TIMEOUT_S = 60.0
# Where the files of a remote instance would be: nothing is ever read or written there.
NOWHERE = Path("/nonexistent/regulator-remote")


class RemoteLog(RegulatoryLog):
    """The folded state as the remote host sent it; never reads a file."""

    def refresh(self) -> list[Any]:
        return []

    def put_interaction(self, state: InteractionState) -> None:
        self.interactions[state.request.id] = state
        self._by_obligation[state.request.obligation_id] = state.request.id


class RemoteActs(Acts):
    """Each act as the remote CLI command: the remote host decides, and records who did it."""

    def __init__(self, model: RemoteInstanceModel) -> None:
        self.model = model

    def _run(self, *args: str) -> str:
        argv = remote_command(self.model.target, *args)
        try:
            done = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=ACT_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise HostFailure(
                f"{self.model.target.url}: no reply in {ACT_TIMEOUT_S:.0f} s; the act may or may"
                " not have been recorded there (the inbox will show it)"
            ) from None
        except OSError as exc:
            raise HostFailure(f"{argv[0]}: {exc.strerror or exc}") from None
        if done.returncode != 0:
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            said = lines[-1] if lines else f"exit {done.returncode}, nothing said"
            said = said.removeprefix("regulator: ")
            raise Refused(f"{self.model.target.host}: {self.model.redactor.scrub(said)[0]}")
        return done.stdout

    def answer(
        self,
        ledger: Ledger,
        policy: InteractionPolicy | None,
        ref: str,
        by: str,
        actor: Actor,
        text: str,
        *,
        channel: str = "cli",
        note: str | None = None,
    ) -> Answered:
        args = ["answer", ref, "--by", by, "--answer", text]
        out = self._run(*args, *(["--note", note] if note else []))
        found = re.search(r"^(\S+) answered by .*? \(([^)]*)\)", out, re.M)
        o = self.model.log.obligations[ref]
        interaction = self.model.interaction(ref)
        kind = interaction.request.kind if interaction else "question"
        return Answered(
            o, found.group(1) if found else kind, found.group(2) if found else "?", text
        )

    def resolve(
        self,
        ledger: Ledger,
        policy: InteractionPolicy | None,
        ref: str,
        by: str,
        actor: Actor,
        *,
        disposition: str,
        rationale: str,
    ) -> ObligationState:
        self._run(
            "obligation",
            "resolve",
            ref,
            "--by",
            by,
            "--disposition",
            disposition,
            "--rationale",
            rationale,
        )
        return self.model.log.obligations[ref]

    def acknowledge(
        self,
        ledger: Ledger,
        policy: InteractionPolicy | None,
        ref: str,
        by: str,
        actor: Actor,
        note: str | None = None,
    ) -> ObligationState:
        # The CLI's ack takes no note: say so rather than drop it silently.
        if note:
            raise Refused("a remote acknowledgement takes no note: clear it, or answer/resolve")
        self._run("obligation", "ack", ref, "--by", by)
        return self.model.log.obligations[ref]

    def escalate(
        self,
        ledger: Ledger,
        policy: InteractionPolicy | None,
        ref: str,
        by: str,
        actor: Actor,
        *,
        to: str,
        rationale: str,
        person: str | None = None,
    ) -> Escalation:
        # The dialog offers no person for a remote instance (the people are the remote
        # policy's, not known here); the remote CLI would check one as it checks ``--by``.
        named = ["--person", person] if person is not None else []
        out = self._run("obligation", "escalate", ref, "--by", by, "--to", to, *named,
                        "--rationale", rationale)  # fmt: skip
        found = re.search(r"successor (\S+) is now", out)
        o = self.model.log.obligations[ref]
        successor = o.replace(**{"id": found.group(1) if found else "?"})
        return Escalation(o, successor, person)


class RemoteInstanceModel(InstanceModel):
    """What the screens read, fed by ``regulator stream`` over ssh (see the module)."""

    remote = True

    def __init__(
        self,
        target: RemoteTarget,
        *,
        clock: Clock = system_clock,
        definition: Path | None = None,
    ) -> None:
        self.target = target
        self.clock = clock
        self.root = Path(target.path)
        self.layout = Layout(NOWHERE)
        # Authority is the remote host's: no local policy decides what may be done there.
        self.definition = Definition(None)
        self.log: RemoteLog = RemoteLog(self.layout)
        self.memory = MemoryStore(self.layout, clock)
        self.redactor = Redactor(())
        self.acts = RemoteActs(self)
        self._init_counts()
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
    def name(self) -> str:
        base = f"{PurePosixPath(self.target.path).name}@{self.target.host}"
        return base if self.connection == "connected" else f"{base} ⚠ {self.connection}"

    def interaction_policy(self) -> InteractionPolicy | None:
        return None

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
            self.log.obligations[o.id] = o
            self.log.cited.update(o.sources)
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
        self.log = RemoteLog(self.layout)
        self._recount()
        self.record_problems = []
        self._pending.full = True


def open_model(
    root: Path | str, *, clock: Clock = system_clock, definition: Path | None = None
) -> InstanceModel:
    """A local instance's model, or a remote one for ``ssh://…``."""
    if isinstance(root, str) and root.startswith("ssh://"):
        return RemoteInstanceModel(parse_target(root), clock=clock, definition=definition)
    return InstanceModel(Path(root), clock=clock, definition=definition)
