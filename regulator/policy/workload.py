"""The workload: unit types, the profile each runs under, its session adapter and its checks.

Two formats load into the same ``Workload``:

* ours, ``<definition>/workload.yaml`` (or ``.yml``/``.json``): ``unitTypes`` a mapping of
  ``{profile, checks, requiresContract, session}``, with the profiles inline;
* the original's, ``<definition>/workload/<name>.json``: ``unitTypes`` an array of ``{name,
  description, profile, checks, requiresContract}`` whose checks are names or ``{name,
  options}``, and its profiles in ``<definition>/profiles/*.json``. A unit type without a
  ``session`` (the original has none) runs scripted sessions, as the shipped ones do;
  ``run_tests`` is our ``tests`` check; checks and profile fields this project does not apply
  are kept as notes that ``doctor`` shows.

Else the shipped ``policies/workload.yaml``. A contract names the workload it was written for,
and the dispatch gate refuses a contract whose workload name or version is not the one in
force, or whose unit type the workload lacks.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, PrivateAttr, ValidationError, model_validator

from regulator.policy import Definition
from regulator.policy.loader import (
    PolicyError,
    check_directory,
    display_path,
    load_policy_file,
    problem_at,
    read_definition_data,
    shipped_policies_dir,
)
from regulator.protocol.base import Record
from regulator.protocol.errors import describe_validation_error

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
    # What loading the original's format left out or filled in, for `doctor` (never on disk).
    _notes: list[str] = PrivateAttr(default_factory=list)
    _scripted_by_default: list[str] = PrivateAttr(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.name} v{self.version}"

    @property
    def notes(self) -> list[str]:
        """What loading the original's format could not carry over (for ``doctor``)."""
        return list(self._notes)

    @property
    def scripted_by_default(self) -> list[str]:
        """The original's unit types given no ``session``: they run scripted sessions."""
        return list(self._scripted_by_default)

    def grants(self, unit_type: str) -> list[str]:
        kind = self.unit_types.get(unit_type)
        profile = self.profiles.get(kind.profile) if kind is not None else None
        return list(profile.tools) if profile is not None else []


# --- the original's format -----------------------------------------------------------------


class CheckRef(Record):
    name: Annotated[str, Field(min_length=1)]
    options: dict[str, Any] | None = None


class ListedUnitType(Record):
    """A unit type as the original lists it; ``session`` is ours and optional."""

    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]*$")]
    description: str
    profile: str
    checks: list[Annotated[str, Field(min_length=1)] | CheckRef]
    requires_contract: bool
    session: SessionSpec | None = None

    @property
    def check_names(self) -> list[str]:
        return [c if isinstance(c, str) else c.name for c in self.checks]


class ListedWorkload(Record):
    """The original's ``workload/<name>.json``."""

    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]*$")]
    version: Annotated[int, Field(ge=1, strict=True)]
    description: str
    unit_types: Annotated[list[ListedUnitType], Field(min_length=1)]

    @model_validator(mode="after")
    def _names_once(self) -> ListedWorkload:
        seen: set[str] = set()
        for kind in self.unit_types:
            if kind.name in seen:
                raise ValueError(f"unitTypes: {kind.name!r} is listed twice")
            seen.add(kind.name)
        return self


class ListedProfile(Record):
    """The original's ``profiles/<name>.json`` (a capability profile)."""

    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]*$")]
    description: str
    tools: list[str]
    writable_paths: list[str] = Field(default_factory=list)
    thinking_level: Literal["minimal", "low", "medium", "high"] | None = None
    advice: list[str] = Field(default_factory=list)


def original_workload_files(root: Path) -> list[Path]:
    """The JSON files in ``<root>/workload/``, as the original keeps its workloads."""
    directory = root / "workload"
    check_directory(directory, "the original keeps its workloads in workload/<name>.json")
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.suffix == ".json")


def profile_files(root: Path) -> list[Path]:
    directory = root / "profiles"
    check_directory(directory, "the original keeps its profiles in profiles/<name>.json")
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.suffix == ".json")


def workload_path(definition: Definition) -> Path:
    """The workload file in force; two candidates in one definition are refused."""
    if definition.root is None:
        return shipped_policies_dir() / "workload.yaml"
    root = definition.root
    # lexists, not is_file: a FIFO or a directory here is refused by name when loaded, not
    # passed over for the shipped workload.
    ours = [
        root / name
        for name in ("workload.yaml", "workload.yml", "workload.json")
        if os.path.lexists(root / name)
    ]
    found = ours + original_workload_files(root)
    if len(found) > 1:
        names = ", ".join(display_path(p) for p in found)
        raise PolicyError(
            [f"{names}: more than one file defines the workload; a definition runs one workload"]
        )
    if found:
        return found[0]
    if (root / "workload").is_dir():
        raise PolicyError([f"{display_path(root / 'workload')}: holds no workload (<name>.json)"])
    return shipped_policies_dir() / "workload.yaml"


def is_original_format(path: Path) -> bool:
    return path.parent.name == "workload" and path.suffix == ".json"


def load_workload(definition: Definition) -> Workload:
    path = workload_path(definition)
    if is_original_format(path):
        assert definition.root is not None
        return _load_original(definition.root, path)
    return load_policy_file("workload", path, Workload)


def load_profiles(root: Path) -> dict[str, tuple[Path, ListedProfile]]:
    """The definition's ``profiles/*.json`` by their ``name`` (each file validated)."""
    profiles: dict[str, tuple[Path, ListedProfile]] = {}
    for path in profile_files(root):
        profile = load_policy_file("profile", path, ListedProfile)
        if profile.name in profiles:
            first = display_path(profiles[profile.name][0])
            raise PolicyError(
                [f"{display_path(path)}: profile {profile.name!r} is already defined by {first}"]
            )
        profiles[profile.name] = (path, profile)
    return profiles


def _load_original(root: Path, path: Path) -> Workload:
    text, data = read_definition_data("workload", path)
    try:
        listed = ListedWorkload.model_validate(data)
    except ValidationError as exc:
        raise PolicyError(
            [problem_at(path, text, loc, msg) for loc, msg in describe_validation_error(exc)]
        ) from None
    profiles = load_profiles(root)
    missing = [
        problem_at(
            path,
            text,
            ("unitTypes", i, "profile"),
            f"unitTypes[{i}].profile: no profile {kind.profile!r} in "
            f"{display_path(root / 'profiles')}/ (profiles/{kind.profile}.json)",
        )
        for i, kind in enumerate(listed.unit_types)
        if kind.profile not in profiles
    ]
    if missing:
        raise PolicyError(missing)
    workload = Workload(
        name=listed.name,
        version=listed.version,
        description=listed.description,
        unit_types={
            kind.name: UnitType(
                profile=kind.profile,
                checks=["tests"] if "run_tests" in kind.check_names else [],
                requires_contract=kind.requires_contract,
                session=kind.session or SessionSpec(adapter="script"),
            )
            for kind in listed.unit_types
        },
        profiles={
            name: Profile(tools=[t for t in profile.tools if t in TOOLS])
            for name, (_, profile) in profiles.items()
        },
    )
    workload._notes = _notes(path, root, listed, profiles)
    workload._scripted_by_default = [k.name for k in listed.unit_types if k.session is None]
    return workload


def _notes(
    path: Path, root: Path, listed: ListedWorkload, profiles: dict[str, tuple[Path, ListedProfile]]
) -> list[str]:
    """What the original would do with this definition that this project does not."""
    shown, shown_profiles = display_path(path), f"{display_path(root / 'profiles')}/"
    notes = []
    unrun: dict[str, list[str]] = {}
    for kind in listed.unit_types:
        for check in kind.check_names:
            if check != "run_tests":
                unrun.setdefault(check, []).append(kind.name)
    if unrun:
        listing = "; ".join(f"{c} ({', '.join(kinds)})" for c, kinds in unrun.items())
        notes.append(
            f"{shown}: checks this project's closeout does not run: {listing} "
            "(`run_tests` runs, as our `tests`)"
        )
    if not any(k.name == "session" for k in listed.unit_types):
        notes.append(
            f"{shown}: no unit type `session`: an agent a person runs by hand is refused "
            "(docs/agents.md)"
        )
    unapplied: list[str] = []
    for name, (_, profile) in profiles.items():
        ungated = [t for t in profile.tools if t not in TOOLS]
        fields = [
            field
            for field, given in [
                ("writablePaths", profile.writable_paths),
                ("thinkingLevel", profile.thinking_level),
                ("advice", profile.advice),
            ]
            if given
        ]
        if ungated or fields:
            tools = f"tools {', '.join(ungated)}" if ungated else ""
            unapplied.append(f"{name} ({'; '.join(filter(None, [tools, ', '.join(fields)]))})")
    if unapplied:
        notes.append(
            f"{shown_profiles}: this project grants only its session tools and applies no "
            f"profile's writablePaths, thinkingLevel or advice: {'; '.join(unapplied)}"
        )
    return notes
