"""The base every record model derives from.

Records keep the original's camelCase names on disk; Python code uses snake_case attributes.
Closed records (the original's ``additionalProperties: false``) refuse unknown fields.
"""

from __future__ import annotations

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


class OpenRecord(Record):
    """A record whose original schema is open: unknown fields are kept, not refused."""

    model_config = ConfigDict(extra="allow")
