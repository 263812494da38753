"""Whole-file records under ``.regulator/``: rewritten atomically, created exclusively, read.

Pretty JSON as the original writes it: 2-space indent, trailing newline. Every path goes
through the same no-symlink walk as the logs (see ``_fs``).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import orjson

from regulator.store._fs import (
    _DIR_FLAGS,
    _FILE_FLAGS,
    SplitPath,
    check_not_symlink,
    open_at,
    open_file,
    open_parent,
    write_all,
)
from regulator.store.errors import (
    CorruptRecord,
    RecordExists,
    RecordNotFound,
    StoreError,
    StoreIOError,
)

# Hard links unsupported on this file system: fall back to writing the record in place.
_NO_LINK = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV, errno.EMLINK}


def dumps_pretty(obj: Any) -> bytes:
    """``obj`` as the original's pretty JSON: 2-space indent and a trailing newline."""
    return orjson.dumps(obj, option=orjson.OPT_INDENT_2) + b"\n"


def _temp_name(name: str) -> str:
    # A dot name: globs like ``contract.v*.json`` and directory listings of units never see it.
    # os.urandom is what secrets.token_hex reads, without the secrets module's imports (hmac,
    # hashlib), which every command, the hook among them, would pay at start.
    return f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"


def _write_temp(dir_fd: int, split: SplitPath, data: bytes) -> str:
    temp = _temp_name(split.name)
    fd = open_at(dir_fd, temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, split.path)
    try:
        write_all(fd, data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        _unlink_quietly(dir_fd, temp)
        raise
    os.close(fd)
    return temp


def _unlink_quietly(dir_fd: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except OSError:
        pass


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``: temp file in the same directory, fsync, rename, fsync dir.

    A reader sees the old content or the new, never a mix. Missing directories below
    ``.regulator/`` are created.
    """
    split = SplitPath(Path(path))
    try:
        dir_fd = open_parent(split, create=True)
    except StoreError:
        raise
    except OSError as error:
        raise StoreIOError(split.path, "write", error) from error
    try:
        check_not_symlink(dir_fd, split.name, split.path)
        temp = _write_temp(dir_fd, split, data)
        try:
            os.rename(temp, split.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            _unlink_quietly(dir_fd, temp)
            raise
        os.fsync(dir_fd)
    except StoreError:
        raise
    except OSError as error:
        raise StoreIOError(split.path, "write", error) from error
    finally:
        os.close(dir_fd)


def write_json_atomic(path: Path, obj: Any) -> None:
    """Rewrite a record (unit.json, budget ledger, lease, presence) atomically, pretty JSON."""
    write_bytes_atomic(path, dumps_pretty(obj))


def write_text_atomic(path: Path, text: str) -> None:
    """Rewrite a text file (e.g. ``outbox.cursor``) atomically, UTF-8."""
    write_bytes_atomic(path, text.encode("utf-8"))


def create_bytes_exclusive(path: Path, data: bytes) -> None:
    """Create ``path`` holding ``data``, refusing if it exists (:class:`RecordExists`).

    The content is written to a temp file first and hard-linked into place, so the record never
    exists half-written even if the writer dies; where hard links are not supported it is
    written in place with ``O_EXCL``.
    """
    split = SplitPath(Path(path))
    try:
        dir_fd = open_parent(split, create=True)
    except StoreError:
        raise
    except OSError as error:
        raise StoreIOError(split.path, "create", error) from error
    try:
        check_not_symlink(dir_fd, split.name, split.path)
        temp = _write_temp(dir_fd, split, data)
        try:
            os.link(temp, split.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except FileExistsError:
            raise RecordExists(split.path) from None
        except OSError as error:
            if error.errno not in _NO_LINK:
                raise
            _create_in_place(dir_fd, split, data)
        finally:
            _unlink_quietly(dir_fd, temp)
        os.fsync(dir_fd)
    except StoreError:
        raise
    except OSError as error:
        raise StoreIOError(split.path, "create", error) from error
    finally:
        os.close(dir_fd)


def _create_in_place(dir_fd: int, split: SplitPath, data: bytes) -> None:
    try:
        fd = open_at(dir_fd, split.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, split.path)
    except FileExistsError:
        raise RecordExists(split.path) from None
    try:
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def create_json_exclusive(path: Path, obj: Any) -> None:
    """Create a never-rewritten record (contract, report, manifest) as pretty JSON."""
    create_bytes_exclusive(path, dumps_pretty(obj))


def read_each(directory: Path, names: list[str], file: str) -> Iterator[tuple[str, bytes | None]]:
    """``(name, content of directory/name/file)`` for each name, ``directory`` opened once.

    Two ``openat`` calls a file instead of a walk from the instance's root, no symlink
    followed: what a room reads for each of thousands of units. ``None`` where the quick way
    did not give a regular file's content (a symlink, a FIFO, a file missing or unreadable):
    ``read_bytes`` of that path then says what is wrong, as for any record.
    """
    dir_fd = _open_dir(directory)
    try:
        for name in names:
            yield name, None if dir_fd is None else _read_in(dir_fd, name, file)
    finally:
        if dir_fd is not None:
            os.close(dir_fd)


def _open_dir(directory: Path) -> int | None:
    split = SplitPath(directory)
    try:
        parent = open_parent(split, create=False)
    except (OSError, StoreError):
        return None
    try:
        return os.open(split.name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=parent)
    except OSError:
        return None
    finally:
        os.close(parent)


def _read_in(dir_fd: int, name: str, file: str) -> bytes | None:
    if name in (".", "..") or "/" in name:
        return None
    try:
        sub = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        fd = os.open(file, os.O_RDONLY | _FILE_FLAGS, dir_fd=sub)
    except OSError:
        return None
    finally:
        os.close(sub)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        offset = 0
        while chunk := os.pread(fd, 1 << 20, offset):
            chunks.append(chunk)
            offset += len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_bytes(path: Path, offset: int = 0) -> bytes:
    """The content of ``path`` from byte ``offset`` on (no symlink followed under
    ``.regulator/``): the whole file by default, or only what was appended since a reader
    last looked."""
    path = Path(path)
    try:
        fd = open_file(path, os.O_RDONLY)
    except FileNotFoundError:
        raise RecordNotFound(path) from None
    except StoreError:
        raise
    except OSError as error:
        raise StoreIOError(path, "read", error) from error
    try:
        chunks: list[bytes] = []
        while chunk := os.pread(fd, 1 << 20, offset):
            chunks.append(chunk)
            offset += len(chunk)
        return b"".join(chunks)
    except OSError as error:
        raise StoreIOError(path, "read", error) from error
    finally:
        os.close(fd)


def read_text(path: Path) -> str:
    """The content of ``path`` as UTF-8 text; :class:`CorruptRecord` if it is not."""
    path = Path(path)
    data = read_bytes(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CorruptRecord(f"{path}: invalid UTF-8 at byte {error.start + 1}", path) from None


def read_json(path: Path) -> Any:
    """Parse a JSON record; :class:`CorruptRecord` names the file, line and column if bad."""
    path = Path(path)
    data = read_bytes(path)
    if not data.strip():
        raise CorruptRecord(f"{path}: empty file, expected JSON", path)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as error:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as bad:
            message = f"{path}: invalid UTF-8 at byte {bad.start + 1}"
        else:
            message = f"{path}:{error.lineno}: invalid JSON at column {error.colno}: {error.msg}"
        raise CorruptRecord(message, path) from None


def remove_file(path: Path, *, missing_ok: bool = True) -> bool:
    """Delete ``path`` (a lease, a presence file); ``False`` if it was not there."""
    split = SplitPath(Path(path))
    try:
        dir_fd = open_parent(split, create=False)
    except FileNotFoundError:
        if missing_ok:
            return False
        raise RecordNotFound(split.path) from None
    except StoreError:
        raise
    except OSError as error:
        raise StoreIOError(split.path, "remove", error) from error
    try:
        os.unlink(split.name, dir_fd=dir_fd)
        os.fsync(dir_fd)
        return True
    except FileNotFoundError:
        if missing_ok:
            return False
        raise RecordNotFound(split.path) from None
    except OSError as error:
        raise StoreIOError(split.path, "remove", error) from error
    finally:
        os.close(dir_fd)


def ensure_dir(path: Path) -> None:
    """Make ``path`` and any missing directory between ``.regulator/`` and it."""
    # Walk to a placeholder name inside ``path``: the walk makes (and checks) every directory.
    split = SplitPath(Path(path) / "_")
    try:
        os.close(open_parent(split, create=True))
    except StoreError:
        raise
    except OSError as error:
        raise StoreIOError(Path(path), "create directory", error) from error


def list_dir(path: Path, *, kind: Literal["any", "dir", "file"] = "any") -> list[str]:
    """Names in directory ``path``, sorted; symlinks and dot names left out; missing = empty.

    ``kind`` keeps only directories or only regular files.
    """
    split = SplitPath(Path(path) / "_")
    try:
        dir_fd = open_parent(split, create=False)
    except FileNotFoundError:
        return []
    except StoreError:
        raise
    except OSError as error:
        raise StoreIOError(Path(path), "list", error) from error
    try:
        names = []
        # A descriptor, not a path: Path.iterdir() would walk the path again, links and all.
        for name in os.listdir(dir_fd):  # noqa: PTH208
            if name.startswith("."):
                continue
            try:
                mode = os.lstat(name, dir_fd=dir_fd).st_mode
            except FileNotFoundError:
                continue  # removed while listing
            if stat.S_ISDIR(mode):
                found = "dir"
            elif stat.S_ISREG(mode):
                found = "file"
            else:
                continue
            if kind in ("any", found):
                names.append(name)
        return sorted(names)
    except OSError as error:
        raise StoreIOError(Path(path), "list", error) from error
    finally:
        os.close(dir_fd)


@contextmanager
def locked_directory(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on directory ``path`` (made if missing) for the body.

    A directory lock, not a lock file: the original's directories hold only its own files, and
    a rename-replaced record cannot be locked itself (the lock would stay on the old inode).
    """
    ensure_dir(path)
    try:
        # O_NOFOLLOW: the store refuses symlinks under .regulator/, and so does the lock.
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        raise StoreIOError(path, "lock", error) from error
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
