"""The pause gate's facts: what an attempt's own questions left behind, read from the log.

An attempt is paused while a blocking question its unit asked (``ask_human``, raised by S1) has
no answer: nobody was there and the silence was recorded, the person has not answered yet, or
the process that waited for the answer died. A silence once recorded pauses the attempt for the
rest of it, even if a person answers later: the answer becomes the next attempt's hint, not this
one's licence. The attention budget is counted the same way: the blocking questions the log
holds for the attempt. A consent the host asked about one of the agent's own tool calls (raised
by S3, from a hook) neither pauses the attempt nor spends its budget: the call it was asked for
is simply not made without a yes.

This is read from the log and nothing else. The agent runs as the same OS user as the person:
a journal of its session, or a process that waits for the answer, is something it can delete
or kill, and losing either must not lift the pause. Only the lines that mention an interaction
are parsed, so a read costs about one pass over the file's bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from regulator.protocol.interaction import CONTINUES_WITHOUT_ANSWER
from regulator.protocol.text import visible
from regulator.store import RecordNotFound, read_bytes

_MARK = b"interaction-"


@dataclass
class Question:
    """A blocking question a unit asked, and how it first ended (``None``: not yet)."""

    request_id: str
    obligation_id: str
    kind: str
    subject: str
    unit: str
    attempt: int
    raised_at: str
    outcome: str | None = None


@dataclass
class AttemptQuestions:
    """The attempt's own blocking questions, in the order they were asked."""

    questions: list[Question] = field(default_factory=list)

    @property
    def blocking_asked(self) -> int:
        return len(self.questions)

    @property
    def paused(self) -> str | None:
        """Why the attempt is paused (its first question without an answer), or ``None``."""
        for q in self.questions:
            if q.outcome != "answered":
                return (
                    f"{q.kind} unanswered: {visible(q.subject)} (obligation {q.obligation_id[:8]})"
                )
        return None


def _lines_with(data: bytes, mark: bytes) -> list[bytes]:
    """The complete lines of ``data`` that hold ``mark`` (a final line without ``\\n`` is being
    written, and is left for the next read)."""
    lines = []
    at = data.find(mark)
    while at != -1:
        start = data.rfind(b"\n", 0, at) + 1
        end = data.find(b"\n", at)
        if end == -1:
            break
        lines.append(data[start:end])
        at = data.find(mark, end + 1)
    return lines


def blocking_questions(data: bytes, asked_by: Callable[[str, int], bool]) -> list[Question]:
    """The blocking questions a unit asked (``ask_human``, raised by S1) in the log's bytes, for
    the units and attempts ``asked_by(unit, attempt)`` accepts, in the order they were asked."""
    found: dict[str, Question] = {}
    for line in _lines_with(data, _MARK):
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue  # a torn or foreign line: the readers report it as a problem
        if not isinstance(event, dict):
            continue
        kind = event.get("type")
        if kind == "interaction-requested":
            request = event.get("request")
            if not isinstance(request, dict) or request.get("raisedBy") != "S1":
                continue
            unit, attempt = request.get("unit"), request.get("attempt")
            if not isinstance(unit, str) or not isinstance(attempt, int):
                continue
            if not asked_by(unit, attempt):
                continue
            asked = request.get("kind")
            # A kind nobody knows is taken to wait: the pause fails closed.
            if CONTINUES_WITHOUT_ANSWER.get(asked) is True:  # type: ignore[arg-type]
                continue
            request_id = str(request.get("id"))
            found.setdefault(
                request_id,
                Question(
                    request_id,
                    str(request.get("obligationId", "")),
                    str(asked),
                    str(request.get("subject", "")),
                    unit,
                    attempt,
                    str(request.get("raisedAt", "")),
                ),
            )
        elif kind == "interaction-answered":
            question = found.get(str(event.get("requestId")))
            if question is not None and question.outcome is None:
                question.outcome = str(event.get("outcome"))
    return list(found.values())


def questions_of(data: bytes, unit_id: str, attempt: int) -> AttemptQuestions:
    """The blocking questions unit ``unit_id`` asked in ``attempt``, from the log's bytes."""
    return AttemptQuestions(
        blocking_questions(data, lambda unit, n: unit == unit_id and n == attempt)
    )


def attempt_questions(signals: Path, unit_id: str, attempt: int) -> AttemptQuestions:
    """The attempt's blocking questions, as the regulatory log at ``signals`` holds them now."""
    try:
        data = read_bytes(signals)
    except RecordNotFound:
        return AttemptQuestions()
    return questions_of(data, unit_id, attempt)
