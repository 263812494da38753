"""Records of our own: the original has no such files, so they live in files of their own.

``provenance.ndjson`` says who actually typed each person-made event (beside the asserted
``by``): the OS user from the password database and its uid, and the definition in force;
``receipts.ndjson`` that a person opened an obligation in the control room (delivery confirmed
as seen); ``presence/<host>-<pid>.json`` that a control room is open for a person.
"""

from __future__ import annotations

from typing import Literal

from regulator.protocol.base import Record
from regulator.protocol.evidence import NonEmptyStr

Via = Literal["cli", "room", "mcp", "loop"]


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
    at: NonEmptyStr


class Receipt(Record):
    obligation_id: NonEmptyStr
    person: NonEmptyStr
    at: NonEmptyStr
    via: Via


class Presence(Record):
    person: NonEmptyStr
    host: NonEmptyStr
    pid: int
    since: NonEmptyStr
    heartbeat_at: NonEmptyStr
