"""Append-only NDJSON logs: the locked writer and the incremental reader (format.md).

Writing: one ``O_APPEND`` descriptor, an exclusive ``flock``, each batch in one ``write``, one
``fsync``. A file that does not end in ``\\n`` (a writer died mid-line) gets a ``\\n`` first, so
the dead writer's fragment becomes one corrupt line and nothing after it is lost.

Reading: a :class:`TailReader` keeps ``(inode, byte offset, line number, held-back fragment)``
and on each refresh reads only what was appended since. A bad line is a :class:`Problem`,
skipped; the reader never raises on what it finds in the file.
"""

from __future__ import annotations

import fcntl
import json
import os
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar, cast, overload

import orjson

from regulator.store._fs import SplitPath, open_at, open_file, open_parent, write_all
from regulator.store.errors import NotUnderInstance, StoreError, StoreIOError

T = TypeVar("T")

#: Bytes read per ``pread``; bounds the memory a refresh holds beyond the parsed items.
CHUNK_SIZE = 1 << 20

RESTART_MESSAGE = "truncated or replaced; re-read from the start"
REMOVED_MESSAGE = "removed; re-read from the start"

_MAX_MESSAGE = 240


# --------------------------------------------------------------------------------------------
# Problems and parsing


@dataclass(frozen=True, slots=True)
class Problem:
    """A line (or a whole file, ``line=None``) that could not be read: ``file:line: message``."""

    file: str
    line: int | None
    message: str

    def __str__(self) -> str:
        if self.line is None:
            return f"{self.file}: {self.message}"
        return f"{self.file}:{self.line}: {self.message}"


def parse_object(line: bytes) -> dict[str, Any]:
    """The default line parser: one JSON object (anything else is a problem)."""
    value = orjson.loads(line)
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {_json_type(value)}")
    return value


def dumps_line(record: Any) -> bytes:
    """One record as a compact JSON line, without the newline (the writer adds it)."""
    return orjson.dumps(record)


def _json_type(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "null"


def _printable(text: str) -> str:
    # Text from a record may reach a terminal: control characters are shown, never interpreted.
    if text.isprintable():
        return text
    return "".join(_escape_char(ch) for ch in text)


def _escape_char(ch: str) -> str:
    if ch.isprintable() or unicodedata.category(ch) == "Zs":
        return ch
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def describe_line_error(line: bytes, error: Exception) -> str:
    """A one-line message for a line that ``parse`` refused."""
    if not line.strip():
        return "empty line"
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as bad:
        return f"invalid UTF-8 at byte {bad.start + 1}"
    nul = line.find(b"\x00")
    if nul >= 0:
        return f"NUL byte at byte {nul + 1}"
    if isinstance(error, json.JSONDecodeError):
        message = f"invalid JSON at column {error.colno}: {error.msg}"
    else:
        text = "; ".join(part.strip() for part in str(error).splitlines() if part.strip())
        message = text or type(error).__name__
    message = _printable(message)
    if len(message) > _MAX_MESSAGE:
        message = message[: _MAX_MESSAGE - 1] + "…"
    return message


# --------------------------------------------------------------------------------------------
# Writing


class LogAppender:
    """Appends to a log whose lock is held (see :func:`locked_log`)."""

    def __init__(self, fd: int, path: Path) -> None:
        self._fd = fd
        self.path = path
        self._end_checked = False
        self.lines_written = 0
        self.bytes_written = 0

    def append(self, lines: Sequence[bytes]) -> None:
        """Write ``lines`` (each one JSON record, no newline) in a single ``write``."""
        if isinstance(lines, bytes | bytearray | memoryview):
            raise TypeError("append() takes a sequence of lines, not one bytes object")
        for line in lines:
            if not line or b"\n" in line or b"\r" in line:
                raise ValueError(f"{self.path}: a log line must be non-empty and hold no newline")
        if not lines:
            return
        try:
            parts: list[bytes] = []
            if not self._end_checked and self._ends_mid_line():
                parts.append(b"\n")
            for line in lines:
                parts.append(line)
                parts.append(b"\n")
            data = b"".join(parts)
            # Until the write is complete the end of the file is unknown: check again next time.
            self._end_checked = False
            write_all(self._fd, data)
        except OSError as error:
            raise StoreIOError(self.path, "append to", error) from error
        self._end_checked = True
        self.lines_written += len(lines)
        self.bytes_written += len(data)

    def append_records(self, records: Iterable[Any]) -> None:
        """Serialize ``records`` with :func:`dumps_line` and append them as one batch."""
        self.append([dumps_line(record) for record in records])

    def _ends_mid_line(self) -> bool:
        size = os.fstat(self._fd).st_size
        return size > 0 and os.pread(self._fd, 1, size - 1) != b"\n"


@contextmanager
def locked_log(path: Path) -> Iterator[LogAppender]:
    """Hold the log's exclusive lock; append through the yielded object; fsync once at exit.

    This is the check-then-write section of docs/design.md#principles (4): while inside, refresh
    your reader up to the end (no one else can append), validate, then append. If the body raises
    before appending, the file is left byte-for-byte unchanged. Missing directories below
    ``.regulator/`` are created; a symlink anywhere below it is refused.
    """
    path = Path(path)
    split = SplitPath(path)
    try:
        dir_fd = open_parent(split, create=True)
    except StoreError:
        raise
    except OSError as error:
        raise StoreIOError(path, "open", error) from error
    try:
        fd, made = _lock_at(dir_fd, split)
        try:
            appender = LogAppender(fd, split.path)
            try:
                yield appender
            finally:
                if appender.bytes_written:
                    try:
                        os.fsync(fd)
                        if made:
                            os.fsync(dir_fd)  # make the new file's name durable too
                    except OSError as error:
                        raise StoreIOError(path, "fsync", error) from error
                elif made and os.fstat(fd).st_size == 0:
                    # Nothing was appended (a refusal) to the log this call made, and no writer
                    # that got the lock first appended either: it goes again, so a refused
                    # command leaves no file behind. Still under the lock; a writer waiting on
                    # this inode sees it unlinked and opens the name again.
                    with suppress(FileNotFoundError):
                        os.unlink(split.name, dir_fd=dir_fd)
        finally:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
    finally:
        os.close(dir_fd)


def _lock_at(dir_fd: int, split: SplitPath) -> tuple[int, bool]:
    """The log's descriptor, exclusively locked, and whether this call created the file.

    The lock is only good while the name still points at the locked inode: a writer that made
    the file and appended nothing removes it again (above), so after the lock is granted the
    name is checked, and opened again if it moved.
    """
    path = split.path
    # O_RDWR, not O_WRONLY: the writer reads the last byte to repair a dead writer's line.
    flags = os.O_RDWR | os.O_APPEND
    while True:
        made = False
        try:
            try:
                fd = open_at(dir_fd, split.name, flags, path)
            except FileNotFoundError:
                try:
                    fd = open_at(dir_fd, split.name, flags | os.O_CREAT | os.O_EXCL, path)
                    made = True
                except FileExistsError:
                    continue  # another writer made it first
        except StoreError:
            raise
        except OSError as error:
            raise StoreIOError(path, "open", error) from error
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            locked = os.fstat(fd)
            try:
                named = os.stat(split.name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                named = None
        except BaseException:
            os.close(fd)
            raise
        if named is not None and (named.st_dev, named.st_ino) == (locked.st_dev, locked.st_ino):
            return fd, made
        os.close(fd)  # removed or replaced while this call waited: take the lock again


def append_lines(path: Path, lines: Sequence[bytes]) -> None:
    """Append ``lines`` as one batch under the lock (one write, one fsync)."""
    with locked_log(path) as log:
        log.append(lines)


def append_records(path: Path, records: Iterable[Any]) -> None:
    """Serialize and append ``records`` as one batch under the lock."""
    with locked_log(path) as log:
        log.append_records(records)


# --------------------------------------------------------------------------------------------
# Reading


@dataclass(slots=True)
class TailBatch(Generic[T]):
    """What one :meth:`TailReader.refresh` found.

    ``restarted``: the file was truncated, replaced or removed, and ``items`` were read from its
    start: drop everything folded from earlier batches before folding these. ``more``: the
    refresh stopped at ``max_bytes`` before the end; refresh again.
    """

    items: list[T] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    restarted: bool = False
    more: bool = False

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


class TailReader(Generic[T]):
    """Follows one append-only log, parsing each complete line exactly once.

    ``parse`` turns one line (bytes, without its newline) into an item; any exception it raises
    makes the line a :class:`Problem` (``label:line: message``) and the line is skipped. Line
    numbers are 1-based physical lines. A missing file reads as empty; one that cannot be read
    at all raises (:meth:`refresh`).
    """

    @overload
    def __init__(
        self: TailReader[dict[str, Any]],
        path: Path,
        *,
        label: str | None = None,
        chunk_size: int = CHUNK_SIZE,
    ) -> None: ...

    @overload
    def __init__(
        self,
        path: Path,
        parse: Callable[[bytes], T],
        *,
        label: str | None = None,
        chunk_size: int = CHUNK_SIZE,
    ) -> None: ...

    def __init__(
        self,
        path: Path,
        parse: Callable[[bytes], T] | None = None,
        *,
        label: str | None = None,
        chunk_size: int = CHUNK_SIZE,
    ) -> None:
        if chunk_size < 1:
            raise ValueError("chunk_size must be positive")
        self.path = Path(path)
        self.label = label if label is not None else str(path)
        self._parse = cast(Callable[[bytes], T], parse if parse is not None else parse_object)
        self._chunk_size = chunk_size
        self._identity: tuple[int, int] | None = None
        self._read_to = 0  # bytes read, the held-back fragment included
        self._fragment: list[bytes] = []
        self._fragment_len = 0
        self._next_line = 1
        self.problems: list[Problem] = []
        self.restarts = 0

    @property
    def offset(self) -> int:
        """Bytes of complete lines consumed: where the next line starts."""
        return self._read_to - self._fragment_len

    @property
    def next_line(self) -> int:
        """The 1-based number the next complete line will get."""
        return self._next_line

    @property
    def fragment(self) -> bytes:
        """The final line without ``\\n`` held back for the next refresh (usually empty)."""
        return b"".join(self._fragment)

    def refresh(self, max_bytes: int | None = None) -> TailBatch[T]:
        """Read what was appended since the last refresh (at most about ``max_bytes``).

        A log that is there but cannot be read (a symlink, a FIFO, a directory, an I/O error)
        raises :class:`StoreError` naming it, as a writer does: read as empty, it would say
        that nothing is owed. A missing log reads as empty.
        """
        batch: TailBatch[T] = TailBatch()
        try:
            fd = open_file(self.path, os.O_RDONLY)
        except (FileNotFoundError, NotUnderInstance):
            # An empty log may go again (a writer that made it and then refused removes it):
            # with nothing read from it there is nothing to take back and nothing to report.
            if self._identity is not None and self._read_to > 0:
                self._restart(batch, REMOVED_MESSAGE)
                self._identity = None
            return batch
        except StoreError:
            raise
        except OSError as error:
            raise StoreIOError(self.path, "read", error) from error
        try:
            st = os.fstat(fd)
            identity = (st.st_dev, st.st_ino)
            if self._identity is not None and (
                (identity != self._identity and self._read_to > 0)
                or st.st_size < self._read_to
                or not self._still_ends_a_line(fd)
            ):
                self._restart(batch, RESTART_MESSAGE)
            self._identity = identity
            size = st.st_size
            budget = size if max_bytes is None else max(1, max_bytes)
            read = 0
            # Read only up to the size seen now: a writer appending without pause cannot keep
            # one refresh going for ever; the next refresh picks up the rest.
            while self._read_to < size:
                if read >= budget:
                    batch.more = True
                    break
                want = min(self._chunk_size, size - self._read_to)
                chunk = os.pread(fd, want, self._read_to)
                if not chunk:
                    break
                self._read_to += len(chunk)
                read += len(chunk)
                self._consume(chunk, batch)
        except OSError as error:
            raise StoreIOError(self.path, "read", error) from error
        finally:
            os.close(fd)
        return batch

    def _still_ends_a_line(self, fd: int) -> bool:
        # A file truncated and grown again past our offset keeps its inode and size; the byte
        # before our offset must still be the newline that ended the last line we read.
        offset = self.offset
        return offset == 0 or os.pread(fd, 1, offset - 1) == b"\n"

    def _restart(self, batch: TailBatch[T], message: str) -> None:
        self._read_to = 0
        self._fragment = []  # a stale prefix must not leak into the first new line
        self._fragment_len = 0
        self._next_line = 1
        self.restarts += 1
        notice = Problem(self.label, None, message)
        self.problems = [notice]
        batch.items.clear()
        batch.problems[:] = [notice]
        batch.restarted = True

    def _consume(self, chunk: bytes, batch: TailBatch[T]) -> None:
        first = chunk.find(b"\n")
        if first < 0:
            self._fragment.append(chunk)
            self._fragment_len += len(chunk)
            return
        if self._fragment:
            self._fragment.append(chunk[:first])
            lines = [b"".join(self._fragment)]
            self._fragment = []
            self._fragment_len = 0
        else:
            lines = [chunk[:first]]
        last = chunk.rfind(b"\n")
        if last > first:
            lines.extend(chunk[first + 1 : last].split(b"\n"))
        if last + 1 < len(chunk):
            tail = chunk[last + 1 :]
            self._fragment.append(tail)
            self._fragment_len = len(tail)
        self._parse_lines(lines, batch)

    def _parse_lines(self, lines: list[bytes], batch: TailBatch[T]) -> None:
        parse = self._parse
        items = batch.items
        number = self._next_line
        for line in lines:
            try:
                items.append(parse(line))
            except Exception as error:
                problem = Problem(self.label, number, describe_line_error(line, error))
                self.problems.append(problem)
                batch.problems.append(problem)
            number += 1
        self._next_line = number


#: Records a line its parser refused: the line's number, its bytes, the error.
BadLine = Callable[[int, bytes, Exception], None]
#: Parses and keeps a chunk's complete lines (the first is line ``number``) itself, calling
#: ``bad`` for each it refuses; returns the next line's number.
TakeLines = Callable[[list[bytes], int, BadLine], int]


class ChunkReader(TailReader[Any]):
    """A tail reader that hands each chunk's lines to ``take`` instead of parsing them one
    call each into a batch: for a reader that folds a million lines as it reads them, where a
    call per line and another per item would cost more than the fold. ``on_restart`` is told
    before a log that was truncated or replaced is read again from its start. The batches a
    refresh returns hold only problems."""

    def __init__(
        self,
        path: Path,
        *,
        label: str,
        take: TakeLines,
        on_restart: Callable[[], None],
        chunk_size: int = CHUNK_SIZE,
    ) -> None:
        super().__init__(path, lambda line: line, label=label, chunk_size=chunk_size)
        self._take = take
        self._on_restart = on_restart
        self._batch: TailBatch[Any] | None = None

    def _parse_lines(self, lines: list[bytes], batch: TailBatch[Any]) -> None:
        self._batch = batch
        try:
            self._next_line = self._take(lines, self._next_line, self._bad)
        finally:
            self._batch = None

    def _bad(self, number: int, line: bytes, error: Exception) -> None:
        # What ``TailReader`` does with a line its ``parse`` refused.
        problem = Problem(self.label, number, describe_line_error(line, error))
        self.problems.append(problem)
        if self._batch is not None:
            self._batch.problems.append(problem)

    def _restart(self, batch: TailBatch[Any], message: str) -> None:
        super()._restart(batch, message)
        self._on_restart()


__all__ = [
    "CHUNK_SIZE",
    "RESTART_MESSAGE",
    "BadLine",
    "ChunkReader",
    "LogAppender",
    "Problem",
    "TailBatch",
    "TailReader",
    "TakeLines",
    "append_lines",
    "append_records",
    "describe_line_error",
    "dumps_line",
    "locked_log",
    "parse_object",
]
