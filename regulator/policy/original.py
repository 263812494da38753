"""The original's closed schemas for a definition's files: where the original would refuse one.

This project loads a little more than the original does (an empty ``description``,
``waitCeilingMs``, ``attention.session``, ``people[].osUsers``, ``people[].channels``, a unit
type's ``session``).
``doctor`` checks every definition file against these models as well, and names what the
original's own check would refuse, so a definition meant for both can be kept loadable by both.
The shapes follow the original's protocol schemas (docs/design.md#policies and
docs/policies.md#the-originals-definition-files): closed objects, non-empty strings, strict
integers and booleans. They judge files; nothing is loaded through them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import ErrorDetails

from regulator.protocol.errors import describe_error, field_path
from regulator.protocol.vocab import (
    Consumer,
    FailureCause,
    MessageKind,
    RecoveryAction,
    Severity,
)


def _whole(value: Any) -> Any:
    # JSON has one number type: 3.0 is an integer to the original's check.
    return int(value) if isinstance(value, float) and value.is_integer() else value


Positive = Annotated[int, BeforeValidator(_whole), Field(ge=1)]
Count = Annotated[int, BeforeValidator(_whole), Field(ge=0)]
TimeoutMs = Annotated[int, BeforeValidator(_whole), Field(ge=1000)]
ReminderMs = Annotated[int, BeforeValidator(_whole), Field(ge=60000)]
Threshold = Annotated[int, BeforeValidator(_whole), Field(ge=2)]


NonEmpty = Annotated[str, Field(min_length=1)]
Name = Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]*$")]
ModelRef = Annotated[str, Field(pattern=r"^[a-z0-9-]+/[^/\s]+$")]


class _Closed(BaseModel):
    """``additionalProperties: false``, no coercion, and an optional field absent, never null."""

    model_config = ConfigDict(alias_generator=to_camel, extra="forbid", strict=True)

    @field_validator("*", mode="before")
    @classmethod
    def _not_null(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("null is not a value here (leave the field out)")
        return value


class _Header(_Closed):
    name: Name
    version: Positive
    description: NonEmpty


# --- the four policies (§3.1, §4.1–§4.3) ---------------------------------------------------


class _RoutingRule(_Closed):
    kind: MessageKind
    min_severity: Severity
    consumer: Consumer


class _ImpactSeverity(_Closed):
    low: Severity
    medium: Severity
    high: Severity
    critical: Severity


class _RecoveryConsumers(_Closed):
    remediate: Consumer
    replan: Consumer
    clarify: Consumer
    pause: Consumer
    escalate: Consumer


class _Floor(_Closed):
    pattern: NonEmpty
    severity: Severity
    reason: NonEmpty


class OriginalRouting(_Header):
    rules: list[_RoutingRule]
    impact_severity: _ImpactSeverity
    recovery: _RecoveryConsumers
    blocks_at_or_above: Severity
    floors: list[_Floor] | None = None


class _Timeouts(_Closed):
    recap: TimeoutMs
    choice: TimeoutMs
    clarification: TimeoutMs
    consent: TimeoutMs
    uat: TimeoutMs


class _Attention(_Closed):
    blocking_per_attempt: Count


class _Person(_Closed):
    name: NonEmpty
    resolve_up_to: Severity
    accept_risk: bool
    act_as_s5: bool = Field(alias="actAsS5")


class OriginalInteraction(_Header):
    timeouts_ms: _Timeouts
    attention: _Attention
    reminder_after_ms: ReminderMs
    people: list[_Person]


class _RecoveryRule(_Closed):
    cause: FailureCause
    actions: Annotated[list[RecoveryAction], Field(min_length=1)]


class OriginalRecovery(_Header):
    rules: list[_RecoveryRule]
    fallback: Annotated[list[RecoveryAction], Field(min_length=1)]


class _Ceiling(_Closed):
    tokens: Positive
    cost: Annotated[float, Field(ge=0)] | None = None
    wall_clock_ms: Positive
    turns: Positive
    attempts: Positive


class _PartialCeiling(_Closed):
    tokens: Positive | None = None
    cost: Annotated[float, Field(ge=0)] | None = None
    wall_clock_ms: Positive | None = None
    turns: Positive | None = None
    attempts: Positive | None = None


class _Budgets(_Closed):
    default: _Ceiling
    by_unit_type: dict[str, _PartialCeiling] | None = None


class _Route(_Closed):
    primary: ModelRef
    fallback: list[ModelRef]


class _Models(_Closed):
    default: _Route
    by_unit_type: dict[str, _Route] | None = None


class _Coordination(_Closed):
    oscillation_threshold: Threshold


class OriginalBudget(_Header):
    budgets: _Budgets
    models: _Models
    coordination: _Coordination | None = None


# --- the workload and its profiles (appendix) ----------------------------------------------


class CheckRef(_Closed):
    """A check with options, ``{"name": "glossary-lint", "options": {...}}``."""

    name: NonEmpty
    options: dict[str, Any] | None = None


def _check_form(value: Any) -> str:
    return "check-name" if isinstance(value, str) else "check-object"


# A check is a name or a {name, options} object; anything else is judged as the object.
Check = Annotated[
    Annotated[NonEmpty, Tag("check-name")] | Annotated[CheckRef, Tag("check-object")],
    Discriminator(_check_form),
]


class _UnitType(_Closed):
    name: Name
    description: NonEmpty
    profile: NonEmpty
    checks: list[Check]
    requires_contract: bool


class OriginalWorkload(_Header):
    unit_types: Annotated[list[_UnitType], Field(min_length=1)]


class OriginalProfile(_Closed):
    name: Name
    description: NonEmpty
    tools: list[NonEmpty]
    writable_paths: list[NonEmpty]
    thinking_level: Literal["minimal", "low", "medium", "high"] | None = None
    advice: list[NonEmpty]


ORIGINAL_SCHEMAS: dict[str, type[_Closed]] = {
    "routing": OriginalRouting,
    "interaction": OriginalInteraction,
    "recovery": OriginalRecovery,
    "budget": OriginalBudget,
    "workload": OriginalWorkload,
    "profile": OriginalProfile,
}

# The file each kind is read from in the original's definition directory.
ORIGINAL_FILES: dict[str, str] = {
    "routing": "policies/routing.json",
    "interaction": "policies/interaction.json",
    "recovery": "policies/recovery.json",
    "budget": "policies/default.json",
    "workload": "workload/<name>.json",
    "profile": "profiles/<name>.json",
}

# Fields that are ours on purpose: the original's closed schemas refuse them, we document them.
OURS: dict[str, tuple[str, ...]] = {
    "interaction": (
        "waitCeilingMs",
        "attention.session",
        "people[*].osUsers",
        "people[*].channels",
    ),
    "recovery": ("alternationWindow",),
    "workload": ("unitTypes[*].session",),
}

# Union members pydantic adds to an error's location; the file has no such level.
_UNION_TAGS = {"check-name", "check-object"}


def _path(error: ErrorDetails) -> str:
    return field_path([p for p in error["loc"] if p not in _UNION_TAGS])


def _message(error: ErrorDetails) -> str:
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind == "string_too_short" and ctx.get("min_length") == 1:
        return "must not be empty"
    if kind == "too_short" and ctx.get("min_length") == 1:
        return "must hold at least one entry"
    if kind == "model_type":
        return f"must be an object (got {error['input']!r})"
    # describe_error's wording, with the location the file spells.
    text = describe_error({**error, "loc": ()})
    return text


def _is_ours(kind: str, path: str) -> bool:
    for pattern in OURS.get(kind, ()):
        regex = re.escape(pattern).replace(re.escape("[*]"), r"\[\d+\]")
        if re.fullmatch(regex, path):
            return True
    return False


@dataclass(frozen=True)
class Differences:
    """Where the original's schema refuses a file: by mistake, or on purpose (ours)."""

    refused: list[str]  # "PATH: MESSAGE", each a refusal this project does not share
    ours: list[str]  # paths of fields that are ours on purpose (see OURS)


def original_differences(kind: str, data: Any) -> Differences:
    """Check ``data`` against the original's schema for ``kind`` (empty lists: it passes)."""
    refused: list[str] = []
    ours: list[str] = []
    try:
        ORIGINAL_SCHEMAS[kind].model_validate(data)
    except ValidationError as exc:
        for error in exc.errors():
            path = _path(error)
            if error["type"] == "extra_forbidden" and _is_ours(kind, path):
                ours.append(path)
            else:
                line = f"{path or '(the file)'}: {_message(error)}"
                if line not in refused:
                    refused.append(line)
    return Differences(refused, ours)


__all__ = [
    "ORIGINAL_FILES",
    "ORIGINAL_SCHEMAS",
    "OURS",
    "CheckRef",
    "Differences",
    "original_differences",
]
