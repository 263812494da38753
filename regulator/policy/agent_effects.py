"""Which of an agent's own tools need a person's consent: the definition's ``agents.yaml``.

The seed leaves "does this action need consent?" to the model. For agents with a pre-tool hook
(Claude Code's ``PreToolUse``) the definition decides instead, from the tool's name and
arguments: a read-only tool is allowed at once, a tool with a declared effect becomes a consent
question, anything else is left to the agent's own permission prompt. Read from
``<definition>/agents.yaml``, else the shipped ``policies/agents.yaml``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from regulator.policy import Definition
from regulator.policy.loader import load_policy_file, shipped_policies_dir
from regulator.protocol.base import Record

Decision = Literal["allow", "deny", "ask"]


def _compiles(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"not a regular expression: {exc}") from None
    return pattern


class ConsentRule(Record):
    tool: str  # a regular expression on the tool's name, matched whole
    effect: str = Field(min_length=1)  # what the person is told the call does
    # Whole command lines that only look (Bash): not asked.
    except_: list[str] = Field(default_factory=list, alias="except")
    # Only calls whose file_path lies outside the repository (Write, Edit).
    outside_repository: bool = False

    @field_validator("tool")
    @classmethod
    def _tool(cls, value: str) -> str:
        return _compiles(value)

    @field_validator("except_")
    @classmethod
    def _except(cls, value: list[str]) -> list[str]:
        return [_compiles(v) for v in value]


class AgentRules(Record):
    read_only: list[str] = Field(default_factory=list)
    consent: list[ConsentRule] = Field(default_factory=list)
    nobody_present: Decision = "ask"


class AgentEffects(Record):
    name: str = Field(min_length=1)
    version: int = Field(ge=1, strict=True)
    agents: dict[str, AgentRules]


@dataclass(frozen=True)
class Verdict:
    """What a tool call is: read-only, in need of consent (with the action to ask about), or
    neither (``None`` effect and not read-only)."""

    read_only: bool
    effect: str | None = None
    action: str | None = None


def effects_path(definition: Definition) -> Path:
    if definition.root is not None:
        for name in ("agents.yaml", "agents.yml", "agents.json"):
            candidate = definition.root / name
            if candidate.is_file():
                return candidate
    return shipped_policies_dir() / "agents.yaml"


def load_agent_effects(definition: Definition) -> AgentEffects:
    return load_policy_file("agents", effects_path(definition), AgentEffects)


def _outside(path: str, repository: Path) -> bool:
    target = (repository / path).resolve() if not Path(path).is_absolute() else Path(path)
    try:
        target.resolve().relative_to(repository.resolve())
    except ValueError:
        return True
    return False


def describe_call(tool: str, tool_input: dict[str, Any]) -> str:
    """The action a yes would authorize, concretely: the command, the file, the address."""
    for key in ("command", "file_path", "notebook_path", "url"):
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return f"{tool}: {value}"
    return tool


def classify(rules: AgentRules, tool: str, tool_input: dict[str, Any], repository: Path) -> Verdict:
    if tool in rules.read_only:
        return Verdict(read_only=True)
    for rule in rules.consent:
        if not re.fullmatch(rule.tool, tool):
            continue
        command = tool_input.get("command")
        if isinstance(command, str) and any(re.fullmatch(p, command) for p in rule.except_):
            continue
        if rule.outside_repository:
            path = tool_input.get("file_path") or tool_input.get("notebook_path")
            if not isinstance(path, str) or not _outside(path, repository):
                continue
        return Verdict(read_only=False, effect=rule.effect, action=describe_call(tool, tool_input))
    return Verdict(read_only=False)
