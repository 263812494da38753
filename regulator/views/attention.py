"""The attention an instance has spent: what its questions cost the people who answer them.

The original caps attention per attempt (``attention.blockingPerAttempt``) and measures nothing
over time; the seed names that as a gap. This is the measure: from the interaction events and
the deliveries already in the regulatory log, how many blocking questions were asked (per
attempt, per session and per ISO week), how they ended (answered, timed out, unavailable,
cancelled, still waiting), how many reminders were sent, and how long a person took to answer
(median and p90, from the request's ``raisedAt`` to the answering event), per person and per
week.

It is a pure function of a folded ``RegulatoryLog`` and a moment, and walks only the
interactions (not every obligation), so it is cheap enough to recompute on every refresh.

Conventions, so the figures can be checked by hand:

* A question counts in the window when it was *raised* in it; its outcomes and its time to
  answer count with it, in the ISO week it was raised. A reminder counts in the week it was
  sent.
* A question's outcomes are counted once each: one that timed out in the session and was
  answered later from the CLI is both "timed out" and "answered".
* Time to answer is to the first ``answered`` event; the person is that event's ``by``.
* Percentiles interpolate linearly between the closest ranks (numpy's default), so the median
  is the usual one and the p90 of ``[1, 2, …, 10]`` is 9.1.
* Recaps do not stop anyone (the work continues), so they are counted apart, never in the
  blocking figures.
* The budget figures count what the gate counts (:mod:`regulator.rules.attention_budget`): a
  unit's own questions (raised by S1), per attempt for a contracted unit, and in any hour across
  the runs of a session for a session unit. The host's questions (raised by S3: a hook's
  consent for one of the agent's own tool calls, the loop's clarification) are in the totals,
  since a person answers them, and are also shown apart, against no unit's budget.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from regulator.protocol.clock import iso, parse_iso
from regulator.protocol.interaction import CONTINUES_WITHOUT_ANSWER
from regulator.protocol.vocab import TERMINAL_STATUSES
from regulator.rules.attention_budget import most_in_an_hour, session_of
from regulator.rules.regulatory_log import FoldedLog

_AGE = re.compile(r"([1-9][0-9]{0,5})([hdw])")
_UNIT = {"h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}


def parse_age(text: str) -> timedelta | None:
    """``12h``, ``7d``, ``4w`` as a window; ``all`` as no window (None). ``ValueError`` else."""
    value = text.strip()
    if value == "all":
        return None
    match = _AGE.fullmatch(value)
    if match is None:
        raise ValueError(
            f'--since "{text}" is not an age: give a whole number of hours, days or weeks '
            "(12h, 7d, 4w), or all"
        )
    return int(match.group(1)) * _UNIT[match.group(2)]


def iso_week(moment: datetime) -> str:
    """``2026-W05``: the ISO year and week (Monday first)."""
    year, week, _ = moment.isocalendar()
    return f"{year}-W{week:02d}"


def percentile(values: list[int], q: float) -> int | None:
    """The ``q`` quantile (0–1) by linear interpolation, rounded to the millisecond."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    value = ordered[low] + (ordered[high] - ordered[low]) * (position - low)
    return round(value)


@dataclass(frozen=True, slots=True)
class Timing:
    """Time to answer over some answers, in milliseconds."""

    answered: int
    median_ms: int | None
    p90_ms: int | None

    @classmethod
    def of(cls, durations: list[int]) -> Timing:
        return cls(len(durations), percentile(durations, 0.5), percentile(durations, 0.9))

    def to_json(self) -> dict[str, Any]:
        return {"answered": self.answered, "medianMs": self.median_ms, "p90Ms": self.p90_ms}


@dataclass(slots=True)
class Outcomes:
    """How the blocking questions of a period ended."""

    asked: int = 0
    answered: int = 0
    timed_out: int = 0
    unavailable: int = 0
    cancelled: int = 0
    waiting: int = 0  # not answered and its obligation still open
    reminders: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "asked": self.asked,
            "answered": self.answered,
            "timedOut": self.timed_out,
            "unavailable": self.unavailable,
            "cancelled": self.cancelled,
            "waiting": self.waiting,
            "reminders": self.reminders,
        }


@dataclass(frozen=True, slots=True)
class AttemptLoad:
    """Blocking questions one attempt of one unit asked."""

    unit: str | None
    attempt: int | None
    asked: int

    def to_json(self) -> dict[str, Any]:
        return {"unit": self.unit, "attempt": self.attempt, "asked": self.asked}


@dataclass(frozen=True, slots=True)
class SessionLoad:
    """Blocking questions one session (all its runs) asked, and the most in any hour."""

    session: str  # its first run's unit id
    runs: int  # how many of its runs asked
    asked: int
    most_in_an_hour: int
    hour_ending: str | None  # when the busiest hour ended (its last question's raisedAt)

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "runs": self.runs,
            "asked": self.asked,
            "mostInAnHour": self.most_in_an_hour,
            "hourEnding": self.hour_ending,
        }


@dataclass(frozen=True, slots=True)
class Week:
    week: str
    outcomes: Outcomes
    timing: Timing

    def to_json(self) -> dict[str, Any]:
        return {"week": self.week, **self.outcomes.to_json(), "timeToAnswer": self.timing.to_json()}


@dataclass(frozen=True, slots=True)
class PersonLoad:
    person: str
    timing: Timing

    def to_json(self) -> dict[str, Any]:
        return {"person": self.person, "timeToAnswer": self.timing.to_json()}


@dataclass(frozen=True, slots=True)
class AttentionReport:
    generated_at: str
    since: str | None  # the window's start; None = the whole log
    person: str | None  # only this person's answers in the timing figures
    totals: Outcomes
    recaps: int
    timing: Timing
    per_attempt: list[AttemptLoad]
    per_person: list[PersonLoad]
    per_week: list[Week]
    blocking_per_attempt: int | None = None  # the policy's cap, when given
    over_cap: list[AttemptLoad] = field(default_factory=list)
    # Of the totals, the host's questions (raised by S3): on no unit's budget.
    host: Outcomes = field(default_factory=Outcomes)
    per_session: list[SessionLoad] = field(default_factory=list)
    blocking_per_hour: int | None = None  # the policy's session budget, when given
    over_budget: list[SessionLoad] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "generatedAt": self.generated_at,
            "since": self.since,
            "person": self.person,
            **self.totals.to_json(),
            "host": self.host.to_json(),
            "recaps": self.recaps,
            "timeToAnswer": self.timing.to_json(),
            "blockingPerAttempt": self.blocking_per_attempt,
            "perAttempt": [a.to_json() for a in self.per_attempt],
            "overCap": [a.to_json() for a in self.over_cap],
            "blockingPerHour": self.blocking_per_hour,
            "perSession": [p.to_json() for p in self.per_session],
            "overBudget": [p.to_json() for p in self.over_budget],
            "perPerson": [p.to_json() for p in self.per_person],
            "perWeek": [w.to_json() for w in self.per_week],
        }


def _ms_between(start: datetime, end: datetime) -> int:
    return max(0, round((end - start).total_seconds() * 1000))


def _parsed(text: str) -> datetime | None:
    try:
        return parse_iso(text)
    except ValueError:
        return None  # a timestamp nobody can read counts in no window


def attention_report(
    log: FoldedLog,
    now: datetime,
    *,
    since: timedelta | None = None,
    person: str | None = None,
    blocking_per_attempt: int | None = None,
    session_units: Collection[str] = (),
    blocking_per_hour: int | None = None,
) -> AttentionReport:
    """The figures for questions raised in ``[now - since, now]`` (the whole log without one).

    With ``person``, the time-to-answer figures (overall, per week, per person) count only
    that person's answers; what was asked, timed out and reminded is the instance's whatever
    the person, since none of it is anyone's in particular. ``session_units``: the units of
    type ``session`` (the log does not say a unit's type), whose questions are counted per
    session rather than per attempt.
    """
    cutoff = now - since if since is not None else None
    totals = Outcomes()
    recaps = 0
    weeks: dict[str, Outcomes] = {}
    week_durations: dict[str, list[int]] = {}
    person_durations: dict[str, list[int]] = {}
    durations: list[int] = []
    attempts: dict[tuple[str | None, int | None], int] = {}
    host = Outcomes()
    sessions: dict[str, list[datetime]] = {}
    session_runs: dict[str, set[str]] = {}

    for interaction in log.interactions.values():
        request = interaction.request
        obligation = log.obligations.get(request.obligation_id)
        # Reminders: deliveries again of the question's obligation, counted when sent.
        if obligation is not None:
            for delivery in obligation.deliveries:
                if not delivery.reminder:
                    continue
                sent = _parsed(delivery.at)
                if sent is None or (cutoff is not None and sent < cutoff) or sent > now:
                    continue
                totals.reminders += 1
                host.reminders += request.raised_by != "S1"
                weeks.setdefault(iso_week(sent), Outcomes()).reminders += 1

        raised = _parsed(request.raised_at)
        if raised is None or (cutoff is not None and raised < cutoff) or raised > now:
            continue
        if CONTINUES_WITHOUT_ANSWER[request.kind]:
            recaps += 1
            continue
        week = iso_week(raised)
        bucket = weeks.setdefault(week, Outcomes())
        own = request.raised_by == "S1"  # the unit's own question: what its budget counts
        if own and request.unit is not None and request.unit in session_units:
            session = session_of(request.unit)
            sessions.setdefault(session, []).append(raised)
            session_runs.setdefault(session, set()).add(request.unit)
        elif own:
            key = (request.unit, request.attempt)
            attempts[key] = attempts.get(key, 0) + 1

        outcomes = {a.outcome for a in interaction.answers}
        first_answer = next((a for a in interaction.answers if a.outcome == "answered"), None)
        waiting = first_answer is None and (
            obligation is None or obligation.status not in TERMINAL_STATUSES
        )
        for counts in (totals, bucket) if own else (totals, bucket, host):
            counts.asked += 1
            counts.answered += first_answer is not None
            counts.timed_out += "timed-out" in outcomes
            counts.unavailable += "unavailable" in outcomes
            counts.cancelled += "cancelled" in outcomes
            counts.waiting += waiting

        if first_answer is None or (person is not None and first_answer.by != person):
            continue
        answered_at = _parsed(first_answer.at)
        if answered_at is None:
            continue
        took = _ms_between(raised, answered_at)
        durations.append(took)
        week_durations.setdefault(week, []).append(took)
        person_durations.setdefault(first_answer.by, []).append(took)

    per_attempt = sorted(
        (AttemptLoad(unit, attempt, n) for (unit, attempt), n in attempts.items()),
        key=lambda a: (-a.asked, a.unit or "", a.attempt or 0),
    )
    over_cap = (
        [a for a in per_attempt if a.asked > blocking_per_attempt]
        if blocking_per_attempt is not None
        else []
    )
    per_session = []
    for session, times in sessions.items():
        most, ending = most_in_an_hour(times)
        per_session.append(
            SessionLoad(
                session,
                len(session_runs[session]),
                len(times),
                most,
                iso(ending) if ending is not None else None,
            )
        )
    per_session.sort(key=lambda p: (-p.most_in_an_hour, -p.asked, p.session))
    over_budget = (
        [p for p in per_session if p.most_in_an_hour > blocking_per_hour]
        if blocking_per_hour is not None
        else []
    )
    return AttentionReport(
        generated_at=iso(now),
        since=iso(cutoff) if cutoff is not None else None,
        person=person,
        totals=totals,
        recaps=recaps,
        timing=Timing.of(durations),
        per_attempt=per_attempt,
        per_person=[
            PersonLoad(name, Timing.of(values))
            for name, values in sorted(
                person_durations.items(), key=lambda kv: (-len(kv[1]), kv[0])
            )
        ],
        per_week=[
            Week(name, weeks[name], Timing.of(week_durations.get(name, [])))
            for name in sorted(weeks)
        ],
        blocking_per_attempt=blocking_per_attempt,
        over_cap=over_cap,
        host=host,
        per_session=per_session,
        blocking_per_hour=blocking_per_hour,
        over_budget=over_budget,
    )


# -- text ------------------------------------------------------------------------------------


def format_duration(ms: int | None) -> str:
    """``850ms``, ``42s``, ``4m 10s``, ``3h 05m``, ``2d 04h``; ``-`` for no figure."""
    if ms is None:
        return "-"
    if ms < 1000:
        return f"{ms}ms"
    seconds = ms // 1000
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours:02d}h"


def _ended(o: Outcomes) -> str:
    return (
        f"{o.answered} answered, {o.timed_out} timed out, {o.unavailable} unavailable, "
        f"{o.cancelled} cancelled, {o.waiting} waiting"
    )


def _timing(t: Timing) -> str:
    return f"median {format_duration(t.median_ms)}, p90 {format_duration(t.p90_ms)}"


def _hour(load: SessionLoad) -> str:
    return f", to {load.hour_ending[:16]}" if load.hour_ending else ""


def render_attention(report: AttentionReport) -> list[str]:
    """The report as the CLI prints it, one line per item."""
    window = f"since {report.since[:16]}" if report.since else "over the whole log"
    whose = f" (time to answer: {report.person}'s answers only)" if report.person else ""
    t = report.totals
    lines = [
        f"attention spent {window}{whose}",
        f"blocking questions: {t.asked} asked; {_ended(t)}",
    ]
    if report.host.asked:
        lines.append(
            f"  of them the host's (hooks' consents, the loop's clarifications; on no unit's "
            f"budget): {report.host.asked}; {_ended(report.host)}"
        )
    lines += [
        f"recaps (no one waits on them): {report.recaps}",
        f"reminders sent: {t.reminders}",
    ]
    if report.per_attempt:
        loads = [a.asked for a in report.per_attempt]
        top = report.per_attempt[0]
        where = f"unit {top.unit}" if top.unit else "no unit"
        if top.attempt is not None:
            where += f" attempt {top.attempt}"
        cap = (
            f"; the policy allows {report.blocking_per_attempt}"
            if report.blocking_per_attempt is not None
            else ""
        )
        lines.append(
            f"per attempt: {sum(loads) / len(loads):.1f} over {len(loads)} attempt(s), "
            f"at most {top.asked} ({where}){cap}"
        )
        for load in report.over_cap:
            lines.append(
                f"  over the cap: unit {load.unit or '-'} attempt {load.attempt or '-'} "
                f"asked {load.asked}"
            )
    if report.per_session:
        top_session = report.per_session[0]
        allows = (
            f"; the policy allows {report.blocking_per_hour} in any hour"
            if report.blocking_per_hour is not None
            else ""
        )
        lines.append(
            f"per session: {sum(p.asked for p in report.per_session)} over "
            f"{len(report.per_session)} session(s), at most {top_session.most_in_an_hour} in an "
            f"hour ({top_session.session}{_hour(top_session)}){allows}"
        )
        for busy in report.over_budget:
            lines.append(
                f"  over the budget: session {busy.session} asked {busy.most_in_an_hour} in the "
                f"hour{_hour(busy)}"
            )
    lines.append(f"time to answer: {_timing(report.timing)} ({report.timing.answered} answered)")
    if report.per_person:
        lines.append("per person:")
        width = max(len(p.person) for p in report.per_person)
        for p in report.per_person:
            lines.append(
                f"  {p.person:<{width}}  {p.timing.answered} answered  {_timing(p.timing)}"
            )
    if report.per_week:
        lines.append(
            "per week:   asked answered timed-out unavailable cancelled waiting reminders"
            "   median      p90"
        )
        for w in report.per_week:
            o = w.outcomes
            lines.append(
                f"  {w.week}  {o.asked:>5} {o.answered:>8} {o.timed_out:>9} {o.unavailable:>11} "
                f"{o.cancelled:>9} {o.waiting:>7} {o.reminders:>9} "
                f"{format_duration(w.timing.median_ms):>8} {format_duration(w.timing.p90_ms):>8}"
            )
    if not t.asked and not report.recaps and not t.reminders:
        lines.append("no questions in this window: nobody's attention was spent")
    return lines
