"""Records turned into their on-disk JSON shape without pydantic's serializer.

``record.to_json_dict()`` (``model_dump(by_alias=True, exclude_none=True, mode="json")``) costs
about 12 µs for a folded obligation with its history; ``regulator status --json`` makes one per
obligation, a hundred thousand at a million lines. For each record model this module compiles,
from the model's own field declarations, a straight-line function that makes the same dict: the
fields in declaration order under their serialization aliases, ``None`` left out, nested records
turned into dicts the same way, lists copied, ``JsonValue`` copied. ``dump(record)`` gives
exactly what ``to_json_dict()`` gives (``tests/test_fast_dump_agree.py`` holds it to that for
every record type); a model this module cannot follow exactly (a serializer of its own, extra
fields kept, computed fields, a field type not listed below) is left to pydantic whole.

Shapes followed: ``str``, ``bool``, ``int``, ``float``, ``Literal``, ``JsonValue``, a nested
record, a union of records (dispatched on the value's exact class, as a tagged union is), a
union of scalars, a ``list`` of any of these, each optionally ``| None``. Validation-only
metadata (``min_length``, ``ge``, ``strict``, validators) does not change what is dumped.

A dump also lists the strings it put in the dict, for a redactor to check them all at once
without walking the dict: every ``str`` field value goes to ``strings``; a ``Literal`` value
is one of the words in :attr:`Dumper.static` (so is every key), and where the strings cannot
be listed (a ``JsonValue``, a record left to pydantic) :data:`OPAQUE` goes in instead.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass
from operator import itemgetter
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, JsonValue
from pydantic.fields import FieldInfo

from regulator.protocol.errors import Refused

#: ``(record, strings) → dict``: the record's JSON shape; the strings it holds appended.
DumpFunction = Callable[[Any, list[Any]], dict[str, Any]]

#: Put in ``strings`` where a dump holds strings it cannot list.
OPAQUE: Any = type("Opaque", (), {"__repr__": lambda self: "OPAQUE", "__slots__": ()})()

# Config keys that change nothing a dump makes. Anything else (``ser_json_*``, ``use_enum_values``,
# ``extra="allow"``, …) could: pydantic then dumps the model itself.
_UNDERSTOOD_CONFIG = frozenset(
    {
        "alias_generator",
        "defer_build",
        "populate_by_name",
        "validate_by_name",
        "validate_by_alias",
        "extra",
        "frozen",
        "title",
        "strict",
        "arbitrary_types_allowed",
    }
)

# Field metadata that only validation reads.
_VALIDATION_ONLY = (
    "MinLen",
    "MaxLen",
    "Ge",
    "Gt",
    "Le",
    "Lt",
    "Strict",
    "AfterValidator",
    "BeforeValidator",
    "PlainValidator",
    "WrapValidator",
    "_PydanticGeneralMetadata",
)


class Unsupported(Refused):
    """A model or field whose dump this module cannot make exactly as pydantic does."""


# --- shapes -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Scalar:
    """Dumped as it is: ``str`` (listed in the strings), other scalars and words (not)."""

    text: bool
    words: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Json:
    pass


@dataclass(frozen=True)
class _Model:
    models: tuple[type[BaseModel], ...]  # one, or the members of a union


@dataclass(frozen=True)
class _List:
    item: _Shape


@dataclass(frozen=True)
class _Optional:
    inner: _Shape


_Shape = _Scalar | _Json | _Model | _List | _Optional


def _check_metadata(metadata: list[Any]) -> None:
    for item in metadata:
        if isinstance(item, FieldInfo):
            _check_field(item, "Annotated")
            _check_metadata(list(item.metadata))
        elif type(item).__name__ not in _VALIDATION_ONLY:
            raise Unsupported(f"metadata {item!r}")


def _check_field(info: FieldInfo, where: str) -> None:
    if info.exclude or getattr(info, "exclude_if", None) is not None:
        raise Unsupported(f"{where}: excluded from dumps")


def _scalar_words(annotation: Any) -> _Scalar | None:
    if annotation is str:
        return _Scalar(text=True)
    if annotation in (bool, int, float):
        return _Scalar(text=False)
    if get_origin(annotation) is Literal:
        values = get_args(annotation)
        if all(type(v) in (str, bool, int) for v in values):
            return _Scalar(text=False, words=tuple(v for v in values if type(v) is str))
    return None


def _shape(annotation: Any, metadata: list[Any]) -> _Shape:
    origin = get_origin(annotation)
    if origin is Annotated:
        base, *extra = get_args(annotation)
        return _shape(base, [*metadata, *extra])
    _check_metadata(metadata)
    if origin in (Union, types.UnionType):
        args = get_args(annotation)
        rest = [a for a in args if a is not type(None)]
        optional = len(rest) != len(args)
        inner: _Shape
        if len(rest) == 1:
            inner = _shape(rest[0], [])
        else:
            members = [_shape(a, []) for a in rest]
            if all(isinstance(m, _Model) and len(m.models) == 1 for m in members):
                inner = _Model(tuple(m.models[0] for m in members))  # type: ignore[union-attr]
            elif all(isinstance(m, _Scalar) for m in members):
                scalars: list[_Scalar] = members  # type: ignore[assignment]
                inner = _Scalar(
                    text=any(s.text for s in scalars),
                    words=tuple(w for s in scalars for w in s.words),
                )
            else:
                raise Unsupported(f"union {annotation!r}")
        return _Optional(inner) if optional else inner
    if annotation is JsonValue:
        return _Json()
    scalar = _scalar_words(annotation)
    if scalar is not None:
        return scalar
    if origin is list:
        (item,) = get_args(annotation) or (Any,)
        shape = _shape(item, [])
        if isinstance(shape, _Optional):
            raise Unsupported(f"list of optional items {annotation!r}")
        return _List(shape)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _Model((annotation,))
    raise Unsupported(f"type {annotation!r}")


@dataclass(frozen=True)
class _Field:
    name: str
    key: str
    shape: _Shape


def _fields(model: type[BaseModel]) -> list[_Field]:
    config = model.model_config
    if set(config) - _UNDERSTOOD_CONFIG or config.get("extra") == "allow":
        raise Unsupported(f"{model.__name__}: config {dict(config)!r}")
    decorators = model.__pydantic_decorators__
    if decorators.field_serializers or decorators.model_serializers or decorators.computed_fields:
        raise Unsupported(f"{model.__name__}: a serializer of its own")
    if model.__pydantic_root_model__:
        raise Unsupported(f"{model.__name__}: a root model")
    out: list[_Field] = []
    for name, info in model.model_fields.items():
        _check_field(info, f"{model.__name__}.{name}")
        key = info.serialization_alias or info.alias or name
        out.append(_Field(name, key, _shape(info.annotation, list(info.metadata))))
    if not out:
        raise Unsupported(f"{model.__name__}: no fields")
    return out


# --- code generation --------------------------------------------------------------------------


def _copy_json(value: Any) -> Any:
    """A ``JsonValue`` as pydantic dumps it: new containers, the same scalars."""
    kind = type(value)
    if kind is dict:
        return {k: _copy_json(v) for k, v in value.items()}
    if kind is list:
        return [_copy_json(v) for v in value]
    return value


class _Emitter:
    def __init__(self, compiler: Compiler) -> None:
        self.compiler = compiler
        self.env: dict[str, Any] = {"_copy_json": _copy_json, "OPAQUE": OPAQUE}
        self.lines: list[str] = []
        self.static: set[str] = set()
        self.nested: list[type[BaseModel]] = []
        self._tmp = 0

    def const(self, value: object) -> str:
        name = f"_k{len(self.env)}"
        self.env[name] = value
        return name

    def temp(self) -> str:
        self._tmp += 1
        return f"t{self._tmp}"

    def value(self, shape: _Shape, var: str, texts: list[str]) -> str:
        """An expression for the dumped form of ``var``; what goes to the strings list is added
        to ``texts`` (items of a tuple display: a value, or ``*`` and the items of a list)."""
        if isinstance(shape, _Optional):
            inner = self.value(shape.inner, var, texts)
            return var if inner == var else f"(None if {var} is None else {inner})"
        if isinstance(shape, _Scalar):
            self.static.update(shape.words)
            if shape.text:
                texts.append(var)
            return var
        if isinstance(shape, _Json):
            texts.append("OPAQUE")  # strings anywhere inside, keys too: the redactor walks it
            return f"_copy_json({var})"
        if isinstance(shape, _Model):
            # Compiled first (a record inside itself fails here); called unguarded: the guard
            # of the record dumped first covers everything inside it.
            table = {m: self.compiler.dumper(m).fast for m in shape.models}
            self.nested += shape.models
            if len(shape.models) == 1:
                return f"{self.const(table[shape.models[0]])}({var}, s)"
            return f"{self.const(table)}[type({var})]({var}, s)"
        item = self.temp()
        item_texts: list[str] = []
        inner = self.value(shape.item, item, item_texts)
        if isinstance(shape.item, _Scalar) and shape.item.text:
            texts.append(f"*({var} or ())")
        elif item_texts:
            # Strings inside lists or JSON values: the redactor walks them. (A nested record
            # lists its own strings, in its own code.)
            texts.append("OPAQUE")
        return f"list({var})" if inner == item else f"[{inner} for {item} in {var}]"


def _dump_source(compiler: Compiler, model: type[BaseModel]) -> tuple[_Emitter, str]:
    fields = _fields(model)
    e = _Emitter(compiler)
    e.static.update(f.key for f in fields)
    names = [f.name for f in fields]
    variables = [f"v{i}" for i in range(len(fields))]
    texts: list[str] = []
    pairs: list[str] = []
    optional: list[tuple[str, str]] = []
    for f, var in zip(fields, variables, strict=True):
        pairs.append(f"{f.key!r}: {e.value(f.shape, var, texts)}")
        # ``exclude_none`` leaves out any field holding ``None``: an optional one, or a
        # ``JsonValue`` (whose values include ``null``).
        if isinstance(f.shape, _Optional | _Json):
            optional.append((var, f.key))
    lines = ["def dump(m, s):"]
    if callable(getattr(model, "settle", None)):
        # A model whose ``__dict__`` may hold fields not built yet (``ObligationState``).
        lines.append("    m.settle()")
    if len(fields) == 1:
        lines.append(f"    v0 = m.__dict__[{names[0]!r}]")
    else:
        lines.append(f"    {', '.join(variables)}, = {e.const(itemgetter(*names))}(m.__dict__)")
    lines.append(f"    out = {{{', '.join(pairs)}}}")
    for var, key in optional:
        lines.append(f"    if {var} is None:")
        lines.append(f"        del out[{key!r}]")
    if texts:
        lines.append(f"    s += ({', '.join(texts)},)")
    lines.append("    return out")
    return e, "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Dumper:
    """The compiled dump of one model."""

    model: type[BaseModel]
    #: ``(record, strings) → dict``; pydantic's dump of anything the declarations do not
    #: describe (a field missing, a union member of another class).
    dump: DumpFunction
    #: The same without that guard: raises instead (``KeyError``, ``TypeError`` …).
    fast: DumpFunction
    #: Every key the dicts can hold and every ``Literal`` word, the nested records' included.
    static: frozenset[str]
    #: The generated code (empty when the model is left to pydantic), for whoever debugs it.
    source: str
    #: Why the model is left to pydantic, when it is.
    refused: str | None = None


def _pydantic_dump(record: Any, strings: list[Any]) -> dict[str, Any]:
    strings.append(OPAQUE)
    out: dict[str, Any] = record.model_dump(by_alias=True, exclude_none=True, mode="json")
    return out


class Compiler:
    """Dumpers for record models, compiled on first use and kept."""

    def __init__(self) -> None:
        self._dumpers: dict[type[BaseModel], Dumper] = {}
        self._building: set[type[BaseModel]] = set()

    def dumper(self, model: type[BaseModel]) -> Dumper:
        found = self._dumpers.get(model)
        if found is not None:
            return found
        if model in self._building:
            raise Unsupported(f"{model.__name__}: a record that contains itself")
        self._building.add(model)
        try:
            emitter, source = _dump_source(self, model)
        except Unsupported as exc:
            dumper = Dumper(
                model, _pydantic_dump, _pydantic_dump, frozenset(), "", refused=str(exc)
            )
            self._dumpers[model] = dumper
            return dumper
        finally:
            self._building.discard(model)
        namespace: dict[str, Any] = {}
        exec(compile(source, f"<dump of {model.__name__}>", "exec"), emitter.env, namespace)
        fast: DumpFunction = namespace["dump"]
        fast.__doc__ = source
        static = set(emitter.static)
        for nested in emitter.nested:
            static |= self._dumpers[nested].static
        dumper = Dumper(model, _guarded(fast), fast, frozenset(static), source)
        self._dumpers[model] = dumper
        return dumper


def _guarded(fast: DumpFunction) -> DumpFunction:
    def dump(record: Any, strings: list[Any]) -> dict[str, Any]:
        try:
            return fast(record, strings)
        except (KeyError, AttributeError, TypeError):
            return _pydantic_dump(record, strings)

    return dump


#: The compiler every caller shares, so each model is compiled once per process.
COMPILER = Compiler()


def dumper_for(model: type[BaseModel]) -> Dumper:
    return COMPILER.dumper(model)


def dump(record: BaseModel, strings: list[Any] | None = None) -> dict[str, Any]:
    """``record.model_dump(by_alias=True, exclude_none=True, mode="json")``, made faster."""
    return COMPILER.dumper(type(record)).dump(record, [] if strings is None else strings)


__all__ = [
    "COMPILER",
    "OPAQUE",
    "Compiler",
    "DumpFunction",
    "Dumper",
    "Unsupported",
    "dump",
    "dumper_for",
]
