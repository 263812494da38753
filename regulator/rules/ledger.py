"""The obligation ledger: every write to what the instance owes (docs/design.md#the-ledger).

Each transition is checked and appended under the regulatory log's lock: take the lock, fold
whatever other processes appended since we last looked, validate against that state, append,
release. Two people resolving the same obligation at once therefore cannot both succeed: the
second one folds the first one's resolution before it validates, and is refused with the
original's "terminal records do not reopen" text.

A ``Transaction`` groups the lines of one compound act (an answer is an ``interaction-answered``
and an ``obligation-resolved``; an escalation opens a successor and closes its predecessor), so
they land in one write or not at all. Person-made writes also add a ``provenance.ndjson`` line
per event, saying who actually typed it beside the asserted ``by``.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import orjson

from regulator.protocol.base import Record
from regulator.protocol.clock import Clock, now_iso, system_clock
from regulator.protocol.errors import Refused
from regulator.protocol.interaction import (
    InteractionAnswered,
    InteractionRequest,
    InteractionRequested,
)
from regulator.protocol.obligations import (
    MessageNoted,
    Obligation,
    ObligationAcknowledged,
    ObligationDelivered,
    ObligationEscalated,
    ObligationOpened,
    ObligationResolved,
    ObligationState,
    ObligationSuperseded,
)
from regulator.protocol.ours import Addressee, Provenance
from regulator.protocol.vocab import TERMINAL_STATUSES
from regulator.rules.authority import process_os_user
from regulator.rules.regulatory_log import RegulatoryLog
from regulator.store import Layout, locked_log


class LedgerError(Refused):
    """A transition the ledger refuses; nothing was written."""


def new_id() -> str:
    return str(uuid.uuid4())


def json_line(record: Record | dict[str, Any]) -> bytes:
    data = record.to_json_dict() if isinstance(record, Record) else record
    return orjson.dumps(data)


def definition_label(root: Path | None) -> str:
    """The definition directory a command ran under, as provenance records it."""
    return str(root) if root is not None else "shipped"


@dataclass(frozen=True)
class Actor:
    """Who is behind a person-made write, for ``provenance.ndjson``."""

    via: str  # cli | room | mcp | loop
    os_user: str = field(default_factory=process_os_user)
    host: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)
    uid: int = field(default_factory=os.getuid)
    # The definition directory (whose people were checked), or "shipped"; None: not known.
    definition: str | None = None
    # ``via: link``: the channel whose message carried the link.
    channel: str | None = None


def find_obligation(log: RegulatoryLog, ref: str) -> ObligationState:
    """By full id or unique prefix, with the original's two refusals."""
    exact = log.obligations.get(ref)
    if exact is not None:
        return exact
    matches = [o for oid, o in log.obligations.items() if oid.startswith(ref)] if ref else []
    if not matches:
        raise LedgerError(f'no obligation "{ref}"')
    if len(matches) > 1:
        raise LedgerError(f'"{ref}" matches {len(matches)} obligations; give more of the id')
    return matches[0]


def terminal_refusal(state: ObligationState) -> str:
    return (
        f"obligation {state.id} is {state.status}; terminal records do not reopen — "
        "open a successor"
    )


def write_provenance(layout: Layout, event_ids: list[str], actor: Actor, clock: Clock) -> None:
    """One ``provenance.ndjson`` line per event a person made: who actually typed it."""
    at = now_iso(clock)
    lines = [
        json_line(
            Provenance.from_json_dict(
                {
                    "eventId": event_id,
                    "via": actor.via,
                    "osUser": actor.os_user,
                    "host": actor.host,
                    "pid": actor.pid,
                    "uid": actor.uid,
                    "definition": actor.definition,
                    **({"channel": actor.channel} if actor.channel is not None else {}),
                    "at": at,
                }
            )
        )
        for event_id in event_ids
    ]
    with locked_log(layout.provenance) as out:
        out.append(lines)


def write_addressee(
    layout: Layout, obligation_id: str, person: str, by: str, clock: Clock
) -> Addressee:
    """``addressees.ndjson``: the obligation (owed to ``human``) is owed to ``person`` alone.

    Appended after the escalation that opened it, under that file's own lock, as provenance
    is: a crash between the two leaves the successor owed to every person (as before this
    file existed), never an addressee for an obligation that is not in the log.
    """
    record = Addressee(obligation_id=obligation_id, person=person, by=by, at=now_iso(clock))
    with locked_log(layout.addressees) as out:
        out.append([json_line(record)])
    return record


def read_addressees(layout: Layout) -> dict[str, str]:
    """Obligation id → the person it is owed to, from ``addressees.ndjson`` (the last line for
    an obligation wins). Lines that do not parse are skipped here; ``doctor`` lists them."""
    from regulator.store.logs import LogSpec, model_parser, read_log

    items, _ = read_log(layout, LogSpec(layout.addressees, model_parser(Addressee)))
    return {a.obligation_id: a.person for a in items}


class Transaction:
    """The lines of one act, validated against the log as it stands under the lock."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.log = ledger.log
        self.lines: list[bytes] = []
        self.events: list[Record] = []
        # Obligations opened in this transaction, not yet in the fold.
        self.opened: dict[str, ObligationState] = {}
        self.closed: set[str] = set()
        # Set by a disposition that checked the person may act as S5 (``dispositions``).
        self.s5_authorized = False

    @property
    def now(self) -> str:
        return now_iso(self.ledger.clock)

    def _add(self, event: Record) -> None:
        self.events.append(event)
        self.lines.append(json_line(event))

    def get(self, ref: str) -> ObligationState:
        if ref in self.opened:
            return self.opened[ref]
        return find_obligation(self.log, ref)

    def get_open(self, ref: str) -> ObligationState:
        state = self.get(ref)
        if state.status in TERMINAL_STATUSES:
            raise LedgerError(terminal_refusal(state))
        if state.id in self.closed:
            raise LedgerError(f"obligation {state.id} is already closed by this act")
        return state

    # -- the events ------------------------------------------------------------------------

    def open(
        self,
        *,
        subject: str,
        concern: str,
        sources: list[str],
        severity: str,
        consumer: str,
        blocks: bool,
        unit: str | None = None,
        question: str | None = None,
        opened_by: str = "S3",
    ) -> ObligationState:
        at = self.now
        obligation = Obligation.from_json_dict(
            {
                "id": new_id(),
                "subject": subject,
                "unit": unit,
                "concern": concern,
                "sources": sources,
                "severity": severity,
                "consumer": consumer,
                "blocks": blocks,
                "question": question,
                "openedAt": at,
                "openedBy": opened_by,
            }
        )
        event = ObligationOpened(id=new_id(), at=at, by=opened_by, obligation=obligation)
        self._add(event)
        state = ObligationState.from_opened(event)
        self.opened[obligation.id] = state
        return state

    def acknowledge(self, ref: str, by: str, note: str | None = None) -> ObligationState:
        state = self.get_open(ref)
        self._add(
            ObligationAcknowledged(
                id=new_id(), at=self.now, by=by, obligation_id=state.id, note=note or None
            )
        )
        return state

    def resolve(self, ref: str, by: str, disposition: str, rationale: str) -> ObligationState:
        state = self.get_open(ref)
        self._add(
            ObligationResolved.from_json_dict(
                {
                    "id": new_id(),
                    "at": self.now,
                    "by": by,
                    "obligationId": state.id,
                    "disposition": disposition,
                    "rationale": rationale,
                }
            )
        )
        self.closed.add(state.id)
        return state

    def escalate(
        self,
        ref: str,
        by: str,
        rationale: str,
        *,
        successor: str | None = None,
        to: str | None = None,
        severity: str | None = None,
        blocks: bool | None = None,
    ) -> ObligationState:
        """Close ``ref`` as escalated to ``successor`` (an open one) or to a new one for ``to``."""
        state = self.get_open(ref)
        if successor is not None:
            succ = self.get_open(successor)
        elif to is not None:
            succ = self.open(
                subject=state.subject,
                unit=state.unit,
                concern=state.concern,
                question=state.question,
                sources=[state.id, *state.sources],
                severity=severity or state.severity,
                blocks=state.blocks if blocks is None else blocks,
                consumer=to,
                opened_by="S3",
            )
        else:
            raise LedgerError(
                "an escalation needs a successor: --to a consumer or an open obligation"
            )
        return self._close_for(ObligationEscalated, state, succ, by, rationale)

    def supersede(self, ref: str, by: str, successor: str, rationale: str) -> ObligationState:
        state = self.get_open(ref)
        return self._close_for(ObligationSuperseded, state, self.get_open(successor), by, rationale)

    def _close_for(
        self,
        event: type[ObligationEscalated] | type[ObligationSuperseded],
        state: ObligationState,
        successor: ObligationState,
        by: str,
        rationale: str,
    ) -> ObligationState:
        """Close ``state`` in favour of ``successor``: the veto moves with it."""
        if state.consumer == "S5" and successor.consumer != "S5" and not self.s5_authorized:
            # Whoever decides the successor would decide what S5 is owed.
            raise LedgerError(
                f"obligation {state.id} is owed to S5; only a person who may act as S5 moves it "
                f"to {successor.consumer}"
            )
        self._add(
            event(
                id=new_id(),
                at=self.now,
                by=by,
                obligation_id=state.id,
                successor=successor.id,
                rationale=rationale,
            )
        )
        self.closed.add(state.id)
        return successor

    def note(self, message_id: str, by: str, reason: str) -> None:
        self._add(MessageNoted(id=new_id(), at=self.now, by=by, message=message_id, reason=reason))

    def deliver(
        self,
        ref: str,
        by: str,
        channel: str,
        *,
        reminder: bool = False,
        target: str | None = None,
    ) -> ObligationState:
        state = self.get_open(ref)
        self._add(
            ObligationDelivered.from_json_dict(
                {
                    "id": new_id(),
                    "at": self.now,
                    "by": by,
                    "obligationId": state.id,
                    "channel": channel,
                    "reminder": reminder,
                    "target": target,
                }
            )
        )
        return state

    def request_interaction(self, request: InteractionRequest, by: str) -> None:
        self._add(InteractionRequested(id=new_id(), at=self.now, by=by, request=request))

    def answer_interaction(
        self,
        request_id: str,
        *,
        outcome: str,
        by: str,
        channel: str,
        answer: str | None = None,
    ) -> None:
        self._add(
            InteractionAnswered.from_json_dict(
                {
                    "id": new_id(),
                    "at": self.now,
                    "by": by,
                    "requestId": request_id,
                    "outcome": outcome,
                    "answer": answer,
                    "channel": channel,
                }
            )
        )

    def append_raw(self, record: Record) -> None:
        """Append a message (a signal of the regulatory log) within this transaction."""
        self._add(record)


class Ledger:
    """Writes to one instance's regulatory log, through one folded ``RegulatoryLog``."""

    def __init__(
        self,
        layout: Layout,
        *,
        log: RegulatoryLog | None = None,
        clock: Clock = system_clock,
    ) -> None:
        self.layout = layout
        self.log = log if log is not None else RegulatoryLog(layout)
        self.clock = clock

    def refresh(self) -> RegulatoryLog:
        self.log.refresh()
        return self.log

    @contextmanager
    def transaction(self, actor: Actor | None = None) -> Iterator[Transaction]:
        """Lock, catch up, let the caller validate and add lines, append them in one write.

        If the body raises, nothing is written. With an ``actor`` (a person's act), every
        event also gets a provenance line.
        """
        with locked_log(self.log.path) as out:
            self.log.refresh()
            txn = Transaction(self)
            yield txn
            if txn.lines:
                out.append(txn.lines)
        if txn.lines and actor is not None:
            write_provenance(self.layout, [cast(Any, e).id for e in txn.events], actor, self.clock)
        self.log.refresh()

    # -- single acts, each its own transaction ---------------------------------------------

    def open_obligation(self, **fields: Any) -> ObligationState:
        with self.transaction() as txn:
            return txn.open(**fields)

    def acknowledge(
        self, ref: str, by: str, note: str | None = None, *, actor: Actor | None = None
    ) -> ObligationState:
        with self.transaction(actor) as txn:
            return txn.acknowledge(ref, by, note)

    def resolve(
        self, ref: str, by: str, disposition: str, rationale: str, *, actor: Actor | None = None
    ) -> ObligationState:
        with self.transaction(actor) as txn:
            return txn.resolve(ref, by, disposition, rationale)

    def escalate(
        self, ref: str, by: str, rationale: str, *, actor: Actor | None = None, **target: Any
    ) -> ObligationState:
        with self.transaction(actor) as txn:
            return txn.escalate(ref, by, rationale, **target)

    def supersede(self, ref: str, by: str, successor: str, rationale: str) -> ObligationState:
        with self.transaction() as txn:
            return txn.supersede(ref, by, successor, rationale)

    def note(self, message_id: str, by: str, reason: str) -> None:
        with self.transaction() as txn:
            txn.note(message_id, by, reason)

    def deliver(
        self, ref: str, by: str, channel: str, *, reminder: bool = False, target: str | None = None
    ) -> ObligationState:
        with self.transaction() as txn:
            return txn.deliver(ref, by, channel, reminder=reminder, target=target)
