"""Secrets kept off the screen: the instance's canaries and credential-shaped strings.

Whatever a record holds was written by an agent or a tool, and may carry a token it saw: every
free-text field the room (or a report) shows goes through a :class:`Redactor` first. A value is
replaced by ``«redacted»`` when it is one of the instance's canaries (``.regulator/canaries``,
values of at least 8 characters: a shorter one would blank ordinary words) or when it has the
shape of a credential: provider API keys, AWS access keys, GitHub, Slack and npm tokens, JWTs,
``Bearer`` tokens, ``NAME_TOKEN=``-style assignments, passwords in URLs and PEM private key
blocks. Text is then capped at 2000 characters.

Redaction changes nothing else: Rich markup such as ``[bold]`` stays literal text (the room
renders record text without markup), and control characters are left to :meth:`Redactor.safe`,
which escapes them after redacting.

Every pattern is compiled once; :meth:`Redactor.redact` is pure and never raises (on an
internal failure it fails closed and returns the marker alone).
"""

from __future__ import annotations

import os
import re
import stat
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from regulator.protocol.credentials import is_secret_name
from regulator.protocol.text import visible
from regulator.store import Layout, NotUnderInstance, RecordNotFound, read_text

REDACTED = "«redacted»"
MAX_CHARS = 2000
ELLIPSIS = "…"
MIN_CANARY_CHARS = 8

# Text beyond this is not scanned (nor shown: the cap is far below it), so that a pathological
# multi-megabyte field costs the same as a long one.
_SCAN_LIMIT = 64 * 1024
# A credential cut by the scan limit leaves a fragment no pattern matches: drop this much of the
# scanned text's end when the text was longer than the limit.
_SCAN_MARGIN = 1024
_CANARY_SUBSTRING_TESTS = 16


@dataclass(frozen=True, slots=True)
class _Shape:
    """One credential shape, and the literals a text must hold before the pattern is run."""

    pattern: re.Pattern[str]
    # Any of these in the text (in its lower-case copy when ``folded``) lets the pattern run:
    # a regex scan costs ~10 ns a character, a substring test a fraction of that, and almost
    # no text holds any of them.
    triggers: tuple[str, ...]
    folded: bool = False
    # A character the text must also hold (the ``=`` or ``:`` of an assignment).
    also: tuple[str, ...] = ()
    # Context shown before the marker ("Bearer «redacted»", "GITHUB_TOKEN=«redacted»").
    keep: str | None = None


_ASSIGN_WORDS = ("token", "secret", "key", "password", "passwd", "pwd", "credential")

# Applied in this order: a private key block goes first, whole, before any shape could match a
# piece of it. Lookbehinds keep a key from matching inside a longer word ("task-…" is no
# "sk-…").
_SHAPES: tuple[_Shape, ...] = (
    # PEM private keys (RSA, EC, OPENSSH, PGP …); without an END line (a block cut off),
    # everything from BEGIN on.
    _Shape(
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*)",
            re.DOTALL,
        ),
        ("PRIVATE KEY",),
    ),
    # OpenAI / Anthropic style keys (sk-…, sk-proj-…, sk-ant-…): long, holding a digit.
    _Shape(re.compile(r"(?<![A-Za-z0-9_-])sk-(?=[A-Za-z_-]*[0-9])[A-Za-z0-9_-]{20,}"), ("sk-",)),
    # Stripe secret and restricted keys.
    _Shape(
        re.compile(r"(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
        ("_live_", "_test_"),
    ),
    # AWS access key ids, long-term and temporary.
    _Shape(re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Z])"), ("AKIA", "ASIA")),
    # GitHub tokens: classic (ghp_, gho_, ghu_, ghs_, ghr_) and fine-grained.
    _Shape(
        re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{22,})"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    # Slack tokens.
    _Shape(re.compile(r"(?<![A-Za-z0-9_-])xox[abprs]-[A-Za-z0-9-]{10,}"), ("xox",)),
    # npm tokens and Google API keys.
    _Shape(re.compile(r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}"), ("npm_",)),
    _Shape(re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}"), ("AIza",)),
    # JSON web tokens: header.payload.signature, the first two base64url JSON.
    _Shape(
        re.compile(
            r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
        ),
        ("eyJ",),
    ),
    # Authorization: Bearer <token>. The token must hold a digit, so that prose ("the bearer
    # responsibility") survives.
    _Shape(
        re.compile(
            r"(?P<keep>\b[Bb][Ee][Aa][Rr][Ee][Rr]\s+)"
            r"(?=[A-Za-z0-9._~+/-]*[0-9])[A-Za-z0-9._~+/-]{8,}=*"
        ),
        ("bearer",),
        folded=True,
        keep="keep",
    ),
    # NAME_TOKEN=…, AWS_SECRET_ACCESS_KEY=…, password=…, "api_key": "…", apiKey=…: the
    # keyword is a whole segment of the name (or a camelCase word), so "monkey=3" is left.
    _Shape(
        re.compile(
            r"(?P<keep>(?:(?<![A-Za-z0-9])(?i:token|secret|key|apikey|password|passwd|pwd"
            r"|credentials?)|(?<=[a-z])(?:Token|Secret|Key|Password|Credentials?))"
            r"(?![A-Za-z0-9])[\"']?\s*(?:=|(?<=[\"']):)\s*)"
            r"(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'`,;&]+)"
        ),
        _ASSIGN_WORDS,
        folded=True,
        also=("=", ":"),
        keep="keep",
    ),
    # ENV-style NAME: value (YAML, logs), upper case only: prose "token: …" is left alone.
    _Shape(
        re.compile(
            r"(?P<keep>(?<![A-Za-z0-9])(?:TOKEN|SECRET|KEY|PASSWORD|PASSWD)(?![A-Za-z0-9])"
            r":[ \t]*)[^\s\"'`,;&]+"
        ),
        ("TOKEN:", "SECRET:", "KEY:", "PASSWORD:", "PASSWD:"),
        keep="keep",
    ),
    # scheme://user:password@host
    _Shape(
        re.compile(r"(?P<keep>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s/:@]+:)[^\s/@]+(?=@)"),
        ("://",),
        also=("@",),
        keep="keep",
    ),
)


def _keep_replacement(match: re.Match[str]) -> str:
    return match.group("keep") + REDACTED


# Every trigger of every shape, in lower case: one scan of the lower-cased text tells whether
# any shape can match at all, which for almost every text it cannot.
_ANY_TRIGGER = re.compile(
    "|".join(
        re.escape(t)
        for t in sorted({t.lower() for shape in _SHAPES for t in shape.triggers}, key=len)[::-1]
    )
)


# For telling many texts apart at once (``Redactor.suspects``): of each trigger, the piece from
# its first character that ids and timestamps never hold (hex digits, "-", ":", ".", "t", "z").
# A text holding a trigger holds that piece, and a regex whose every branch starts with a rare
# character skips over ids and timestamps at C speed, several times faster than
# ``_ANY_TRIGGER``.
_COMMON = frozenset("0123456789abcdef-.:tz ")


def _rare_piece(trigger: str) -> str:
    for at, ch in enumerate(trigger):
        if ch not in _COMMON:
            return trigger[at:]
    return trigger  # pragma: no cover - every trigger holds a rare character


_SUSPECT = re.compile(
    "|".join(
        re.escape(p)
        for p in sorted(
            {_rare_piece(t.lower()) for shape in _SHAPES for t in shape.triggers}, key=len
        )[::-1]
    )
)


def _apply_shapes(text: str) -> tuple[str, int]:
    lowered = text.lower()
    if _ANY_TRIGGER.search(lowered) is None:
        return text, 0
    folded: str | None = lowered
    removed = 0
    for shape in _SHAPES:
        if shape.folded:
            if folded is None:
                folded = text.lower()
            haystack = folded
        else:
            haystack = text
        if not any(t in haystack for t in shape.triggers):
            continue
        if shape.also and not any(c in text for c in shape.also):
            continue
        if shape.keep is None:
            text, n = shape.pattern.subn(REDACTED, text)
        else:
            text, n = shape.pattern.subn(_keep_replacement, text)
        if n:
            removed += n
            folded = None  # the text changed under its lower-case copy
    return text, removed


class Redactor:
    """Redacts one instance's canaries and every credential shape. Build once, use often."""

    __slots__ = ("_canaries", "canaries")

    def __init__(self, canaries: Iterable[str] = ()) -> None:
        values = {value.strip() for value in canaries if isinstance(value, str)}
        self.canaries: tuple[str, ...] = tuple(
            # Longest first: a canary that contains another must be matched whole.
            sorted((v for v in values if len(v) >= MIN_CANARY_CHARS), key=lambda v: (-len(v), v))
        )
        self._canaries: re.Pattern[str] | None = (
            re.compile("|".join(re.escape(v) for v in self.canaries)) if self.canaries else None
        )

    @classmethod
    def for_layout(cls, layout: Layout) -> Redactor:
        """A redactor for the instance's canaries (none when the file is missing) and the
        secrets its people's channels use (``${NAME}`` values found in the environment or a
        secrets file: docs/reaching-people.md)."""
        secrets: list[str] = []
        if _may_name_secrets(layout):
            from regulator.host.channels import instance_channel_secrets

            secrets = instance_channel_secrets(layout)
        return cls([*_read_canaries(layout), *secrets])

    def __repr__(self) -> str:
        # Never the values themselves: a repr ends up in logs and tracebacks.
        return f"Redactor({len(self.canaries)} canaries)"

    # -- text ------------------------------------------------------------------------------

    def scrub(self, text: str) -> tuple[str, bool]:
        """``(redacted text, whether a secret was removed)``. Capping alone is not removal."""
        try:
            return self._scrub(text)
        except Exception:
            # Fail closed: a text the patterns could not handle is not shown at all.
            return REDACTED, True

    def redact(self, text: str) -> str:
        """``text`` without canaries or credentials, capped at 2000 characters (with "…")."""
        return self.scrub(text)[0]

    def lines(self, text: str) -> str:
        """Each line of ``text`` redacted and capped on its own: text a command prints, made
        of record fields already ``visible``, so a cap never swallows the line break after it."""
        return "\n".join(map(self.redact, text.split("\n")))

    def safe(self, text: str, *, newlines: bool = False) -> str:
        """Redacted, then control characters escaped: ready for a terminal.

        Escaping comes last, so the result may exceed the cap by the length of the escapes.
        """
        try:
            return visible(self.redact(text), newlines=newlines)
        except Exception:
            return REDACTED

    def _scrub(self, text: str) -> tuple[str, bool]:
        if not isinstance(text, str):
            text = str(text)
        over_limit = len(text) > _SCAN_LIMIT
        if over_limit:
            text = text[:_SCAN_LIMIT]
        removed = 0
        # Nothing shorter can hold a canary or a credential worth the name.
        if len(text) >= MIN_CANARY_CHARS:
            if self._canaries is not None and (
                # A few substring tests are cheaper than one regex scan.
                len(self.canaries) > _CANARY_SUBSTRING_TESTS
                or any(c in text for c in self.canaries)
            ):
                text, removed = _cover(self._canaries, text)
            text, shapes = _apply_shapes(text)
            removed += shapes
        if over_limit:
            text = text[: len(text) - _SCAN_MARGIN]
        return _cap(text, force=over_limit), removed > 0

    def suspects(self, texts: Sequence[str]) -> set[str]:
        """Every text of ``texts`` that :meth:`scrub` might change, and maybe a few it leaves.

        Made for many texts at once (``regulator status --json`` checks hundreds of thousands):
        they are joined, and a few C-speed scans of the whole find the canaries, the pieces of
        credential shapes and the texts past the cap; only what they point at needs a scrub.
        A text ``scrub`` changes holds a canary, or a trigger of a shape in its lower-case
        copy, or is longer than the cap: each is found here.
        """
        out: set[str] = set()
        plain: Sequence[str] = texts
        joined = "\n".join(texts)
        if not joined.isascii():
            # Lower-casing may change a non-ASCII text's length: positions in the joined copy
            # would no longer point at the right text. Those are looked at one by one.
            plain = [t for t in texts if t.isascii()]
            out.update(t for t in texts if not t.isascii() and self._suspect(t))
            joined = "\n".join(plain)
        if not plain:
            return out
        if max(map(len, plain)) > MAX_CHARS:
            out.update(t for t in plain if len(t) > MAX_CHARS)
        hits = [m.start() for m in _SUSPECT.finditer(joined.lower())]
        if self._canaries is not None:
            if any("\n" in c for c in self.canaries):  # it could span two texts: one by one
                out.update(t for t in plain if self._canaries.search(t) is not None)
            else:
                hits += [m.start() for m in self._canaries.finditer(joined)]
        if hits:
            ends = list(accumulate(len(t) + 1 for t in plain))
            out.update(plain[bisect_right(ends, at)] for at in hits)
        return out

    def _suspect(self, text: str) -> bool:
        return (
            len(text) > MAX_CHARS
            or _SUSPECT.search(text.lower()) is not None
            or (self._canaries is not None and self._canaries.search(text) is not None)
        )

    # -- JSON values (records) ---------------------------------------------------------------

    def scrub_json(self, value: Any) -> tuple[Any, bool]:
        """A copy of a JSON value with every string (keys too) redacted; whether any was."""
        try:
            return self._scrub_json(value)
        except Exception:
            return REDACTED, True

    def redact_json(self, value: Any) -> Any:
        """A copy of a JSON value with every string in it (keys too) redacted and capped."""
        return self.scrub_json(value)[0]

    def _scrub_json(self, value: Any) -> tuple[Any, bool]:
        if isinstance(value, str):
            return self._scrub(value)
        if isinstance(value, dict):
            out: dict[Any, Any] = {}
            changed = False
            for key, item in value.items():
                new_key, key_changed = self._scrub(key) if isinstance(key, str) else (key, False)
                if isinstance(item, str) and item and is_secret_name(key):
                    # {"token": "…"}: the name says what the value is, whatever its shape.
                    new_item, item_changed = REDACTED, True
                else:
                    new_item, item_changed = self._scrub_json(item)
                out[new_key] = new_item
                changed = changed or key_changed or item_changed
            return out, changed
        if isinstance(value, list | tuple):
            items = [self._scrub_json(item) for item in value]
            return [item for item, _ in items], any(flag for _, flag in items)
        return value, False


def _cover(pattern: re.Pattern[str], text: str) -> tuple[str, int]:
    """``text`` with the union of every canary occurrence replaced, one marker per run.

    A plain ``subn`` would leave the tail of a canary that overlaps the one matched before it
    ("…ABCD" then "CDEF…"): each search restarts one character after the last match's start,
    so every position where a canary starts is found, with its longest canary (the pattern
    lists them longest first).
    """
    spans: list[list[int]] = []
    pos = 0
    while (match := pattern.search(text, pos)) is not None:
        start, end = match.span()
        pos = start + 1
        if spans and start <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    if not spans:
        return text, 0
    parts: list[str] = []
    at = 0
    for start, end in spans:
        parts += [text[at:start], REDACTED]
        at = end
    parts.append(text[at:])
    return "".join(parts), len(spans)


def _read_canaries(layout: Layout) -> list[str]:
    # host.instance.read_canaries, without importing it (and with it the policy loader and
    # YAML, which `obligations --json` does not otherwise need). Read through the store, so a
    # symlink or a FIFO planted as ``canaries`` is refused, never followed or blocked on.
    try:
        text = read_text(layout.canaries)
    except (RecordNotFound, NotUnderInstance):
        return []
    return [line for line in text.splitlines() if line]


def _may_name_secrets(layout: Layout) -> bool:
    """Whether the instance's interaction policy may name a channel secret: only then is it
    loaded (with the policy loader). A ``${NAME}`` needs a ``$``, or an escape (``\\u0024``,
    a YAML tag) that makes one; the shipped policy, used when the instance has none, names
    none. Anything but a regular file is left to the loader, which refuses it."""
    policies = layout.root / "regulator" / "policies"
    for suffix in (".yaml", ".yml", ".json"):
        path = policies / f"interaction{suffix}"
        try:
            # Never follow a symlink or block on a FIFO planted there.
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError:
            continue
        except OSError:
            return True
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return True
            with os.fdopen(fd, "rb", closefd=False) as f:
                data = f.read()
        except OSError:
            return True
        finally:
            os.close(fd)
        if any(mark in data for mark in (b"$", b"\\", b"!")):
            return True
    return False


def _cap(text: str, *, force: bool = False) -> str:
    if len(text) <= MAX_CHARS and not force:
        return text
    cut = min(len(text), MAX_CHARS)
    # Never end inside a marker: "«reda…" reads like a leak of something.
    start = text.rfind(REDACTED[0], max(0, cut - len(REDACTED) + 1), cut)
    if start != -1 and text.startswith(REDACTED, start) and start + len(REDACTED) > cut:
        cut = start
    return text[:cut] + ELLIPSIS


def for_layout(layout: Layout) -> Redactor:
    """The instance's redactor (:meth:`Redactor.for_layout`)."""
    return Redactor.for_layout(layout)
