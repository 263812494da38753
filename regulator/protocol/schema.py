"""The base of the workload's and the original's profiles' models (pydantic).

These are read when a unit is dispatched or a session starts, not by the commands that run
often. The four policies and ``agents.yaml``, which ``status`` and the hook read on every
run, are msgspec structs like the records (``regulator.protocol.policies``,
``regulator.policy.agent_effects``), and a refused file names every problem all the same
(``regulator.protocol.entry.every_refusal``).
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
