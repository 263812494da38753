"""Errors of the store: each one is a one-line message that names the file (or the bad name).

The CLI prints ``str(error)`` and exits non-zero; nothing else is needed to tell a person what
went wrong and where (principle 8).
"""

from __future__ import annotations

from pathlib import Path

from regulator.protocol.errors import CorruptState


class StoreError(CorruptState):
    """Base of every store error. ``path`` is the file concerned, when there is one."""

    def __init__(self, message: str, path: Path | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path

    def __str__(self) -> str:
        return self.message


class InvalidPathComponent(StoreError):
    """A name that would become part of a path (a unit id, a host, a version) is not allowed."""


class InvalidUnitId(InvalidPathComponent):
    """A unit id that does not match ``^[a-zA-Z0-9._-]+$`` (or is ``.`` / ``..``)."""

    def __init__(self, unit_id: str) -> None:
        super().__init__(
            f"invalid unit id {unit_id!r}: must match ^[a-zA-Z0-9._-]+$ and not be '.' or '..'"
        )
        self.unit_id = unit_id


class SymlinkRefused(StoreError):
    """A symlink where the store expects a plain file or directory under ``.regulator/``."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"{path}: is a symlink; refusing to follow it under .regulator/", path)


class NotUnderInstance(StoreError):
    """A path under ``.regulator/`` whose ``.regulator/`` directory does not exist."""


class RecordExists(StoreError, FileExistsError):
    """A create-exclusive record (contract, report, manifest) that is already there."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"{path}: already exists; records never reopen", path)


class RecordNotFound(StoreError, FileNotFoundError):
    """A record file that does not exist."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"{path}: no such file", path)


class CorruptRecord(StoreError):
    """A JSON record file that does not parse (or is not the expected shape)."""


class StoreIOError(StoreError):
    """Any other operating-system error while reading or writing a store file."""

    def __init__(self, path: Path, action: str, error: OSError) -> None:
        reason = error.strerror or str(error)
        super().__init__(f"{path}: cannot {action}: {reason}", path)
        self.errno = error.errno
