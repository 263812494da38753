"""What the control room shows, kept current from the instance's files (no Textual here).

One ``InstanceModel`` per instance holds the incremental readers (the regulatory log, the audit
log) and re-reads the small records (``unit.json``, leases) when their files change. ``refresh``
folds only what was appended and says what changed, so the screens update in place. The
files are the truth: nothing here is state the files do not hold.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from regulator.host.instance import os_user, read_canaries
from regulator.host.leases import LeaseStore
from regulator.policy import Definition, PolicyError, load_definition
from regulator.protocol.clock import Clock, parse_iso, system_clock
from regulator.protocol.entry import load_record
from regulator.protocol.execution import Lease, UnitRecord
from regulator.protocol.obligations import ObligationState
from regulator.protocol.ours import Receipt
from regulator.protocol.policies import InteractionPolicy, Person
from regulator.protocol.vocab import SEVERITY_ORDER, TERMINAL_STATUSES
from regulator.rules.execution import ExecutionStore
from regulator.rules.memory_store import MemoryStore
from regulator.rules.regulatory_log import InteractionState, RegulatoryLog
from regulator.store import Layout, TailReader
from regulator.views.redaction import Redactor

SEVERITY_GLYPH = {"critical": "▲", "blocking": "●", "advisory": "◐", "info": "○"}
STATUS_GLYPH = {
    "open": "○",
    "acknowledged": "◔",
    "resolved": "✓",
    "escalated": "↗",
    "superseded": "⇢",
}


@dataclass
class Changes:
    new_obligations: list[ObligationState] = field(default_factory=list)
    obligations: bool = False
    units: bool = False
    restarted: bool = False


def _parse_receipt(raw: bytes) -> Receipt:
    return load_record(Receipt, raw)


class InstanceModel:
    def __init__(
        self, root: Path, *, clock: Clock = system_clock, definition: Path | None = None
    ) -> None:
        self.root = root.resolve()
        self.clock = clock
        self.layout = Layout(self.root)
        self.definition: Definition = load_definition(self.root, definition)
        self.log = RegulatoryLog(self.layout)
        self.store = ExecutionStore(self.layout, clock)
        # Kept, so each look at memory reads only what was appended since the last.
        self.memory = MemoryStore(self.layout, clock)
        self._receipts: TailReader[Receipt] = TailReader(
            self.layout.receipts, _parse_receipt, label=self.layout.label(self.layout.receipts)
        )
        self.seen: dict[str, set[str]] = {}
        self.units: dict[str, UnitRecord] = {}
        self.leases: list[Lease] = []
        self.record_problems: list[str] = []
        self.last_change: datetime | None = None
        self.loaded = False
        self.redactor = Redactor(read_canaries(self.layout))
        self._candidates: list[tuple[ObligationState, InteractionState, datetime]] = []
        self._candidates_at = -1
        self._summaries: dict[str, tuple[object, tuple[str, str, str]]] = {}

    @property
    def name(self) -> str:
        return self.root.name

    def interaction_policy(self) -> InteractionPolicy | None:
        try:
            return self.definition.interaction
        except PolicyError:
            return None

    def refresh(self, paths: Iterable[Path] | None = None) -> Changes:
        """Fold what changed (everything when ``paths`` is None)."""
        changes = Changes()
        before = set(self.log.obligations)
        entries = self.log.refresh()
        if entries:
            changes.obligations = True
            changes.new_obligations = [
                o for oid, o in self.log.obligations.items() if oid not in before
            ]
        for receipt in self._receipts.refresh():
            self.seen.setdefault(receipt.obligation_id, set()).add(receipt.person)
            changes.obligations = True
        touched = list(paths) if paths is not None else None
        if touched is None or any(self._is_unit_file(p) for p in touched):
            before_units = dict(self.units)
            before_leases = list(self.leases)
            self._read_units()
            changes.units = self.units != before_units or self.leases != before_leases
        if entries or changes.units:
            self.last_change = self.clock()
        self.loaded = True
        return changes

    def _is_unit_file(self, path: Path) -> bool:
        text = str(path)
        return "/units/" in text or "/leases/" in text

    def _read_units(self) -> None:
        problems: list[str] = []
        units: dict[str, UnitRecord] = {}
        for unit_id in self.layout.list_units():
            try:
                units[unit_id] = self.store.unit(unit_id)
            except Exception as exc:  # a bad record is a problem to show, not a crash
                problems.append(f"{self.layout.label(self.layout.unit_record(unit_id))}: {exc}")
        self.units = units
        try:
            self.leases = LeaseStore(self.layout, self.clock).leases()
        except Exception as exc:
            problems.append(f".regulator/leases: {exc}")
        self.record_problems = problems

    # -- what the screens ask -------------------------------------------------------------

    @property
    def problems(self) -> list[str]:
        return (
            [str(p) for p in self.log.problems]
            + [str(p) for p in self._receipts.problems]
            + self.record_problems
        )

    def open_obligations(self) -> list[ObligationState]:
        return self.log.open_obligations()

    def instance_veto(self) -> list[ObligationState]:
        return [o for o in self.log.open_obligations() if o.blocks and o.unit is None]

    def owed_to_person(self) -> list[ObligationState]:
        return [o for o in self.log.open_obligations() if o.consumer == "human"]

    def unit_summary(self, unit: UnitRecord) -> tuple[str, str, str]:
        """(last outcome, last decision, budget) for the units table, read once per change.

        The Instances tab redraws on every change of the instance; re-reading each unit's
        attempts, decisions and ledger each time is repeated I/O on a hot path. The key is what
        changes when those files do: the unit record, and the size or time of the other two.
        """
        decisions_path = self.layout.decisions(unit.unit_id)
        budget_path = self.layout.budget(unit.unit_id, unit.attempts) if unit.attempts else None
        key = (unit.updated_at, unit.attempts, _stamp(decisions_path), _stamp(budget_path))
        cached = self._summaries.get(unit.unit_id)
        if cached is not None and cached[0] == key:
            return cached[1]
        attempts = self.store.attempts(unit.unit_id)
        last = attempts[-1].outcome if attempts else "—"
        decisions = self.store.decisions(unit.unit_id)
        decision = f"{decisions[-1].cause} → {decisions[-1].action}" if decisions else "—"
        ledger = self.store.budget(unit.unit_id, unit.attempts) if unit.attempts else None
        budget = (
            f"{ledger.consumed.tokens // 1000}k/{ledger.ceiling.tokens // 1000}k tok"
            if ledger
            else "—"
        )
        summary = (last, decision, budget)
        self._summaries[unit.unit_id] = (key, summary)
        return summary

    def interaction(self, obligation_id: str) -> InteractionState | None:
        return self.log.interaction_for(obligation_id)

    def _waiting_candidates(self) -> list[tuple[ObligationState, InteractionState, datetime]]:
        """Open questions asked through the room, with their deadlines; recomputed per change."""
        if self._candidates_at == self.log.lines:
            return self._candidates
        out = []
        for i in self.log.interactions.values():
            request = i.request
            if request.channel != "tui":
                continue
            o = self.log.obligations.get(request.obligation_id)
            if o is None or o.status in TERMINAL_STATUSES:
                continue
            try:
                deadline = parse_iso(request.raised_at) + timedelta(milliseconds=request.timeout_ms)
            except ValueError:
                continue
            out.append((o, i, deadline))
        self._candidates, self._candidates_at = out, self.log.lines
        return out

    def waiting_sessions(self) -> list[tuple[ObligationState, InteractionState, float]]:
        "Questions whose session is still waiting in ``ask_human``: (obligation, request, s left)."
        now = self.clock()
        out = []
        for o, i, deadline in self._waiting_candidates():
            if i.answers or o.status in TERMINAL_STATUSES:
                continue
            left = (deadline - now).total_seconds()
            if left > 0:
                out.append((o, i, left))
        return out

    def sessions_still_running(self) -> list[tuple[ObligationState, InteractionState, float]]:
        """The waiting questions whose session is still there: its unit dispatched or leased.

        A question whose unit holds no live lease and is not dispatched has no session left to
        wait (it crashed or was stopped); quitting the room cannot leave it hanging.
        """
        now_ms = int(self.clock().timestamp() * 1000)
        leased = {lease.unit_id for lease in self.leases if lease.expires_at > now_ms}
        out = []
        for o, i, left in self.waiting_sessions():
            unit = self.units.get(o.unit or "")
            if o.unit in leased or (unit is not None and unit.status == "dispatched"):
                out.append((o, i, left))
        return out


def _stamp(path: Path | None) -> tuple[int, int] | None:
    try:
        st = path.stat() if path is not None else None
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns) if st is not None else None


def sort_key(o: ObligationState) -> tuple[int, int, str]:
    """Severity first, then what vetoes, then the oldest."""
    vetoes = o.blocks and o.status not in TERMINAL_STATUSES
    return (-SEVERITY_ORDER[o.severity], 0 if vetoes else 1, o.opened_at)


def age(opened_at: str, now: datetime) -> str:
    try:
        seconds = max(0, int((now - parse_iso(opened_at)).total_seconds()))
    except ValueError:
        return "?"
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86400:
        return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}"
    return f"{seconds // 86400}d"


def resolve_person(
    given: str | None, policy: InteractionPolicy | None, env: dict[str, str] | None = None
) -> tuple[str | None, str]:
    """Who is acting: --as, else REGULATOR_PERSON, else the OS user when listed; and why."""
    environ = os.environ if env is None else env
    if given:
        return given, "--as"
    if environ.get("REGULATOR_PERSON"):
        return environ["REGULATOR_PERSON"], "REGULATOR_PERSON"
    # The real uid's name, not $LOGNAME or $USER, which anyone can set.
    user = os_user()
    if policy is not None and user and policy.person(user) is not None:
        return user, "the OS user"
    return None, "nobody named: pick a person"


def grants(person: Person | None) -> str:
    if person is None:
        return "not in the policy: may disposition nothing"
    parts = [f"up to {person.resolve_up_to}"]
    parts.append("accepts risk" if person.accept_risk else "no risk acceptance")
    if person.act_as_s5:
        parts.append("acts as S5")
    return ", ".join(parts)
