"""Every file of an instance that a reader validates, with the parser for its records.

``doctor`` reads them all; ``status`` and the control room read the ones they show. Keeping the
catalogue in one place means a new log is checked everywhere as soon as it is listed here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from regulator.protocol.audit import parse_audit_line
from regulator.protocol.effects import parse_effect_line
from regulator.protocol.entry import load_record
from regulator.protocol.execution import (
    AttemptRecord,
    BudgetLedger,
    FailureObservation,
    Lease,
    RecoveryDecision,
    UnitRecord,
    WorkContract,
)
from regulator.protocol.memory import parse_memory_line
from regulator.protocol.ours import ANSWER_CODES, ANSWER_LINKS, Addressee, Provenance, Receipt
from regulator.store import Layout, StoreError
from regulator.store.ndjson import Problem, TailReader
from regulator.store.records import read_bytes


@dataclass(frozen=True)
class LogSpec:
    path: Path
    parse: Callable[[bytes], Any]


def model_parser(model: type[Any]) -> Callable[[bytes], Any]:
    def parse(raw: bytes) -> Any:
        return load_record(model, raw)

    return parse


def instance_logs(layout: Layout) -> list[LogSpec]:
    """The append-only logs (signals.ndjson is read by the regulatory log, with its fold)."""
    logs = [
        LogSpec(layout.audit, parse_audit_line),
        LogSpec(layout.effects, parse_effect_line),
        LogSpec(layout.memory, parse_memory_line),
        LogSpec(layout.provenance, model_parser(Provenance)),
        LogSpec(layout.receipts, model_parser(Receipt)),
        LogSpec(layout.addressees, model_parser(Addressee)),
        LogSpec(layout.answer_codes, ANSWER_CODES.parse),
        LogSpec(layout.answer_links, ANSWER_LINKS.parse),
    ]
    for unit_id in layout.list_units():
        logs += [
            LogSpec(layout.attempts(unit_id), model_parser(AttemptRecord)),
            LogSpec(layout.decisions(unit_id), model_parser(RecoveryDecision)),
            LogSpec(layout.observations(unit_id), model_parser(FailureObservation)),
        ]
    return logs


def instance_records(layout: Layout) -> list[tuple[Path, type[Any]]]:
    """The JSON records (rewritten or created once), each with its model."""
    records: list[tuple[Path, type[Any]]] = []
    for unit_id in layout.list_units():
        records.append((layout.unit_record(unit_id), UnitRecord))
        records += [
            (layout.contract(unit_id, v), WorkContract)
            for v in layout.list_contract_versions(unit_id)
        ]
        records += [(layout.budget(unit_id, a), BudgetLedger) for a in layout.list_budgets(unit_id)]
    if layout.leases_dir.is_dir():
        records += [(p, Lease) for p in sorted(layout.leases_dir.iterdir()) if p.suffix == ".json"]
    return records


def read_log(layout: Layout, spec: LogSpec) -> tuple[list[Any], list[Problem]]:
    """Every valid record of one log and the problems around them; :class:`StoreError` when
    the log is there but cannot be read at all (a symlink, a FIFO, a directory)."""
    reader = TailReader(spec.path, spec.parse, label=layout.label(spec.path))
    items: list[Any] = []
    while True:
        batch = reader.refresh()
        items.extend(batch.items)
        if not batch.more:
            break
    return items, list(reader.problems)


def read_record(
    layout: Layout, path: Path, model: type[Any], *, refuse_unreadable: bool = False
) -> tuple[Any | None, str | None]:
    """One JSON record, or the problem that kept it from loading (``file: message``).

    With ``refuse_unreadable``, a record that is there but cannot be read at all (a symlink, a
    FIFO, a directory, an I/O error) raises its :class:`StoreError`, as every reader but
    ``doctor``'s (which lists them all) does; a record missing or not valid is still a problem.
    """
    label = layout.label(path)
    try:
        raw = read_bytes(path)
    except FileNotFoundError:
        return None, f"{label}: missing"
    except StoreError as exc:
        if refuse_unreadable:
            raise
        return None, f"{label}: {exc}"
    try:
        return load_record(model, raw), None
    except Exception as exc:  # a bad record is reported, never raised to the reader
        return None, f"{label}: {exc}"
