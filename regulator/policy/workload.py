"""The workload: unit types, the profile each runs under, its session adapter and its checks.

Two formats load into the same ``Workload``:

* ours, ``<definition>/workload.yaml`` (or ``.yml``/``.json``): ``unitTypes`` a mapping of
  ``{profile, checks, requiresContract, session}``, with the profiles inline;
* the original's, ``<definition>/workload/<name>.json``: ``unitTypes`` an array of ``{name,
  description, profile, checks, requiresContract}`` whose checks are names or ``{name,
  options}``, and its profiles in ``<definition>/profiles/*.json``. A unit type without a
  ``session`` (the original has none) runs scripted sessions, as the shipped ones do;
  ``run_tests`` is our ``tests`` check; a profile's ``writablePaths`` are checked at closeout.

What regulator cannot enforce of the original's unit types — its other checks, a profile's
withholding of the agent's own tools — is kept per unit type (:meth:`Workload.unenforced`): the
dispatch gate refuses such a unit type unless the person accepts it for the run, and ``doctor``
shows it as notices.

Else the shipped ``policies/workload.yaml``. A contract names the workload it was written for,
and the dispatch gate refuses a contract whose workload name or version is not the one in
force, or whose unit type the workload lacks.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, PrivateAttr, ValidationError, model_validator

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
from regulator.protocol.errors import describe_validation_error
from regulator.protocol.schema import Schema

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


# The original's profiles list the agent's own tools beside the session tools. regulator grants
# the session tools; it has no way to take an agent's own tools away.
AGENT_TOOLS = ("read", "write", "edit", "grep", "find", "ls", "bash")
# The original's checks the closeout runs: `run_tests`, as our `tests`.
RUN_CHECKS = ("run_tests",)
# How a person accepts, for one command, what regulator cannot enforce of a unit type.
ACCEPT_FLAG = "--accept-unenforced"


def _check_writable(path: str) -> str:
    # Matched against the repository-relative paths git names: anything else could never match,
    # or would match what it does not say.
    if path.startswith("/"):
        raise ValueError(f"{path!r} must be relative to the repository (no leading '/')")
    if "\\" in path:
        raise ValueError(f"{path!r} must not contain a backslash")
    segments = path.removesuffix("/").split("/")
    if any(s in ("", ".", "..") for s in segments):
        raise ValueError(
            f"{path!r} must name a path in the repository (no empty, '.' or '..' part)"
        )
    return path


# A path prefix a unit may write: `src/` (a directory) or `README.md` (a path).
WritablePath = Annotated[str, AfterValidator(_check_writable)]


class SessionSpec(Schema):
    adapter: Literal["script", "command"]
    # For `command`: the agent CLI's argv; {prompt}, {mcp_config}, {model}, {worktree} and
    # {instance} are substituted.
    command: list[str] | None = None
    # For `command`: how its usage is printed (parsed into the budget ledger).
    usage_format: Literal["claude-json", "codex-jsonl", "none"] = "none"


class UnitType(Schema):
    profile: str
    checks: list[Literal["tests"]] = Field(default_factory=list)
    requires_contract: bool = True
    session: SessionSpec


class Profile(Schema):
    tools: list[ToolName]
    # Where the unit may write, checked at closeout over everything it changed; absent: anywhere.
    writable_paths: list[WritablePath] | None = None


class Workload(Schema):
    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]*$")]
    version: Annotated[int, Field(ge=1, strict=True)]
    description: str
    unit_types: dict[str, UnitType]
    profiles: dict[str, Profile]
    # What `doctor` says of the workload: what loading the original's format left out, filled in
    # or does otherwise, and limits nothing checks (never on disk).
    _notes: list[str] = PrivateAttr(default_factory=list)
    _scripted_by_default: list[str] = PrivateAttr(default_factory=list)
    # Per unit type, what regulator cannot enforce of it (the original's format only).
    _unenforced: dict[str, list[str]] = PrivateAttr(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.name} v{self.version}"

    @property
    def notes(self) -> list[str]:
        """What ``doctor`` says of this workload beyond its line (its notices)."""
        return list(self._notes)

    @property
    def scripted_by_default(self) -> list[str]:
        """The original's unit types given no ``session``: they run scripted sessions."""
        return list(self._scripted_by_default)

    def unenforced(self, unit_type: str) -> list[str]:
        """What the definition asks of ``unit_type`` that regulator does not enforce."""
        return list(self._unenforced.get(unit_type, []))

    def writable_paths(self, unit_type: str) -> list[str] | None:
        """The unit type's profile's ``writablePaths``; ``None``: not limited."""
        kind = self.unit_types.get(unit_type)
        profile = self.profiles.get(kind.profile) if kind is not None else None
        if profile is None or profile.writable_paths is None:
            return None
        return list(profile.writable_paths)

    def grants(self, unit_type: str) -> list[str]:
        kind = self.unit_types.get(unit_type)
        profile = self.profiles.get(kind.profile) if kind is not None else None
        return list(profile.tools) if profile is not None else []


# --- the original's format -----------------------------------------------------------------


class CheckRef(Schema):
    name: Annotated[str, Field(min_length=1)]
    options: dict[str, Any] | None = None


class ListedUnitType(Schema):
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


class ListedWorkload(Schema):
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


class ListedProfile(Schema):
    """The original's ``profiles/<name>.json`` (a capability profile)."""

    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]*$")]
    description: str
    tools: list[str]
    # The original's schema requires it; a file without it is read as the strictest: none.
    writable_paths: list[WritablePath] = Field(default_factory=list)
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
        workload = _load_original(definition.root, path)
    else:
        workload = load_policy_file("workload", path, Workload)
    workload._notes += _session_notes(workload, path)
    return workload


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
            name: Profile(
                tools=[t for t in profile.tools if t in TOOLS],
                writable_paths=profile.writable_paths,
            )
            for name, (_, profile) in profiles.items()
        },
    )
    workload._notes = _notes(path, root, listed, profiles)
    workload._scripted_by_default = [k.name for k in listed.unit_types if k.session is None]
    workload._unenforced = {
        kind.name: gaps
        for kind in listed.unit_types
        if (gaps := _unenforced(kind, profiles[kind.profile][1]))
    }
    return workload


def _unrun_checks(kind: ListedUnitType) -> list[str]:
    return list(dict.fromkeys(c for c in kind.check_names if c not in RUN_CHECKS))


def _withheld(profile: ListedProfile) -> list[str]:
    return [t for t in AGENT_TOOLS if t not in profile.tools]


def _unenforced(kind: ListedUnitType, profile: ListedProfile) -> list[str]:
    gaps = []
    if unrun := _unrun_checks(kind):
        gaps.append(f"checks {', '.join(unrun)} are not run")
    if withheld := _withheld(profile):
        gaps.append(
            f"profile {profile.name} withholds the agent's own tools {', '.join(withheld)}, "
            "which regulator does not take away"
        )
    return gaps


def unenforced_refusal(unit_type: str, gaps: list[str]) -> str:
    """The dispatch gate's one line for a unit type with gates regulator does not enforce."""
    return (
        f"unitType: regulator does not enforce all that {unit_type} asks: {'; '.join(gaps)}; "
        f"to drive it anyway, add {ACCEPT_FLAG} (the closeout's verdict records it)"
    )


def _notes(
    path: Path, root: Path, listed: ListedWorkload, profiles: dict[str, tuple[Path, ListedProfile]]
) -> list[str]:
    """What the original would do with this definition that this project does not, or does
    otherwise."""
    shown, shown_profiles = display_path(path), f"{display_path(root / 'profiles')}/"
    notes = []
    unrun: dict[str, list[str]] = {}
    for kind in listed.unit_types:
        for check in _unrun_checks(kind):
            unrun.setdefault(check, []).append(kind.name)
    if unrun:
        listing = "; ".join(f"{c} ({', '.join(kinds)})" for c, kinds in unrun.items())
        notes.append(
            f"{shown}: checks this project's closeout does not run: {listing} (`run_tests` runs, "
            f"as our `tests`); `unit drive`, `dispatch` and `close` refuse these unit types "
            f"unless given {ACCEPT_FLAG}"
        )
    if not any(k.name == "session" for k in listed.unit_types):
        notes.append(
            f"{shown}: no unit type `session`: an agent a person runs by hand is refused "
            "(docs/agents.md)"
        )
    withheld, unknown, unapplied, writable = [], [], [], []
    for name, (_, profile) in profiles.items():
        if tools := _withheld(profile):
            withheld.append(f"{name} ({', '.join(tools)})")
        if tools := [t for t in profile.tools if t not in TOOLS and t not in AGENT_TOOLS]:
            unknown.append(f"{name} ({', '.join(tools)})")
        given = [
            f
            for f, v in [("thinkingLevel", profile.thinking_level), ("advice", profile.advice)]
            if v
        ]
        if given:
            unapplied.append(f"{name} ({', '.join(given)})")
        writable.append(f"{name} ({', '.join(profile.writable_paths) or 'none'})")
    if withheld:
        notes.append(
            f"{shown_profiles}: profiles that withhold an agent's own tools, which regulator "
            f"cannot take away: {'; '.join(withheld)}; `unit drive`, `dispatch` and `close` "
            f"refuse the unit types under them unless given {ACCEPT_FLAG}"
        )
    if unknown:
        notes.append(
            f"{shown_profiles}: tools this project does not have, never granted: "
            f"{'; '.join(unknown)}"
        )
    if unapplied:
        notes.append(
            f"{shown_profiles}: thinkingLevel and advice are not applied: {'; '.join(unapplied)}"
        )
    if writable:
        notes.append(
            f"{shown_profiles}: writablePaths are checked at closeout against every path a unit "
            f"changed, shell writes included (the original limits write and edit only): "
            f"{'; '.join(writable)}"
        )
    return notes


def _session_notes(workload: Workload, path: Path) -> list[str]:
    """A ``session`` unit type with checks or writablePaths: nothing applies them."""
    kind = workload.unit_types.get("session")
    if kind is None:
        return []
    limits = []
    if kind.checks or workload.unenforced("session"):
        limits.append("its checks")
    if workload.writable_paths("session") is not None:
        limits.append(f"profile {kind.profile}'s writablePaths")
    if not limits:
        return []
    return [
        f"{display_path(path)}: unit type `session`: {' and '.join(limits)} are not applied: "
        "a session a person runs by hand has no closeout"
    ]
