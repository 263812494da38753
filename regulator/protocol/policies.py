"""The four policies of a definition: routing, interaction, recovery, budget
(docs/design.md#policies).

All closed, as the original's schemas are, with optional additions of ours that the original's
closed schema would refuse: ``waitCeilingMs`` and ``attention.session`` on the interaction
policy, ``people[].osUsers``, ``people[].channels`` (where a person is reached: :class:`Channel`,
docs/reaching-people.md)
and ``alternationWindow`` on the recovery policy (:func:`fields_of_ours` names those a policy
uses). A policy file of the original loads unchanged.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import regex
from pydantic import Field, StrictBool, field_validator, model_validator

from regulator.protocol.credentials import literal_secret, literal_secret_in_command
from regulator.protocol.schema import Schema
from regulator.protocol.vocab import (
    Consumer,
    FailureCause,
    MessageKind,
    RecoveryAction,
    Severity,
)

PolicyName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]*$")]
PositiveInt = Annotated[int, Field(ge=1, strict=True)]
ModelId = Annotated[str, Field(pattern=r"^[a-z0-9-]+/[^/\s]+$")]


class PolicyHeader(Schema):
    name: PolicyName
    version: PositiveInt
    description: str


# --- routing -------------------------------------------------------------------------------


class RoutingRule(Schema):
    kind: MessageKind
    min_severity: Severity
    consumer: Consumer


class ImpactSeverity(Schema):
    low: Severity
    medium: Severity
    high: Severity
    critical: Severity


class RecoveryConsumers(Schema):
    remediate: Consumer
    replan: Consumer
    clarify: Consumer
    pause: Consumer
    escalate: Consumer


class Floor(Schema):
    pattern: str
    severity: Severity
    reason: str

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        # Compiled as the router runs it (the regex engine, ASCII classes).
        try:
            regex.compile(value, regex.ASCII)
        except regex.error as exc:
            raise ValueError(f"not a regular expression ({exc})") from None
        return value


class RoutingPolicy(PolicyHeader):
    rules: list[RoutingRule]
    impact_severity: ImpactSeverity
    recovery: RecoveryConsumers
    blocks_at_or_above: Severity
    floors: list[Floor] | None = None

    def rule_for(self, kind: str) -> RoutingRule | None:
        return next((rule for rule in self.rules if rule.kind == kind), None)

    @property
    def label(self) -> str:
        return f"{self.name} v{self.version}"


# --- interaction ---------------------------------------------------------------------------


class Timeouts(Schema):
    recap: Annotated[int, Field(ge=1000, strict=True)]
    choice: Annotated[int, Field(ge=1000, strict=True)]
    clarification: Annotated[int, Field(ge=1000, strict=True)]
    consent: Annotated[int, Field(ge=1000, strict=True)]
    uat: Annotated[int, Field(ge=1000, strict=True)]

    def for_kind(self, kind: str) -> int:
        value: int = getattr(self, kind)
        return value


class SessionAttention(Schema):
    """Ours: what a session unit (an agent a person runs by hand) may ask, over its whole run.

    A session is one attempt that lasts as long as the person works, a day perhaps, so a cap
    per attempt would silence it after its first questions; a rate over any hour does not.
    """

    blocking_per_hour: Annotated[int, Field(ge=0, strict=True)]


#: The session budget when the policy declares none (the original's files, which cannot): the
#: value the shipped policy declares, reasoned in docs/policies.md.
DEFAULT_SESSION_ATTENTION = SessionAttention(blocking_per_hour=4)


class Attention(Schema):
    blocking_per_attempt: Annotated[int, Field(ge=0, strict=True)]
    # Ours: the budget of a session unit, which has no attempts to count by.
    session: SessionAttention | None = None

    @property
    def for_sessions(self) -> SessionAttention:
        return self.session if self.session is not None else DEFAULT_SESSION_ATTENTION


ChannelType = Literal["desktop", "email", "slack", "ntfy", "webhook", "apprise"]
CHANNEL_TYPES: tuple[str, ...] = ("desktop", "email", "slack", "ntfy", "webhook", "apprise")

_CLOCK_TIME = re.compile(r"^([01][0-9]|2[0-3]):([0-5][0-9])$")
_USE_A_REFERENCE = (
    "write the secret as ${NAME} and set NAME in the environment or in a secretsFile outside "
    "the repository"
)


class QuietHours(Schema):
    """A daily window when a channel is not used (it is used again when the window ends)."""

    start: str
    end: str
    # An IANA zone (Europe/Paris); the machine's local time when absent.
    timezone: str | None = None
    # This severity and above reaches the person even in quiet hours.
    unless: Severity | None = "critical"

    @field_validator("start", "end")
    @classmethod
    def _clock_time(cls, value: str) -> str:
        if not _CLOCK_TIME.match(value):
            raise ValueError(f"{value!r} is not a time of day as HH:MM (00:00 to 23:59)")
        return value

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                ZoneInfo(value)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"{value!r} is not a time zone this machine knows") from None
        return value


class Channel(Schema):
    """Ours: one place a person is reached, for which obligations, and when not.

    The original's closed schema refuses ``channels``; see docs/reaching-people.md. Secrets
    are never written here: ``${NAME}`` in ``url``, ``to`` or a ``command`` argument is taken
    from the environment, else from ``secretsFile`` (a file outside the repository,
    ``NAME=value`` lines); a literal one is refused (:mod:`regulator.protocol.credentials`).
    """

    type: ChannelType
    # Unique among the person's channels; defaults to the type.
    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]*$")] | None = None
    # desktop: none (notify-send) or an apprise URL; email: mailto(s)://…; slack: slack://… or
    # an incoming-webhook https URL; ntfy: ntfy(s)://host/topic; webhook: http(s) URL (JSON
    # is POSTed); apprise: any URL the apprise library understands.
    url: Annotated[str, Field(min_length=1)] | None = None
    to: Annotated[str, Field(min_length=3)] | None = None  # email: the address
    # desktop: the command to run instead (title and body are appended as arguments); its
    # ${NAME} parts are replaced when it runs.
    command: Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)] | None = None
    min_severity: Severity = "advisory"
    # Concerns (interaction, algedonic-signal, recovery-decision…) or question kinds
    # (consent, choice…); every kind when absent.
    kinds: Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)] | None = None
    reminders: StrictBool = True
    quiet_hours: QuietHours | None = None
    secrets_file: Annotated[str, Field(min_length=1)] | None = None

    @property
    def label(self) -> str:
        return self.name or self.type

    @field_validator("url", "to")
    @classmethod
    def _no_literal_secret(cls, value: str | None) -> str | None:
        if value is not None and (why := literal_secret(value)):
            raise ValueError(f"holds {why}: {_USE_A_REFERENCE}")
        return value

    @field_validator("command")
    @classmethod
    def _no_literal_secret_argument(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and (why := literal_secret_in_command(value)):
            raise ValueError(f"holds {why}: {_USE_A_REFERENCE}")
        return value

    @field_validator("secrets_file")
    @classmethod
    def _outside(cls, value: str | None) -> str | None:
        if value is not None and not (value.startswith("/") or value.startswith("~/")):
            raise ValueError(
                f"{value!r} must be an absolute or ~/ path: a secrets file lives outside the "
                "repository"
            )
        return value

    @model_validator(mode="after")
    def _complete(self) -> Channel:
        if self.type in ("slack", "ntfy", "webhook", "apprise", "email") and self.url is None:
            raise ValueError(f"a {self.type} channel needs a url")
        if self.type == "email" and self.to is None:
            raise ValueError("an email channel needs to: the address")
        if self.command is not None and self.type != "desktop":
            raise ValueError("only a desktop channel runs a command")
        return self


class Person(Schema):
    name: Annotated[str, Field(min_length=1)]
    resolve_up_to: Severity
    # Strict: "true" or 1 is not a grant of authority.
    accept_risk: StrictBool
    act_as_s5: StrictBool = Field(alias="actAsS5")
    # Ours: when set, only these OS users may act as this person.
    os_users: list[Annotated[str, Field(min_length=1)]] | None = None
    # Ours: where the person is reached (docs/reaching-people.md); the original ignores it
    # (its closed schema refuses it).
    channels: list[Channel] | None = None

    @field_validator("channels")
    @classmethod
    def _unique(cls, value: list[Channel] | None) -> list[Channel] | None:
        seen: set[str] = set()
        for channel in value or []:
            if channel.label in seen:
                raise ValueError(
                    f"two channels are named {channel.label!r}: give each a distinct name"
                )
            seen.add(channel.label)
        return value


class InteractionPolicy(PolicyHeader):
    timeouts_ms: Timeouts
    attention: Attention
    reminder_after_ms: Annotated[int, Field(ge=60000, strict=True)]
    people: list[Person]
    # Ours (documented only in the original): route a unit paused past this under `timeout`.
    wait_ceiling_ms: Annotated[int, Field(ge=1000, strict=True)] | None = None

    def person(self, name: str) -> Person | None:
        return next((p for p in self.people if p.name == name), None)

    @property
    def label(self) -> str:
        return f"{self.name} v{self.version}"


# --- recovery ------------------------------------------------------------------------------


class RecoveryRule(Schema):
    cause: FailureCause
    actions: Annotated[list[RecoveryAction], Field(min_length=1)]


class RecoveryPolicy(PolicyHeader):
    rules: list[RecoveryRule]
    fallback: Annotated[list[RecoveryAction], Field(min_length=1)]
    # Ours: when the unit's last N decisions (this one included) alternate between two causes
    # (A, B, A, B), escalate. Absent: off, the original's per-cause counting alone.
    alternation_window: Annotated[int, Field(ge=3, strict=True)] | None = None

    def rule_for(self, cause: str) -> RecoveryRule | None:
        return next((rule for rule in self.rules if rule.cause == cause), None)

    @property
    def label(self) -> str:
        return f"{self.name} v{self.version}"


# --- budget and models ---------------------------------------------------------------------


class Ceiling(Schema):
    tokens: PositiveInt
    cost: Annotated[float, Field(ge=0)] | None = None
    wall_clock_ms: PositiveInt
    turns: PositiveInt
    attempts: PositiveInt


class PartialCeiling(Schema):
    tokens: PositiveInt | None = None
    cost: Annotated[float, Field(ge=0)] | None = None
    wall_clock_ms: PositiveInt | None = None
    turns: PositiveInt | None = None
    attempts: PositiveInt | None = None


class Budgets(Schema):
    default: Ceiling
    by_unit_type: dict[str, PartialCeiling] | None = None


class Route(Schema):
    primary: ModelId
    fallback: list[ModelId]


class Models(Schema):
    default: Route
    by_unit_type: dict[str, Route] | None = None


class Coordination(Schema):
    oscillation_threshold: Annotated[int, Field(ge=2, strict=True)]


class BudgetPolicy(PolicyHeader):
    budgets: Budgets
    models: Models
    coordination: Coordination | None = None

    def ceiling_for(self, unit_type: str) -> Ceiling:
        """The default ceiling overlaid field by field with the unit type's own."""
        override = (self.budgets.by_unit_type or {}).get(unit_type)
        if override is None:
            return self.budgets.default
        changes = override.model_dump(exclude_none=True)
        return self.budgets.default.model_copy(update=changes)

    def route_for(self, unit_type: str) -> Route:
        """The unit type's route if it has one, else the default: routes are not merged."""
        return (self.models.by_unit_type or {}).get(unit_type, self.models.default)

    @property
    def label(self) -> str:
        return f"{self.name} v{self.version}"


def fields_of_ours(policy: object) -> list[str]:
    """The fields of ours ``policy`` sets: the original's closed schema refuses a file with any."""
    found: list[str] = []
    if isinstance(policy, InteractionPolicy):
        if policy.wait_ceiling_ms is not None:
            found.append("waitCeilingMs")
        if policy.attention.session is not None:
            found.append("attention.session")
        found += [
            f"people[{i}].osUsers" for i, p in enumerate(policy.people) if p.os_users is not None
        ]
        found += [
            f"people[{i}].channels" for i, p in enumerate(policy.people) if p.channels is not None
        ]
    elif isinstance(policy, RecoveryPolicy) and policy.alternation_window is not None:
        found.append("alternationWindow")
    return found
