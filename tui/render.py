"""Record text on screen: plain, redacted, and never interpreted.

Everything an agent wrote (a subject, a question, a rationale) becomes a ``rich.text.Text``
built from the string — never markup — after the instance's canaries and credential-shaped
strings are redacted and control characters are made visible.
"""

from __future__ import annotations

from rich.text import Text

from regulator.views.redaction import Redactor

_PLAIN = Redactor([])


def plain(text: str | None, redactor: Redactor | None = None, style: str = "") -> Text:
    if not text:
        return Text("", style=style)
    safe = (redactor or _PLAIN).safe(text, newlines=True)
    return Text(safe, style=style)


def one_line(text: str | None, redactor: Redactor | None = None) -> str:
    if not text:
        return ""
    safe = (redactor or _PLAIN).safe(text)
    return " ".join(safe.split())
