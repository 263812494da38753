"""Records of our own: the original has no such files, so they live in files of their own.

``provenance.ndjson`` says who actually typed each person-made event (beside the asserted
``by``): the OS user from the password database and its uid, and the definition in force;
``receipts.ndjson`` that a person opened an obligation in the control room (delivery confirmed
as seen); ``addressees.ndjson`` that an obligation escalated to ``human`` is owed to one
named person, not to everyone the policy lists; ``presence/<host>-<pid>.json`` that a control
room is open for a person; ``serve.json`` that ``regulator serve`` is running (and where its
answer pages are); ``answer-codes.ndjson`` and ``answer-links.ndjson`` the one-time answer codes
and links sent to people (their hashes only), and those used.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Generic, Literal, TypeVar

import msgspec

from regulator.protocol.base import Record, TypedRecord
from regulator.protocol.evidence import NonEmptyStr

if TYPE_CHECKING:
    from regulator.protocol.entry import LineDecoder

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


# --- one-time answers: answer-codes.ndjson, answer-links.ndjson ----------------------------------

Hex = Annotated[str, msgspec.Meta(pattern=r"^(?:[0-9a-f]{2})+\Z")]


class IssuedCode(TypedRecord, tag="issued"):
    """An answer code sent to ``person`` for ``obligation_id``: its salted PBKDF2 hash, never
    the code (``regulator.host.answer_codes``)."""

    id: NonEmptyStr
    obligation_id: NonEmptyStr
    person: NonEmptyStr
    key: str
    salt: Hex
    hash: Hex
    at: NonEmptyStr
    expires_at: NonEmptyStr


class IssuedLink(TypedRecord, tag="issued"):
    """An answer link sent to ``person`` on ``channel`` for ``obligation_id``: the SHA-256 of
    its token, never the token (``regulator.host.answer_links``)."""

    id: NonEmptyStr
    obligation_id: NonEmptyStr
    person: NonEmptyStr
    channel: NonEmptyStr
    key: str
    hash: Hex
    at: NonEmptyStr
    expires_at: NonEmptyStr


class AnswerUsed(TypedRecord, tag="used"):
    """The issued code or link ``id`` answered once: it authorizes nothing more."""

    id: NonEmptyStr
    at: NonEmptyStr


IssuedT = TypeVar("IssuedT", IssuedCode, IssuedLink)


class IssuedLog(Generic[IssuedT]):
    """The lines of one log of one-time answers: each ``issued`` as ``issued`` (its struct) or
    ``used``. One reader for both logs, so that codes and links are held to the same lines."""

    def __init__(self, issued: type[IssuedT]) -> None:
        self._issued: type[IssuedT] = issued
        self._lines: LineDecoder[IssuedT | AnswerUsed] | None = None

    def parse(self, raw: bytes | str) -> IssuedT | AnswerUsed:
        """One line, or ``ValueError`` saying why in one line (``issued: hash: …``)."""
        if self._lines is None:  # built on first use: the log's decoders are entry's
            from regulator.protocol.entry import LineDecoder

            self._lines = LineDecoder(self._issued | AnswerUsed)
        return self._lines.decode(raw)

    def read(self, data: bytes) -> tuple[list[IssuedT], set[str]]:
        """The issued records of a log's bytes, and the ids used. A line refused here
        authorizes nothing and is skipped (``doctor`` names it, with its line)."""
        issued: list[IssuedT] = []
        used: set[str] = set()
        for item in self._valid(data):
            if isinstance(item, AnswerUsed):
                used.add(item.id)
            else:
                issued.append(item)
        return issued, used

    def _valid(self, data: bytes) -> Iterator[IssuedT | AnswerUsed]:
        for raw in data.split(b"\n"):
            if raw.strip():
                try:
                    yield self.parse(raw)
                except ValueError:
                    continue


ANSWER_CODES: IssuedLog[IssuedCode] = IssuedLog(IssuedCode)
ANSWER_LINKS: IssuedLog[IssuedLink] = IssuedLog(IssuedLink)
