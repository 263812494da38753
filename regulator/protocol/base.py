"""The base every record model derives from.

Records keep the original's camelCase names on disk; Python code uses snake_case attributes.
Closed records (the original's ``additionalProperties: false``) refuse unknown fields.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Self

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class Record(BaseModel):
    """A closed record: camelCase on disk, unknown fields refused, frozen once built."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        # Each model's validator is built when first used, not at import: a command imports
        # some eighty models and uses few of them through pydantic (the compiled builders
        # and dumpers of fast_records and fast_dump do most of the work).
        defer_build=True,
    )

    def to_json_dict(self) -> dict[str, Any]:
        """The record in its on-disk shape: camelCase keys, absent optionals left out."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")

    @classmethod
    def from_json_dict(cls, data: Any) -> Self:
        return cls.model_validate(data)


#: The config of a tagged union's ``TypeAdapter``: built at its first validation, not at import
#: (building one builds its members' validators: for the regulatory log's, 20-30 ms of every
#: command's start, spent for a line the compiled builders refuse, which a valid log never has).
DEFERRED = ConfigDict(defer_build=True)


class OpenRecord(Record):
    """A record whose original schema is open: unknown fields are kept, not refused."""

    model_config = ConfigDict(extra="allow")


def build_deferred(give_way: Callable[[], bool] = lambda: False) -> None:
    """Build now each validator ``defer_build`` left to a record model's first use, for every
    record model imported so far, one model at a time, asking ``give_way`` between them (true:
    stop). For a long-lived process with time to spare (the control room, once its data is on
    screen), so that the first answer, dialog or inspector is not also the first use of its
    records' models: a few milliseconds each, some thirty in all."""
    seen: set[type[Record]] = set()
    pending: list[type[Record]] = [Record]
    while pending:
        model = pending.pop()
        for sub in model.__subclasses__():
            if sub not in seen:
                seen.add(sub)
                pending.append(sub)
        if model is not Record and not model.__pydantic_complete__:
            if give_way():
                return
            model.model_rebuild()
