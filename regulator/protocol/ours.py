"""Records of our own: the original has no such files, so they live in files of their own.

``provenance.ndjson`` says who actually typed each person-made event (beside the asserted
``by``): the OS user from the password database and its uid, and the definition in force;
``receipts.ndjson`` that a person opened an obligation in the control room (delivery confirmed
as seen); ``addressees.ndjson`` that an obligation escalated to ``human`` is owed to one
named person, not to everyone the policy lists; ``presence/<host>-<pid>.json`` that a control
room is open for a person; ``serve.json`` that ``regulator serve`` is running (and where its
answer pages are).
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from regulator.protocol.base import Record
from regulator.protocol.evidence import NonEmptyStr

Via = Literal["cli", "room", "mcp", "loop", "link"]


class Provenance(Record):
    event_id: NonEmptyStr
    via: Via
    os_user: NonEmptyStr
    host: NonEmptyStr
    pid: int
    # Ours, later: the real uid, and the definition directory (or "shipped") whose people
    # were checked. Absent on lines written before they were recorded.
    uid: int | None = None
    definition: NonEmptyStr | None = None
    # Ours, later: for ``via: link``, the person's channel whose message carried the link.
    channel: NonEmptyStr | None = None
    at: NonEmptyStr


class Receipt(Record):
    obligation_id: NonEmptyStr
    person: NonEmptyStr
    at: NonEmptyStr
    via: Via


class Addressee(Record):
    """The successor ``obligation_id`` (owed to ``human``) is owed to ``person`` alone, as
    ``by`` said when escalating it: the original's obligation has no field for a person."""

    obligation_id: NonEmptyStr
    person: NonEmptyStr
    by: NonEmptyStr
    at: NonEmptyStr


class Presence(Record):
    person: NonEmptyStr
    host: NonEmptyStr
    # Never 0 or negative: a reader probes this pid with a signal 0, and kill(0) or kill(-1)
    # would reach a whole process group.
    pid: Annotated[int, msgspec.Meta(ge=1)]
    since: NonEmptyStr
    heartbeat_at: NonEmptyStr
    # When that process started (Linux: clock ticks after boot, field 22 of /proc/<pid>/stat),
    # so a later process given the same pid is not taken for the room. Absent where unknown.
    process_start: Annotated[int, msgspec.Meta(ge=0)] | None = None


class ServeLiveness(Record):
    """``serve.json``: a ``regulator serve`` is running, refreshed while it is.

    Read like a presence: stale after three missed heartbeats, and ignored at once on this host
    when its process is gone (or a later process has its pid), so a crashed server stops making
    anyone reachable.
    """

    host: NonEmptyStr
    pid: Annotated[int, msgspec.Meta(ge=1)]
    since: NonEmptyStr
    heartbeat_at: NonEmptyStr
    process_start: Annotated[int, msgspec.Meta(ge=0)] | None = None
    # The base of the answer pages' links (``--public-url``, else the address served); None:
    # no ``--http``, so a message carries no link and nobody is reachable through this server.
    answer_url: NonEmptyStr | None = None
