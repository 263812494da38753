"""The compiled dumps and pydantic agree on every record type.

``fast_dump.dump(record)`` must be exactly ``record.model_dump(by_alias=True, exclude_none=True,
mode="json")``, and the strings it lists, with its keys and words, must hold every string of
the dict (the status redaction trusts them to). Records are drawn by hypothesis from each
model's own field declarations, read here independently of ``fast_dump``; a field added to a
model is covered without touching this file.
"""

from __future__ import annotations

import importlib
import pkgutil
import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, JsonValue, ValidationError

import regulator.protocol
from regulator.protocol.base import Record
from regulator.protocol.fast_dump import OPAQUE, Compiler, dump, dumper_for
from regulator.protocol.obligations import ObligationState


def _record_models() -> list[type[BaseModel]]:
    for info in pkgutil.iter_modules(regulator.protocol.__path__):
        importlib.import_module(f"regulator.protocol.{info.name}")
    seen: dict[str, type[BaseModel]] = {}
    todo = list(BaseModel.__subclasses__())
    while todo:
        model = todo.pop()
        todo += model.__subclasses__()
        if model.__module__.startswith("regulator.protocol") and model.model_fields:
            seen[f"{model.__module__}.{model.__qualname__}"] = model
    return [seen[name] for name in sorted(seen)]


MODELS = _record_models()


def pydantic_dump(record: BaseModel) -> Any:
    return record.model_dump(by_alias=True, exclude_none=True, mode="json")


# --- input for a model, read from its declarations ----------------------------------------------

_TEXT = st.text(min_size=1, max_size=6) | st.sampled_from(
    ["S3", "alice", "a/b.py", "abc-1", "2026-01-05T08:00:00.000Z", "x" * 3]
)


def _min_length(metadata: list[Any]) -> int:
    found = 0
    for item in metadata:
        found = max(found, getattr(item, "min_length", None) or 0)
        found = max(found, _min_length(list(getattr(item, "metadata", []) or [])))
    return found


def _constraint(metadata: list[Any], name: str) -> Any:
    for item in metadata:
        found = getattr(item, name, None)
        if found is None:
            found = _constraint(list(getattr(item, "metadata", []) or []), name)
        if found is not None:
            return found
    return None


def strategy_for(
    annotation: Any, depth: int = 0, least: int = 0, metadata: tuple[Any, ...] = ()
) -> st.SearchStrategy[Any]:
    origin = get_origin(annotation)
    if origin is Annotated:
        base, *extra = get_args(annotation)
        return strategy_for(base, depth, max(least, _min_length(extra)), (*metadata, *extra))
    pattern = _constraint(list(metadata), "pattern")
    if annotation is str and pattern is not None:
        return st.from_regex(pattern, fullmatch=True).filter(lambda t: len(t) >= least)
    ge = _constraint(list(metadata), "ge")
    if annotation is int and ge is not None:
        return st.integers(min_value=ge, max_value=ge + 5)
    if origin in (Union, types.UnionType):
        return st.one_of([strategy_for(a, depth, least, metadata) for a in get_args(annotation)])
    if annotation is type(None):
        return st.none()
    if annotation is JsonValue:
        leaves = st.none() | st.booleans() | st.integers(-99, 99) | st.text(max_size=4)
        return st.recursive(
            leaves,
            lambda inner: st.lists(inner, max_size=2) | st.dictionaries(_TEXT, inner, max_size=2),
            max_leaves=4,
        )
    if origin is Literal:
        return st.sampled_from(get_args(annotation))
    if annotation is str:
        return _TEXT if least <= 1 else st.text(min_size=least, max_size=least + 3)
    if annotation is bool:
        return st.booleans()
    if annotation is int:
        return st.integers(min_value=0, max_value=5)
    if annotation is float:
        return st.floats(min_value=0, max_value=10, allow_nan=False)
    if origin is list:
        (item,) = get_args(annotation)
        most = max(least, 3 if depth < 2 else 1)
        return st.lists(strategy_for(item, depth + 1), min_size=least, max_size=most)
    if origin is dict:
        _key, value = get_args(annotation)
        return st.dictionaries(_TEXT, strategy_for(value, depth + 1), max_size=2)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return input_for(annotation, depth + 1)
    return st.nothing()  # a field type this test cannot draw: the model is drawn without it


def input_for(model: type[BaseModel], depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    parts: dict[str, st.SearchStrategy[Any]] = {}
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for name, info in model.model_fields.items():
        key = info.alias or name
        value = strategy_for(
            info.annotation, depth, _min_length(list(info.metadata)), tuple(info.metadata)
        )
        (parts if info.is_required() else optional)[key] = value
    return st.fixed_dictionaries(parts, optional=optional)


def _curated() -> dict[str, BaseModel]:
    """Valid records of the models whose validators random input almost never passes."""
    from regulator.policy import load_definition
    from regulator.protocol.policies import QuietHours

    definition = load_definition(None)
    interaction = definition.interaction
    return {
        "BudgetPolicy": definition.budget,
        "InteractionPolicy": interaction,
        "Timeouts": interaction.timeouts_ms,
        "QuietHours": QuietHours.model_validate(
            {"start": "22:00", "end": "07:00", "timezone": "UTC"}
        ),
    }


CURATED = _curated()


@st.composite
def records(draw: st.DrawFn, model: type[BaseModel]) -> BaseModel:
    data = draw(input_for(model))
    try:
        return model.model_validate(data)
    except ValidationError:
        curated = CURATED.get(model.__qualname__)
        if curated is not None and type(curated) is model:
            return curated
        assume(False)
        raise


def strings_in(value: Any) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return {s for k, v in value.items() for s in (strings_in(k) | strings_in(v))}
    if isinstance(value, list):
        return {s for v in value for s in strings_in(v)}
    return set()


def containers(value: Any) -> list[Any]:
    if isinstance(value, BaseModel):
        return [c for v in value.__dict__.values() for c in containers(v)]
    if isinstance(value, dict):
        return [value, *(c for v in value.values() for c in containers(v))]
    if isinstance(value, list | tuple):
        return [value, *(c for v in value for c in containers(v))]
    return []


def assert_dump_agrees(record: BaseModel) -> None:
    listed: list[Any] = []
    made = dump(record, listed)
    assert made == pydantic_dump(record)
    # Whoever redacts the dump in place must not reach into the record.
    shared = {id(c) for c in containers(record)} & {id(c) for c in containers(made)}
    assert not shared, "the dump shares a list or dict with the record"
    assert orjson_bytes(made) == orjson_bytes(pydantic_dump(record))  # key order too
    if OPAQUE not in listed:
        covered = set(listed) | dumper_for(type(record)).static
        missing = strings_in(made) - covered
        assert not missing, f"strings the dump did not list: {sorted(missing)[:5]}"


def orjson_bytes(value: Any) -> bytes:
    import orjson

    return orjson.dumps(value)


# --- the tests ---------------------------------------------------------------------------------


def test_the_record_types_are_found_and_the_busy_ones_are_compiled() -> None:
    assert len(MODELS) > 50
    from regulator.protocol.obligations import OBLIGATION_EVENT_MODELS

    busy: list[type[BaseModel]] = [ObligationState, *OBLIGATION_EVENT_MODELS]
    for model in busy:
        assert dumper_for(model).refused is None, dumper_for(model).refused
    from regulator.protocol.interaction import InteractionRequest

    assert dumper_for(InteractionRequest).refused is None


@pytest.mark.slow
@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__qualname__)
@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(data=st.data())
def test_every_record_type_dumps_as_pydantic_does_and_lists_its_strings(
    model: type[BaseModel], data: st.DataObject
) -> None:
    assert_dump_agrees(data.draw(records(model)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record=records(ObligationState))
def test_a_folded_obligation_with_any_history_dumps_as_pydantic_does(record: BaseModel) -> None:
    assert_dump_agrees(record)


def test_a_record_the_declarations_do_not_describe_is_left_to_pydantic() -> None:
    state = ObligationState.model_validate(
        {
            "id": "o1",
            "subject": "s",
            "concern": "audit-finding",
            "sources": ["m1"],
            "severity": "blocking",
            "consumer": "S3",
            "blocks": True,
            "openedAt": "2026-01-05T08:00:00.000Z",
            "openedBy": "S2",
        }
    )
    # A history item of a class outside the union: pydantic's dump, and the strings unknown.
    odd = state.model_copy(update={"history": [state.as_obligation()]})
    listed: list[Any] = []
    with pytest.warns(UserWarning):
        assert dump(odd, listed) == pydantic_dump(odd)
    assert OPAQUE in listed


def test_a_model_with_a_serializer_of_its_own_is_dumped_by_pydantic() -> None:
    from pydantic import field_serializer

    class Shouting(Record):
        word: str

        @field_serializer("word")
        def _loud(self, value: str) -> str:
            return value.upper()

    compiler = Compiler()
    assert compiler.dumper(Shouting).refused is not None
    record = Shouting(word="hi")
    listed: list[Any] = []
    assert compiler.dumper(Shouting).dump(record, listed) == {"word": "HI"}
    assert listed == [OPAQUE]


class _Carrier(Record):
    """JsonValue fields, which no compiled record type has today (PolicyProposal, the one with
    such a field, has a serializer of its own)."""

    payload: JsonValue
    many: list[JsonValue] | None = None
    note: str | None = None
    nested: list[list[str]] | None = None


@settings(max_examples=60, deadline=None)
@given(record=records(_Carrier))
def test_json_values_are_copied_and_left_for_the_redactor_to_walk(record: BaseModel) -> None:
    assert dumper_for(_Carrier).refused is None
    assert_dump_agrees(record)
    listed: list[Any] = []
    dump(record, listed)
    assert OPAQUE in listed
    hash(tuple(listed))  # the redactor makes a set of them
