"""Errors of the store: each one is a one-line message that names the file (or the bad name).

The CLI prints ``str(error)`` and exits with its root's status; nothing else is needed to tell a
person what went wrong and where (docs/design.md#errors). ``StoreError`` groups them so that a
reader can catch "whatever the store said"; each concrete error is also exactly one of the three
roots: a bad name or a record that exists already is a refusal, a file that does not read is
corrupt state, an operating-system error is a host failure.
"""

from __future__ import annotations

from pathlib import Path

from regulator.protocol.errors import CorruptState, HostFailure, Refused, RegulatorError


class StoreError(RegulatorError):
    """Base of every store error, never raised itself (each error below is also one root).
    ``path`` is the file concerned, when there is one."""

    def __init__(self, message: str, path: Path | None = None) -> None:
        if type(self) is StoreError:
            raise TypeError("StoreError is the store's grouping: raise one of its root errors")
        super().__init__(message)
        self.message = message
        self.path = path

    def __str__(self) -> str:
        return self.message


class InvalidPathComponent(StoreError, Refused):
    """A name that would become part of a path (a unit id, a host, a version) is not allowed:
    the request is refused, nothing is read or written."""


class InvalidUnitId(InvalidPathComponent):
    """A unit id that does not match ``^[a-zA-Z0-9._-]+$`` (or is ``.`` / ``..``)."""

    def __init__(self, unit_id: str) -> None:
        super().__init__(
            f"invalid unit id {unit_id!r}: must match ^[a-zA-Z0-9._-]+$ and not be '.' or '..'"
        )
        self.unit_id = unit_id


class SymlinkRefused(StoreError, CorruptState):
    """A symlink where the store expects a plain file or directory under ``.regulator/``: the
    instance's files are not what they should be (corrupt state), whoever planted it."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"{path}: is a symlink; refusing to follow it under .regulator/", path)


class NotUnderInstance(StoreError, Refused):
    """A path under ``.regulator/`` whose ``.regulator/`` directory does not exist: asked of a
    directory that is not an instance (refused; ``regulator init`` makes one)."""


class WrongFileKind(StoreError, CorruptState):
    """Something under ``.regulator/`` that is not the kind of file the store expects there (a
    FIFO where a log should be, a file where a directory should be): corrupt state."""


class RecordExists(StoreError, Refused, FileExistsError):
    """A create-exclusive record (contract, report, manifest) that is already there: records
    never reopen, so the second write is refused."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"{path}: already exists; records never reopen", path)


class RecordNotFound(StoreError, CorruptState, FileNotFoundError):
    """A record file that does not exist where the records say it should (corrupt state);
    readers that ask whether one exists catch it."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"{path}: no such file", path)


class CorruptRecord(StoreError, CorruptState):
    """A JSON record file that does not parse (or is not the expected shape)."""


class StoreIOError(StoreError, HostFailure):
    """Any other operating-system error while reading or writing a store file (permission, a
    full disk): the machine did not do it, a host failure."""

    def __init__(self, path: Path, action: str, error: OSError) -> None:
        reason = error.strerror or str(error)
        super().__init__(f"{path}: cannot {action}: {reason}", path)
        self.errno = error.errno
