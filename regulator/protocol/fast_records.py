"""Records built without pydantic where a cheap check proves pydantic would build the same.

Validating a million log lines through pydantic costs seconds; most lines are a handful of
non-empty strings, closed vocabularies and booleans. For each record model this module
compiles, from the model's own field declarations, straight-line functions:

* ``build(obj)``: a parsed JSON object (camelCase keys) checked the way the model's strict
  validation checks it and, only when every check passes, the instance validation would have
  made: same class, same ``__dict__`` in field order, same fields set. Anything else — a key the
  record does not have, a missing one, a wrong type, a word outside a vocabulary — gives
  ``None``, and the caller validates through pydantic as before, so a refusal keeps its exact
  message.
* ``to_row(record)`` / ``from_row(row)``: the record as a positional list (a bit mask of the
  optional fields that were set, then every field's value in field order) and back, with the
  same checks: the fold snapshot's encoding. Rows hold no keys, which makes them much cheaper
  to parse than the lines they came from.

A model is compiled only if every field has one of the shapes below and the model has no
validators, no post-init hook, no private attributes and refuses unknown keys; otherwise it
has no fast functions at all and everything about it stays with pydantic. Since the checks are
derived from the models, a field added or tightened there is followed here, and a constraint
this module cannot express turns the fast path off for that model instead of being skipped.

Shapes: ``str`` (with ``min_length``), ``bool``, ``int`` (with ``ge``), ``Literal`` of strings,
``JsonValue``, a nested compiled model, a ``list`` of any of these (with ``min_length``), each
optionally ``| None``.
"""

from __future__ import annotations

import hashlib
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel, JsonValue
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from regulator.protocol.errors import Refused

#: A parsed JSON object (or a row) → the record, or ``None`` when pydantic must decide.
Builder = Callable[[Any], Any]
#: A record → its row.
Encoder = Callable[[Any], list[Any]]

# Config keys whose effect the compiled checks reproduce; any other key could change what
# validation accepts (``str_strip_whitespace``, ``strict``, …): no fast path then. The compiled
# builders read fields by alias only and leave any other key to pydantic, so validating by name
# (``populate_by_name``, ``validate_by_name``) changes nothing they accept; validating *not* by
# alias would, so ``validate_by_alias`` must stay true. Pydantic 2.11–2.13 writes both
# ``validate_by_*`` keys into the config of a model that sets ``populate_by_name``.
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
    }
)

# At most 2**10 combinations of optional keys (the widest message has 9 optional fields).
_MAX_OPTIONAL = 10


class Unsupported(Refused):
    """A model or field this compiler cannot check exactly as pydantic would."""


def _slot_setter(name: str) -> Callable[[Any, Any], None]:
    """A setter for one of the four slots every pydantic instance has.

    The slot's own descriptor, called directly, is a fifth cheaper than ``object.__setattr__``
    (which looks the descriptor up each time); that adds up over millions of records. Should
    pydantic ever keep these elsewhere, ``object.__setattr__`` it is.
    """
    descriptor = BaseModel.__dict__.get(name)
    setter = getattr(descriptor, "__set__", None)
    if setter is None or type(descriptor).__name__ not in (
        "member_descriptor",
        "getset_descriptor",
    ):

        def fallback(instance: Any, value: Any) -> None:
            object.__setattr__(instance, name, value)

        return fallback
    return setter  # type: ignore[no-any-return]


#: ``instance.__dict__ = …`` and the other three slots, without pydantic's ``__setattr__``:
#: how ``model_construct`` sets them, and how every record built here is made.
set_dict = _slot_setter("__dict__")
set_fields_set = _slot_setter("__pydantic_fields_set__")
set_extra = _slot_setter("__pydantic_extra__")
set_private = _slot_setter("__pydantic_private__")


# --- field shapes -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Str:
    min_length: int


@dataclass(frozen=True)
class _Bool:
    pass


@dataclass(frozen=True)
class _Int:
    ge: int | None


@dataclass(frozen=True)
class _Lit:
    values: tuple[str, ...]


@dataclass(frozen=True)
class _Json:
    """``JsonValue``: anything a JSON parser returns (orjson returns nothing else)."""


@dataclass(frozen=True)
class _Model:
    model: type[BaseModel]


@dataclass(frozen=True)
class _List:
    item: _Shape
    min_length: int


@dataclass(frozen=True)
class _Optional:
    inner: _Shape


_Shape = _Str | _Bool | _Int | _Lit | _Json | _Model | _List | _Optional


def _constraints(metadata: list[Any]) -> tuple[int, int | None]:
    """``(min_length, ge)`` from field metadata; anything else is a constraint we can't check."""
    min_length, ge = 0, None
    for item in metadata:
        if isinstance(item, FieldInfo):
            if not _field_is_plain(item):
                raise Unsupported(f"field options {item!r}")
            inner_min, inner_ge = _constraints(list(item.metadata))
            min_length = max(min_length, inner_min)
            ge = inner_ge if inner_ge is not None else ge
        elif isinstance(item, annotated_types.MinLen):
            min_length = max(min_length, item.min_length)
        elif isinstance(item, annotated_types.Ge) and type(item.ge) is int:
            ge = item.ge
        else:
            raise Unsupported(f"constraint {item!r}")
    return min_length, ge


def _field_is_plain(info: FieldInfo) -> bool:
    # A ``Field(min_length=…)`` inside ``Annotated``: only its metadata may carry meaning.
    return (
        info.default is PydanticUndefined
        and info.default_factory is None
        and info.alias is None
        and info.validation_alias is None
        and info.discriminator is None
    )


def _shape(annotation: Any, metadata: list[Any]) -> _Shape:
    origin = get_origin(annotation)
    if origin is Annotated:
        base, *extra = get_args(annotation)
        return _shape(base, [*metadata, *extra])
    if origin in (Union, types.UnionType):
        args = get_args(annotation)
        rest = [a for a in args if a is not type(None)]
        if len(rest) != 1 or len(args) != 2:
            raise Unsupported(f"union {annotation!r}")
        return _Optional(_shape(rest[0], metadata))
    min_length, ge = _constraints(metadata)
    if annotation is JsonValue and not min_length and ge is None:
        return _Json()
    if origin is Literal:
        values = get_args(annotation)
        if not values or not all(type(v) is str for v in values) or min_length or ge is not None:
            raise Unsupported(f"literal {annotation!r}")
        return _Lit(values)
    if origin is list:
        (item,) = get_args(annotation) or (Any,)
        if ge is not None:
            raise Unsupported(f"list {annotation!r}")
        return _List(_shape(item, []), min_length)
    if ge is not None and annotation is not int:
        raise Unsupported(f"ge on {annotation!r}")
    if annotation is str:
        return _Str(min_length)
    if min_length:
        raise Unsupported(f"min_length on {annotation!r}")
    if annotation is bool:
        return _Bool()
    if annotation is int:
        return _Int(ge)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _Model(annotation)
    raise Unsupported(f"type {annotation!r}")


@dataclass(frozen=True)
class _Field:
    name: str
    alias: str
    shape: _Shape
    required: bool
    default: Any


def _fields(model: type[BaseModel]) -> list[_Field]:
    config = model.model_config
    if (
        set(config) - _UNDERSTOOD_CONFIG
        or config.get("extra") != "forbid"
        or config.get("validate_by_alias", True) is not True
    ):
        raise Unsupported(f"{model.__name__}: config {dict(config)!r}")
    decorators = model.__pydantic_decorators__
    if (
        decorators.validators
        or decorators.field_validators
        or decorators.root_validators
        or decorators.model_validators
        or model.__pydantic_post_init__
        or model.__private_attributes__
        or model.__pydantic_root_model__
    ):
        raise Unsupported(f"{model.__name__}: validators or private state")
    out: list[_Field] = []
    for name, info in model.model_fields.items():
        alias = info.alias or name
        if info.validation_alias not in (None, alias) or info.default_factory is not None:
            raise Unsupported(f"{model.__name__}.{name}: alias or default factory")
        if info.discriminator is not None:
            raise Unsupported(f"{model.__name__}.{name}: discriminator")
        shape = _shape(info.annotation, list(info.metadata))
        required = info.is_required()
        default = None if required else info.default
        if not required and type(default) not in (type(None), str, bool, int):
            raise Unsupported(f"{model.__name__}.{name}: default {default!r}")
        out.append(_Field(name, alias, shape, required, default))
    if sum(not f.required for f in out) > _MAX_OPTIONAL:
        raise Unsupported(f"{model.__name__}: too many optional fields")
    return out


# --- code generation --------------------------------------------------------------------------


class _Emitter:
    """Writes the source of one function; the constants it names live in ``self.env``."""

    def __init__(self, compiler: Compiler, *, rows: bool) -> None:
        self.compiler = compiler
        self.rows = rows  # nested records arrive as rows rather than JSON objects
        self.env: dict[str, Any] = {
            "_new": object.__new__,
            "_sd": set_dict,
            "_sf": set_fields_set,
            "_se": set_extra,
            "_sp": set_private,
        }
        self.lines: list[str] = []
        self.nested: list[Codec] = []
        self._tmp = 0

    def const(self, value: object) -> str:
        name = f"_k{len(self.env)}"
        self.env[name] = value
        return name

    def temp(self) -> str:
        self._tmp += 1
        return f"t{self._tmp}"

    def emit(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def fail_unless(self, indent: int, test: str) -> None:
        self.emit(indent, f"if {test}:")
        self.emit(indent + 1, "return None")

    def check(self, shape: _Shape, var: str, indent: int) -> None:
        """Code that leaves ``var`` holding the value the record keeps, or returns ``None``."""
        if isinstance(shape, _Optional):
            self.emit(indent, f"if {var} is not None:")
            self.check(shape.inner, var, indent + 1)
        elif isinstance(shape, _Str):
            test = f"type({var}) is not str"
            if shape.min_length == 1:
                test += f" or not {var}"
            elif shape.min_length > 1:
                test += f" or len({var}) < {shape.min_length}"
            self.fail_unless(indent, test)
        elif isinstance(shape, _Bool):
            self.fail_unless(indent, f"type({var}) is not bool")
        elif isinstance(shape, _Int):
            # ``type(x) is int``: strict validation refuses ``true`` and ``1.0`` for an int.
            test = f"type({var}) is not int"
            if shape.ge is not None:
                test += f" or {var} < {shape.ge}"
            self.fail_unless(indent, test)
        elif isinstance(shape, _Lit):
            # Only a string equals a string key: a number, ``true`` or ``null`` raises KeyError,
            # a list or an object TypeError (the callers treat both as "no"). The table gives
            # back one shared string per word: a million lines saying "obligation-delivered"
            # then hold one copy of it.
            table = self.const({v: v for v in shape.values})
            self.emit(indent, f"{var} = {table}[{var}]")
        elif isinstance(shape, _Json):
            pass  # whatever the parser made is a JSON value
        elif isinstance(shape, _Model):
            nested = self.compiler.codec(shape.model)
            self.nested.append(nested)
            if self.rows:
                self.fail_unless(indent, f"type({var}) is not list")
                self.emit(indent, f"{var} = {self.const(nested.from_row)}({var})")
            else:
                self.fail_unless(indent, f"type({var}) is not dict")
                self.emit(indent, f"{var} = {self.const(nested.build)}({var})")
            self.fail_unless(indent, f"{var} is None")
        elif isinstance(shape, _List):
            test = f"type({var}) is not list"
            if shape.min_length:
                test += f" or len({var}) < {shape.min_length}"
            self.fail_unless(indent, test)
            item = self.temp()
            if isinstance(shape.item, _Str | _Bool | _Int | _Json):
                # Items kept as parsed: checking them is enough.
                self.emit(indent, f"for {item} in {var}:")
                self.check(shape.item, item, indent + 1)
            else:
                # Items rebuilt (shared words, nested records): a new list, as pydantic's is.
                out = self.temp()
                self.emit(indent, f"{out} = []")
                self.emit(indent, f"for {item} in {var}:")
                self.check(shape.item, item, indent + 1)
                self.emit(indent + 1, f"{out}.append({item})")
                self.emit(indent, f"{var} = {out}")
        else:  # pragma: no cover - _shape returns only the shapes above
            raise Unsupported(repr(shape))

    def encode(self, shape: _Shape, expr: str) -> str:
        """An expression turning the kept value ``expr`` into its row form."""
        if isinstance(shape, _Optional):
            inner = self.encode(shape.inner, expr)
            return expr if inner == expr else f"(None if {expr} is None else {inner})"
        if isinstance(shape, _Model):
            nested = self.compiler.codec(shape.model)
            self.nested.append(nested)
            return f"{self.const(nested.to_row)}({expr})"
        if isinstance(shape, _List):
            item = self.temp()
            inner = self.encode(shape.item, item)
            return expr if inner == item else f"[{inner} for {item} in {expr}]"
        return expr

    def construct(self, model: type[BaseModel], fields: list[_Field], values: list[str]) -> None:
        """The instance, made the way ``model_construct`` makes one, fields set by mask."""
        optional = [f for f in fields if not f.required]
        required = [f.name for f in fields if f.required]
        # One fields set per combination of optional keys present. Records are frozen, so
        # nothing adds to a record's fields set after it is made, and sharing it is invisible.
        sets = [
            {*required, *(f.name for i, f in enumerate(optional) if mask >> i & 1)}
            for mask in range(1 << len(optional))
        ]
        field_set = f"{self.const(sets)}[present]"
        if not model.model_config.get("frozen"):
            # A mutable record records later assignments in its own set: never share that one.
            field_set = f"set({field_set})"
        pairs = [f"{f.name!r}: {v}" for f, v in zip(fields, values, strict=True)]
        self._instance(model, pairs, field_set)

    def construct_into(self, into: _Into, fields: list[_Field], values: list[str]) -> None:
        """A ``into.target`` instance: the checked fields, then ``into.after``'s (a fresh
        empty list for each ``[]``), with a fields set of its own."""
        pairs = [f"{f.name!r}: {v}" for f, v in zip(fields, values, strict=True)]
        for name, value in into.after.items():
            pairs.append(f"{name!r}: []" if value == [] else f"{name!r}: {self.const(value)}")
        self._instance(into.target, pairs, f"set({self.const(into.fields_set)})")

    def _instance(self, model: type[BaseModel], pairs: list[str], field_set: str) -> None:
        """``m``, a ``model`` with ``pairs`` as its ``__dict__``, returned."""
        self.emit(1, f"m = _new({self.const(model)})")
        self.emit(1, f"_sd(m, {{{', '.join(pairs)}}})")
        self.emit(1, f"_sf(m, {field_set})")
        self.emit(1, "_se(m, None)")
        self.emit(1, "_sp(m, None)")
        self.emit(1, "return m")

    def compile(self, name: str, model: type[BaseModel]) -> tuple[Callable[..., Any], str]:
        source = "\n".join(self.lines) + "\n"
        code = compile(source, f"<{name} of {model.__name__}>", "exec")
        namespace: dict[str, Any] = {}
        exec(code, self.env, namespace)
        function: Callable[..., Any] = namespace[name]
        function.__doc__ = source  # the generated code, for whoever debugs it
        return function, source


def _build_source(compiler: Compiler, model: type[BaseModel], fields: list[_Field]) -> _Emitter:
    e = _Emitter(compiler, rows=False)
    optional_count = sum(not f.required for f in fields)
    # How many keys an input with these optional keys must hold: one more is a key no field
    # reads, which a closed record refuses.
    counts = [
        sum(f.required for f in fields) + mask.bit_count() for mask in range(1 << optional_count)
    ]
    e.emit(0, "def build(d):")
    e.emit(1, "present = 0")
    e.emit(1, "try:")
    bit = 1
    values: list[str] = []
    for index, f in enumerate(fields):
        var = f"v{index}"
        values.append(var)
        if f.required:
            e.emit(2, f"{var} = d[{f.alias!r}]")
            e.check(f.shape, var, 2)
        else:
            e.emit(2, f"if {f.alias!r} in d:")
            e.emit(3, f"{var} = d[{f.alias!r}]")
            e.emit(3, f"present |= {bit}")
            e.check(f.shape, var, 3)
            e.emit(2, "else:")
            e.emit(3, f"{var} = {e.const(f.default)}")
            bit <<= 1
    # A missing required key, or a word outside a vocabulary (a failed table look-up).
    e.emit(1, "except KeyError:")
    e.emit(2, "return None")
    e.fail_unless(1, f"len(d) != {e.const(counts)}[present]")
    e.construct(model, fields, values)
    return e


@dataclass(frozen=True)
class _Into:
    """What ``Compiler.rows_into`` makes of a row: a ``target``, with ``after`` and a copy of
    ``fields_set``."""

    target: type[BaseModel]
    after: Mapping[str, object]
    fields_set: frozenset[str]


def _from_row_source(
    compiler: Compiler,
    model: type[BaseModel],
    fields: list[_Field],
    given: tuple[str, ...] = (),
    into: _Into | None = None,
) -> _Emitter:
    """``from_row(r, *given)``: the fields named in ``given`` are not in the row but passed in,
    already right (the caller knows them: an event's tag, the obligation it sits under).
    With ``into``, what it makes is ``into.target`` (``Compiler.rows_into``)."""
    e = _Emitter(compiler, rows=True)
    values = [f"v{index}" for index in range(len(fields))]
    in_row = [v for f, v in zip(fields, values, strict=True) if f.name not in given]
    passed = [v for f, v in zip(fields, values, strict=True) if f.name in given]
    optional_count = sum(not f.required for f in fields)
    e.emit(0, f"def from_row({', '.join(['r', *passed])}):")
    e.emit(1, f"present, {', '.join(in_row)}, = r")
    e.fail_unless(1, f"type(present) is not int or not 0 <= present < {1 << optional_count}")
    e.emit(1, "try:")
    for f, var in zip(fields, values, strict=True):
        if f.name not in given:
            e.check(f.shape, var, 2)
    e.emit(2, "pass")
    e.emit(1, "except KeyError:")
    e.emit(2, "return None")
    if into is None:
        e.construct(model, fields, values)
    else:
        e.construct_into(into, fields, values)
    return e


def _to_row_source(
    compiler: Compiler, model: type[BaseModel], fields: list[_Field], given: tuple[str, ...] = ()
) -> _Emitter:
    e = _Emitter(compiler, rows=True)
    e.emit(0, "def to_row(m):")
    e.emit(1, "d = m.__dict__")
    e.emit(1, "s = m.__pydantic_fields_set__")
    e.emit(1, "present = 0")
    bit = 1
    for f in fields:
        if not f.required:
            e.emit(1, f"if {f.name!r} in s:")
            e.emit(2, f"present |= {bit}")
            bit <<= 1
    items = ", ".join(e.encode(f.shape, f"d[{f.name!r}]") for f in fields if f.name not in given)
    e.emit(1, f"return [present, {items}]")
    return e


@dataclass(frozen=True)
class GivenRows:
    """Rows of a model without some of its fields, which the decoder is given instead."""

    to_row: Encoder
    from_row: Callable[..., Any]
    source: str


@dataclass(frozen=True)
class Codec:
    """The compiled functions of one model (see the module docstring)."""

    model: type[BaseModel]
    build: Builder
    from_row: Builder
    to_row: Encoder
    source: str


class Compiler:
    """Codecs for record models, compiled on first use and kept."""

    def __init__(self) -> None:
        self._codecs: dict[type[BaseModel], Codec] = {}
        self._refused: dict[type[BaseModel], str] = {}
        self._building: set[type[BaseModel]] = set()

    @property
    def refused(self) -> Mapping[type[BaseModel], str]:
        """Models left to pydantic, and why."""
        return self._refused

    def try_codec(self, model: type[BaseModel]) -> Codec | None:
        """The model's codec, or ``None`` if it cannot have one (see :attr:`refused`)."""
        try:
            return self.codec(model)
        except Unsupported as exc:
            self._refused[model] = str(exc)
            return None

    def codec(self, model: type[BaseModel]) -> Codec:
        found = self._codecs.get(model)
        if found is not None:
            return found
        if model in self._building:
            raise Unsupported(f"{model.__name__}: a record that contains itself")
        self._building.add(model)
        try:
            fields = _fields(model)
            emitters = (
                _build_source(self, model, fields),
                _from_row_source(self, model, fields),
                _to_row_source(self, model, fields),
            )
        finally:
            self._building.discard(model)
        (build, b_src), (from_row, r_src), (to_row, e_src) = (
            emitter.compile(name, model)
            for emitter, name in zip(emitters, ("build", "from_row", "to_row"), strict=True)
        )
        # The source names the nested records' code too, so that the fingerprint of a record
        # changes when a record inside it does.
        nested = {c.model.__qualname__: c.source for e in emitters for c in e.nested}
        source = "".join([b_src, r_src, e_src, *(nested[name] for name in sorted(nested))])
        codec = Codec(model, build, from_row, to_row, source)
        self._codecs[model] = codec
        return codec

    def given_rows(self, model: type[BaseModel], given: tuple[str, ...]) -> GivenRows:
        """Row functions of ``model`` that leave ``given`` out (``from_row(r, *values)``)."""
        self.codec(model)  # the nested records' codecs, and ``Unsupported`` if there are none
        fields = _fields(model)
        names = {f.name for f in fields}
        if not set(given) <= names:
            raise Unsupported(f"{model.__name__} has no field {sorted(set(given) - names)}")
        order = tuple(f.name for f in fields if f.name in given)
        if order != given:
            raise Unsupported(f"give {model.__name__}'s fields in field order: {order}")
        from_row, r_src = _from_row_source(self, model, fields, given).compile("from_row", model)
        to_row, e_src = _to_row_source(self, model, fields, given).compile("to_row", model)
        return GivenRows(to_row, from_row, r_src + e_src)

    def rows_into(
        self,
        model: type[BaseModel],
        target: type[BaseModel],
        after: Mapping[str, object],
        fields_set: frozenset[str],
    ) -> Callable[[Any], Any]:
        """``from_row`` of ``model``'s rows that makes a ``target`` instead, the way
        ``model_construct`` would: ``model``'s fields checked as its own ``from_row`` checks
        them, then ``after``'s fields (each ``[]`` a fresh list), and a copy of ``fields_set``.

        For a record that is the first part of a larger one (an obligation, of its folded
        state): the larger one made at once, not the record and then a copy of it.
        """
        self.codec(model)  # the nested records' codecs, and ``Unsupported`` if there are none
        fields = _fields(model)
        names = [f.name for f in fields]
        target_names = list(target.model_fields)
        if target_names != [*names, *after] or target.model_config.get("frozen"):
            raise Unsupported(
                f"{target.__name__}: not {model.__name__}'s fields followed by {list(after)}"
            )
        if not all(type(v) in (type(None), str, bool, int) or v == [] for v in after.values()):
            raise Unsupported(f"{target.__name__}: a value to share that is not plain")
        into = _Into(target, dict(after), frozenset(fields_set))
        function, _ = _from_row_source(self, model, fields, into=into).compile("from_row", target)
        return function


#: The compiler every caller shares, so each model is compiled once per process.
COMPILER = Compiler()


def codecs_for(models: Mapping[str, type[BaseModel]]) -> dict[str, Codec]:
    """``tag → codec`` for each model that can have one (the others stay with pydantic)."""
    out: dict[str, Codec] = {}
    for tag, model in models.items():
        codec = COMPILER.try_codec(model)
        if codec is not None:
            out[tag] = codec
    return out


def fingerprint(codecs: Mapping[str, Codec]) -> str:
    """A digest of the generated code: it changes whenever a model's fields do."""
    digest = hashlib.sha256()
    for tag in sorted(codecs):
        digest.update(tag.encode())
        digest.update(codecs[tag].source.encode())
    return digest.hexdigest()


__all__ = [
    "COMPILER",
    "Builder",
    "Codec",
    "Compiler",
    "Encoder",
    "GivenRows",
    "Unsupported",
    "codecs_for",
    "fingerprint",
    "set_dict",
    "set_extra",
    "set_fields_set",
    "set_private",
]
