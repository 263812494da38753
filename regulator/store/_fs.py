"""Opening files under ``.regulator/`` without following a symlink anywhere on the way.

Every directory from ``.regulator/`` down to the file is opened relative to its parent's
descriptor with ``O_NOFOLLOW``, and the file itself too: a symlink placed anywhere under
``.regulator/`` is refused, and nothing can swap a directory for a link between a check and the
open (there is no separate check). Above ``.regulator/`` symlinks are the user's business and
are followed.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from regulator.store.errors import (
    InvalidPathComponent,
    NotUnderInstance,
    StoreError,
    SymlinkRefused,
    WrongFileKind,
)

STATE_DIR_NAME = ".regulator"

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
# O_NONBLOCK: a FIFO planted in place of a log must not hang the reader on open.
_FILE_FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class SplitPath:
    """A path cut into: the directory above ``.regulator/``, the directories below, the name."""

    __slots__ = ("anchor", "dirs", "name", "path", "under_state")

    def __init__(self, path: Path) -> None:
        path = Path(path).absolute()
        parts = path.parts
        if len(parts) < 2:
            raise InvalidPathComponent(f"{path}: not a file path", path)
        self.path = path
        self.name = parts[-1]
        try:
            first = parts.index(STATE_DIR_NAME, 0, len(parts) - 1)
        except ValueError:
            first = -1
        self.under_state = first >= 0
        if self.under_state:
            self.anchor = Path(*parts[:first])
            self.dirs: tuple[str, ...] = tuple(parts[first:-1])
            if any(part in (".", "..") for part in (*self.dirs, self.name)):
                raise InvalidPathComponent(f"{path}: '..' is not allowed below .regulator/", path)
        else:
            self.anchor = path.parent
            self.dirs = ()

    def prefix(self, count: int) -> Path:
        """The path of the ``count``-th directory below the anchor (for messages)."""
        return self.anchor.joinpath(*self.dirs[:count])


def _is_symlink_at(dir_fd: int, name: str) -> bool:
    try:
        st = os.lstat(name, dir_fd=dir_fd)
    except OSError:
        return False
    return stat.S_ISLNK(st.st_mode)


def open_parent(split: SplitPath, *, create: bool) -> int:
    """A descriptor of the file's directory, reached without following a symlink below the anchor.

    With ``create``, missing directories below ``.regulator/`` are made; ``.regulator/`` itself
    must already exist (only ``init`` makes it). A missing directory otherwise raises
    ``FileNotFoundError``. The caller closes the descriptor.
    """
    fd = os.open(split.anchor, _DIR_FLAGS)
    try:
        for index, component in enumerate(split.dirs):
            try:
                next_fd = _open_dir_at(fd, component, split, index)
            except FileNotFoundError:
                if index == 0:
                    raise NotUnderInstance(
                        f"{split.prefix(1)}: no such directory (not a regulator instance)",
                        split.path,
                    ) from None
                if not create:
                    raise
                try:
                    os.mkdir(component, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass  # another process made it first
                next_fd = _open_dir_at(fd, component, split, index)
            os.close(fd)
            fd = next_fd
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_dir_at(fd: int, component: str, split: SplitPath, index: int) -> int:
    try:
        return os.open(component, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
    except OSError as error:
        # Linux says ENOTDIR for O_DIRECTORY|O_NOFOLLOW on a link to a directory, ELOOP elsewhere.
        if error.errno in (errno.ENOTDIR, errno.ELOOP) and _is_symlink_at(fd, component):
            raise SymlinkRefused(split.prefix(index + 1)) from None
        if error.errno == errno.ENOTDIR:
            try:
                what = f"is {kind_of(os.lstat(component, dir_fd=fd).st_mode)}, not a directory"
            except OSError:
                what = "not a directory"
            raise WrongFileKind(f"{split.prefix(index + 1)}: {what}", split.path) from None
        raise


def kind_of(mode: int) -> str:
    """What a file of ``mode`` is, for a message: "a directory", "a FIFO", "a symlink"…"""
    for test, name in (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISLNK, "a symlink"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def not_regular(path: Path, mode: int) -> StoreError:
    """The refusal for a directory, FIFO, socket or device where a file belongs."""
    return WrongFileKind(f"{path}: is {kind_of(mode)}, not a regular file", path)


def open_at(dir_fd: int, name: str, flags: int, path: Path, mode: int = 0o666) -> int:
    """Open ``name`` in ``dir_fd`` with ``O_NOFOLLOW``; refuse a symlink or a non-regular file."""
    try:
        fd = os.open(name, flags | _FILE_FLAGS, mode, dir_fd=dir_fd)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise SymlinkRefused(path) from None
        if error.errno in (errno.ENXIO, errno.EISDIR):
            # ENXIO: a FIFO with no reader, opened for writing; EISDIR: a directory for writing.
            try:
                found = os.lstat(name, dir_fd=dir_fd).st_mode
            except OSError:
                raise error from None
            raise not_regular(path, found) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise not_regular(path, st.st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_file(path: Path, flags: int, *, create_dirs: bool = False, mode: int = 0o666) -> int:
    """Open ``path`` refusing symlinks under ``.regulator/`` (see the module docstring)."""
    split = SplitPath(path)
    dir_fd = open_parent(split, create=create_dirs)
    try:
        return open_at(dir_fd, split.name, flags, split.path, mode)
    finally:
        os.close(dir_fd)


def check_not_symlink(dir_fd: int, name: str, path: Path) -> None:
    """Refuse a symlink at ``name`` before a rename would silently replace it."""
    if _is_symlink_at(dir_fd, name):
        raise SymlinkRefused(path)


def write_all(fd: int, data: bytes) -> None:
    """``os.write`` until every byte is written (a regular file may take fewer at once)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
