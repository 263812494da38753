"""The attention budget: whether a unit may ask one more blocking question, counted from the log.

What counts is one thing, for the gate (``SessionTools._tool_ask_human``) and for the report
(``regulator attention``) alike: the blocking questions a unit asked itself (``ask_human``, raised
by S1; :func:`regulator.rules.pause.blocking_questions`). A question the host asks (a hook's
consent for one of the agent's own tool calls, the loop's clarification, raised by S3) spends a
person's attention too, and the report shows it, but it is no unit's to spend. What the unit's
questions are counted against depends on the unit:

- a contracted unit: ``attention.blockingPerAttempt`` over its attempt (the original's cap);
- a session unit (an agent a person runs by hand): ``attention.session.blockingPerHour`` over the
  60 minutes before each question, across the runs of the session. A session is one attempt that
  lasts as long as the person works; a cap per attempt would silence it for the rest of the day
  after its first questions, where a rate keeps it from becoming a stream whatever its length.
  The runs of a session are ``session-KEY``, ``session-KEY-2``, … (:func:`session_of`): a resumed
  Claude Code session, or a script whose every ``regulator ask`` is a run of its own, keeps the
  hour of the run before it.

Pure: the caller gives the questions and the moment.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from regulator.protocol.clock import parse_iso

#: The window of a session's budget: a question counts for the hour after it was asked.
HOUR = timedelta(hours=1)

# A later run of a session: ``session-KEY-N``, N from 2 to 999 without a leading zero, as
# ``regulator.host.session_definition.candidates`` names them (a test holds the two together).
_LATER_RUN = re.compile(r"(session-.+)-([2-9]|[1-9][0-9]{1,2})")

#: What a unit is told to do once its budget is spent.
CONTRACTED_INSTEAD = (
    "Record the decision as residualUncertainty in your report, where the routing policy "
    "decides what it costs, or offer it as a recap"
)
SESSION_INSTEAD = "Decide it yourself where it is reversible and offer it as a recap"


def session_of(unit_id: str) -> str:
    """The session ``unit_id`` is a run of, named by its first run's unit id.

    ``session-KEY-3`` is a run of ``session-KEY``. The name cannot tell a key that ends in
    ``-N`` from a later run, so every ``-N`` is taken off: all the runs of key ``k-7``
    (``session-k-7``, ``session-k-7-2``, …) are one session, ``session-k``, shared with key
    ``k``'s runs if there are any, which can only make the budget smaller.
    """
    match = _LATER_RUN.fullmatch(unit_id)
    while match is not None:
        unit_id = match.group(1)
        match = _LATER_RUN.fullmatch(unit_id)
    return unit_id


def raised(text: str) -> datetime | None:
    try:
        return parse_iso(text)
    except ValueError:
        return None


def in_the_hour(raised_at: Sequence[datetime | None], now: datetime) -> list[datetime | None]:
    """Of the times questions were raised, those in the hour before ``now``.

    A time nobody can read, or one after ``now`` (another process's clock ahead of this one),
    counts: the budget fails closed.
    """
    start = now - HOUR
    return [t for t in raised_at if t is None or t > start]


def most_in_an_hour(raised_at: Sequence[datetime]) -> tuple[int, datetime | None]:
    """The most questions in the hour before any one of them, and when that hour ended.

    The gate refuses a question when the hour before it already holds the budget, so on a log
    the gate kept this is at most the budget; the report compares the two.
    """
    times = sorted(raised_at)
    most, at, first = 0, None, 0
    for last, moment in enumerate(times):
        while times[first] <= moment - HOUR:
            first += 1
        if last - first + 1 > most:
            most, at = last - first + 1, moment
    return most, at


def attempt_refusal(asked: int, per_attempt: int) -> str | None:
    """Why a contracted unit's attempt may not ask another blocking question, or ``None``."""
    if asked < per_attempt:
        return None
    return (
        f"the attention budget is spent: {per_attempt} blocking question(s) per attempt. "
        f"{CONTRACTED_INSTEAD}"
    )


def session_refusal(
    raised_at: Sequence[datetime | None], per_hour: int, now: datetime
) -> str | None:
    """Why a session may not ask another blocking question now, or ``None``.

    ``raised_at``: when the session's blocking questions were raised, in all its runs.
    """
    recent = in_the_hour(raised_at, now)
    if len(recent) < per_hour:
        return None
    if per_hour == 0:
        return (
            "the attention budget is spent: the interaction policy allows a session no "
            f"blocking question (attention.session.blockingPerHour is 0). {SESSION_INSTEAD}"
        )
    known = sorted(t for t in recent if t is not None)
    # A slot frees when the question that makes the count reach the budget leaves the hour.
    leaving = len(recent) - per_hour
    when = ""
    if len(known) == len(recent):
        frees = (known[leaving] + HOUR).astimezone(UTC)
        when = f", or ask after {frees:%H:%M:%S} UTC, when the hour holds fewer"
    return (
        f"the attention budget is spent: {len(recent)} blocking question(s) in the last hour, "
        f"and a session may ask {per_hour} in any hour. {SESSION_INSTEAD}{when}"
    )


__all__ = [
    "CONTRACTED_INSTEAD",
    "HOUR",
    "SESSION_INSTEAD",
    "attempt_refusal",
    "in_the_hour",
    "most_in_an_hour",
    "raised",
    "session_of",
    "session_refusal",
]
