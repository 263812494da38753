"""The workload: unit types, the profile each runs under, its session adapter and its checks.

Read from ``<definition>/workload.yaml``, else the shipped ``policies/workload.yaml``. A
contract names the workload it was written for, and the dispatch gate refuses a contract whose
workload name or version is not the one in force, or whose unit type the workload lacks.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from regulator.policy import Definition
from regulator.policy.loader import load_policy_file, shipped_policies_dir
from regulator.protocol.base import Record

TOOLS = (
    "read_conventions",
    "run_tests",
    "run_checks",
    "report_result",
    "ask_human",
    "notify_owner",
    "remember",
    "report_intelligence",
    "propose_policy_change",
)
ToolName = Literal[
    "read_conventions",
    "run_tests",
    "run_checks",
    "report_result",
    "ask_human",
    "notify_owner",
    "remember",
    "report_intelligence",
    "propose_policy_change",
]


class SessionSpec(Record):
    adapter: Literal["script", "command"]
    # For `command`: the agent CLI's argv; {prompt}, {mcp_config}, {model}, {worktree} and
    # {instance} are substituted.
    command: list[str] | None = None
    # For `command`: how its usage is printed (parsed into the budget ledger).
    usage_format: Literal["claude-json", "codex-jsonl", "none"] = "none"


class UnitType(Record):
    profile: str
    checks: list[Literal["tests"]] = Field(default_factory=list)
    requires_contract: bool = True
    session: SessionSpec


class Profile(Record):
    tools: list[ToolName]


class Workload(Record):
    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]*$")]
    version: Annotated[int, Field(ge=1, strict=True)]
    description: str
    unit_types: dict[str, UnitType]
    profiles: dict[str, Profile]

    @property
    def label(self) -> str:
        return f"{self.name} v{self.version}"

    def grants(self, unit_type: str) -> list[str]:
        kind = self.unit_types.get(unit_type)
        profile = self.profiles.get(kind.profile) if kind is not None else None
        return list(profile.tools) if profile is not None else []


def workload_path(definition: Definition) -> Path:
    if definition.root is not None:
        for name in ("workload.yaml", "workload.yml", "workload.json"):
            candidate = definition.root / name
            # lexists, not is_file: a FIFO or a directory here is refused by name when loaded,
            # not passed over for the shipped workload.
            if os.path.lexists(candidate):
                return candidate
    return shipped_policies_dir() / "workload.yaml"


def load_workload(definition: Definition) -> Workload:
    return load_policy_file("workload", workload_path(definition), Workload)
