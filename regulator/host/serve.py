"""``regulator serve``: route, deliver and remind as soon as something lands (ours).

One long-running process per instance. It watches ``.regulator/signals.ndjson`` (watchfiles:
inotify, FSEvents, or polling where those are missing) and runs a pass whenever the log
changes, and at least every ``interval`` for reminders and quiet hours that end:

1. route every unrouted message (the routing policy; as ``regulator signals route``);
2. deliver what is owed to a person and never delivered, and remind what is due (the outbox,
   as ``regulator remind``);
3. send each delivery to the owners' channels (:mod:`regulator.host.channels`).

With ``http`` (``--http HOST:PORT``) it also serves the answer pages
(:mod:`regulator.host.answer_page`) on a thread of its own, and each question's message
carries a one-time link to one. ``serve.json`` (:mod:`regulator.host.reach`) says it runs and
where its pages are, refreshed while the loop and the pages are alive: a person a question
would reach through it counts as present, so the asking call waits for their answer.

Every step is idempotent through the log's own records and the effect journal, so a restart
(or a second process doing the same by hand) sends nothing twice. ``serve.cursor`` keeps the
byte length of the log as of the last finished pass, so a restart says where it resumes and
what arrived meanwhile; correctness never depends on it. ``serve.lock`` keeps it to one
process per instance. SIGTERM and SIGINT stop it after the pass in flight.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from regulator.host.answer_page import AnswerHTTPServer, AnswerService, served_url, start_http
from regulator.host.channels import FanOut, Sender, fan_out, has_channels
from regulator.host.delivery import deliver_pending, remind_due
from regulator.host.reach import ServeBeat, ServeHeartbeat
from regulator.policy import Definition
from regulator.protocol.clock import Clock, now_iso, system_clock
from regulator.protocol.errors import HostFailure
from regulator.rules.effect_journal import EffectJournal
from regulator.rules.ledger import Ledger
from regulator.rules.router import route_messages
from regulator.store import Layout, RecordNotFound, read_bytes, write_text_atomic

LOCK_FILE = "serve.lock"
CURSOR_FILE = "serve.cursor"
DEFAULT_INTERVAL_S = 30.0
WAKE_MS = 400
# A loop that has not woken for this long (a pass stuck on a send) stops beating serve.json.
LOOP_SILENT_S = 60.0


class ServeBusy(HostFailure):
    """Another ``regulator serve`` holds this instance."""


@dataclass
class PassReport:
    at: str
    opened: int = 0
    noted: int = 0
    delivered: int = 0
    reminded: int = 0
    channels: FanOut = field(default_factory=FanOut)
    problems: list[str] = field(default_factory=list)

    @property
    def busy(self) -> bool:
        c = self.channels
        return bool(
            self.opened
            or self.noted
            or self.delivered
            or self.reminded
            or c.sent
            or c.failed
            or c.reconciled
        )

    def summary(self) -> str:
        c = self.channels
        text = (
            f"{self.at}  routed {self.opened} opened, {self.noted} noted; delivered "
            f"{self.delivered}, reminded {self.reminded}; sent {len(c.sent)} to channels"
        )
        if c.failed:
            text += f", {len(c.failed)} FAILED"
        if c.reconciled:
            text += f", {len(c.reconciled)} interrupted send(s) settled as unknown"
        if c.deferred:
            text += f", {c.deferred} waiting for quiet hours to end"
        return text


def read_cursor(layout: Layout) -> int | None:
    try:
        text = read_bytes(layout.state / CURSOR_FILE).decode("ascii", "replace").strip()
    except RecordNotFound:
        return None
    return int(text) if text.isdigit() else None


def _log_size(layout: Layout) -> int:
    try:
        return layout.signals.stat().st_size
    except FileNotFoundError:
        return 0


@contextmanager
def serve_lock(layout: Layout) -> Iterator[None]:
    """Hold ``serve.lock`` for the life of the process: one server per instance."""
    path = layout.state / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "?"
            raise ServeBusy(
                f"{layout.label(path)}: another regulator serve (pid {holder}) serves this "
                "instance; stop it first (one per instance)"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing releases the lock; the file stays, harmless


class Server:
    """The passes of one instance; :meth:`run` loops them until ``stop`` is set."""

    def __init__(
        self,
        layout: Layout,
        definition: Callable[[], Definition],
        *,
        clock: Clock = system_clock,
        sender: Sender | None = None,
        scrub: Callable[[str], str] | None = None,
        interval_s: float = DEFAULT_INTERVAL_S,
        say: Callable[[str], None] = lambda _line: None,
        complain: Callable[[str], None] = lambda _line: None,
        http: tuple[str, int] | None = None,
        public_url: str | None = None,
    ) -> None:
        self.layout = layout
        self.definition = definition
        self.clock = clock
        self.sender = sender
        self.scrub = scrub
        self.interval_s = interval_s
        self.say = say
        self.complain = complain
        self.ledger = Ledger(layout, clock=clock)
        self.journal = EffectJournal(layout, clock)
        self.passes = 0
        self.http = http
        self.public_url = public_url
        self.answer_url: str | None = None  # set once the pages are served
        self.pages: AnswerHTTPServer | None = None
        self._woke = time.monotonic()

    def run_pass(self) -> PassReport:
        """Route, deliver, remind, send; then move the cursor."""
        defn = self.definition()
        report = PassReport(at=now_iso(self.clock))
        routing = route_messages(self.ledger, defn.routing)
        report.opened, report.noted = len(routing.opened), len(routing.noted)
        report.problems += routing.problems
        policy = defn.interaction
        report.delivered = len(deliver_pending(self.ledger, self.journal, self.layout, self.clock))
        report.reminded = len(
            remind_due(self.ledger, self.journal, self.layout, policy, self.clock)
        )
        report.channels = fan_out(
            self.ledger,
            self.journal,
            self.layout,
            policy,
            clock=self.clock,
            sender=self.sender,
            scrub=self.scrub,
            answer_url=self.answer_url,
        )
        size = _log_size(self.layout)
        if read_cursor(self.layout) != size:
            write_text_atomic(self.layout.state / CURSOR_FILE, f"{size}\n")
        self.passes += 1
        return report

    def _safe_pass(self) -> None:
        try:
            report = self.run_pass()
        except Exception as exc:  # a server nothing restarts says what failed and goes on
            self.complain(f"{type(exc).__name__}: {exc}")
            return
        for problem in report.problems:
            self.complain(problem)
        for failed in report.channels.failed:
            self.complain(
                f"{failed.person}'s {failed.channel} ({failed.type}) failed for obligation "
                f"{failed.obligation_id[:8]}: {failed.error}"
            )
        if report.busy:
            self.say(report.summary())

    def _warm_up(self) -> None:
        # Importing apprise takes a few hundred ms: pay it now, not on the first delivery.
        try:
            if has_channels(self.definition().interaction):
                import apprise  # noqa: F401
        except Exception:
            pass  # the pass will say what is wrong

    def _start_pages(self) -> None:
        if self.http is None:
            return
        service = AnswerService(
            self.layout, self.definition, clock=self.clock, scrub=self.scrub, say=self.say
        )
        try:
            self.pages = start_http(self.http, service)
        except OSError as exc:
            raise HostFailure(
                f"--http {self.http[0]}:{self.http[1]}: cannot serve there: {exc.strerror or exc}"
            ) from None
        served = served_url(self.pages)
        self.answer_url = (self.public_url or served).rstrip("/")
        links = f"; links say {self.answer_url}" if self.public_url else ""
        self.say(f"answer pages at {served}{links}")

    def _alive(self) -> bool:
        """Whether a person reached through this server could answer now: the loop woke lately
        (it sends the questions) and, with pages, their thread still serves."""
        if time.monotonic() - self._woke > LOOP_SILENT_S:
            return False
        return self.pages is None or self.pages.serving()

    def run(self, stop: threading.Event, *, ready: Callable[[], None] | None = None) -> None:
        """Serve until ``stop`` is set: a pass now, then on every change and every interval."""
        state = self.layout.state
        if not state.is_dir():
            raise HostFailure(f"{state}: not an instance (run `regulator init` first)")
        with serve_lock(self.layout):
            self._start_pages()
            self._woke = time.monotonic()
            heartbeat = ServeHeartbeat(ServeBeat(self.layout, self.answer_url), self._alive)
            heartbeat.start()
            try:
                self._serve(stop, ready)
            finally:
                heartbeat.stop()
                if self.pages is not None:
                    self.pages.shutdown()
                    self.pages.server_close()

    def _serve(self, stop: threading.Event, ready: Callable[[], None] | None) -> None:
        import watchfiles

        state = self.layout.state
        before = read_cursor(self.layout)
        size = _log_size(self.layout)
        if before is None:
            self.say(f"serving {self.layout.root}: first start, the log holds {size} bytes")
        else:
            self.say(
                f"serving {self.layout.root}: resuming after byte {before} "
                f"({max(0, size - before)} bytes arrived meanwhile)"
            )
        self._warm_up()
        self._safe_pass()
        seen, last = _log_size(self.layout), time.monotonic()
        names = {self.layout.signals.name}

        def only_the_log(_change: watchfiles.Change, path: str) -> bool:
            return Path(path).name in names

        # A short wake-up: it also covers an append made before the watcher was set up,
        # and a file system whose change events do not arrive (the size is compared).
        watcher = watchfiles.watch(
            state,
            watch_filter=only_the_log,
            debounce=50,
            step=20,
            stop_event=stop,
            rust_timeout=WAKE_MS,
            yield_on_timeout=True,
            raise_interrupt=False,
            recursive=False,
        )
        self.say(f"watching {self.layout.label(self.layout.signals)} for changes")
        if ready is not None:
            ready()
        for changes in watcher:
            self._woke = time.monotonic()
            if stop.is_set():
                break
            size = _log_size(self.layout)
            due = time.monotonic() - last >= self.interval_s
            if changes or size != seen or due:
                self._safe_pass()
                seen, last = _log_size(self.layout), time.monotonic()
                self._woke = time.monotonic()
        self.say("stopped")
