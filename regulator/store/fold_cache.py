"""The fold snapshot's file: where it lives, who may have written it, and what it covers.

A snapshot lets a cold start fold only the tail of a large regulatory log. It is a cache: any
doubt about it and it is ignored, never repaired or half-used. It is trusted only if

* it is this user's: ``.regulator/cache/fold-<uid>/``, a directory and a file owned by the
  effective user and writable by no one else, reached without following a symlink — so another
  account sharing the instance cannot plant a fold that this user's room would show;
* it is whole: a header line, each block's line followed by its texts' line, and a trailer
  line carrying the CRC-32 of the header's and the blocks' lines (a torn or edited file fails
  this; each text carries a CRC-32 of its own, checked when it is read);
* it covers the log as the log is now: same device and inode, the log at least as long as the
  covered prefix, a newline as the prefix's last byte, and the CRC-32 of the whole prefix
  equal to the one recorded when the prefix was folded.

The content is JSON only — never a pickle, nothing that runs code when read. A block's texts
line is JSON texts side by side (JSON has no raw newline), which a restore does not read: the
block says how long the line is, and names each text by where it lies in it and its CRC-32;
a text is read from the file, through a descriptor kept open (``SnapshotFile``), only when
what it holds is first needed. What the
blocks hold is checked again as it is decoded (see ``fast_records``), or, for what a restore
leaves to be built when read, as it is built (see ``regulatory_log``). The CRCs catch
accidents (a log truncated and grown again, a disk error); they are not a defence against a
person who can write this user's files, who could as well write the log.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import threading
import time
import zlib
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from regulator.protocol.errors import CorruptState
from regulator.store import Layout
from regulator.store._fs import SplitPath, open_at, open_file, open_parent, write_all

FORMAT = "regulator-fold"
FILE_NAME = "signals.fold"
_READ_CHUNK = 4 << 20
# A writer that died mid-write leaves its temp file; one this old is no one's any more.
_STALE_TEMP_S = 3600.0


class SnapshotInvalid(CorruptState):
    """The snapshot is not one to trust: missing, someone else's, torn, edited or stale."""


@dataclass(frozen=True, slots=True)
class LogKey:
    """What a snapshot covers: the log's identity and its first ``offset`` bytes."""

    dev: int
    ino: int
    offset: int
    crc: int

    def to_json(self) -> dict[str, int]:
        return {"dev": self.dev, "ino": self.ino, "offset": self.offset, "crc": self.crc}

    @classmethod
    def from_json(cls, value: Any) -> LogKey:
        if not isinstance(value, dict) or set(value) != {"dev", "ino", "offset", "crc"}:
            raise SnapshotInvalid("bad log key")
        fields = [value["dev"], value["ino"], value["offset"], value["crc"]]
        if not all(type(v) is int and v >= 0 for v in fields):
            raise SnapshotInvalid("bad log key")
        return cls(*fields)


def cache_dir(layout: Layout) -> Path:
    return layout.state / "cache" / f"fold-{os.geteuid()}"


def snapshot_path(layout: Layout) -> Path:
    return cache_dir(layout) / FILE_NAME


# --- whose file ---------------------------------------------------------------------------------


def _owned(st: os.stat_result) -> bool:
    return st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _open_own_dir(layout: Layout, *, create: bool) -> int:
    """A descriptor of this user's cache directory, or ``SnapshotInvalid``."""
    directory = cache_dir(layout)
    # ``.regulator/cache`` the store's way (no symlink followed, made if missing) …
    parent = open_parent(SplitPath(directory), create=create)
    try:
        if create:
            with contextlib.suppress(FileExistsError):
                os.mkdir(directory.name, 0o700, dir_fd=parent)
        # … and ours by hand: ``O_NOFOLLOW`` refuses a link planted in its place.
        try:
            fd = os.open(
                directory.name,
                os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                dir_fd=parent,
            )
        except OSError as error:
            raise SnapshotInvalid(f"{directory}: {error.strerror}") from None
    finally:
        os.close(parent)
    if not _owned(os.fstat(fd)):
        os.close(fd)
        raise SnapshotInvalid(f"{directory}: not this user's own directory")
    return fd


# --- writing ----------------------------------------------------------------------------------


def write_snapshot(
    layout: Layout,
    header: dict[str, Any],
    blocks: Iterable[tuple[Any, bytes]],
    keep: Callable[[], bool] = lambda: True,
) -> bool:
    """Write the header, each block with its texts (JSON texts side by side, no newline in
    them) and the trailer to a temp file, then rename it into place. A block is a list whose
    last item is the length of its texts line; the trailer's CRC covers the header's and the
    blocks' lines (each text has its own, in its block).

    ``keep`` is asked after each block and before the rename: false, and the temp file is
    removed and nothing lands (``False``).

    No fsync: a snapshot lost or torn by a crash fails its trailer check and is rebuilt.
    """
    dir_fd = _open_own_dir(layout, create=True)
    try:
        _remove_stale_temps(dir_fd)
        temp = f".{FILE_NAME}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        fd = open_at(dir_fd, temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, Path(temp), 0o600)
        try:
            crc = 0
            count = 0
            pending: list[bytes] = []
            size = 0

            def put(line: bytes) -> None:
                nonlocal crc, size
                crc = zlib.crc32(line, crc)
                pending.append(line)
                size += len(line)
                if size >= _READ_CHUNK:
                    flush()

            def flush() -> None:
                nonlocal size
                write_all(fd, b"".join(pending))
                pending.clear()
                size = 0

            ended = False
            put(orjson.dumps(header) + b"\n")
            for count, (block, texts) in enumerate(blocks, 1):  # noqa: B007 (the trailer reads it)
                if b"\n" in texts or block[-1] != len(texts):
                    raise ValueError("a snapshot's texts line with a newline, or another length")
                put(orjson.dumps(block) + b"\n")
                pending.append(texts + b"\n")  # outside the file's CRC
                size += len(texts) + 1
                if not keep():
                    ended = True
                    break
            else:
                trailer = orjson.dumps({"end": FORMAT, "blocks": count, "crc": crc}) + b"\n"
                pending.append(trailer)
                flush()
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
            raise
        os.close(fd)
        if ended or not keep():  # between two blocks, or at the last moment
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
            return False
        try:
            os.rename(temp, FILE_NAME, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
            raise
    finally:
        os.close(dir_fd)
    return True


def _remove_stale_temps(dir_fd: int) -> None:
    now = time.time()
    for name in os.listdir(dir_fd):
        if not (name.startswith(f".{FILE_NAME}.") and name.endswith(".tmp")):
            continue
        with contextlib.suppress(OSError):
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if now - st.st_mtime > _STALE_TEMP_S:
                os.unlink(name, dir_fd=dir_fd)


# --- reading ----------------------------------------------------------------------------------


class SnapshotFile:
    """An open snapshot, kept open for what a restore reads from it later: ``blocks`` once,
    then ``read`` of any text a block named, from any thread (``pread``: no shared position).

    Its descriptor closes when the last object that needs it goes (a replaced snapshot's
    file stays readable through it).
    """

    def __init__(self, fd: int) -> None:
        self._file = os.fdopen(fd, "rb", buffering=0)

    def blocks(self) -> Generator[Any, None, None]:
        """The header, then each block with where its texts lie: ``(block, offset, size)``;
        ``SnapshotInvalid`` at any doubt, the trailer checked after the last block."""
        return _lines(self._file.fileno())

    def read(self, offset: int, size: int, crc: int) -> bytes:
        """``size`` bytes at ``offset``, whose CRC-32 is ``crc``; ``SnapshotInvalid`` if the
        file no longer has them."""
        data = os.pread(self._file.fileno(), size, offset) if size > 0 and offset >= 0 else b""
        if len(data) != size or zlib.crc32(data) != crc:
            raise SnapshotInvalid("a text of the snapshot is not the one its block names")
        return data


def open_snapshot(layout: Layout) -> SnapshotFile:
    """This user's snapshot, opened; ``SnapshotInvalid`` if there is none or it is not one to
    trust (someone else's)."""
    try:
        dir_fd = _open_own_dir(layout, create=False)
    except FileNotFoundError:
        raise SnapshotInvalid("no snapshot") from None
    try:
        try:
            fd = open_at(dir_fd, FILE_NAME, os.O_RDONLY, snapshot_path(layout))
        except FileNotFoundError:
            raise SnapshotInvalid("no snapshot") from None
    finally:
        os.close(dir_fd)
    try:
        if not _owned(os.fstat(fd)):
            raise SnapshotInvalid("the snapshot is not this user's own file")
        return SnapshotFile(fd)
    except BaseException:
        os.close(fd)
        raise


def _lines(fd: int) -> Generator[Any, None, None]:
    crc = 0
    count = -1  # the header is not a block
    carry = b""
    base = 0  # the file offset of ``data[0]``
    trailer: Any = None
    while True:
        chunk = os.read(fd, _READ_CHUNK)
        if not chunk:
            break
        data = carry + chunk if carry else chunk
        # Each line parsed and checked where it lies in ``data`` (a view, not a copy: the
        # blocks are most of the file, and splitting copied every byte of it once more).
        view = memoryview(data)
        at = 0
        skip_to = -1  # a texts line that runs past ``data``: where the next line starts
        while (end := data.find(b"\n", at)) >= 0:
            if trailer is not None:
                raise SnapshotInvalid("data after the trailer")
            value = _parse(view[at:end])
            if isinstance(value, dict) and "end" in value:
                trailer = value
                at = end + 1
                continue
            crc = zlib.crc32(view[at : end + 1], crc)  # the line and its newline
            count += 1
            if count == 0:
                yield value  # the header
                at = end + 1
                continue
            # A block, then its texts line, which is not read here: its length is the
            # block's last item, and the newline that ends it is checked.
            size = value[-1] if isinstance(value, list) and value else None
            if type(size) is not int or size < 0:
                raise SnapshotInvalid("a block without its texts' length")
            start = base + end + 1
            yield value, start, size
            stop = start + size - base  # the texts line's newline, in ``data``
            if stop < len(data):
                if data[stop] != 0x0A:
                    raise SnapshotInvalid("a texts line of another length")
                at = stop + 1
            else:
                skip_to = start + size
                break
        if skip_to >= 0:
            if os.pread(fd, 1, skip_to) != b"\n":
                raise SnapshotInvalid("a texts line of another length")
            os.lseek(fd, skip_to + 1, os.SEEK_SET)
            carry = b""
            base = skip_to + 1
        else:
            carry = data[at:]
            base += at
    if carry:
        raise SnapshotInvalid("torn: the last line is incomplete")
    if (
        not isinstance(trailer, dict)
        or trailer.get("end") != FORMAT
        or trailer.get("blocks") != count
        or trailer.get("crc") != crc
    ):
        raise SnapshotInvalid("the trailer does not match the content")


def _parse(line: bytes | memoryview) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        raise SnapshotInvalid("not JSON") from None


# --- the log it covers ------------------------------------------------------------------------


def log_matches(path: Path, key: LogKey) -> bool:
    """Whether the log at ``path`` still starts with the bytes ``key`` was made from."""
    matched = check_log(path, key)
    return matched is not None and matched()


def check_log(path: Path, key: LogKey) -> Callable[[], bool] | None:
    """``log_matches``, begun: ``None`` if the log's identity, size or last covered byte
    differ; otherwise the CRC-32 of the covered prefix runs on a thread, and the function
    returned waits for it and says whether it matched.

    ``zlib.crc32`` and ``pread`` release the interpreter, so a caller can decode the snapshot
    meanwhile; it must not use what it decoded unless the function returns ``True``.
    """
    try:
        fd = open_file(path, os.O_RDONLY)
    except Exception:  # gone, unreadable, a symlink or a non-file: the reader says which
        return None
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (key.dev, key.ino) or st.st_size < key.offset:
            os.close(fd)
            return None
        if key.offset and os.pread(fd, 1, key.offset - 1) != b"\n":
            os.close(fd)
            return None
    except OSError:
        os.close(fd)
        return None
    outcome: list[bool] = []

    def crc_of_prefix() -> None:
        try:
            crc, position = 0, 0
            while position < key.offset:
                chunk = os.pread(fd, min(_READ_CHUNK, key.offset - position), position)
                if not chunk:
                    break
                crc = zlib.crc32(chunk, crc)
                position += len(chunk)
            outcome.append(position == key.offset and crc == key.crc)
        except OSError:
            outcome.append(False)
        finally:
            os.close(fd)

    worker = threading.Thread(target=crc_of_prefix, name="fold-cache-crc", daemon=True)
    try:
        worker.start()
    except BaseException:
        os.close(fd)
        raise

    def matched() -> bool:
        worker.join()
        return outcome == [True]

    return matched
