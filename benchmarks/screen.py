"""A program under a real pseudo-terminal, and what it shows: the room as a person sees it.

``Terminal`` starts a command on a pty of a given size, answers the few queries a terminal
answers (Textual asks whether synchronized output is supported; we say yes, so each frame
arrives between ``ESC[?2026h`` and ``ESC[?2026l``), and keeps a grid of the characters on
screen with their style. Keys are written as a terminal writes them. ``wait_for`` waits for the
first whole frame whose screen satisfies a test and returns the moment that frame ended: what
a person would have seen then.

Only what reaches the terminal counts: nothing here imports the program or looks inside it.
The emulator knows the sequences a Textual app writes (cursor moves, erase, styles, modes);
any other escape sequence is skipped.
"""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import struct
import threading
import time
import unicodedata
from collections.abc import Callable, Sequence

KEYS = {
    "up": b"\x1b[A",
    "down": b"\x1b[B",
    "right": b"\x1b[C",
    "left": b"\x1b[D",
    "pagedown": b"\x1b[6~",
    "pageup": b"\x1b[5~",
    "home": b"\x1b[H",
    "end": b"\x1b[F",
    "enter": b"\r",
    "escape": b"\x1b",
    "tab": b"\t",
    "backspace": b"\x7f",
    "ctrl+y": b"\x19",
    "ctrl+q": b"\x11",
    "ctrl+c": b"\x03",
    "slash": b"/",
    "question_mark": b"?",
}

_CSI = re.compile(rb"\x1b\[([0-9;?<>=!$ ]*)([@-~])")
_OSC = re.compile(rb"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


def _width(ch: str) -> int:
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


class Terminal:
    def __init__(
        self,
        argv: Sequence[str],
        *,
        cols: int = 160,
        rows: int = 48,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        keep_history: bool = False,
    ) -> None:
        self.cols, self.rows = cols, rows
        self.chars = [[" "] * cols for _ in range(rows)]
        self.styles = [[b""] * cols for _ in range(rows)]
        self.x = self.y = 0
        self.style = b""
        self.synced = False  # inside a synchronized frame
        self.frames = 0
        self.frame_end = 0.0
        self.bytes_read = 0
        self._pending = b""
        #: Every whole frame's end and screen text, when asked for (``keep_history``).
        self.history: list[tuple[float, str]] | None = [] if keep_history else None
        self._lock = threading.Condition()
        self.started = time.monotonic()
        pid, fd = pty.fork()
        if pid == 0:  # the child: the pty is its terminal
            import fcntl
            import termios

            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
            if cwd:
                os.chdir(cwd)
            os.execvpe(argv[0], list(argv), {**os.environ, **(env or {}), "TERM": "xterm-256color"})
        self.pid, self.fd = pid, fd
        self.alive = True
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    # -- the terminal side -----------------------------------------------------------------

    def _read(self) -> None:
        while True:
            try:
                ready, _, _ = select.select([self.fd], [], [], 0.5)
                if not ready:
                    if not self.alive:
                        return
                    continue
                data = os.read(self.fd, 1 << 16)
            except OSError:
                data = b""
            if not data:
                with self._lock:
                    self.alive = False
                    self._lock.notify_all()
                return
            now = time.monotonic()
            with self._lock:
                self.bytes_read += len(data)
                self._feed(data, now)
                self._lock.notify_all()

    def _feed(self, data: bytes, now: float) -> None:
        data = self._pending + data
        self._pending = b""
        i, n = 0, len(data)
        while i < n:
            b = data[i]
            if b == 0x1B:
                m = _CSI.match(data, i)
                if m is None:
                    o = _OSC.match(data, i)
                    if o is not None:
                        i = o.end()
                        continue
                    if n - i < 32 and (i + 1 >= n or data[i + 1] in b"[]"):
                        self._pending = data[i:]  # an escape cut by the read: wait for the rest
                        return
                    i += 2  # ESC and one character (ESC 7, ESC =, …)
                    continue
                self._csi(m.group(1), m.group(2), now)
                i = m.end()
                continue
            if b == 0x0D:
                self.x = 0
            elif b == 0x0A:
                self.y = min(self.rows - 1, self.y + 1)
            elif b == 0x08:
                self.x = max(0, self.x - 1)
            elif b >= 0x20:
                # A run of printable text up to the next control or escape.
                j = i
                while j < n and data[j] >= 0x20 and data[j] != 0x7F:
                    j += 1
                chunk = data[i:j]
                try:
                    text = chunk.decode()
                except UnicodeDecodeError:
                    # A character cut by the read: keep its start for the next one.
                    cut = len(chunk)
                    while cut > 0 and (chunk[cut - 1] & 0xC0) == 0x80:
                        cut -= 1
                    if cut > 0 and chunk[cut - 1] >= 0xC0:
                        cut -= 1
                    self._pending = data[i + cut :]
                    text = chunk[:cut].decode(errors="replace")
                    self._put(text)
                    return
                self._put(text)
                i = j
                continue
            i += 1
        if not self.synced:
            self._frame(now)

    def _put(self, text: str) -> None:
        row, srow = self.chars[self.y], self.styles[self.y]
        for ch in text:
            w = _width(ch)
            if w == 0:
                continue
            if self.x < self.cols:
                row[self.x] = ch
                srow[self.x] = self.style
                if w == 2 and self.x + 1 < self.cols:
                    row[self.x + 1] = ""
                    srow[self.x + 1] = self.style
            self.x += w

    def _csi(self, params: bytes, final: bytes, now: float) -> None:
        if final == b"m":
            self.style = params
            return
        if final == b"H" or final == b"f":
            parts = params.split(b";")
            self.y = min(self.rows, max(1, int(parts[0] or 1))) - 1
            self.x = min(self.cols, max(1, int(parts[1] or 1) if len(parts) > 1 else 1)) - 1
        elif final in b"ABCD":
            k = int(params or 1) if params.isdigit() else 1
            if final == b"A":
                self.y = max(0, self.y - k)
            elif final == b"B":
                self.y = min(self.rows - 1, self.y + k)
            elif final == b"C":
                self.x = min(self.cols - 1, self.x + k)
            else:
                self.x = max(0, self.x - k)
        elif final == b"G":
            self.x = min(self.cols, max(1, int(params or 1))) - 1
        elif final == b"d":
            self.y = min(self.rows, max(1, int(params or 1))) - 1
        elif final == b"J":
            if params in (b"2", b"3"):
                for r in range(self.rows):
                    self.chars[r] = [" "] * self.cols
                    self.styles[r] = [b""] * self.cols
            elif params in (b"", b"0"):
                self.chars[self.y][self.x :] = [" "] * (self.cols - self.x)
                for r in range(self.y + 1, self.rows):
                    self.chars[r] = [" "] * self.cols
        elif final == b"K":
            if params in (b"", b"0"):
                self.chars[self.y][self.x :] = [" "] * (self.cols - self.x)
            elif params == b"2":
                self.chars[self.y] = [" "] * self.cols
        elif final == b"h" and params == b"?2026":
            self.synced = True
        elif final == b"l" and params == b"?2026":
            self.synced = False
            self._frame(now)
        elif final == b"p" and params == b"?2026$":
            # "Is synchronized output supported?" — yes (mode reset, settable).
            os.write(self.fd, b"\x1b[?2026;2$y")

    def _frame(self, now: float) -> None:
        self.frames += 1
        self.frame_end = now
        if self.history is not None:
            self.history.append((now, "\n".join("".join(row) for row in self.chars)))

    # -- the person's side -----------------------------------------------------------------

    def text(self) -> str:
        with self._lock:
            return "\n".join("".join(row) for row in self.chars)

    def snapshot(self) -> tuple[str, tuple[tuple[bytes, ...], ...]]:
        with self._lock:
            return (
                "\n".join("".join(row) for row in self.chars),
                tuple(tuple(r) for r in self.styles),
            )

    def press(self, *keys: str) -> float:
        """Write the keys as a terminal does; the moment the last was written."""
        for key in keys:
            os.write(self.fd, KEYS.get(key, key.encode()))
        return time.monotonic()

    def type(self, text: str) -> float:
        os.write(self.fd, text.encode())
        return time.monotonic()

    def wait_for(
        self, test: Callable[[str], bool], timeout: float, *, after: int | None = None
    ) -> float | None:
        """The end of the first whole frame (after frame number ``after``) whose screen text
        passes ``test``; ``None`` on timeout or when the program ended."""
        deadline = time.monotonic() + timeout
        with self._lock:
            seen = self.frames if after is None else after
            while True:
                if self.frames > seen and not self.synced:
                    seen = self.frames
                    text = "\n".join("".join(row) for row in self.chars)
                    if test(text):
                        return self.frame_end
                left = deadline - time.monotonic()
                if left <= 0 or not self.alive:
                    return None
                self._lock.wait(left)

    def _view(self, skip_rows: int) -> tuple[str, tuple[tuple[bytes, ...], ...]]:
        return (
            "\n".join("".join(row) for row in self.chars[skip_rows:]),
            tuple(tuple(r) for r in self.styles[skip_rows:]),
        )

    def wait_change(
        self,
        timeout: float,
        *,
        settle: float = 0.0,
        skip_rows: int = 0,
        quiet_ok: float | None = None,
    ) -> float | None:
        """The end of the first frame from now on that changed the screen (text or style),
        rows above ``skip_rows`` aside. With ``settle``: the end of the last such frame before
        the screen stayed still that long. With ``quiet_ok``: ``None`` as soon as nothing
        changed for that long."""
        start = time.monotonic()
        deadline = start + timeout
        changed_at: float | None = None
        with self._lock:
            before = self._view(skip_rows)
            seen = self.frames
            while True:
                if self.frames > seen and not self.synced:
                    seen = self.frames
                    now_view = self._view(skip_rows)
                    if now_view != before:
                        before = now_view
                        changed_at = self.frame_end
                        if not settle:
                            return changed_at
                now = time.monotonic()
                until = deadline
                if changed_at is None and quiet_ok is not None:
                    if now - start >= quiet_ok:
                        return None
                    until = min(until, start + quiet_ok)
                if changed_at is not None:
                    if now >= changed_at + settle:
                        return changed_at
                    until = min(until, changed_at + settle)
                if now >= deadline or not self.alive:
                    return changed_at
                self._lock.wait(max(0.001, until - now))

    def cpu_seconds(self) -> float:
        """User + system CPU the program (and its threads) has used so far."""
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks

    def rss_mb(self) -> float:
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def close(self, timeout: float = 5.0) -> None:
        if self.alive:
            try:
                os.kill(self.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done, _ = os.waitpid(self.pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.05)
        else:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        self.alive = False
        try:
            os.close(self.fd)
        except OSError:
            pass
