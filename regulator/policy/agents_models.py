"""The pydantic models of ``agents.yaml``: what describes a refused file, field by field.

The hook reads ``agents.yaml`` before every tool call it answers, and decodes it into the msgspec
structs of :mod:`regulator.policy.agent_effects` (importing pydantic and building these models
would cost it more than everything else it does). Only when those structs refuse the file are
these models built, to name every problem with its line and field path, as for the other
definition files. Both run the same checks (the functions of :mod:`regulator.policy.read_only`
and :func:`regulator.policy.agent_effects.check_pattern`); the structs alone decide what is
accepted, so a file these models would accept and the structs refuse is still refused.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from regulator.policy.read_only import (
    check_command_name,
    check_consistent,
    check_flags,
    check_flags_with_value,
)
from regulator.protocol.schema import Schema


class CommandSpecModel(Schema):
    flags: list[str] = Field(default_factory=list)
    flags_with_value: list[str] = Field(default_factory=list)
    max_operands: int | None = Field(default=None, ge=0, strict=True)
    any_words: bool = False
    combined_flags: bool = True
    end_of_options: bool = True
    subcommands: dict[str, CommandSpecModel] = Field(default_factory=dict)

    @field_validator("flags")
    @classmethod
    def _flags(cls, value: list[str]) -> list[str]:
        return check_flags(value)

    @field_validator("flags_with_value")
    @classmethod
    def _flags_with_value(cls, value: list[str]) -> list[str]:
        return check_flags_with_value(value)

    @field_validator("subcommands")
    @classmethod
    def _subcommands(cls, value: dict[str, CommandSpecModel]) -> dict[str, CommandSpecModel]:
        for name in value:
            check_command_name(name)
        return value

    @model_validator(mode="after")
    def _consistent(self) -> CommandSpecModel:
        check_consistent(self)
        return self


class ConsentRuleModel(Schema):
    tool: str
    effect: str = Field(min_length=1)
    read_only_commands: dict[str, CommandSpecModel] = Field(default_factory=dict)
    outside_repository: bool = False
    except_: Any = Field(default=None, alias="except")

    @field_validator("tool")
    @classmethod
    def _tool(cls, value: str) -> str:
        from regulator.policy.agent_effects import check_pattern

        return check_pattern(value)

    @field_validator("read_only_commands")
    @classmethod
    def _commands(cls, value: dict[str, CommandSpecModel]) -> dict[str, CommandSpecModel]:
        for name in value:
            check_command_name(name)
        return value

    @field_validator("except_", mode="before")
    @classmethod
    def _except(cls, value: object) -> None:
        from regulator.policy.agent_effects import EXCEPT_GONE

        raise ValueError(EXCEPT_GONE)


class AgentRulesModel(Schema):
    read_only: list[str] = Field(default_factory=list)
    consent: list[ConsentRuleModel] = Field(default_factory=list)
    nobody_present: Literal["allow", "deny", "ask"] = "ask"


class AgentEffectsModel(Schema):
    name: str = Field(min_length=1)
    version: int = Field(ge=1, strict=True)
    agents: dict[str, AgentRulesModel]
