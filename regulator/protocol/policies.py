"""The four policies of a definition: routing, interaction, recovery, budget
(docs/design.md#policies).

All closed, as the original's schemas are, with optional additions of ours that the original's
closed schema would refuse: ``waitCeilingMs`` and ``attention.session`` on the interaction
policy, ``people[].osUsers``, ``people[].channels`` (where a person is reached: :class:`Channel`,
docs/reaching-people.md)
and ``alternationWindow`` on the recovery policy (:func:`fields_of_ours` names those a policy
uses). A policy file of the original loads unchanged.

``msgspec`` structs, as the records are: checked strictly as they are converted, camelCase in
the file, frozen. ``regulator.policy.loader`` reads a file and names every problem of one it
refuses, each with its line and field (``regulator.protocol.entry.every_refusal``). A check a
struct makes itself (``__post_init__``) begins its message with the field it concerns.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import msgspec

from regulator.protocol.base import Record
from regulator.protocol.credentials import literal_secret, literal_secret_in_command
from regulator.protocol.vocab import (
    Consumer,
    FailureCause,
    MessageKind,
    RecoveryAction,
    Severity,
)

PolicyName = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9-]*\Z")]
PositiveInt = Annotated[int, msgspec.Meta(ge=1)]
ModelId = Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9-]+/[^/\s]+\Z")]
NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]


Count = Annotated[int, msgspec.Meta(ge=0)]
Millis = Annotated[int, msgspec.Meta(ge=1000)]  # a duration a person waits, a second at least


class Definitional(Record, omit_defaults=False):
    """A struct of a definition file. Unlike a record's, its JSON keeps the values left at
    their defaults (``minSeverity: advisory``), so a person reads what is in force; only the
    absent optionals (``None``) are left out."""

    def to_json_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = _without_none(msgspec.to_builtins(self))
        return data


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


class PolicyHeader(Definitional):
    name: PolicyName
    version: PositiveInt
    description: str


# --- routing -------------------------------------------------------------------------------


class RoutingRule(Definitional):
    kind: MessageKind
    min_severity: Severity
    consumer: Consumer


class ImpactSeverity(Definitional):
    low: Severity
    medium: Severity
    high: Severity
    critical: Severity


class RecoveryConsumers(Definitional):
    remediate: Consumer
    replan: Consumer
    clarify: Consumer
    pause: Consumer
    escalate: Consumer


class Floor(Definitional):
    pattern: str
    severity: Severity
    reason: str

    def __post_init__(self) -> None:
        # Compiled as the router runs it (the regex engine, ASCII classes).
        import regex

        try:
            regex.compile(self.pattern, regex.ASCII)
        except regex.error as exc:
            raise ValueError(f"pattern: not a regular expression ({exc})") from None


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


class Timeouts(Definitional):
    recap: Millis
    choice: Millis
    clarification: Millis
    consent: Millis
    uat: Millis

    def for_kind(self, kind: str) -> int:
        value: int = getattr(self, kind)
        return value


class SessionAttention(Definitional):
    """Ours: what a session unit (an agent a person runs by hand) may ask, over its whole run.

    A session is one attempt that lasts as long as the person works, a day perhaps, so a cap
    per attempt would silence it after its first questions; a rate over any hour does not.
    """

    blocking_per_hour: Count


#: The session budget when the policy declares none (the original's files, which cannot): the
#: value the shipped policy declares, reasoned in docs/policies.md.
DEFAULT_SESSION_ATTENTION = SessionAttention(blocking_per_hour=4)


class Attention(Definitional):
    blocking_per_attempt: Count
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


class QuietHours(Definitional):
    """A daily window when a channel is not used (it is used again when the window ends)."""

    start: str
    end: str
    # An IANA zone (Europe/Paris); the machine's local time when absent.
    timezone: str | None = None
    # This severity and above reaches the person even in quiet hours.
    unless: Severity | None = "critical"

    def __post_init__(self) -> None:
        for name, value in (("start", self.start), ("end", self.end)):
            if not _CLOCK_TIME.match(value):
                raise ValueError(
                    f"{name}: {value!r} is not a time of day as HH:MM (00:00 to 23:59)"
                )
        if self.timezone is not None:
            try:
                ZoneInfo(self.timezone)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(
                    f"timezone: {self.timezone!r} is not a time zone this machine knows"
                ) from None


class Channel(Definitional):
    """Ours: one place a person is reached, for which obligations, and when not.

    The original's closed schema refuses ``channels``; see docs/reaching-people.md. Secrets
    are never written here: ``${NAME}`` in ``url``, ``to`` or a ``command`` argument is taken
    from the environment, else from ``secretsFile`` (a file outside the repository,
    ``NAME=value`` lines); a literal one is refused (:mod:`regulator.protocol.credentials`).
    """

    type: ChannelType
    # Unique among the person's channels; defaults to the type.
    name: PolicyName | None = None
    # desktop: none (notify-send) or an apprise URL; email: mailto(s)://…; slack: slack://… or
    # an incoming-webhook https URL; ntfy: ntfy(s)://host/topic; webhook: http(s) URL (JSON
    # is POSTed); apprise: any URL the apprise library understands.
    url: NonEmpty | None = None
    to: Annotated[str, msgspec.Meta(min_length=3)] | None = None  # email: the address
    # desktop: the command to run instead (title and body are appended as arguments); its
    # ${NAME} parts are replaced when it runs.
    command: Annotated[list[NonEmpty], msgspec.Meta(min_length=1)] | None = None
    min_severity: Severity = "advisory"
    # Concerns (interaction, algedonic-signal, recovery-decision…) or question kinds
    # (consent, choice…); every kind when absent.
    kinds: Annotated[list[NonEmpty], msgspec.Meta(min_length=1)] | None = None
    reminders: bool = True
    quiet_hours: QuietHours | None = None
    secrets_file: NonEmpty | None = None

    @property
    def label(self) -> str:
        return self.name or self.type

    def __post_init__(self) -> None:
        for name, value in (("url", self.url), ("to", self.to)):
            if value is not None and (why := literal_secret(value)):
                raise ValueError(f"{name}: holds {why}: {_USE_A_REFERENCE}")
        if self.command is not None and (why := literal_secret_in_command(self.command)):
            raise ValueError(f"command: holds {why}: {_USE_A_REFERENCE}")
        secrets = self.secrets_file
        if secrets is not None and not (secrets.startswith("/") or secrets.startswith("~/")):
            raise ValueError(
                f"secretsFile: {secrets!r} must be an absolute or ~/ path: a secrets file lives "
                "outside the repository"
            )
        if self.type in ("slack", "ntfy", "webhook", "apprise", "email") and self.url is None:
            raise ValueError(f"a {self.type} channel needs a url")
        if self.type == "email" and self.to is None:
            raise ValueError("an email channel needs to: the address")
        if self.command is not None and self.type != "desktop":
            raise ValueError("only a desktop channel runs a command")


class Person(Definitional):
    name: NonEmpty
    resolve_up_to: Severity
    # Strict: "true" or 1 is not a grant of authority.
    accept_risk: bool
    act_as_s5: bool
    # Ours: when set, only these OS users may act as this person.
    os_users: list[NonEmpty] | None = None
    # Ours: where the person is reached (docs/reaching-people.md); the original ignores it
    # (its closed schema refuses it).
    channels: list[Channel] | None = None

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for channel in self.channels or []:
            if channel.label in seen:
                raise ValueError(
                    f"channels: two channels are named {channel.label!r}: give each a distinct name"
                )
            seen.add(channel.label)


class InteractionPolicy(PolicyHeader):
    timeouts_ms: Timeouts
    attention: Attention
    reminder_after_ms: Annotated[int, msgspec.Meta(ge=60000)]
    people: list[Person]
    # Ours (documented only in the original): route a unit paused past this under `timeout`.
    wait_ceiling_ms: Millis | None = None

    def person(self, name: str) -> Person | None:
        return next((p for p in self.people if p.name == name), None)

    @property
    def label(self) -> str:
        return f"{self.name} v{self.version}"


# --- recovery ------------------------------------------------------------------------------


class RecoveryRule(Definitional):
    cause: FailureCause
    actions: Annotated[list[RecoveryAction], msgspec.Meta(min_length=1)]


class RecoveryPolicy(PolicyHeader):
    rules: list[RecoveryRule]
    fallback: Annotated[list[RecoveryAction], msgspec.Meta(min_length=1)]
    # Ours: when the unit's last N decisions (this one included) alternate between two causes
    # (A, B, A, B), escalate. Absent: off, the original's per-cause counting alone.
    alternation_window: Annotated[int, msgspec.Meta(ge=3)] | None = None

    def rule_for(self, cause: str) -> RecoveryRule | None:
        return next((rule for rule in self.rules if rule.cause == cause), None)

    @property
    def label(self) -> str:
        return f"{self.name} v{self.version}"


# --- budget and models ---------------------------------------------------------------------


class Ceiling(Definitional):
    tokens: PositiveInt
    cost: Annotated[float, msgspec.Meta(ge=0)] | None = None
    wall_clock_ms: PositiveInt
    turns: PositiveInt
    attempts: PositiveInt


class PartialCeiling(Definitional):
    tokens: PositiveInt | None = None
    cost: Annotated[float, msgspec.Meta(ge=0)] | None = None
    wall_clock_ms: PositiveInt | None = None
    turns: PositiveInt | None = None
    attempts: PositiveInt | None = None


class Budgets(Definitional):
    default: Ceiling
    by_unit_type: dict[str, PartialCeiling] | None = None


class Route(Definitional):
    primary: ModelId
    fallback: list[ModelId]


class Models(Definitional):
    default: Route
    by_unit_type: dict[str, Route] | None = None


class Coordination(Definitional):
    oscillation_threshold: Annotated[int, msgspec.Meta(ge=2)]


class BudgetPolicy(PolicyHeader):
    budgets: Budgets
    models: Models
    coordination: Coordination | None = None

    def ceiling_for(self, unit_type: str) -> Ceiling:
        """The default ceiling overlaid field by field with the unit type's own."""
        override = (self.budgets.by_unit_type or {}).get(unit_type)
        if override is None:
            return self.budgets.default
        changes = {
            name: value
            for name in override.__struct_fields__
            if (value := getattr(override, name)) is not None
        }
        return self.budgets.default.replace(**changes)

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
