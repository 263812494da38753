"""The router: S3 turning messages into obligations under the routing policy
(docs/design.md#routing).

For every message no routing event cites yet, in log order: the rule for its kind, its
effective severity (an uncertainty's impact mapped through ``impactSeverity``, then raised by
any floor whose pattern the message's text matches), and then either a note saying why it
opens nothing, or one obligation per unit it affects. Routing runs in one transaction under the
log's lock, so it is idempotent even when two processes route at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache

import regex

from regulator.protocol.clock import parse_iso
from regulator.protocol.messages import IntelligenceSignal, UncertaintySignal, VsmMessage
from regulator.protocol.obligations import ObligationState
from regulator.protocol.policies import RoutingPolicy
from regulator.protocol.vocab import SEVERITY_ORDER, severity_at_least
from regulator.rules.ledger import Ledger, Transaction

#: The longest one floor may take on one message. A pattern that backtracks catastrophically
#: (``(a|a)*$`` on forty ``a``s) would otherwise hold routing, and so every unit, for hours.
FLOOR_TIMEOUT_S = 0.25


@lru_cache(maxsize=64)
def _floor_regex(pattern: str) -> regex.Pattern[str]:
    # ASCII: JavaScript's \d and \b, which the original's patterns were written for.
    # The regex engine, not re: only it can stop a match after a time limit.
    return regex.compile(pattern, regex.ASCII)


def floor_matches(pattern: str, text: str) -> bool | None:
    """Whether ``pattern`` finds a match in ``text``; ``None`` when it ran out of time."""
    try:
        return _floor_regex(pattern).search(text, timeout=FLOOR_TIMEOUT_S) is not None
    except TimeoutError:
        return None


def floor_text(message: VsmMessage) -> str:
    """What floors are matched against: subject, observation, rationale — not ``invariant``."""
    observation = getattr(message, "observation", None) or ""
    rationale = getattr(message, "rationale", None) or ""
    return f"{message.subject}\n{observation}\n{rationale}"


def effective_severity(
    message: VsmMessage, policy: RoutingPolicy, problems: list[str] | None = None
) -> str:
    """The message's severity raised by every floor that matches its text.

    A floor that runs out of time is applied as if it matched: text an agent wrote must not
    slip past a floor by being slow to match. It is reported in ``problems``.
    """
    if isinstance(message, UncertaintySignal):
        severity: str = getattr(policy.impact_severity, message.impact)
    else:
        severity = message.severity
    text = floor_text(message)
    for index, floor in enumerate(policy.floors or []):
        if SEVERITY_ORDER[severity] >= SEVERITY_ORDER[floor.severity]:
            continue
        matched = floor_matches(floor.pattern, text)
        if matched is None and problems is not None:
            problems.append(
                f"{policy.label} floors[{index}].pattern ran over {FLOOR_TIMEOUT_S} s on message "
                f"{message.id[:8]}; the floor was applied ({floor.severity}) as if it matched"
            )
        if matched is not False:
            severity = floor.severity
    return severity


@dataclass
class Noted:
    message: VsmMessage
    reason: str


@dataclass
class RoutingResult:
    opened: list[ObligationState] = field(default_factory=list)
    noted: list[Noted] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # e.g. a floor that ran out of time


def route_in(
    txn: Transaction, policy: RoutingPolicy, *, now: datetime, by: str = "S3"
) -> RoutingResult:
    """Route every unrouted message inside an open transaction."""
    result = RoutingResult()
    for message in txn.log.unrouted():
        rule = policy.rule_for(message.kind)
        severity = effective_severity(message, policy, result.problems)
        reason = None
        if rule is None:
            reason = f"{policy.label} has no rule for {message.kind}"
        elif not severity_at_least(severity, rule.min_severity):
            reason = (
                f"{severity} is below {rule.min_severity}, the {policy.label} line for "
                f"{message.kind}"
            )
        elif (
            isinstance(message, IntelligenceSignal)
            and message.expires_at
            and _expired(message.expires_at, now)
        ):
            reason = (
                f"intelligence expired at {message.expires_at}; stale evidence cannot raise "
                "an obligation"
            )
        if reason is not None or rule is None:
            txn.note(message.id, by, reason or "")
            result.noted.append(Noted(message, reason or ""))
            continue
        blocks = severity_at_least(severity, policy.blocks_at_or_above)
        if isinstance(message, IntelligenceSignal) and message.affected_units:
            units: list[str | None] = list(dict.fromkeys(message.affected_units))
        else:
            units = [message.unit]
        for unit in units:
            result.opened.append(
                txn.open(
                    subject=message.subject,
                    unit=unit,
                    concern=message.kind,
                    sources=[message.id],
                    severity=severity,
                    consumer=rule.consumer,
                    # A unit-less obligation never vetoes, except an audit finding about the
                    # instance itself (a red base after a merge holds every unit).
                    blocks=blocks and (unit is not None or message.kind == "audit-finding"),
                    opened_by=by,
                )
            )
    return result


def _expired(expires_at: str, now: datetime) -> bool:
    try:
        return parse_iso(expires_at) <= now
    except ValueError:
        # The original's Date.parse gives NaN for junk, and NaN <= now is false: not expired.
        return False


def route_messages(ledger: Ledger, policy: RoutingPolicy, *, by: str = "S3") -> RoutingResult:
    with ledger.transaction() as txn:
        return route_in(txn, policy, now=ledger.clock(), by=by)
