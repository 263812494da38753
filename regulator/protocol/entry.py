"""One line of ``signals.ndjson`` (upstream-core §2), and reading/writing record lines in general.

A line is a ``RegulatoryEntry``: a message (it has a ``kind``), an obligation/routing event or
an interaction event (they have a ``type``). The original tells them apart by the presence of
``kind``; the union's discriminator does the same.

The helpers below serve every NDJSON and JSON file of ``.regulator/``: parse with orjson,
validate strictly (a ``"3"`` is not an integer, ``true`` is not ``1``: the original's schemas
refuse both), and turn a refusal into one short line that names the field path.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Any, TypeGuard, TypeVar

import orjson
from pydantic import BaseModel, Discriminator, Tag, TypeAdapter, ValidationError
from pydantic_core import ErrorDetails

from regulator.protocol.base import DEFERRED, Record
from regulator.protocol.errors import describe_error
from regulator.protocol.interaction import (
    INTERACTION_EVENT_MODELS,
    InteractionAnswered,
    InteractionEvent,
    InteractionRequested,
)
from regulator.protocol.messages import (
    MESSAGE_MODELS,
    AlgedonicSignal,
    AuditFinding,
    Constraint,
    CoordinationSignal,
    IntelligenceSignal,
    OperationalSignal,
    PolicyProposal,
    UncertaintySignal,
    VsmMessage,
)
from regulator.protocol.obligations import (
    OBLIGATION_EVENT_MODELS,
    MessageNoted,
    ObligationAcknowledged,
    ObligationDelivered,
    ObligationEscalated,
    ObligationEvent,
    ObligationOpened,
    ObligationResolved,
    ObligationSuperseded,
)

R = TypeVar("R", bound=BaseModel)
T = TypeVar("T")

# How many problems of one record a message spells out before it just counts the rest.
_MAX_PROBLEMS = 3


# --- parsing and describing -------------------------------------------------------------------


def loads_json(raw: bytes | str) -> Any:
    """Parse one JSON document (a log line or a whole file); ``ValueError('not JSON: …')``."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from None


def _file_loc(loc: tuple[int | str, ...], data: Any) -> tuple[int | str, ...]:
    """Drop the union tags pydantic inserts into an error location, keeping the file's path.

    A discriminated union adds its tag (``"obligation-resolved"``) as a location segment. Walk
    the input along the location: a segment that is not a key there but equals the object's
    ``kind`` or ``type`` is such a tag (at most one per object: a field can share its name).
    """
    out: list[int | str] = []
    node: Any = data
    tag_skipped = False
    for part in loc:
        if isinstance(node, dict):
            tag = node.get("kind", node.get("type")) if not tag_skipped else None
            if isinstance(part, str) and part == tag:
                tag_skipped = True
                continue
            if part in node:
                out.append(part)
                node, tag_skipped = node[part], False
                continue
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            out.append(part)
            node, tag_skipped = node[part], False
            continue
        out.append(part)
        node, tag_skipped = None, False
    return tuple(out)


def describe_problems(exc: ValidationError, data: Any) -> list[str]:
    """Every error of ``exc`` as ``path: message``, with paths as the file spells them."""
    problems: list[str] = []
    for error in exc.errors():
        cleaned: ErrorDetails = {**error, "loc": _file_loc(tuple(error["loc"]), data)}
        problems.append(describe_error(_as_field_error(cleaned)))
    return problems


def _as_field_error(error: ErrorDetails) -> ErrorDetails:
    """A nested union's bad or missing tag, told as the tag field's own error.

    ``check.kind: 'lint' is not one of export-signature, inherited-tests`` rather than
    pydantic's sentence about tags and discriminators.
    """
    ctx = error.get("ctx") or {}
    key = str(ctx.get("discriminator", "")).strip("'")
    if not key or error["type"] not in ("union_tag_invalid", "union_tag_not_found"):
        return error
    loc = (*error["loc"], key)
    if error["type"] == "union_tag_not_found":
        return {**error, "type": "missing", "loc": loc}
    given = error["input"].get(key) if isinstance(error["input"], dict) else ctx.get("tag")
    expected = {"expected": ctx.get("expected_tags", "")}
    return {**error, "type": "literal_error", "loc": loc, "input": given, "ctx": expected}


def summarize_problems(problems: list[str]) -> str:
    """At most a few problems, ``; ``-joined, then how many more there were."""
    shown = "; ".join(problems[:_MAX_PROBLEMS])
    rest = len(problems) - _MAX_PROBLEMS
    return f"{shown} (+{rest} more)" if rest > 0 else shown


def _refusal(exc: ValidationError, data: Any, label: str | None) -> ValueError:
    text = summarize_problems(describe_problems(exc, data))
    return ValueError(f"{label}: {text}" if label else text)


def validate_record(model: type[R], data: Any, *, label: str | None = None) -> R:
    """``data`` (already parsed JSON) as ``model``, strictly; ``ValueError`` naming the field."""
    try:
        return model.model_validate(data, strict=True)
    except ValidationError as exc:
        raise _refusal(exc, data, label) from None


def load_record(model: type[R], raw: bytes | str, *, label: str | None = None) -> R:
    """A JSON line or file as ``model``: ``ValueError`` with a short message if it is not one."""
    return validate_record(model, loads_json(raw), label=label)


def _kind_of(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool) or value is None:
        return orjson.dumps(value).decode()
    return "a number"


def validate_tagged(
    adapter: TypeAdapter[T],
    data: Any,
    tags: Mapping[str, type[BaseModel]],
    tag_keys: tuple[tuple[str, str], ...],
) -> T:
    """``data`` as one member of a tagged union, with a plain message for an unknown tag.

    ``tag_keys`` is ``(key, what the key names)`` in the order the keys are looked for: the
    first key present decides, as in the original.
    """
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {_kind_of(data)}")
    found = next(((key, noun) for key, noun in tag_keys if key in data), None)
    if found is None:
        names = " or ".join(f"'{key}'" for key, _ in tag_keys)
        raise ValueError(f"no {names} field")
    key, noun = found
    tag = data[key]
    if not isinstance(tag, str) or tag not in tags:
        shown = repr(tag) if isinstance(tag, str) else orjson.dumps(tag).decode()[:40]
        raise ValueError(f"unknown {noun} {shown}")
    try:
        return adapter.validate_python(data, strict=True)
    except ValidationError as exc:
        raise _refusal(exc, data, tag) from None


# --- writing ----------------------------------------------------------------------------------


def record_to_json_line(record: Record) -> bytes:
    """Compact JSON + ``\\n``, keys in field order, absent optionals left out (as the original)."""
    return orjson.dumps(record.to_json_dict()) + b"\n"


def record_to_pretty_json(record: Record) -> bytes:
    """The original's pretty files (``JSON.stringify(x, null, 2)`` + ``\\n``): unit, contract, …"""
    return orjson.dumps(record.to_json_dict(), option=orjson.OPT_INDENT_2) + b"\n"


# --- the regulatory log -----------------------------------------------------------------------


def _entry_tag(value: Any) -> str | None:
    # A message is whatever has a ``kind``; everything else is told apart by ``type``.
    if isinstance(value, dict):
        tag = value["kind"] if "kind" in value else value.get("type")
    else:
        tag = getattr(value, "kind", None) or getattr(value, "type", None)
    return tag if isinstance(tag, str) else None


def _tag_of(model: type[BaseModel]) -> str:
    field = model.model_fields.get("kind") or model.model_fields["type"]
    tag = field.default
    assert isinstance(tag, str)
    return tag


# The same union three ways: a type for annotations, a map for look-ups, an adapter to validate.
RegulatoryEntry = Annotated[
    Annotated[AuditFinding, Tag("audit-finding")]
    | Annotated[PolicyProposal, Tag("policy-proposal")]
    | Annotated[Constraint, Tag("constraint")]
    | Annotated[OperationalSignal, Tag("operational-signal")]
    | Annotated[CoordinationSignal, Tag("coordination-signal")]
    | Annotated[IntelligenceSignal, Tag("intelligence-signal")]
    | Annotated[AlgedonicSignal, Tag("algedonic-signal")]
    | Annotated[UncertaintySignal, Tag("uncertainty-signal")]
    | Annotated[ObligationOpened, Tag("obligation-opened")]
    | Annotated[ObligationAcknowledged, Tag("obligation-acknowledged")]
    | Annotated[ObligationResolved, Tag("obligation-resolved")]
    | Annotated[ObligationEscalated, Tag("obligation-escalated")]
    | Annotated[ObligationSuperseded, Tag("obligation-superseded")]
    | Annotated[MessageNoted, Tag("message-noted")]
    | Annotated[ObligationDelivered, Tag("obligation-delivered")]
    | Annotated[InteractionRequested, Tag("interaction-requested")]
    | Annotated[InteractionAnswered, Tag("interaction-answered")],
    Discriminator(_entry_tag),
]

ENTRY_MODELS: Mapping[str, type[Record]] = MappingProxyType(
    {
        _tag_of(model): model
        for model in (*MESSAGE_MODELS, *OBLIGATION_EVENT_MODELS, *INTERACTION_EVENT_MODELS)
    }
)

REGULATORY_ENTRY_ADAPTER: TypeAdapter[RegulatoryEntry] = TypeAdapter(
    RegulatoryEntry, config=DEFERRED
)

_ENTRY_TAG_KEYS = (("kind", "message kind"), ("type", "line type"))


def validate_entry(data: Any) -> RegulatoryEntry:
    """An already-parsed line of the regulatory log as its record; ``ValueError`` if it is not."""
    return validate_tagged(REGULATORY_ENTRY_ADAPTER, data, ENTRY_MODELS, _ENTRY_TAG_KEYS)


def parse_signal_line(line: bytes | str) -> RegulatoryEntry:
    """One line of ``signals.ndjson`` as its record.

    Raises ``ValueError`` with a short message: ``not JSON: …``, ``unknown line type 'x'``,
    ``obligation-resolved: disposition: 'foo' is not one of no-action, …``.
    """
    return validate_entry(loads_json(line))


def entry_to_json_line(entry: RegulatoryEntry) -> bytes:
    """The line the original would write for ``entry``: compact JSON + ``\\n``."""
    return record_to_json_line(entry)


def is_message(entry: object) -> TypeGuard[VsmMessage]:
    return isinstance(entry, MESSAGE_MODELS)


def is_obligation_event(entry: object) -> TypeGuard[ObligationEvent]:
    """An obligation/routing event (``message-noted`` included, as in the original)."""
    return isinstance(entry, OBLIGATION_EVENT_MODELS)


def is_interaction_event(entry: object) -> TypeGuard[InteractionEvent]:
    return isinstance(entry, INTERACTION_EVENT_MODELS)
