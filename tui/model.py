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
from pathlib import Path, PurePath
from types import MappingProxyType
from typing import Generic, Protocol, TypeVar

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
from regulator.rules.memory_store import MemoryState, MemoryStore
from regulator.rules.regulatory_log import FoldedLog, InteractionState, RegulatoryLog
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


@dataclass(frozen=True)
class AnswerAct:
    """``ref`` answered by ``by`` (``actor``: how they reached us) with ``text``."""

    ref: str
    by: str
    actor: Actor
    text: str
    note: str | None = None
    channel: str = "tui"

    def argv(self) -> list[str]:
        """The CLI command that does the same (what a remote instance runs)."""
        note = ["--note", self.note] if self.note else []
        return ["answer", self.ref, "--by", self.by, "--answer", self.text, *note]


@dataclass(frozen=True)
class ResolveAct:
    ref: str
    by: str
    actor: Actor
    disposition: str
    rationale: str

    def argv(self) -> list[str]:
        return ["obligation", "resolve", self.ref, "--by", self.by,
                "--disposition", self.disposition, "--rationale", self.rationale]  # fmt: skip


@dataclass(frozen=True)
class AckAct:
    ref: str
    by: str
    actor: Actor
    note: str | None = None

    def argv(self) -> list[str]:
        note = ["--note", self.note] if self.note else []
        return ["obligation", "ack", self.ref, "--by", self.by, *note]


@dataclass(frozen=True)
class EscalateAct:
    ref: str
    by: str
    actor: Actor
    to: str
    rationale: str
    # With ``to == "human"``: the one person the successor is owed to.
    person: str | None = None

    def argv(self) -> list[str]:
        person = ["--person", self.person] if self.person is not None else []
        return ["obligation", "escalate", self.ref, "--by", self.by, "--to", self.to,
                *person, "--rationale", self.rationale]  # fmt: skip


class Acts(Protocol):
    """The acts a dialog runs on one instance. A local instance's are the core's, on this disk
    (``LocalActs``); a remote one's run the CLI command there (``tui.remote.RemoteActs``), so
    that host checks authority and records who. Each act is its own record, so what an act
    takes is written once, with the command line that does it."""

    def answer(self, act: AnswerAct) -> Answered: ...
    def resolve(self, act: ResolveAct) -> ObligationState: ...
    def acknowledge(self, act: AckAct) -> ObligationState: ...
    def escalate(self, act: EscalateAct) -> Escalation: ...


class LocalActs:
    """The core's acts (``regulator.rules.dispositions``) on a local instance's log, under
    its interaction policy, as the CLI makes them."""

    def __init__(self, model: InstanceModel) -> None:
        self.model = model

    def _context(self) -> tuple[Ledger, InteractionPolicy]:
        policy = self.model.interaction_policy()
        if policy is None:
            raise dispositions.Refusal("the interaction policy does not load: nobody may act")
        return Ledger(self.model.layout, clock=self.model.clock), policy

    def answer(self, act: AnswerAct) -> Answered:
        ledger, policy = self._context()
        return dispositions.answer(
            ledger, policy, act.ref, act.by, act.actor, act.text, channel=act.channel,
            note=act.note,
        )  # fmt: skip

    def resolve(self, act: ResolveAct) -> ObligationState:
        ledger, policy = self._context()
        return dispositions.resolve(
            ledger, policy, act.ref, act.by, act.actor, disposition=act.disposition,
            rationale=act.rationale,
        )  # fmt: skip

    def acknowledge(self, act: AckAct) -> ObligationState:
        ledger, policy = self._context()
        return dispositions.acknowledge(ledger, policy, act.ref, act.by, act.actor, act.note)

    def escalate(self, act: EscalateAct) -> Escalation:
        ledger, policy = self._context()
        return dispositions.escalate(
            ledger, policy, act.ref, act.by, act.actor, to=act.to, rationale=act.rationale,
            person=act.person,
        )  # fmt: skip


class InstanceView(Protocol):
    """What the room's screens, widgets and dialogs read of one instance, local
    (``InstanceModel``) or on another machine (``tui.remote.RemoteInstanceModel``).

    What only a local instance has (its files: the layout, the execution store, the
    definition a loop drives under) is not here: the room asks ``isinstance(model,
    InstanceModel)`` for it, and says what a remote instance does not offer yet.
    """

    @property
    def name(self) -> str: ...
    @property
    def root(self) -> PurePath: ...
    @property
    def remote(self) -> bool: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def redactor(self) -> Redactor: ...
    @property
    def acts(self) -> Acts: ...
    @property
    def definition_root(self) -> Path | None:
        """The definition acts are recorded under (provenance); None: none here."""

    @property
    def lock(self) -> threading.RLock: ...
    @property
    def log(self) -> FoldedLog: ...
    # What the fold keeps (the module's docstring).
    @property
    def loaded(self) -> bool: ...
    @property
    def last_change(self) -> datetime | None: ...
    @property
    def problem_count(self) -> int: ...
    @property
    def problems(self) -> list[str]: ...
    @property
    def seen(self) -> dict[str, set[str]]: ...
    @property
    def units(self) -> dict[str, UnitRecord]: ...
    @property
    def leases(self) -> list[Lease]: ...
    @property
    def open(self) -> dict[str, ObligationState]: ...
    @property
    def owed(self) -> dict[str, ObligationState]: ...
    @property
    def veto(self) -> dict[str, ObligationState]: ...
    @property
    def severity_counts(self) -> Counter[str]: ...

    def refresh(self, paths: Iterable[Path] | None = None) -> Changes: ...
    def unread_changes(self) -> bool: ...
    def interaction_policy(self) -> InteractionPolicy | None: ...
    def open_obligations(self) -> list[ObligationState]: ...
    def instance_veto(self) -> list[ObligationState]: ...
    def addressee(self, o: ObligationState) -> str | None: ...
    def owed_to(self, o: ObligationState) -> str: ...
    def owed_to_person(self) -> list[ObligationState]: ...
    def interaction(self, obligation_id: str) -> InteractionState | None: ...
    def waiting_sessions(self) -> list[tuple[ObligationState, InteractionState, float]]: ...
    def sessions_still_running(
        self,
    ) -> list[tuple[ObligationState, InteractionState, float]]: ...
    def unit_summary(self, unit: UnitRecord) -> tuple[str, str, str]: ...
    def next_step(self, unit_id: str) -> NextStep | None: ...
    def channel_deliveries(self, obligation_id: str) -> list[ChannelDelivery]: ...
    def current_memory(self) -> list[MemoryState]: ...


LogT = TypeVar("LogT", bound=FoldedLog)


class FoldedCounts(Generic[LogT]):
    """What the header, banners and instances table count, kept as a fold goes (the module's
    docstring), over a log folded here or streamed from elsewhere: the part of a model the
    local and the remote one share."""

    def __init__(self, log: LogT, clock: Clock) -> None:
        self.log = log
        self.clock = clock
        self.seen: dict[str, set[str]] = {}
        # Obligation id → the one person it was escalated to (``addressees.ndjson``).
        self.addressees: dict[str, str] = {}
        self.units: dict[str, UnitRecord] = {}
        self.leases: list[Lease] = []
        self.record_problems: list[str] = []
        self.last_change: datetime | None = None
        self.loaded = False
        self.lock = threading.RLock()
        # Open obligations, by severity, those owed to a person, and those that hold every
        # dispatch (no unit).
        self.open: dict[str, ObligationState] = {}
        self.severity_counts: Counter[str] = Counter()
        self.owed: dict[str, ObligationState] = {}
        self.veto: dict[str, ObligationState] = {}
        self.problem_count = 0
        self._candidates: dict[str, tuple[ObligationState, InteractionState, datetime]] = {}

    def interaction_policy(self) -> InteractionPolicy | None:
        """The people and what they may do; None: not known here (see the subclasses)."""
        return None

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

    def interaction(self, obligation_id: str) -> InteractionState | None:
        return self.log.interaction_for(obligation_id)

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


class InstanceModel(FoldedCounts[RegulatoryLog]):
    """A local instance: its files read as they change (the module's docstring)."""

    remote = False

    def __init__(
        self, root: Path, *, clock: Clock = system_clock, definition: Path | None = None
    ) -> None:
        self.root = root.resolve()
        self.layout = Layout(self.root)
        super().__init__(RegulatoryLog(self.layout), clock)
        self.acts = LocalActs(self)
        self.definition: Definition = load_definition(self.root, definition)
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
        # Logs that are there but cannot be read, as the last fold found them.
        self.unreadable: list[str] = []
        self._summaries: dict[str, tuple[object, tuple[str, str, str]]] = {}
        self._stamps: tuple[tuple[int, int, int] | None, ...] = ()

    @property
    def definition_root(self) -> Path | None:
        return self.definition.root

    def current_memory(self) -> list[MemoryState]:
        return self.memory.current()

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

    # -- the units and leases ------------------------------------------------------------------

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
        if unit is None:
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
