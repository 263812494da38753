"""Where every file of an instance lives (format.md "Files"; upstream-core.md §1, §5.1).

A :class:`Layout` only builds paths; it reads nothing but the environment (``REGULATOR_OUTBOX``)
and, for the ``list_*`` helpers, directory listings. Every name that becomes a path component
(unit id, host, version, attempt) is checked first, so no caller can build a path that escapes
``.regulator/``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from regulator.store._fs import STATE_DIR_NAME
from regulator.store.errors import InvalidPathComponent, InvalidUnitId
from regulator.store.records import list_dir

UNIT_ID_PATTERN = re.compile(r"[a-zA-Z0-9._-]+")
OUTBOX_ENV = "REGULATOR_OUTBOX"

_CONTRACT_NAME = re.compile(r"contract\.v([1-9][0-9]*)\.json")
_REPORT_NAME = re.compile(r"report\.v([1-9][0-9]*)\.a([1-9][0-9]*)\.json")
_BUDGET_NAME = re.compile(r"budget\.a([1-9][0-9]*)\.json")


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

    def list_presence(self) -> list[Path]:
        """Every ``presence/*.json`` file."""
        return [
            self.presence_dir / name
            for name in list_dir(self.presence_dir, kind="file")
            if name.endswith(".json")
        ]
