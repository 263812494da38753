"""The fast record builder and pydantic agree on every line type, at every field's edge.

The perturbations are derived here, independently of ``regulator.protocol.fast_records``, from the
pydantic models' own field declarations: each bool given ``0`` and ``1``, each int just below
its minimum, each string just too short, each list one item short, each word just outside its
vocabulary. A field added to a model is covered without touching this file.

Agreement means: where pydantic (strict, as the log validates) refuses a line, the fast builder
refuses it too (``None``, and the log then asks pydantic); where pydantic accepts it, the fast
builder either refuses it or builds exactly the record pydantic builds. The same holds for the
snapshot's rows (``from_row``).
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, JsonValue
from pydantic.fields import FieldInfo

from regulator.protocol.entry import ENTRY_MODELS, validate_entry
from regulator.protocol.fast_records import Codec, codecs_for

CODECS = codecs_for(ENTRY_MODELS)


# --- what a field is, read from the model ---------------------------------------------------


@dataclass(frozen=True)
class Kind:
    base: str  # str | bool | int | literal | json | model | list
    optional: bool = False
    min_length: int = 0
    ge: int | None = None
    values: tuple[str, ...] = ()
    model: type[BaseModel] | None = None
    item: Kind | None = None


def _limits(metadata: list[Any]) -> tuple[int, int | None]:
    min_length, ge = 0, None
    for item in metadata:
        if isinstance(item, FieldInfo):
            inner = _limits(list(item.metadata))
            min_length, ge = max(min_length, inner[0]), inner[1] if inner[1] is not None else ge
        elif isinstance(item, annotated_types.MinLen):
            min_length = max(min_length, item.min_length)
        elif isinstance(item, annotated_types.Ge):
            ge = int(item.ge)  # type: ignore[call-overload]
    return min_length, ge


def kind_of(annotation: Any, metadata: list[Any] | None = None) -> Kind:
    metadata = list(metadata or [])
    origin = get_origin(annotation)
    if origin is Annotated:
        base, *extra = get_args(annotation)
        return kind_of(base, [*metadata, *extra])
    if origin in (Union, types.UnionType):
        (inner,) = [a for a in get_args(annotation) if a is not type(None)]
        k = kind_of(inner, metadata)
        return Kind(k.base, True, k.min_length, k.ge, k.values, k.model, k.item)
    min_length, ge = _limits(metadata)
    if annotation is JsonValue:
        return Kind("json")
    if origin is Literal:
        return Kind("literal", values=tuple(get_args(annotation)))
    if origin is list:
        (item,) = get_args(annotation)
        return Kind("list", min_length=min_length, item=kind_of(item))
    if annotation is str:
        return Kind("str", min_length=min_length)
    if annotation is bool:
        return Kind("bool")
    if annotation is int:
        return Kind("int", ge=ge)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return Kind("model", model=annotation)
    raise AssertionError(f"a field shape this test does not know: {annotation!r}")


def fields_of(model: type[BaseModel]) -> list[tuple[str, Kind, bool]]:
    """``(key on disk, kind, required)`` per field, in field order."""
    return [
        (info.alias or name, kind_of(info.annotation, list(info.metadata)), info.is_required())
        for name, info in model.model_fields.items()
    ]


# --- valid values, and values just past each edge ----------------------------------------------


def valid(kind: Kind, *, full: bool = True) -> Any:
    if kind.base == "str":
        return "s" * max(kind.min_length, 1)
    if kind.base == "bool":
        return True
    if kind.base == "int":
        return kind.ge if kind.ge is not None else 0
    if kind.base == "literal":
        return kind.values[0]
    if kind.base == "json":
        return {"k": [1, "v", None]}
    if kind.base == "list":
        assert kind.item is not None
        return [valid(kind.item, full=full) for _ in range(max(kind.min_length, 1))]
    assert kind.model is not None
    return valid_object(kind.model, full=full)


def valid_object(model: type[BaseModel], *, full: bool = True) -> dict[str, Any]:
    """Every field (``full``) or only the required ones, each at its lowest valid value."""
    # The tag (``kind``, ``type``) has a default but is what the log dispatches on: always given.
    return {
        key: valid(kind, full=full)
        for key, kind, required in fields_of(model)
        if full or required or key in TAG_KEYS
    }


TAG_KEYS = ("kind", "type")


def just_wrong(kind: Kind, required: bool) -> Iterator[tuple[str, Any]]:
    """Values one step past the field's edge: ``(what, value)``."""
    if kind.base == "bool":
        yield from [("0 for a bool", 0), ("1 for a bool", 1), ("'true' for a bool", "true")]
        yield ("1.0 for a bool", 1.0)
    elif kind.base == "int":
        if kind.ge is not None:
            yield (f"{kind.ge - 1}, below its minimum {kind.ge}", kind.ge - 1)
        low = kind.ge if kind.ge is not None else 0
        yield from [("true for an int", True), ("a float", float(low)), ("a string", str(low))]
    elif kind.base == "str":
        if kind.min_length:
            yield (f"a string of {kind.min_length - 1}", "s" * (kind.min_length - 1))
        yield from [("a number for a string", 1), ("a list for a string", ["s"])]
    elif kind.base == "literal":
        word = kind.values[0]
        for what, other in (("a word outside", word + "x"), ("another case", word.swapcase())):
            if other not in kind.values:
                yield what, other
        yield ("a number", 1)
    elif kind.base == "list":
        assert kind.item is not None
        if kind.min_length:
            short = [valid(kind.item) for _ in range(kind.min_length - 1)]
            yield (f"a list of {kind.min_length - 1}", short)
        yield from [("an object for a list", {}), ("a string for a list", "s")]
    elif kind.base == "model":
        yield from [("a list for an object", []), ("a string for an object", "s")]
    if not kind.optional:
        yield ("null", None)


@dataclass(frozen=True)
class Perturbation:
    tag: str
    path: tuple[Any, ...]
    what: str
    data: dict[str, Any]

    def __str__(self) -> str:
        return f"{self.tag} {'.'.join(map(str, self.path))}: {self.what}"


def _set(data: Any, path: tuple[Any, ...], value: Any) -> Any:
    copy = orjson.loads(orjson.dumps(data))
    parent = copy
    for step in path[:-1]:
        parent = parent[step]
    if value is _DROP:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return copy


_DROP = object()


def perturbations_of(
    model: type[BaseModel], data: dict[str, Any], prefix: tuple[Any, ...] = ()
) -> Iterator[tuple[tuple[Any, ...], str, Any]]:
    """``(path, what, value)`` for every field of ``data`` and of the records inside it."""
    for key, kind, required in fields_of(model):
        path = (*prefix, key)
        if key not in data:
            continue
        for what, value in just_wrong(kind, required):
            yield path, what, value
        if required:
            yield path, "a required key left out", _DROP
        value = data[key]
        if kind.base == "model" and kind.model is not None:
            yield from perturbations_of(kind.model, value, path)
        elif kind.base == "list" and kind.item is not None and value:
            item_path = (*path, 0)
            for what, bad in just_wrong(kind.item, True):
                yield item_path, f"an item: {what}", bad
            if kind.item.base == "model" and kind.item.model is not None:
                yield from perturbations_of(kind.item.model, value[0], item_path)
    yield (*prefix, "unexpectedKey"), "a key the record does not have", 1


def base_lines() -> list[tuple[str, dict[str, Any]]]:
    lines = []
    for tag, model in ENTRY_MODELS.items():
        for full in (True, False):
            lines.append((tag, valid_object(model, full=full)))
    return lines


BASES = base_lines()


def all_perturbations() -> list[Perturbation]:
    out = []
    for tag, data in BASES:
        for path, what, value in perturbations_of(ENTRY_MODELS[tag], data):
            out.append(Perturbation(tag, path, what, _set(data, path, value)))
    return out


PERTURBATIONS = all_perturbations()


# --- the two verdicts -----------------------------------------------------------------------


def record_state(record: Any) -> Any:
    if isinstance(record, BaseModel):
        return (
            type(record).__name__,
            [(k, record_state(v)) for k, v in record.__dict__.items()],
            sorted(record.__pydantic_fields_set__),
            record.__pydantic_extra__,
            record.__pydantic_private__,
        )
    if isinstance(record, list):
        return [record_state(v) for v in record]
    return (type(record).__name__, record)


def pydantic_builds(data: Any) -> Any:
    try:
        return validate_entry(data)
    except ValueError:
        return None


def fast_builds(data: Any) -> Any:
    """What ``RegulatoryLog`` does before pydantic: dispatch on ``kind``, else ``type``."""
    tag = data["kind"] if "kind" in data else data.get("type")
    codec: Codec | None = CODECS.get(tag) if type(tag) is str else None
    if codec is None:
        return None
    try:
        return codec.build(data)
    except (KeyError, TypeError):  # the log's caller treats these as "ask pydantic"
        return None


def assert_agree(data: dict[str, Any], what: str) -> None:
    slow = pydantic_builds(data)
    fast = fast_builds(data)
    if slow is None:
        assert fast is None, f"the fast builder took what pydantic refuses: {what}: {data}"
    elif fast is not None:
        assert record_state(fast) == record_state(slow), what


# --- the tests ------------------------------------------------------------------------------


def test_every_line_type_has_a_fast_builder_and_a_valid_line_at_each_fields_lowest_value() -> None:
    assert set(CODECS) == set(ENTRY_MODELS)
    for tag, data in BASES:
        slow = validate_entry(data)
        fast = CODECS[tag].build(data)
        assert fast is not None, f"the fast builder refused a valid {tag}: {data}"
        assert record_state(fast) == record_state(slow)


def test_the_targeted_perturbations_reach_every_kind_of_edge() -> None:
    # Guards this test itself: were the models read wrongly, nothing would be perturbed.
    whats = " | ".join(p.what for p in PERTURBATIONS)
    for needed in ("1 for a bool", "0 for a bool", "below its minimum", "a string of 0"):
        assert needed in whats, needed
    assert "a list of 1" in whats  # a list of at least two: an interaction's options


def test_a_value_just_past_an_edge_is_refused_by_the_fast_builder_when_pydantic_refuses_it() -> (
    None
):
    disagreements = []
    for p in PERTURBATIONS:
        try:
            assert_agree(p.data, str(p))
        except AssertionError as error:
            disagreements.append(str(error).splitlines()[0])
    assert disagreements == [], f"{len(disagreements)} of {len(PERTURBATIONS)}"


def test_a_bool_given_1_or_an_int_below_its_minimum_is_never_built_by_the_fast_builder() -> None:
    refused = [
        p
        for p in PERTURBATIONS
        if p.what in ("0 for a bool", "1 for a bool") or "below its minimum" in p.what
    ]
    assert refused
    for p in refused:
        assert pydantic_builds(p.data) is None, p  # strict validation: the premise
        assert fast_builds(p.data) is None, p


def _row_paths(model: type[BaseModel], row: list[Any]) -> Iterator[tuple[tuple[int, ...], Kind]]:
    """Positions of a row (mask first, then fields in order), nested rows included."""
    for index, (_key, kind, _required) in enumerate(fields_of(model), start=1):
        yield (index,), kind
        value = row[index]
        if kind.base == "model" and kind.model is not None and value is not None:
            for inner, inner_kind in _row_paths(kind.model, value):
                yield (index, *inner), inner_kind


def test_a_snapshot_row_just_past_a_fields_edge_is_refused() -> None:
    checked = 0
    for tag, data in BASES:
        codec = CODECS[tag]
        row = orjson.loads(orjson.dumps(codec.to_row(validate_entry(data))))
        assert record_state(codec.from_row(row)) == record_state(validate_entry(data))
        for path, kind in _row_paths(ENTRY_MODELS[tag], row):
            for what, value in just_wrong(kind, True):
                if kind.base in ("model", "list") or value is None:
                    continue  # rows of nested records are lists: checked through their fields
                bad = _set(row, path, value)
                try:
                    built = codec.from_row(bad)
                except (KeyError, TypeError, ValueError):
                    built = None
                assert built is None, f"{tag} row {path}: {what}"
                checked += 1
    assert checked


def test_a_state_made_from_an_obligations_row_is_the_one_made_from_its_opening() -> None:
    """A restore makes a state straight from its obligation's row (``rows_into``): the same
    object ``_opened_state`` makes from the opening's record, and no state from a row that
    ``from_row`` refuses."""
    from regulator.protocol.obligations import Obligation, ObligationOpened
    from regulator.rules import regulatory_log as rl

    into = rl._STATE_FROM_ROW
    assert into is not None
    codec = CODECS["obligation-opened"]
    obligation_codec = codecs_for({"o": Obligation})["o"]
    checked = 0
    for tag, data in BASES:
        if tag != "obligation-opened":
            continue
        for full in (True, False):
            line = {**data, "obligation": valid_object(Obligation, full=full)}
            opened = validate_entry(line)
            assert isinstance(opened, ObligationOpened)
            row = orjson.loads(orjson.dumps(codec.to_row(opened)))[rl._OBLIGATION_IN_OPENED]
            state, again, expected = into(row), into(row), rl._opened_state(opened)
            assert state is not None and again is not None
            expected.__dict__["history"] = []  # the restore sets both lists after
            assert record_state(state) == record_state(expected)
            assert state.__pydantic_fields_set__ is not again.__pydantic_fields_set__
            for path, kind in _row_paths(Obligation, row):
                for what, value in just_wrong(kind, True):
                    if kind.base in ("model", "list") or value is None:
                        continue
                    bad = _set(row, path, value)
                    assert obligation_codec.from_row(bad) is None, f"{path}: {what}"
                    assert into(bad) is None, f"obligation row {path}: {what}"
                    checked += 1
    assert checked


# A random valid line of each type (hypothesis picks every value within its field's limits),
# then one targeted perturbation of it.


def strategy_for(kind: Kind) -> st.SearchStrategy[Any]:
    inner: st.SearchStrategy[Any]
    if kind.base == "str":
        inner = st.text(min_size=kind.min_length, max_size=kind.min_length + 8)
    elif kind.base == "bool":
        inner = st.booleans()
    elif kind.base == "int":
        inner = st.integers(min_value=kind.ge, max_value=(kind.ge or 0) + 1000)
    elif kind.base == "literal":
        inner = st.sampled_from(kind.values)
    elif kind.base == "json":
        inner = st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=5),
            lambda children: (
                st.lists(children, max_size=3)
                | st.dictionaries(st.text(max_size=5), children, max_size=3)
            ),
            max_leaves=6,
        )
    elif kind.base == "list":
        assert kind.item is not None
        inner = st.lists(
            strategy_for(Kind(**{**kind.item.__dict__, "optional": False})),
            min_size=kind.min_length,
            max_size=kind.min_length + 2,
        )
    else:
        assert kind.model is not None
        inner = object_strategy(kind.model)
    return st.none() | inner if kind.optional else inner


def object_strategy(model: type[BaseModel]) -> st.SearchStrategy[dict[str, Any]]:
    parts = {}
    for key, kind, required in fields_of(model):
        value = strategy_for(kind)
        parts[key] = value if required else st.just(_DROP) | value
    return st.fixed_dictionaries(parts).map(
        lambda d: {k: v for k, v in d.items() if v is not _DROP}
    )


@st.composite
def perturbed_lines(draw: st.DrawFn) -> tuple[str, dict[str, Any], str]:
    tag = draw(st.sampled_from(sorted(ENTRY_MODELS)))
    model = ENTRY_MODELS[tag]
    data = draw(object_strategy(model))
    options = list(perturbations_of(model, data))
    if not options or draw(st.booleans()):
        return tag, data, "unchanged"
    path, what, value = draw(st.sampled_from(options))
    return tag, _set(data, path, value), f"{'.'.join(map(str, path))}: {what}"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(line=perturbed_lines())
def test_random_lines_at_and_past_their_edges_are_built_alike_or_left_to_pydantic(
    line: tuple[str, dict[str, Any], str],
) -> None:
    _tag, data, what = line
    assert_agree(data, what)


def test_validation_by_name_keeps_the_fast_path_and_validation_not_by_alias_loses_it() -> None:
    # Pydantic 2.11-2.13 write both ``validate_by_*`` keys into a model's config when it sets
    # ``populate_by_name``; the builders read by alias only, so those keys keep a codec. A model
    # that refuses aliases must not get one: its builder would accept what pydantic refuses.
    from pydantic import ConfigDict
    from pydantic.alias_generators import to_camel

    from regulator.protocol.fast_records import Compiler, Unsupported

    class ByName(BaseModel):
        model_config = ConfigDict(
            alias_generator=to_camel,
            extra="forbid",
            frozen=True,
            populate_by_name=True,
            validate_by_alias=True,
            validate_by_name=True,
        )
        unit_id: str

    class NotByAlias(BaseModel):
        model_config = ConfigDict(
            alias_generator=to_camel,
            extra="forbid",
            validate_by_alias=False,
            validate_by_name=True,
        )
        unit_id: str

    compiler = Compiler()
    codec = compiler.codec(ByName)
    assert codec.build({"unitId": "u1"}) == ByName(unit_id="u1")
    try:
        compiler.codec(NotByAlias)
    except Unsupported as exc:
        assert "NotByAlias" in str(exc)
    else:
        raise AssertionError("a model that does not validate by alias was compiled")
