"""Text that came from a record, made safe to show: agents write it, terminals interpret it.

A question, a subject or a note may hold ANSI CSI or OSC 52 sequences (which can move the
cursor, restyle the screen or write the clipboard). Everything the CLI and the outbox print
goes through ``visible``: control characters become literal ``\\xNN`` text, so they are shown
and never acted on.
"""

from __future__ import annotations

import unicodedata


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, *, newlines: bool = False) -> str:
    """``text`` with every control character (tabs, and newlines if asked, kept) escaped."""
    if text.isprintable():
        return text
    keep = "\t\n" if newlines else "\t"
    return "".join(
        ch
        if ch in keep or unicodedata.category(ch) not in ("Cc", "Cf", "Zl", "Zp")
        else _escape(ch)
        for ch in text
    )
