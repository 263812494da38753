"""One-time answer codes: what a message sent to a person's channel carries (ours).

A question delivered to a channel carries ``regulator answer <id8> --by <person> --code
XXXX-XXXX``. The code is bound to one obligation and one person, works once, expires after
:data:`TTL`, and is stored only as a salted PBKDF2 hash in ``.regulator/answer-codes.ndjson``:
whoever reads the instance's files cannot recover a code from them.

A code is checked *in addition to* ``--by`` and the interaction policy, never in place of
them: it proves that the person answering holds the message sent to that person, so an answer
typed on a shared account can be told to come from the message's reader. A reply to the
message itself (an email reply, a Slack thread) is never read: a sender address or a chat name
can be forged, a code typed into ``regulator answer`` on the instance's host cannot be
guessed.

A wrong, used or expired code is refused and nothing is written (a refusal changes no file).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta
from pathlib import Path

import msgspec

from regulator.protocol.clock import Clock, now_iso, parse_iso
from regulator.protocol.errors import Refused
from regulator.protocol.ours import ANSWER_CODES, AnswerUsed, IssuedCode
from regulator.store import Layout, RecordNotFound, locked_log, read_bytes

TTL = timedelta(hours=24)
# No 0/O, 1/I/L or U: a code read off a phone is typed without guessing which it was.
ALPHABET = "23456789ABCDEFGHJKMNPQRSTVWXYZ"
LENGTH = 8  # 30**8 ≈ 6.6e11 codes
ITERATIONS = 60_000


class CodeRefused(Refused):
    """A code that does not authorize this answer; nothing was written."""


def codes_path(layout: Layout) -> Path:
    return layout.answer_codes


def normalize(code: str) -> str:
    # Upper-case in ASCII only: str.upper() turns a long s into S and "ß" into "SS", and a code
    # matches what was sent, letter for letter, as an answer-word does.
    return "".join(ch.upper() if ch.isascii() else ch for ch in code if ch not in "- \t")


def _hash(code: str, salt: bytes) -> str:
    return hashlib.pbkdf2_hmac("sha256", normalize(code).encode(), salt, ITERATIONS).hex()


def new_code() -> str:
    raw = "".join(secrets.choice(ALPHABET) for _ in range(LENGTH))
    return f"{raw[:4]}-{raw[4:]}"


def issue(layout: Layout, obligation_id: str, person: str, key: str, clock: Clock) -> str:
    """A new code for ``person`` to answer ``obligation_id``; only its hash is kept."""
    code = new_code()
    salt = secrets.token_bytes(16)
    now = clock()
    record = IssuedCode(
        id=secrets.token_hex(8),
        obligation_id=obligation_id,
        person=person,
        key=key,
        salt=salt.hex(),
        hash=_hash(code, salt),
        at=now_iso(lambda: now),
        expires_at=now_iso(lambda: now + TTL),
    )
    with locked_log(codes_path(layout)) as out:
        out.append([msgspec.json.encode(record)])
    return code


def _read(layout: Layout) -> tuple[list[IssuedCode], set[str]]:
    try:
        data = read_bytes(codes_path(layout))
    except RecordNotFound:
        return [], set()
    return ANSWER_CODES.read(data)


def check(layout: Layout, obligation_id: str, person: str, code: str, clock: Clock) -> str:
    """The id of the issued code ``code`` matches, or :class:`CodeRefused` (nothing written)."""
    issued, used = _read(layout)
    mine = [i for i in issued if i.obligation_id == obligation_id and i.person == person]
    if not mine:
        raise CodeRefused(f"no answer code was sent to {person} for obligation {obligation_id[:8]}")
    now = clock()
    for item in mine:
        if not hmac.compare_digest(_hash(code, bytes.fromhex(item.salt)), item.hash):
            continue
        if item.id in used:
            raise CodeRefused("this answer code was used already: a code works once")
        try:
            expired = parse_iso(item.expires_at) <= now
        except ValueError:
            expired = True
        if expired:
            raise CodeRefused("this answer code has expired; the next reminder carries a new one")
        return item.id
    raise CodeRefused(
        f"that is not the answer code sent to {person} for obligation {obligation_id[:8]}"
    )


def consume(layout: Layout, code_id: str, clock: Clock) -> None:
    """Mark an issued code used: it authorizes nothing more."""
    with locked_log(codes_path(layout)) as out:
        out.append([msgspec.json.encode(AnswerUsed(id=code_id, at=now_iso(clock)))])
