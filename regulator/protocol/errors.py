"""Turning a pydantic ValidationError into the one-line problems a person can act on.

Every problem names the field path the way the file spells it (``rules[2].minSeverity``) and,
for a closed vocabulary, the values that are allowed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'")


def field_path(loc: Sequence[int | str]) -> str:
    """``('rules', 2, 'minSeverity')`` → ``rules[2].minSeverity``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def describe_error(error: ErrorDetails) -> str:
    """One error as ``path: message`` (no path for a problem with the whole record)."""
    kind = error["type"]
    ctx = error.get("ctx") or {}
    # Tagged unions add the tag to the location ("kind", "audit-finding", ...): drop the
    # tag segments pydantic inserts so the path is the file's own.
    loc = [p for p in error["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
    if kind == "literal_error":
        allowed = ", ".join(_QUOTED.findall(str(ctx.get("expected", ""))))
        message = f"{_show(error['input'])} is not one of {allowed}"
    elif kind == "missing":
        message = "required, and missing"
    elif kind == "extra_forbidden":
        message = "not a field of this record (the record is closed)"
    elif kind == "string_pattern_mismatch":
        message = f"{_show(error['input'])} does not match {ctx.get('pattern')}"
    else:
        text = error["msg"]
        message = text[0].lower() + text[1:] if text else kind
        if kind not in {"value_error", "assertion_error"} and "input" in error:
            message += f" (got {_show(error['input'])})"
        message = message.removeprefix("value error, ")
    path = field_path(loc)
    return f"{path}: {message}" if path else message


def describe_validation_error(exc: ValidationError) -> list[tuple[tuple[int | str, ...], str]]:
    """Every error of ``exc`` as (location, ``path: message``), in pydantic's order."""
    return [(tuple(err["loc"]), describe_error(err)) for err in exc.errors()]
