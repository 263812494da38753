"""One line of ``signals.ndjson`` (docs/design.md#the-regulatory-log), and reading/writing record
lines in general.

A line is a ``RegulatoryEntry``: a message (it has a ``kind``), an obligation/routing event or
an interaction event (they have a ``type``). The original tells them apart by the presence of
``kind``; so does this module (see ``parse_signal_line``).

The helpers below serve every NDJSON and JSON file of ``.regulator/``: one ``msgspec`` decode
per line, which parses and checks at once and strictly (a ``"3"`` is not an integer, ``true``
is not ``1``: the original's schemas refuse both). Only a line it refuses is looked at again,
to say why in one short line naming the field path, as the file spells it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from types import MappingProxyType, UnionType
from typing import (
    Annotated,
    Any,
    Generic,
    Literal,
    TypeGuard,
    TypeVar,
    Union,
    cast,
    get_args,
    get_origin,
    get_type_hints,
)

import msgspec
import orjson

from regulator.protocol.base import Record
from regulator.protocol.errors import field_path
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

R = TypeVar("R", bound=Record)
T = TypeVar("T")


# --- parsing and describing -------------------------------------------------------------------


def loads_json(raw: bytes | str) -> Any:
    """Parse one JSON document (a log line or a whole file); ``ValueError('not JSON: …')``."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from None


def _kind_of(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool) or value is None:
        return orjson.dumps(value).decode()
    return "a number"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# ``<what> - at `$.a[0].b```: msgspec's one problem, and where it is.
# A mapping's key is placed as ``- at `key` in `$.a```.
_AT = re.compile(r"^(?P<what>.*?)(?: - at (?P<key>`key` in )?`\$(?P<path>[^`]*)`)?$", re.DOTALL)
_SEGMENT = re.compile(r"\.([^.\[]+)|\[(\d+)\]")
_NAMED = re.compile(r"^Object (missing required|contains unknown) field `(?P<name>[^`]*)`$")
_INVALID = re.compile(r"^Invalid (?:enum )?value ")
_PATTERN = re.compile(r"^Expected `str` matching regex '(?P<pattern>.*)'$", re.DOTALL)


class _Missing:
    """No value at a path (``_at`` found none)."""


_MISSING = _Missing()


def _at(data: Any, path: list[int | str]) -> Any:
    node = data
    for part in path:
        fits = isinstance(node, list) if isinstance(part, int) else isinstance(node, dict)
        if not fits or part not in (range(len(node)) if isinstance(node, list) else node):
            return _MISSING
        node = node[part]
    return node


def _type_at(root: Any, data: Any, path: list[int | str]) -> Any:
    """The ``msgspec.inspect`` type of the value at ``path``; a union of structs is narrowed by
    the tag ``data`` holds there. ``None`` when the path leaves the types."""
    from msgspec import inspect

    node: Any = inspect.type_info(root)
    for depth, part in enumerate(path):
        node = _narrow(node, _at(data, path[:depth]))
        if isinstance(node, inspect.StructType) and isinstance(part, str):
            found = next((f for f in node.fields if f.encode_name == part), None)
            if found is None:
                return None
            node = found.type
        elif isinstance(node, inspect.ListType) and isinstance(part, int):
            node = node.item_type
        else:
            return None
    return node


def _narrow(node: Any, value: Any) -> Any:
    from msgspec import inspect

    while isinstance(node, inspect.UnionType):
        members = [t for t in node.types if not isinstance(t, inspect.NoneType)]
        structs = [t for t in members if isinstance(t, inspect.StructType)]
        if len(structs) > 1 and isinstance(value, dict):
            tag = value.get(structs[0].tag_field)
            node = next((t for t in structs if t.tag == tag), structs[0])
        elif len(members) == 1 or structs:
            node = structs[0] if structs else members[0]
        else:
            return node
    return node


def _allowed(root: Any, data: Any, path: list[int | str]) -> list[str] | None:
    """The words a closed vocabulary (or a union's tags) allows at ``path``, in the order the
    record declares them."""
    from msgspec import inspect

    if not path:  # ``root`` is the vocabulary itself (a field's type, converted on its own)
        return _literal_words(root) or None
    if not isinstance(path[-1], str):
        return None
    parent = _narrow(_type_at(root, data, path[:-1]), _at(data, path[:-1]))
    if not isinstance(parent, inspect.StructType):
        return None
    if parent.tag_field == path[-1]:  # a nested union's tag: the words are its members'
        union = _type_at(root, data, path[:-1])
        members = union.types if isinstance(union, inspect.UnionType) else (parent,)
        return [str(t.tag) for t in members if isinstance(t, inspect.StructType)]
    found = next((f for f in parent.fields if f.encode_name == path[-1]), None)
    if found is None:
        return None
    words = _literal_words(get_type_hints(parent.cls, include_extras=True)[found.name])
    return words or None


def _literal_words(annotation: Any) -> list[str]:
    if get_origin(annotation) is Literal:
        return [str(v) for v in get_args(annotation)]
    return [w for arg in get_args(annotation) for w in _literal_words(arg)]


def describe_refusal(exc: msgspec.MsgspecError, root: Any, data: Any) -> str:
    """msgspec's refusal of ``data`` as ``root``, in one line: ``path: why``.

    msgspec names one problem, as ``<what> - at `$.path```; the path is the file's own (its
    camelCase keys). For a closed vocabulary the allowed words are named, as for a policy.
    """
    if isinstance(exc, msgspec.DecodeError) and not isinstance(exc, msgspec.ValidationError):
        return f"not JSON: {exc}"
    path, message = _refusal(exc, root, data)
    at = field_path(path)
    return f"{at}: {message}" if at else message


def _refusal(exc: msgspec.MsgspecError, root: Any, data: Any) -> tuple[list[int | str], str]:
    """msgspec's one problem with ``data`` as ``root``: where (the file's own path) and why."""
    text = str(exc)
    match = _AT.match(text)
    what, where = (match["what"], match["path"] or "") if match else (text, "")
    path: list[int | str] = [
        name if name else int(index) for name, index in _SEGMENT.findall(where)
    ]
    named = _NAMED.match(what)
    if match is not None and match["key"]:  # a mapping's key, not one of its values
        message = f"a key: {what[0].lower()}{what[1:]}"
    elif named is not None:
        path.append(named["name"])
        if named.group(1) == "missing required":
            message = "required, and missing"
        else:
            message = "not a field of this record (the record is closed)"
    elif _INVALID.match(what):
        value = _at(data, path)
        words = _allowed(root, data, path)
        shown = _show(value) if value is not _MISSING else what.split(" ", 3)[-1]
        message = f"{shown} is not one of {', '.join(words)}" if words else f"{shown} is invalid"
    elif (pattern := _PATTERN.match(what)) is not None and (
        value := _at(data, path)
    ) is not _MISSING:
        message = f"{_show(value)} does not match {_pattern_shown(pattern['pattern'])}"
    elif what.startswith("Expected "):
        value = _at(data, path)
        message = what[0].lower() + what[1:]
        if value is not _MISSING and not what.endswith(f"got `{_json_name(value)}`"):
            message += f" (got {_show(value)})"
    else:  # a record's own check (``__post_init__``) names its field itself
        message = what
    return path, message


def _pattern_shown(quoted: str) -> str:
    """A pattern as msgspec quotes it (backslashes doubled), as it is written; the end anchor
    ``\\Z`` (which, unlike Python's ``$``, does not match before a final newline, as the
    original's JavaScript ``$`` does not) shown as ``$``."""
    pattern = quoted.replace("\\\\", "\\")
    return pattern[:-2] + "$" if pattern.endswith("\\Z") else pattern


def every_refusal(root: type, data: Any) -> list[tuple[tuple[int | str, ...], str]]:
    """Every problem of ``data`` as the struct ``root``, not only the first msgspec names: a
    file a person wrote is refused with all of them at once. Each field is converted on its
    own and a struct, list or mapping of structs within is walked in turn; a struct whose
    fields all convert is converted whole, for its own checks (``__post_init__``), whose
    message begins with the field it concerns. Each problem as (location, why)."""
    found: list[tuple[tuple[int | str, ...], str]] = []
    _walk(root, data, [], found)
    return found


def _walk(
    annotation: Any,
    value: Any,
    path: list[int | str],
    found: list[tuple[tuple[int | str, ...], str]],
) -> None:
    try:
        msgspec.convert(value, annotation, strict=True)
        return
    except msgspec.ValidationError as exc:
        first = exc
    before = len(found)
    inner = _inner(annotation)
    struct = inner if isinstance(inner, type) and issubclass(inner, msgspec.Struct) else None
    origin = get_origin(inner)
    if struct is not None and isinstance(value, dict):
        hints = get_type_hints(struct, include_extras=True)
        from msgspec import inspect

        fields = cast(inspect.StructType, inspect.type_info(struct)).fields
        names = {f.encode_name for f in fields}
        found += [
            ((*path, key), "not a field of this record (the record is closed)")
            for key in value
            if key not in names
        ]
        for f in fields:
            if f.encode_name in value:
                _walk(hints[f.name], value[f.encode_name], [*path, f.encode_name], found)
            elif f.required:
                found.append(((*path, f.encode_name), "required, and missing"))
        if len(found) == before:  # every field is right: the struct's own check refused it
            where, message = _refusal(first, annotation, value)
            field, _, why = message.partition(": ")
            if not where and field in names and why:
                where, message = [field], why
            found.append(((*path, *where), message))
        return
    if origin is list and isinstance(value, list):
        (item,) = get_args(inner)
        for index, element in enumerate(value):
            _walk(item, element, [*path, index], found)
    elif origin is dict and isinstance(value, dict):
        _, item = get_args(inner)
        for key, element in value.items():
            _walk(item, element, [*path, key], found)
    if len(found) == before:  # a leaf, or the container's own constraint (its length)
        where, message = _refusal(first, annotation, value)
        found.append(((*path, *where), message))


def _inner(annotation: Any) -> Any:
    """``annotation`` without ``Annotated`` and an optional ``None``: what a value converts to."""
    while True:
        args = get_args(annotation)
        if get_origin(annotation) is Annotated:
            annotation = args[0]
        elif get_origin(annotation) in (Union, UnionType) and type(None) in args and len(args) == 2:
            annotation = next(a for a in args if a is not type(None))
        else:
            return annotation


def _json_name(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def _tags(root: Any) -> tuple[str | None, dict[str, type[Record]]]:
    """The tag field of a tagged union (or tagged record) and its members by tag."""
    members = get_args(root) or (root,)
    tags: dict[str, type[Record]] = {}
    field: str | None = None
    for member in members:
        config = getattr(member, "__struct_config__", None)
        if config is not None and isinstance(config.tag, str):
            field = config.tag_field
            tags[config.tag] = member
    return field, tags


class LineDecoder(Generic[T]):
    """Lines (or whole files) of one record type, or of one tagged union of them: one
    ``msgspec`` decode each, and for a line it refuses, a ``ValueError`` saying why in one
    line: ``obligation-resolved: disposition: 'foo' is not one of …``, ``not JSON: …``,
    ``unknown line type 'x'``. ``noun`` names what the tag tells apart ("line type")."""

    def __init__(self, root: Any, *, noun: str = "line type") -> None:
        self.root = root
        self.noun = noun
        self._decoder: msgspec.json.Decoder[T] = msgspec.json.Decoder(root)
        self._tag_field, self._tags = _tags(root)
        # A union needs its tag; a single tagged record is read as itself whatever it says.
        self._tagged = self._tag_field is not None and len(get_args(root)) > 1

    def decode(self, raw: bytes | str, *, label: str | None = None) -> T:
        try:
            return self._decoder.decode(raw)
        except msgspec.DecodeError:
            pass
        raise ValueError(self.refusal(raw, label=label)) from None

    def refusal(self, raw: bytes | str, *, label: str | None = None) -> str:
        """Why ``raw`` is not one of these records (the decode failed: this looks again)."""
        data = loads_json(raw)
        if self._tagged:
            tag_field = cast(str, self._tag_field)
            if not isinstance(data, dict):
                return f"expected a JSON object, got {_kind_of(data)}"
            if tag_field not in data:
                return f"no '{tag_field}' field"
            tag = data[tag_field]
            if not isinstance(tag, str) or tag not in self._tags:
                return f"unknown {self.noun} {_shown_tag(tag)}"
            label = tag
        try:
            self._decoder.decode(raw)
        except msgspec.DecodeError as exc:
            text = describe_refusal(exc, self.root, data)
            return f"{label}: {text}" if label else text
        return "refused"  # decoded now: only a decoder that changed its mind gets here

    def convert(self, data: Any, *, label: str | None = None) -> T:
        """``data`` (already parsed JSON) as the record, checked as a line is."""
        try:
            value: T = msgspec.convert(data, self.root, strict=True)
            return value
        except msgspec.ValidationError as exc:
            if self._tagged:
                return self.decode(orjson.dumps(data), label=label)
            text = describe_refusal(exc, self.root, data)
            raise ValueError(f"{label}: {text}" if label else text) from None


def _shown_tag(tag: Any) -> str:
    return repr(tag) if isinstance(tag, str) else orjson.dumps(tag).decode()[:40]


@cache
def _decoder_of(model: type[Record]) -> LineDecoder[Any]:
    return LineDecoder(model)


def validate_record(model: type[R], data: Any, *, label: str | None = None) -> R:
    """``data`` (already parsed JSON) as ``model``, strictly; ``ValueError`` naming the field."""
    record: R = _decoder_of(model).convert(data, label=label)
    return record


def load_record(model: type[R], raw: bytes | str, *, label: str | None = None) -> R:
    """A JSON line or file as ``model``: ``ValueError`` with a short message if it is not one."""
    record: R = _decoder_of(model).decode(raw, label=label)
    return record


# --- writing ----------------------------------------------------------------------------------

_encode = msgspec.json.Encoder().encode


def record_to_json_line(record: Record) -> bytes:
    """Compact JSON + ``\\n``, keys in field order (a tag first), absent optionals left out."""
    return _encode(record) + b"\n"


def record_to_pretty_json(record: Record) -> bytes:
    """The original's pretty files (``JSON.stringify(x, null, 2)`` + ``\\n``): unit, contract, …"""
    return orjson.dumps(record.to_json_dict(), option=orjson.OPT_INDENT_2) + b"\n"


# --- the regulatory log -----------------------------------------------------------------------

# Typing only: a line is one of these. Reading one takes two decoders, since msgspec tells a
# union's structs apart by one tag field, and the log has two: ``kind`` and ``type``.
RegulatoryEntry = (
    AuditFinding
    | PolicyProposal
    | Constraint
    | OperationalSignal
    | CoordinationSignal
    | IntelligenceSignal
    | AlgedonicSignal
    | UncertaintySignal
    | ObligationOpened
    | ObligationAcknowledged
    | ObligationResolved
    | ObligationEscalated
    | ObligationSuperseded
    | MessageNoted
    | ObligationDelivered
    | InteractionRequested
    | InteractionAnswered
)

_MESSAGES: LineDecoder[VsmMessage] = LineDecoder(VsmMessage, noun="message kind")
_EVENTS: LineDecoder[ObligationEvent | InteractionEvent] = LineDecoder(
    ObligationEvent | InteractionEvent
)

ENTRY_MODELS: Mapping[str, type[Record]] = MappingProxyType(
    {
        cast(str, model.__struct_config__.tag): model
        for model in (*MESSAGE_MODELS, *OBLIGATION_EVENT_MODELS, *INTERACTION_EVENT_MODELS)
    }
)

_decode_message = _MESSAGES._decoder.decode
_decode_event = _EVENTS._decoder.decode


def parse_signal_line(line: bytes | str) -> RegulatoryEntry:
    """One line of ``signals.ndjson`` as its record.

    Whatever has a top-level ``kind`` is a message, anything else is told apart by its
    ``type``: since every line type is closed and only messages have a ``kind``, a line one
    decoder takes the other would refuse, so trying both is the original's rule. The one a
    line most likely is goes first (what we write starts with its tag).

    Raises ``ValueError`` with a short message: ``not JSON: …``, ``unknown line type 'x'``,
    ``obligation-resolved: disposition: 'foo' is not one of no-action, …``.
    """
    first, second = (
        (_decode_event, _decode_message)
        if line[:8] in (b'{"type":', '{"type":')
        else (_decode_message, _decode_event)
    )
    try:
        return first(line)
    except msgspec.DecodeError:
        pass
    try:
        return second(line)
    except msgspec.DecodeError:
        pass
    raise ValueError(_entry_refusal(line)) from None


def _entry_refusal(line: bytes | str) -> str:
    data = loads_json(line)
    if not isinstance(data, dict):
        return f"expected a JSON object, got {_kind_of(data)}"
    if "kind" in data:
        return _MESSAGES.refusal(line)
    if "type" in data:
        return _EVENTS.refusal(line)
    return "no 'kind' or 'type' field"


def validate_entry(data: Any) -> RegulatoryEntry:
    """An already-parsed line of the regulatory log as its record; ``ValueError`` if it is not."""
    return parse_signal_line(orjson.dumps(data))


def entry_to_json_line(entry: RegulatoryEntry) -> bytes:
    """The line written for ``entry``: compact JSON + ``\\n``."""
    return record_to_json_line(entry)


def is_message(entry: object) -> TypeGuard[VsmMessage]:
    return isinstance(entry, MESSAGE_MODELS)


def is_obligation_event(entry: object) -> TypeGuard[ObligationEvent]:
    """An obligation/routing event (``message-noted`` included, as in the original)."""
    return isinstance(entry, OBLIGATION_EVENT_MODELS)


def is_interaction_event(entry: object) -> TypeGuard[InteractionEvent]:
    return isinstance(entry, INTERACTION_EVENT_MODELS)
