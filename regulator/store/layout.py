"""Where every file of an instance lives (docs/instance-format.md#the-files).

A :class:`Layout` only builds paths; it reads nothing but the environment (``REGULATOR_OUTBOX``)
and, for the ``list_*`` helpers, directory listings. Every name that becomes a path component
(unit id, host, version, attempt) is checked first, so no caller can build a path that escapes
``.regulator/``.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path

from regulator.store._fs import STATE_DIR_NAME, kind_of
from regulator.store.errors import InvalidPathComponent, InvalidUnitId
from regulator.store.records import list_dir

UNIT_ID_PATTERN = re.compile(r"[a-zA-Z0-9._-]+")
OUTBOX_ENV = "REGULATOR_OUTBOX"

_CONTRACT_NAME = re.compile(r"contract\.v([1-9][0-9]*)\.json")
_REPORT_NAME = re.compile(r"report\.v([1-9][0-9]*)\.a([1-9][0-9]*)\.json")
_BUDGET_NAME = re.compile(r"budget\.a([1-9][0-9]*)\.json")
# Names that are files wherever they appear under .regulator/, and the top-level directories.
_FILE_SUFFIXES = (".json", ".ndjson", ".cursor", ".db", ".fold")
_FILE_NAMES = frozenset({"canaries", "outbox"})
_DIR_NAMES = frozenset({"units", "leases", "presence", "worktrees", "cache"})
# The most entries one scan looks at: a scan is a check, not a way to hang on a huge tree.
_SCAN_LIMIT = 100_000


def is_valid_unit_id(unit_id: object) -> bool:
    """``^[a-zA-Z0-9._-]+$`` and not ``.`` or ``..`` (either would leave the units directory)."""
    return (
        isinstance(unit_id, str)
        and UNIT_ID_PATTERN.fullmatch(unit_id) is not None
        and unit_id not in (".", "..")
    )


def check_unit_id(unit_id: str) -> str:
    """``unit_id`` itself, or :class:`InvalidUnitId`."""
    if not is_valid_unit_id(unit_id):
        raise InvalidUnitId(str(unit_id))
    return unit_id


def _check_number(value: int, what: str) -> int:
    # bool is an int: refuse it, a path like contract.vTrue.json is nobody's intent.
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidPathComponent(f"invalid {what} {value!r}: must be an integer >= 1")
    return value


def _check_name(value: str, what: str) -> str:
    if not is_valid_unit_id(value):
        raise InvalidPathComponent(
            f"invalid {what} {value!r}: must match ^[a-zA-Z0-9._-]+$ and not be '.' or '..'"
        )
    return value


def find_instance(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` holding a ``.regulator/`` directory."""
    current = Path(start).absolute()
    if not current.is_dir():
        current = current.parent
    for directory in (current, *current.parents):
        if (directory / STATE_DIR_NAME).is_dir():
            return directory
    return None


class Layout:
    """The paths of one instance, rooted at the repository's base checkout."""

    __slots__ = ("_env", "root", "state")

    def __init__(self, root: Path, *, env: Mapping[str, str] | None = None) -> None:
        # absolute(), not resolve(): resolving would follow (and so hide) a symlinked .regulator.
        self.root = Path(root).absolute()
        self.state = self.root / STATE_DIR_NAME
        self._env = env

    @classmethod
    def find(cls, start: Path, *, env: Mapping[str, str] | None = None) -> Layout | None:
        """The layout of the instance at or above ``start``, if any."""
        root = find_instance(start)
        return None if root is None else cls(root, env=env)

    def __repr__(self) -> str:
        return f"Layout({str(self.root)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Layout) and other.root == self.root

    def __hash__(self) -> int:
        return hash(self.root)

    def exists(self) -> bool:
        """Whether ``.regulator/`` is there (the instance has been initialised)."""
        return self.state.is_dir()

    def label(self, path: Path) -> str:
        """``path`` relative to the root when inside it (``.regulator/signals.ndjson``), for
        problem messages; otherwise the path as given."""
        try:
            return Path(path).relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    # -- instance-wide files --------------------------------------------------------------

    @property
    def manifest(self) -> Path:
        return self.state / "instance.json"

    @property
    def signals(self) -> Path:
        return self.state / "signals.ndjson"

    @property
    def audit(self) -> Path:
        return self.state / "audit.ndjson"

    @property
    def effects(self) -> Path:
        return self.state / "effects.ndjson"

    @property
    def memory(self) -> Path:
        return self.state / "memory.ndjson"

    @property
    def trace(self) -> Path:
        return self.state / "trace.ndjson"

    @property
    def events_db(self) -> Path:
        return self.state / "events.db"

    @property
    def outbox(self) -> Path:
        """``REGULATOR_OUTBOX`` if set (relative to the working directory), else under state."""
        env = os.environ if self._env is None else self._env
        override = env.get(OUTBOX_ENV, "")
        if override:
            return Path(override).absolute()
        return self.state / "outbox"

    @property
    def outbox_cursor(self) -> Path:
        """Always under ``.regulator/``, even when the outbox is moved."""
        return self.state / "outbox.cursor"

    @property
    def canaries(self) -> Path:
        return self.state / "canaries"

    # -- our own files --------------------------------------------------------------------

    @property
    def presence_dir(self) -> Path:
        return self.state / "presence"

    def presence(self, host: str, pid: int) -> Path:
        """``presence/<host>-<pid>.json``."""
        _check_name(host, "host name")
        _check_number(pid, "pid")
        return self.presence_dir / f"{host}-{pid}.json"

    @property
    def provenance(self) -> Path:
        return self.state / "provenance.ndjson"

    @property
    def receipts(self) -> Path:
        return self.state / "receipts.ndjson"

    @property
    def addressees(self) -> Path:
        return self.state / "addressees.ndjson"

    @property
    def answer_codes(self) -> Path:
        return self.state / "answer-codes.ndjson"

    @property
    def answer_links(self) -> Path:
        return self.state / "answer-links.ndjson"

    # -- units ----------------------------------------------------------------------------

    @property
    def units_dir(self) -> Path:
        return self.state / "units"

    def unit_dir(self, unit_id: str) -> Path:
        return self.units_dir / check_unit_id(unit_id)

    def unit_record(self, unit_id: str) -> Path:
        return self.unit_dir(unit_id) / "unit.json"

    def contract(self, unit_id: str, version: int) -> Path:
        _check_number(version, "contract version")
        return self.unit_dir(unit_id) / f"contract.v{version}.json"

    def report(self, unit_id: str, version: int, attempt: int) -> Path:
        _check_number(version, "contract version")
        _check_number(attempt, "attempt")
        return self.unit_dir(unit_id) / f"report.v{version}.a{attempt}.json"

    def attempts(self, unit_id: str) -> Path:
        return self.unit_dir(unit_id) / "attempts.ndjson"

    def decisions(self, unit_id: str) -> Path:
        return self.unit_dir(unit_id) / "decisions.ndjson"

    def observations(self, unit_id: str) -> Path:
        return self.unit_dir(unit_id) / "observations.ndjson"

    def budget(self, unit_id: str, attempt: int) -> Path:
        _check_number(attempt, "attempt")
        return self.unit_dir(unit_id) / f"budget.a{attempt}.json"

    # -- leases and worktrees -------------------------------------------------------------

    @property
    def leases_dir(self) -> Path:
        return self.state / "leases"

    def lease(self, unit_id: str) -> Path:
        return self.leases_dir / f"{check_unit_id(unit_id)}.json"

    @property
    def worktrees_dir(self) -> Path:
        return self.state / "worktrees"

    def worktree(self, unit_id: str) -> Path:
        return self.worktrees_dir / check_unit_id(unit_id)

    # -- listings -------------------------------------------------------------------------

    def list_units(self) -> list[str]:
        """Unit ids with a directory under ``units/``, sorted by name (as ``listUnits()``)."""
        return [name for name in list_dir(self.units_dir, kind="dir") if is_valid_unit_id(name)]

    def list_contract_versions(self, unit_id: str) -> list[int]:
        """The N of every ``contract.v<N>.json`` of the unit, ascending."""
        return sorted(
            int(match.group(1))
            for name in list_dir(self.unit_dir(unit_id), kind="file")
            if (match := _CONTRACT_NAME.fullmatch(name))
        )

    def list_reports(self, unit_id: str) -> list[tuple[int, int]]:
        """``(version, attempt)`` of every ``report.v<N>.a<M>.json`` of the unit, ascending."""
        return sorted(
            (int(match.group(1)), int(match.group(2)))
            for name in list_dir(self.unit_dir(unit_id), kind="file")
            if (match := _REPORT_NAME.fullmatch(name))
        )

    def list_budgets(self, unit_id: str) -> list[int]:
        """The M of every ``budget.a<M>.json`` of the unit, ascending."""
        return sorted(
            int(match.group(1))
            for name in list_dir(self.unit_dir(unit_id), kind="file")
            if (match := _BUDGET_NAME.fullmatch(name))
        )

    def misplaced(self) -> list[str]:
        """Every entry under ``.regulator/`` that the store would refuse, one line each.

        A symlink anywhere, a FIFO, socket or device, a directory where a file belongs (any
        ``*.json``, ``*.ndjson``, ``canaries``…) and a file where a directory belongs. Readers
        skip or refuse such entries one at a time; this names them all, for ``doctor`` and
        ``status``, so that nothing (a symlinked unit directory) disappears silently. Reads
        entries' own metadata only: nothing is opened or followed. A git worktree's own
        content is left alone.
        """
        try:
            top = os.lstat(self.state)
        except FileNotFoundError:
            return []
        except OSError as error:
            return [f"{STATE_DIR_NAME}: cannot be read: {error.strerror or error}"]
        if stat.S_ISLNK(top.st_mode):
            return [f"{STATE_DIR_NAME}: is a symlink; refusing to follow it"]
        if not stat.S_ISDIR(top.st_mode):
            return [f"{STATE_DIR_NAME}: is {kind_of(top.st_mode)}, not a directory"]
        found: list[str] = []
        budget = [_SCAN_LIMIT]
        self._scan(self.state, STATE_DIR_NAME, 0, found, budget)
        return found

    def _scan(
        self, directory: Path, label: str, depth: int, found: list[str], budget: list[int]
    ) -> None:
        try:
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
        except OSError as error:
            found.append(f"{label}: cannot be listed: {error.strerror or error}")
            return
        for entry in entries:
            budget[0] -= 1
            if budget[0] < 0:
                found.append(f"{label}: more than {_SCAN_LIMIT} entries; the scan stopped here")
                return
            name = entry.name
            where = f"{label}/{name}"
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue  # removed while scanning
            if stat.S_ISLNK(mode):
                found.append(f"{where}: is a symlink; refusing to follow it under .regulator/")
            elif stat.S_ISDIR(mode):
                if name.endswith(_FILE_SUFFIXES) or (depth == 0 and name in _FILE_NAMES):
                    found.append(f"{where}: is a directory where a file belongs")
                elif not (depth == 1 and label.endswith("/worktrees")):
                    self._scan(Path(entry.path), where, depth + 1, found, budget)
            elif not stat.S_ISREG(mode):
                found.append(f"{where}: is {kind_of(mode)}, not a regular file")
            elif depth == 0 and name in _DIR_NAMES:
                found.append(f"{where}: is a regular file where a directory belongs")
            elif depth == 1 and label.endswith("/units"):
                found.append(f"{where}: is a regular file where a unit's directory belongs")

    def list_presence(self) -> list[Path]:
        """Every ``presence/*.json`` file."""
        return [
            self.presence_dir / name
            for name in list_dir(self.presence_dir, kind="file")
            if name.endswith(".json")
        ]
