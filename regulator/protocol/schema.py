"""The base of the definition files' models: policies, workload, profiles, ``agents.yaml``.

A person writes these files, so their models stay pydantic, whose errors name every field
that is wrong (``rules[2].minSeverity: 'blockng' is not one of …``). The records of
``.regulator/`` are ``msgspec`` structs instead (``regulator.protocol.base``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class Schema(BaseModel):
    """A closed definition model: camelCase in the file, unknown fields refused, frozen."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        # Each model's validator is built when first used, not at import: a command imports
        # the definition's models and reads few of its files.
        defer_build=True,
    )

    def to_json_dict(self) -> dict[str, Any]:
        """The model in its file's shape: camelCase keys, absent optionals left out."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")
