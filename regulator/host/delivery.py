"""Delivery of what is owed to a person: the outbox, reminders, and the watcher
(docs/design.md#delivery).

An obligation owed to ``human`` is written as one line to the outbox through the effect journal
(key ``deliver:<obligationId>:<prior deliveries>``) and recorded as ``obligation-delivered`` in
the regulatory log. After the interaction policy's ``reminderAfterMs`` with no disposition it is
delivered again, marked as a reminder. Delivery is not a disposition. Obligations owed to S3 or
S5 are never written to the outbox.

Differences from the original, each for a failure it did not handle:

* A delivery pass holds the regulatory log's lock for the whole pass (lock order signals →
  effects → outbox), so two processes delivering at once cannot deliver one obligation twice.
* A pass first reconciles ``intended`` deliver keys against the outbox (done ⇔ some line starts
  with ``"<key> "``), and a key already ``committed``/``confirmed`` whose delivery the log lacks
  (a crash between writing the line and recording it) is recorded without writing the line
  again: reconciled, not repeated.
* The cursor (``outbox.cursor``, ``<n>\\n``) counts **bytes** of the outbox file, not the UTF-16
  units of decoded text the original counts: bytes are what a reader can seek to, and a byte
  count cannot fall inside a character. It is advanced after each line forwarded, and a tick
  stops forwarding at the first failure, so the failing line and those after it are forwarded
  again next tick and nothing before it is forwarded twice (the original re-forwarded the whole
  batch after any failure). A watcher killed mid-forward repeats at most the line in flight.

Ours, beside the outbox: each delivery also goes to the channels of every person who may
disposition the obligation (:mod:`regulator.host.channels`), after the outbox pass, in
``watch``, ``remind``, ``serve`` and the loop's routing step.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from regulator.host.channels import FanOut, Sender, fan_out, has_channels
from regulator.policy import Definition
from regulator.protocol.clock import Clock, now_iso, parse_iso
from regulator.protocol.obligations import ObligationState
from regulator.protocol.policies import InteractionPolicy
from regulator.protocol.text import visible
from regulator.protocol.vocab import TERMINAL_STATUSES
from regulator.rules.effect_journal import EffectJournal, EffectState
from regulator.rules.ledger import Ledger, Transaction
from regulator.rules.router import RoutingResult, route_messages
from regulator.store import Layout, RecordNotFound, locked_log, read_bytes, write_text_atomic

TOOL = "deliver"
CHANNEL = "outbox"
DELIVERED_BY = "S3"
KEY_PREFIX = "deliver:"

#: Runs the channel command for one line: ``(command, line) → (exit code, stderr text)``.
Runner = Callable[[Sequence[str], bytes], tuple[int, str]]


# --------------------------------------------------------------------------------------------
# What is owed


def _owed_to_a_person(o: ObligationState) -> bool:
    return o.consumer == "human" and o.status not in TERMINAL_STATUSES


def undelivered(states: Iterable[ObligationState]) -> list[ObligationState]:
    """Open or acknowledged obligations owed to a person that nothing has delivered yet."""
    return [o for o in states if _owed_to_a_person(o) and not o.deliveries]


def remindable(
    states: Iterable[ObligationState], policy: InteractionPolicy, now: datetime
) -> list[ObligationState]:
    """Owed to a person and never delivered, or last delivered ``reminderAfterMs`` ago or more."""
    interval = timedelta(milliseconds=policy.reminder_after_ms)
    due: list[ObligationState] = []
    for o in states:
        if not _owed_to_a_person(o):
            continue
        if not o.deliveries:
            due.append(o)
            continue
        try:
            last = parse_iso(o.deliveries[-1].at)
        except ValueError:
            continue  # an unreadable time is never due, as in the original (NaN compares false)
        if now - last >= interval:
            due.append(o)
    return due


def deliver_key(o: ObligationState) -> str:
    """``deliver:<id>:<n>``: the n-th delivery of an obligation is one effect, whoever tries it."""
    return f"{KEY_PREFIX}{o.id}:{len(o.deliveries)}"


def _one_line(text: str) -> str:
    # A line break would split the delivery into two outbox lines (the original's rule: a space).
    text = text.replace("\r", " ").replace("\n", " ")
    # Ours: other control characters (ANSI CSI, OSC 52, NUL) are written as visible escapes,
    # so neither a terminal tailing the outbox nor the channel command acts on them.
    return visible(text)


def outbox_line(key: str, at: str, o: ObligationState, *, reminder: bool) -> str:
    """``<key> <ISO> <unit|-> [REMINDER: ]<severity>[ veto] <concern> on <unit|no unit>: …``."""
    id8 = o.id[:8]
    veto = " veto" if o.blocks else ""
    question = f" — {o.question}" if o.question else ""
    text = (
        f"{o.severity}{veto} {o.concern} on {o.unit if o.unit is not None else 'no unit'}: "
        f"{o.subject}{question} "
        f"(answer with `regulator answer {id8}` or `regulator obligation resolve {id8}`)"
    )
    marker = "REMINDER: " if reminder else ""
    unit = o.unit if o.unit is not None else "-"
    return f"{key} {at} {unit} {marker}{_one_line(text)}"


def _read_outbox(outbox: Path) -> bytes:
    try:
        return read_bytes(outbox)
    except RecordNotFound:
        return b""


def _has_key(data: bytes, key: str) -> bool:
    prefix = f"{key} ".encode()
    return data.startswith(prefix) or b"\n" + prefix in data


def outbox_has_key(outbox: Path, key: str) -> bool:
    """Whether some outbox line starts with ``"<key> "``: the effect observably happened."""
    return _has_key(_read_outbox(outbox), key)


# --------------------------------------------------------------------------------------------
# Delivering


@dataclass(frozen=True, slots=True)
class Delivered:
    """One delivery made by a pass.

    ``obligation`` is the state before this delivery (what ``remind`` prints). ``line`` is the
    outbox line written, or ``None`` when the line was already there from a run that died
    before recording it, and only the ledger event was written now.
    """

    obligation: ObligationState
    reminder: bool
    key: str
    line: str | None

    @property
    def reconciled(self) -> bool:
        return self.line is None


def _snapshot(o: ObligationState) -> ObligationState:
    # The fold updates states in place when the pass's events land: keep the lists as they were.
    return o.replace(
        **{
            "deliveries": list(o.deliveries),
            "acknowledged_by": list(o.acknowledged_by),
            "history": list(o.history),
        }
    )


def _is_delivery_key(state: EffectState) -> bool:
    return state.tool == TOOL and state.key.startswith(KEY_PREFIX)


def _reconcile_locked(journal: EffectJournal, outbox: Path) -> list[EffectState]:
    # Only deliver keys: they are acted on solely under the signals lock, which the caller
    # holds, so none is mid-effect now. Another tool's pending key may be in flight elsewhere.
    data: bytes | None = None

    def verify(state: EffectState) -> bool:
        nonlocal data
        if data is None:
            data = _read_outbox(outbox)
        return _has_key(data, state.key)

    return journal.reconcile(verify, where=_is_delivery_key)


def reconcile_deliveries(
    ledger: Ledger, journal: EffectJournal, layout: Layout
) -> list[EffectState]:
    """Settle every ``intended`` deliver key: ``confirmed`` if its outbox line exists, else
    ``absent`` (which a later pass may intend again)."""
    with ledger.transaction():
        return _reconcile_locked(journal, layout.outbox)


def _deliver_one(
    txn: Transaction,
    journal: EffectJournal,
    outbox: Path,
    o: ObligationState,
    reminder: bool,
    clock: Clock,
) -> Delivered:
    key = deliver_key(o)
    snapshot = _snapshot(o)
    description = (
        f"{'remind' if reminder else 'deliver'} obligation {o.id[:8]} to the owner's outbox"
    )
    begun = journal.begin(key, TOOL, description, o.unit)
    line: str | None = None
    if begun.proceed:
        at = now_iso(clock)
        line = outbox_line(key, at, o, reminder=reminder)
        if not outbox.parent.exists():  # REGULATOR_OUTBOX may name a directory not made yet
            outbox.parent.mkdir(parents=True, exist_ok=True)
        with locked_log(outbox) as out:
            out.append([line.encode("utf-8", "backslashreplace")])
        journal.commit(key, f"delivered {at}")
    # Else the line was written by a run that died before recording it: record it, never resend.
    txn.deliver(o.id, DELIVERED_BY, CHANNEL, reminder=reminder, target=outbox.name)
    return Delivered(snapshot, reminder, key, line)


def _pass(
    ledger: Ledger,
    journal: EffectJournal,
    layout: Layout,
    clock: Clock,
    choose: Callable[[list[ObligationState]], list[tuple[ObligationState, bool]]],
) -> list[Delivered]:
    outbox = layout.outbox
    done: list[Delivered] = []
    failure: Exception | None = None
    with ledger.transaction() as txn:
        _reconcile_locked(journal, outbox)
        for o, reminder in choose(list(txn.log.obligations.values())):
            if o.consumer != "human":
                continue  # never S3 or S5: their owners are functions, not readers of the outbox
            try:
                done.append(_deliver_one(txn, journal, outbox, o, reminder, clock))
            except Exception as exc:
                # Record what already reached the outbox before giving up on the rest.
                failure = exc
                break
    if failure is not None:
        raise failure
    return done


def deliver_pending(
    ledger: Ledger,
    journal: EffectJournal | None = None,
    layout: Layout | None = None,
    clock: Clock | None = None,
) -> list[Delivered]:
    """Deliver every obligation owed to a person that was never delivered.

    Without ``journal``, ``layout`` or ``clock``, the ledger's own are used (the loop's call).
    """
    layout = layout if layout is not None else ledger.layout
    clock = clock if clock is not None else ledger.clock
    journal = journal if journal is not None else EffectJournal(layout, clock)
    return _pass(
        ledger, journal, layout, clock, lambda states: [(o, False) for o in undelivered(states)]
    )


def remind_due(
    ledger: Ledger,
    journal: EffectJournal,
    layout: Layout,
    policy: InteractionPolicy,
    clock: Clock | None = None,
) -> list[Delivered]:
    """Deliver every remindable obligation; a reminder when it was delivered before."""
    now = clock if clock is not None else ledger.clock

    def choose(states: list[ObligationState]) -> list[tuple[ObligationState, bool]]:
        return [(o, bool(o.deliveries)) for o in remindable(states, policy, now())]

    return _pass(ledger, journal, layout, now, choose)


# --------------------------------------------------------------------------------------------
# Forwarding (the watcher)


@dataclass(frozen=True, slots=True)
class Forwarded:
    forwarded: int = 0
    failed: int = 0
    cursor: int = 0
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TickReport:
    at: str
    delivered: int
    reminded: int
    forwarded: int
    failed: int
    # What the tick had to say beside the counts: a reset cursor, why a forward failed.
    notes: tuple[str, ...] = field(default=())
    # Ours: sends to people's channels (None: no person has channels).
    sent: int | None = None
    send_failed: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "at": self.at,
            "delivered": self.delivered,
            "reminded": self.reminded,
            "forwarded": self.forwarded,
            "failed": self.failed,
        }

    def summary(self) -> str:
        """``<at>  delivered D, reminded R, forwarded F[, FAILED X (cursor not advanced)]``."""
        text = (
            f"{self.at}  delivered {self.delivered}, reminded {self.reminded}, "
            f"forwarded {self.forwarded}"
        )
        if self.failed:
            text += f", FAILED {self.failed} (cursor not advanced)"
        if self.sent is not None:
            text += f"; sent {self.sent} to people's channels"
            if self.send_failed:
                text += f", {self.send_failed} FAILED (see regulator deliveries)"
        return text


def run_channel(cwd: Path) -> Runner:
    """The default runner: the command with the line as its last argument, in ``cwd``."""

    def run(command: Sequence[str], line: bytes) -> tuple[int, str]:
        try:
            proc = subprocess.run(
                [*command, line],
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                check=False,
            )
        except OSError as exc:
            return 127, f"{command[0]}: {exc.strerror or exc}"
        return proc.returncode, proc.stderr.decode("utf-8", "replace")

    return run


def _read_cursor(path: Path) -> tuple[int, str | None]:
    try:
        text = read_bytes(path).decode("utf-8", "replace").strip()
    except RecordNotFound:
        return 0, None
    if text.isdigit():
        return int(text), None
    return 0, f"{path.name} holds {text[:40]!r}, not a byte count; forwarding from the start"


def _write_cursor(path: Path, position: int) -> None:
    write_text_atomic(path, f"{position}\n")


def forward_outbox(
    layout: Layout, command: Sequence[str] | None, *, run: Runner | None = None
) -> Forwarded:
    """Hand every complete outbox line after the cursor to ``command``, one line at a time."""
    notes: list[str] = []
    cursor_path = layout.outbox_cursor
    cursor, note = _read_cursor(cursor_path)
    if note:
        notes.append(note)
    data = _read_outbox(layout.outbox)
    if cursor > len(data) or (cursor > 0 and data[cursor - 1 : cursor] != b"\n"):
        notes.append(
            f"the outbox ({len(data)} bytes) is shorter than the cursor ({cursor}) or no line "
            "ends there: it was truncated or replaced; forwarding from the start"
        )
        cursor = 0
        _write_cursor(cursor_path, 0)  # say so once, not on every tick
    runner = run if run is not None else run_channel(layout.root)
    forwarded = failed = 0
    written = position = cursor
    while (end := data.find(b"\n", position)) >= 0:
        line = data[position:end]
        if line:  # the original drops empty lines; the cursor still moves past them
            if command:
                code, stderr = runner(command, line.replace(b"\x00", b" "))
                if code != 0:
                    failed = 1
                    detail = stderr.strip().splitlines()[-1:] if stderr.strip() else []
                    notes.append(
                        f"{command[0]} exited {code} on the line at byte {position}"
                        + (f": {detail[0]}" if detail else "")
                        + "; it and every line after it are forwarded again next tick"
                    )
                    break
            forwarded += 1
        position = end + 1
        if command and line:
            # Persist after each line: a watcher killed now repeats nothing it reported sent.
            _write_cursor(cursor_path, position)
            written = position
    if not failed and position != written:
        _write_cursor(cursor_path, position)
        written = position
    return Forwarded(forwarded, failed, written, tuple(notes))


def watch_tick(
    ledger: Ledger,
    journal: EffectJournal,
    layout: Layout,
    policy: InteractionPolicy,
    clock: Clock | None = None,
    command: Sequence[str] | None = None,
    *,
    run: Runner | None = None,
    sender: Sender | None = None,
    scrub: Callable[[str], str] | None = None,
) -> TickReport:
    """One tick: deliver what is pending, remind what is due, send to people's channels,
    forward the new outbox lines.

    ``clock`` defaults to the ledger's; ``command`` None means the outbox itself is the channel.
    """
    clock = clock if clock is not None else ledger.clock
    delivered = deliver_pending(ledger, journal, layout, clock)
    reminded = remind_due(ledger, journal, layout, policy, clock)
    sent = fan_out(ledger, journal, layout, policy, clock=clock, sender=sender, scrub=scrub)
    result = forward_outbox(layout, command, run=run)
    return TickReport(
        at=now_iso(clock),
        delivered=len(delivered),
        reminded=len(reminded),
        forwarded=result.forwarded,
        failed=result.failed,
        notes=result.notes,
        sent=len(sent.sent) + len(sent.failed) if has_channels(policy) else None,
        send_failed=len(sent.failed),
    )


@dataclass
class RouteAndDeliver:
    routing: RoutingResult
    delivered: int
    # Ours: what went to people's channels (empty when nobody has channels).
    channels: FanOut = field(default_factory=FanOut)


def route_and_deliver(
    ledger: Ledger,
    definition: Definition,
    *,
    sender: Sender | None = None,
    scrub: Callable[[str], str] | None = None,
) -> RouteAndDeliver:
    """The loop's routing step: route what is unrouted, deliver what is owed a person, and
    send it to the owners' channels."""
    routing = route_messages(ledger, definition.routing)
    delivered = deliver_pending(ledger)
    policy = definition.interaction
    channels = FanOut()
    if has_channels(policy):
        journal = EffectJournal(ledger.layout, ledger.clock)
        channels = fan_out(ledger, journal, ledger.layout, policy, sender=sender, scrub=scrub)
    return RouteAndDeliver(routing, len(delivered), channels)
