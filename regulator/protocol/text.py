"""Text that came from a record, made safe to show: agents write it, terminals interpret it.

A question, a subject or a note may hold ANSI CSI, OSC 8 or OSC 52 sequences (which can move
the cursor, erase a line, restyle the screen, plant a link or write the clipboard), a carriage
return that hides what came before it, or a bidi override that makes ``sh.live|lave`` read as
something else. Every byte of record text the CLI and the outbox print goes through
``visible``: such characters become literal ``\\xNN``/``\\uNNNN`` text, shown and never acted
on. ``inert_json`` does the same for JSON output, as JSON escapes.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

# Cc: C0 controls (ESC, BEL, CR, NUL…), DEL and C1 controls (CSI 0x9b, OSC 0x9d…).
# Cf: format characters: bidi embeddings, overrides and isolates (U+202A–202E, U+2066–2069,
#     U+200E/F, U+061C), zero-width space/joiners (U+200B–200D), BOM, soft hyphen, tag
#     characters (U+E0000…, invisible text). Cs: lone surrogates (cannot even be encoded).
# Cn: unassigned, so no terminal can be trusted to treat them as plain glyphs.
# Zl, Zp: line and paragraph separators, which some terminals and editors break lines on.
_UNSAFE_CATEGORIES = frozenset(("Cc", "Cf", "Cs", "Cn", "Zl", "Zp"))


def _escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def unsafe(ch: str) -> bool:
    """Whether a terminal might act on ``ch`` (or hide text with it) rather than show it."""
    return unicodedata.category(ch) in _UNSAFE_CATEGORIES


def visible(text: str, *, newlines: bool = False) -> str:
    """``text`` with every character a terminal could act on escaped; tabs (and newlines if
    asked) kept. A record's text stays on one line unless ``newlines`` is given."""
    if text.isprintable():  # the common case: nothing to escape (isprintable is stricter)
        return text
    keep = "\t\n" if newlines else "\t"
    return "".join(_escape(ch) if ch not in keep and unsafe(ch) else ch for ch in text)


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # as JSON spells a character beyond the BMP: a surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def inert_json(value: Any, *, indent: int | None = 2) -> str:
    """``value`` as JSON, readable (non-ASCII kept) but with every character ``visible`` would
    escape written as a ``\\uNNNN`` escape: the same data to a parser, inert on a terminal.

    Only string contents can hold such characters (JSON's own syntax is ASCII), so escaping
    them in the encoded text keeps it valid JSON.
    """
    return inert_json_text(json.dumps(value, indent=indent, ensure_ascii=False))


def inert_json_text(encoded: str) -> str:
    """JSON text already encoded (by orjson, say) with the same escapes as ``inert_json``."""
    # Only the distinct characters outside printable ASCII need a look, and usually none is
    # unsafe: one C-speed scan, then a substitution only of the characters that are.
    bad = {ch for ch in set(_NOT_PLAIN.findall(encoded)) if unsafe(ch)}
    if not bad:
        return encoded
    pattern = re.compile("[" + "".join(re.escape(ch) for ch in sorted(bad)) + "]")
    return pattern.sub(lambda m: _json_escape(m.group()), encoded)


_NOT_PLAIN = re.compile("[^\n\x20-\x7e]")
_NOT_PLAIN_BYTES = re.compile(b"[\x00-\x09\x0b-\x1f\x7f-\xff]+")


def inert_json_bytes(encoded: bytes) -> bytes:
    """``inert_json_text`` for UTF-8 JSON bytes, without decoding all of them."""
    # A run of bytes outside printable ASCII is whole characters: UTF-8 never splits one
    # across an ASCII byte.
    runs = set(_NOT_PLAIN_BYTES.findall(encoded))
    bad = {ch for run in runs for ch in run.decode() if ch != "\n" and unsafe(ch)}
    if not bad:
        return encoded
    pattern = re.compile(b"|".join(re.escape(ch.encode()) for ch in sorted(bad)))
    return pattern.sub(lambda m: _json_escape(m.group().decode()).encode(), encoded)
