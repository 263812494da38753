"""The three kinds of error regulator reports, and pydantic's errors as one-line problems.

Every exception regulator raises derives from exactly one of ``Refused``, ``CorruptState`` and
``HostFailure``, and each root means what a caller does next: a refusal asks differently, corrupt
state mends a file, a host failure tries again later or elsewhere. ``kind_of`` names the root; the
CLI maps it to its exit status (``regulator.cli.errors.EXIT_STATUS``), the MCP server to the
error's kind in its result, and the room to a notification's severity
(``tui.errors.SEVERITY``): one place each, so a caller never tells them apart by the message.
This module sits at the bottom of the layers and imports nothing heavy (pydantic only for
types), so that ``regulator --help`` can know the roots without building a model.

Every pydantic problem names the field path the way the file spells it
(``rules[2].minSeverity``) and, for a closed vocabulary, the values that are allowed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

if TYPE_CHECKING:
    from pathlib import Path

    from pydantic import ValidationError
    from pydantic_core import ErrorDetails


#: The three roots by name, as the MCP server and ``regulator tool`` report them.
ErrorKind = Literal["refused", "corruptState", "hostFailure"]


class RegulatorError(Exception):
    """Whatever regulator reports instead of doing what was asked: its ``str`` is the whole
    message, one line per problem, naming the file, field or argument concerned. Never raised
    itself: every error is one of the three roots below."""

    #: Which root the error is (set by each root).
    kind: ClassVar[ErrorKind]
    #: The file concerned, when the error knows it (every error of the store does).
    path: Path | None = None


class Refused(RegulatorError):
    """A person or an agent may not do this, or asked for it wrongly (authority, an answer
    that says nothing, a transition the records do not allow, a bad argument). Nothing was
    written; asking differently may succeed."""

    kind: ClassVar[ErrorKind] = "refused"


class CorruptState(RegulatorError):
    """A record, a log or a definition file that does not read as what it should be. The
    message names the file; what needs fixing is the file, not the request."""

    kind: ClassVar[ErrorKind] = "corruptState"


class HostFailure(RegulatorError):
    """The machine did not do it: git, a process, a worktree, a lease another unit holds, the
    file system. Nothing about the request or the records is wrong; later, or elsewhere, may
    succeed."""

    kind: ClassVar[ErrorKind] = "hostFailure"


def kind_of(error: RegulatorError) -> ErrorKind:
    """Which of the three roots ``error`` is."""
    return error.kind


def error_json(error: RegulatorError) -> dict[str, str]:
    """What an agent reads for ``error`` as JSON: ``{"refused": "…"}``, ``{"corruptState": "…"}``
    or ``{"hostFailure": "…"}`` (``regulator tool``'s output, the MCP server's structured
    result), so it can tell "not like this" from "not now" without reading the words."""
    return {kind_of(error): message_of(error)}


def message_of(error: RegulatorError) -> str:
    """What a person reads for ``error``: its message, and the file concerned, when the message
    itself does not name it (a parser's words rarely do)."""
    message = str(error)
    path = error.path
    if path is not None and path.name not in message:
        return f"{path}: {message}"
    return message


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
