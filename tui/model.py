"""What the control room shows, kept current from the instance's files (no Textual here).

One ``InstanceModel`` per instance holds the incremental readers (the regulatory log, the audit
log) and re-reads the small records (``unit.json``, leases) when their files change. ``refresh``
folds only what was appended and says what changed, so the screens update in place. The
files are the truth: nothing here is state the files do not hold.

A refresh may run on a worker thread: it holds ``lock`` while it folds, and anything that walks
the folded state (rather than looking one obligation up) takes the lock too. What the header,
the banners and the instances table count (open obligations by severity, what is owed to a
person, instance-wide vetoes, problems) is kept up to date as the fold goes, from the entries
each refresh returns, so a look at them never rescans every obligation.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from types import MappingProxyType

from regulator.host.channels import ChannelDelivery, deliveries_path, read_deliveries
from regulator.host.instance import os_user
from regulator.host.leases import LeaseStore
from regulator.policy import Definition, PolicyError, load_definition
from regulator.protocol.clock import Clock, parse_iso, system_clock
from regulator.protocol.entry import load_record
from regulator.protocol.errors import RegulatorError
from regulator.protocol.execution import Lease, UnitRecord
from regulator.protocol.interaction import InteractionRequested
from regulator.protocol.obligations import ObligationOpened, ObligationState
from regulator.protocol.ours import Addressee, Receipt
from regulator.protocol.policies import InteractionPolicy, Person
from regulator.protocol.vocab import SEVERITY_ORDER, TERMINAL_STATUSES
from regulator.rules import dispositions
from regulator.rules.dispositions import Answered, Escalation
from regulator.rules.execution import ExecutionStore
from regulator.rules.ledger import Actor, Ledger
from regulator.rules.memory_store import MemoryStore
from regulator.rules.regulatory_log import InteractionState, RegulatoryLog
from regulator.store import Layout, StoreError, TailReader
from regulator.views.next_step import NextStep, next_step_of
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
    # Every obligation whose row may look different (opened, an event, a receipt); ``full``:
    # the whole fold is new (the first read, or the log was replaced), so every row is.
    touched: set[str] = field(default_factory=set)
    full: bool = False


def _parse_receipt(raw: bytes) -> Receipt:
    return load_record(Receipt, raw)


def _parse_addressee(raw: bytes) -> Addressee:
    return load_record(Addressee, raw)


class Acts:
    """The acts a dialog runs: the core's, on this disk. A remote model's send the remote CLI
    command instead (tui/remote.py), so the host there checks authority and records who."""

    def answer(
        self,
        ledger: Ledger,
        policy: InteractionPolicy | None,
        ref: str,
        by: str,
        actor: Actor,
        text: str,
        *,
        channel: str = "cli",
        note: str | None = None,
    ) -> Answered:
        return dispositions.answer(
            ledger, _loaded(policy), ref, by, actor, text, channel=channel, note=note
        )

    def resolve(
        self,
        ledger: Ledger,
        policy: InteractionPolicy | None,
        ref: str,
        by: str,
        actor: Actor,
        *,
        disposition: str,
        rationale: str,
    ) -> ObligationState:
        return dispositions.resolve(
            ledger, _loaded(policy), ref, by, actor, disposition=disposition, rationale=rationale
        )

    def acknowledge(
        self,
        ledger: Ledger,
        policy: InteractionPolicy | None,
        ref: str,
        by: str,
        actor: Actor,
        note: str | None = None,
    ) -> ObligationState:
        return dispositions.acknowledge(ledger, _loaded(policy), ref, by, actor, note)

    def escalate(
        self,
        ledger: Ledger,
        policy: InteractionPolicy | None,
        ref: str,
        by: str,
        actor: Actor,
        *,
        to: str,
        rationale: str,
        person: str | None = None,
    ) -> Escalation:
        return dispositions.escalate(
            ledger, _loaded(policy), ref, by, actor, to=to, rationale=rationale, person=person
        )


def _loaded(policy: InteractionPolicy | None) -> InteractionPolicy:
    if policy is None:
        raise dispositions.Refusal("the interaction policy does not load: nobody may act")
    return policy


class InstanceModel:
    # A remote instance (tui/remote.py): no files here to watch, write or inspect.
    remote = False

    def __init__(
        self, root: Path, *, clock: Clock = system_clock, definition: Path | None = None
    ) -> None:
        self.root = root.resolve()
        self.clock = clock
        self.acts = Acts()
        self.layout = Layout(self.root)
        self.definition: Definition = load_definition(self.root, definition)
        self.log = RegulatoryLog(self.layout)
        self.store = ExecutionStore(self.layout, clock)
        # Kept, so each look at memory reads only what was appended since the last.
        self.memory = MemoryStore(self.layout, clock)
        self._receipts: TailReader[Receipt] = TailReader(
            self.layout.receipts, _parse_receipt, label=self.layout.label(self.layout.receipts)
        )
        self._addressees: TailReader[Addressee] = TailReader(
            self.layout.addressees,
            _parse_addressee,
            label=self.layout.label(self.layout.addressees),
        )
        # The canaries, credential shapes and the secrets the channels use, as the CLI has.
        self.redactor = Redactor.for_layout(self.layout)
        self._policy: InteractionPolicy | None = None
        self._policy_read = False
        self._init_counts()

    def _init_counts(self) -> None:
        """What the screens read, empty until the first fold (shared with a remote model)."""
        self.seen: dict[str, set[str]] = {}
        # Obligation id → the one person it was escalated to (``addressees.ndjson``).
        self.addressees: dict[str, str] = {}
        self.units: dict[str, UnitRecord] = {}
        self.leases: list[Lease] = []
        self.record_problems: list[str] = []
        # Logs that are there but cannot be read, as the last fold found them.
        self.unreadable: list[str] = []
        self.last_change: datetime | None = None
        self.loaded = False
        self.lock = threading.RLock()
        # Kept as the fold goes (see the module's docstring): open obligations, by severity,
        # those owed to a person, and those that hold every dispatch (no unit).
        self.open: dict[str, ObligationState] = {}
        self.severity_counts: Counter[str] = Counter()
        self.owed: dict[str, ObligationState] = {}
        self.veto: dict[str, ObligationState] = {}
        self.problem_count = 0
        self._candidates: dict[str, tuple[ObligationState, InteractionState, datetime]] = {}
        self._summaries: dict[str, tuple[object, tuple[str, str, str]]] = {}
        self._stamps: tuple[tuple[int, int, int] | None, ...] = ()

    @property
    def name(self) -> str:
        return self.root.name

    def interaction_policy(self) -> InteractionPolicy | None:
        """The people and what they may do; ``None`` when the policy does not load. Read once:
        the inbox asks for every row, and a policy that fails would be read again each time."""
        if not self._policy_read:
            try:
                self._policy = self.definition.interaction
            except PolicyError:
                self._policy = None
            self._policy_read = True
        return self._policy

    def refresh(self, paths: Iterable[Path] | None = None) -> Changes:
        """Fold what changed (everything when ``paths`` is None); safe on a worker thread."""
        with self.lock:
            return self._refresh(paths)

    def _read_stamps(self) -> tuple[tuple[int, int, int] | None, ...]:
        """What a fold reads, as ``stat`` sees it: the log and the receipts."""
        out: list[tuple[int, int, int] | None] = []
        for path in (self.log.path, self.layout.receipts, self.layout.addressees):
            try:
                st = path.stat()
            except OSError:
                out.append(None)
                continue
            out.append((st.st_ino, st.st_size, st.st_mtime_ns))
        return tuple(out)

    def unread_changes(self) -> bool:
        """Whether the log or the receipts changed since the last fold began (two ``stat``
        calls; a fold needs the lock and a thread, this neither)."""
        return self._read_stamps() != self._stamps

    def _refresh(self, paths: Iterable[Path] | None) -> Changes:
        # Taken before reading: an append landing during the fold shows as a change next time.
        self._stamps = self._read_stamps()
        changes = Changes()
        before = self.log.obligations
        try:
            entries = self.log.refresh()
            self.unreadable = []
        except StoreError as exc:
            # The log is there but cannot be read (a FIFO, a symlink): the problem bar names it,
            # and what was read before stays on screen (nothing read is no news of "nothing").
            entries = []
            self.unreadable = [str(exc)]
        # A new dict: the first read, a snapshot restored, or the log replaced and read again.
        changes.full = not self.loaded or self.log.obligations is not before
        if entries:
            changes.obligations = True
        if changes.full:
            if self.loaded:
                changes.new_obligations = [
                    o for oid, o in self.log.obligations.items() if oid not in before
                ]
            self._recount()
        else:
            touched = changes.touched
            obligations = self.log.obligations
            for entry in entries:
                if type(entry) is ObligationOpened:
                    o = obligations.get(entry.obligation.id)
                    if o is not None and o.history[0] is entry:
                        changes.new_obligations.append(o)
                        touched.add(o.id)
                elif type(entry) is InteractionRequested:
                    self._candidate(entry.request.obligation_id)
                else:
                    oid = getattr(entry, "obligation_id", None)
                    if isinstance(oid, str):
                        touched.add(oid)
            for oid in touched:
                o = obligations.get(oid)
                if o is not None:
                    self._account(o)
        try:
            receipts = self._receipts.refresh().items
        except StoreError as exc:
            receipts = []
            self.unreadable.append(str(exc))
        for receipt in receipts:
            self.seen.setdefault(receipt.obligation_id, set()).add(receipt.person)
            changes.touched.add(receipt.obligation_id)
            changes.obligations = True
        try:
            addressed = self._addressees.refresh().items
        except StoreError as exc:
            addressed = []
            self.unreadable.append(str(exc))
        for line in addressed:
            self.addressees[line.obligation_id] = line.person
            changes.touched.add(line.obligation_id)
            changes.obligations = True
        touched_paths = list(paths) if paths is not None else None
        if changes.full or touched_paths is None or any(map(self._is_unit_file, touched_paths)):
            before_units = dict(self.units)
            before_leases = list(self.leases)
            self._read_units()
            changes.units = self.units != before_units or self.leases != before_leases
        if entries or changes.units:
            self.last_change = self.clock()
        self.problem_count = len(self.problems)
        self.loaded = True
        return changes

    # -- what is kept as the fold goes ---------------------------------------------------------

    def _recount(self) -> None:
        self.open, self.owed, self.veto = {}, {}, {}
        self.severity_counts = Counter()
        self._candidates = {}
        for o in self.log.obligations.values():
            self._account(o)
        for interaction in self.log.interactions.values():
            self._candidate(interaction.request.obligation_id)

    def _account(self, o: ObligationState) -> None:
        """Move one obligation into or out of what is counted, after it changed."""
        oid = o.id
        was = self.open.pop(oid, None)
        if was is not None:
            self.severity_counts[was.severity] -= 1
            self.owed.pop(oid, None)
            self.veto.pop(oid, None)
        if o.status in TERMINAL_STATUSES:
            self._candidates.pop(oid, None)
            return
        self.open[oid] = o
        self.severity_counts[o.severity] += 1
        if o.consumer == "human":
            self.owed[oid] = o
        if o.blocks and o.unit is None:
            self.veto[oid] = o

    def _candidate(self, oid: str) -> None:
        """A question asked through the room, with its deadline, while it is open."""
        o = self.log.obligations.get(oid)
        interaction = self.log.interaction_for(oid)
        if o is None or interaction is None or o.status in TERMINAL_STATUSES:
            return
        request = interaction.request
        # Asked in a room, or of a person reached through `serve --http` (ours): either way a
        # session waits for the answer until the deadline.
        if request.channel not in ("tui", "outbox"):
            return
        try:
            deadline = parse_iso(request.raised_at) + timedelta(milliseconds=request.timeout_ms)
        except ValueError:
            return
        self._candidates[oid] = (o, interaction, deadline)

    def _is_unit_file(self, path: Path) -> bool:
        text = str(path)
        return "/units/" in text or "/leases/" in text

    def _read_units(self) -> None:
        problems: list[str] = []
        units: dict[str, UnitRecord] = {}
        for unit_id, got in self.store.each_unit(self.layout.list_units()):
            if isinstance(got, Exception):  # a bad record is a problem to show, not a crash
                problems.append(f"{self.layout.label(self.layout.unit_record(unit_id))}: {got}")
            else:
                units[unit_id] = got
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
            self.unreadable
            + [str(p) for p in self.log.problems]
            + [str(p) for p in self._receipts.problems]
            + [str(p) for p in self._addressees.problems]
            + self.record_problems
        )

    def open_obligations(self) -> list[ObligationState]:
        return list(self.open.values())

    def instance_veto(self) -> list[ObligationState]:
        return list(self.veto.values())

    def addressee(self, o: ObligationState) -> str | None:
        """The one person ``o`` is owed to: escalated to them (``addressees.ndjson``), owed to
        ``human``, and a person the policy still lists; else None (every person's share)."""
        name = self.addressees.get(o.id)
        if name is None or o.consumer != "human":
            return None
        policy = self.interaction_policy()
        return name if policy is not None and policy.person(name) is not None else None

    def owed_to(self, o: ObligationState) -> str:
        """Whom ``o`` is owed to, as the inbox and the detail say it: a person, or a consumer."""
        return self.addressee(o) or o.consumer

    def owed_to_person(self) -> list[ObligationState]:
        return list(self.owed.values())

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

    def next_step(self, unit_id: str) -> NextStep | None:
        """What the unit needs next (``regulator.views.next_step``); None: no such unit here."""
        unit = self.units.get(unit_id)
        if unit is None or self.remote:
            return None
        try:
            ceiling = self.definition.budget.ceiling_for(unit.unit_type).attempts
        except (PolicyError, RegulatorError):
            ceiling = unit.attempts + 1  # a budget that does not load: the gate says so
        try:
            with self.lock:
                return next_step_of(self.log, self.store, unit, attempt_ceiling=ceiling)
        except (RegulatorError, StoreError) as exc:
            return NextStep(f"cannot tell what it needs next: {exc}")

    def interaction(self, obligation_id: str) -> InteractionState | None:
        return self.log.interaction_for(obligation_id)

    _deliveries_stamp: tuple[int, int] | None = None
    _deliveries: Mapping[str, list[ChannelDelivery]] = MappingProxyType({})

    def channel_deliveries(self, obligation_id: str) -> list[ChannelDelivery]:
        """Where what is owed was sent, person by person, and whether it failed (our
        ``deliveries.ndjson``); read again only when the file has changed."""
        path = deliveries_path(self.layout)
        try:
            st = path.lstat()
        except OSError:
            return []
        stamp = (st.st_size, st.st_mtime_ns)
        if stamp != self._deliveries_stamp:
            try:
                records, _ = read_deliveries(self.layout)
            except RegulatorError:  # doctor names a damaged file; the room shows what reads
                records = []
            grouped: dict[str, list[ChannelDelivery]] = {}
            for record in records:
                grouped.setdefault(record.obligation_id, []).append(record)
            self._deliveries, self._deliveries_stamp = grouped, stamp
        return self._deliveries.get(obligation_id, [])

    def waiting_sessions(self) -> list[tuple[ObligationState, InteractionState, float]]:
        "Questions whose session is still waiting in ``ask_human``: (obligation, request, s left)."
        now = self.clock()
        out = []
        for o, i, deadline in list(self._candidates.values()):
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
