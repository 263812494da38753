"""One-time answer links: what a message sent to a person's channel opens (ours).

When ``regulator serve --http`` runs, each question sent to a person's channel carries a link
``<answer url>/a/<token>`` to a page that answers it (:mod:`regulator.host.answer_page`). The
token is 256 random bits; only its SHA-256 is kept, in ``.regulator/answer-links.ndjson``
(beside the answer codes, in the same style), so whoever reads the instance's files cannot
open a page from them. A token this long needs no salt or slow hash: there is nothing to guess.

A link is bound to one obligation, one person and the channel that carried it; it works once,
and expires with the question (when the obligation is closed, or after :data:`TTL` at the
latest: each reminder carries a new one). A used, expired, closed or unknown link answers
nothing, and :class:`LinkRefused` says why and with which HTTP status.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from pathlib import Path

import msgspec

from regulator.protocol.clock import Clock, now_iso, parse_iso
from regulator.protocol.errors import Refused
from regulator.protocol.ours import ANSWER_LINKS, AnswerUsed, IssuedLink
from regulator.store import Layout, RecordNotFound, locked_log, read_bytes

TTL = timedelta(hours=24)
PATH_PREFIX = "/a/"


class LinkRefused(Refused):
    """A link that answers nothing; ``status`` is the HTTP status the page is served with."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def links_path(layout: Layout) -> Path:
    return layout.answer_links


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def url_for(base: str, token: str) -> str:
    return f"{base.rstrip('/')}{PATH_PREFIX}{token}"


#: One issued link, as its record keeps it (never the token).
Link = IssuedLink


def issue(
    layout: Layout, obligation_id: str, person: str, channel: str, key: str, clock: Clock
) -> str:
    """A new token for ``person`` to answer ``obligation_id`` from ``channel``'s message."""
    token = secrets.token_urlsafe(32)
    now = clock()
    record = IssuedLink(
        id=secrets.token_hex(8),
        obligation_id=obligation_id,
        person=person,
        channel=channel,
        key=key,
        hash=digest(token),
        at=now_iso(lambda: now),
        expires_at=now_iso(lambda: now + TTL),
    )
    with locked_log(links_path(layout)) as out:
        out.append([msgspec.json.encode(record)])
    return token


def _read(layout: Layout) -> tuple[dict[str, Link], set[str]]:
    """Issued links by hash, and the ids of those used."""
    try:
        data = read_bytes(links_path(layout))
    except RecordNotFound:
        return {}, set()
    issued, used = ANSWER_LINKS.read(data)
    return {link.hash: link for link in issued}, used


def check(layout: Layout, token: str, clock: Clock) -> Link:
    """The link ``token`` opens, or :class:`LinkRefused` (nothing is written either way).

    Whether its question is still open is the caller's to check, against the log.
    """
    issued, used = _read(layout)
    found = issued.get(digest(token)) if token else None
    if found is None:
        raise LinkRefused("this link answers nothing: regulator sent no such link", 404)
    if found.id in used:
        raise LinkRefused("this link was used already: a link works once", 410)
    try:
        expired = parse_iso(found.expires_at) <= clock()
    except ValueError:
        expired = True
    if expired:
        raise LinkRefused("this link has expired; the next reminder carries a new one", 410)
    return found


def consume(layout: Layout, link_id: str, clock: Clock) -> None:
    """Mark a link used: it answers nothing more."""
    with locked_log(links_path(layout)) as out:
        out.append([msgspec.json.encode(AnswerUsed(id=link_id, at=now_iso(clock)))])
