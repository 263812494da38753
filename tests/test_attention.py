"""``attention``: the figures on a log whose asks, answers and reminders are known."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from regulator.protocol.clock import iso
from regulator.protocol.interaction import InteractionRequest, severity_for_kind
from regulator.rules.ledger import Ledger
from regulator.rules.regulatory_log import RegulatoryLog
from regulator.store import Layout
from regulator.views.attention import (
    attention_report,
    format_duration,
    iso_week,
    parse_age,
    percentile,
    render_attention,
)

from .conftest import cli, run_cli

# A Monday: ISO week 2026-W10.
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
S, M, H, D = (
    timedelta(seconds=1),
    timedelta(minutes=1),
    timedelta(hours=1),
    timedelta(days=1),
)


class Clock:
    def __init__(self) -> None:
        self.moment = T0

    def __call__(self) -> datetime:
        return self.moment


class Asker:
    """Writes questions, answers and deliveries through the real ledger at chosen times."""

    def __init__(self, root: Path) -> None:
        (root / ".regulator").mkdir(exist_ok=True)
        self.clock = Clock()
        self.ledger = Ledger(Layout(root), clock=self.clock)

    def ask(
        self, kind: str, unit: str, attempt: int, at: datetime, *, raised_by: str = "S1"
    ) -> tuple[str, str]:
        """A question ``unit`` asked (S1), or the host asked about it (S3: a hook's consent)."""
        self.clock.moment = at
        request_id = str(uuid.uuid4())
        with self.ledger.transaction() as txn:
            ob = txn.open(
                subject=f"{kind}: something",
                unit=unit,
                concern="interaction",
                sources=[f"ask:{request_id}"],
                severity=severity_for_kind(kind),  # type: ignore[arg-type]
                consumer="human",
                blocks=kind != "recap",
                question="which?",
                opened_by=raised_by,
            )
            txn.request_interaction(
                InteractionRequest.from_json_dict(
                    {
                        "id": request_id,
                        "kind": kind,
                        "subject": "something",
                        "question": "which?",
                        "options": ["a", "b"] if kind == "choice" else None,
                        "action": "push" if kind == "consent" else None,
                        "severity": severity_for_kind(kind),  # type: ignore[arg-type]
                        "unit": unit,
                        "attempt": attempt,
                        "obligationId": ob.id,
                        "evidence": [],
                        "raisedBy": raised_by,
                        "raisedAt": iso(at),
                        "timeoutMs": 1000,
                        "channel": "none",
                    }
                ),
                by=raised_by,
            )
        return request_id, ob.id

    def ended(self, request_id: str, outcome: str, at: datetime) -> None:
        self.clock.moment = at
        with self.ledger.transaction() as txn:
            txn.answer_interaction(request_id, outcome=outcome, by="S1", channel="none")

    def answer(self, ids: tuple[str, str], by: str, at: datetime) -> None:
        self.clock.moment = at
        with self.ledger.transaction() as txn:
            txn.answer_interaction(ids[0], outcome="answered", by=by, channel="cli", answer="a")
            txn.resolve(ids[1], by, "fixed", "a")

    def deliver(self, obligation_id: str, at: datetime, *, reminder: bool) -> None:
        self.clock.moment = at
        with self.ledger.transaction() as txn:
            txn.deliver(obligation_id, "S3", "outbox", reminder=reminder)

    def resolve(self, obligation_id: str, at: datetime) -> None:
        self.clock.moment = at
        with self.ledger.transaction() as txn:
            txn.resolve(obligation_id, "alice", "no-action", "moot")


def known_log(root: Path, t0: datetime = T0) -> None:
    """Two weeks of questions whose figures are worked out by hand in the tests below."""
    a = Asker(root)
    # Week 1 (2026-W10): four blocking questions and a recap.
    q1 = a.ask("consent", "u1", 1, t0)
    a.answer(q1, "alice", t0 + 60 * S)
    q2 = a.ask("choice", "u1", 1, t0 + H)
    a.answer(q2, "bob", t0 + H + 120 * S)
    a.ask("recap", "u1", 1, t0 + 90 * M)
    q3 = a.ask("clarification", "u2", 1, t0 + 2 * H)
    a.ended(q3[0], "timed-out", t0 + 2 * H + 300 * S)
    a.answer(q3, "alice", t0 + 2 * H + 600 * S)
    q4 = a.ask("uat", "u3", 1, t0 + 3 * H)
    a.ended(q4[0], "unavailable", t0 + 3 * H + S)
    a.deliver(q4[1], t0 + 3 * H + 2 * S, reminder=False)
    a.deliver(q4[1], t0 + 4 * H + 2 * S, reminder=True)
    # Week 2 (2026-W11): two more.
    q5 = a.ask("consent", "u1", 2, t0 + 7 * D)
    a.answer(q5, "alice", t0 + 7 * D + 1800 * S)
    q6 = a.ask("choice", "u4", 1, t0 + 7 * D + H)
    a.ended(q6[0], "cancelled", t0 + 7 * D + H + S)
    a.resolve(q6[1], t0 + 7 * D + 2 * H)


def folded(root: Path) -> RegulatoryLog:
    log = RegulatoryLog(Layout(root))
    log.refresh()
    return log


NOW = T0 + 7 * D + 3 * H


def test_attention_figures_on_a_log_with_known_asks_and_answers(tmp_path: Path) -> None:
    known_log(tmp_path)
    report = attention_report(folded(tmp_path), NOW, since=None, blocking_per_attempt=1)
    t = report.totals
    assert (t.asked, t.answered, t.timed_out, t.unavailable, t.cancelled, t.waiting) == (
        6,
        4,
        1,
        1,
        1,
        1,
    )
    assert (t.reminders, report.recaps) == (1, 1)
    # Times to answer: 60 s, 120 s, 600 s, 1800 s.
    assert report.timing.answered == 4
    assert report.timing.median_ms == 360_000  # (120 s + 600 s) / 2
    assert report.timing.p90_ms == 1_440_000  # 600 s + 0.7 × (1800 s − 600 s)
    people = {p.person: p.timing for p in report.per_person}
    assert [p.person for p in report.per_person] == ["alice", "bob"]
    assert (people["alice"].answered, people["alice"].median_ms, people["alice"].p90_ms) == (
        3,
        600_000,
        1_560_000,  # 600 s + 0.8 × (1800 s − 600 s)
    )
    assert (people["bob"].median_ms, people["bob"].p90_ms) == (120_000, 120_000)
    weeks = {w.week: w for w in report.per_week}
    assert list(weeks) == ["2026-W10", "2026-W11"]
    w10, w11 = weeks["2026-W10"], weeks["2026-W11"]
    assert (w10.outcomes.asked, w10.outcomes.answered, w10.outcomes.reminders) == (4, 3, 1)
    assert (w10.timing.median_ms, w10.timing.p90_ms) == (120_000, 504_000)
    assert (w11.outcomes.asked, w11.outcomes.answered, w11.outcomes.cancelled) == (2, 1, 1)
    assert (w11.timing.median_ms, w11.timing.p90_ms) == (1_800_000, 1_800_000)
    # Per attempt: u1's first attempt asked two blocking questions (the recap does not count).
    top = report.per_attempt[0]
    assert (top.unit, top.attempt, top.asked) == ("u1", 1, 2)
    assert len(report.per_attempt) == 5
    assert [(a.unit, a.attempt) for a in report.over_cap] == [("u1", 1)]


def test_the_since_window_counts_questions_raised_in_it_and_reminders_sent_in_it(
    tmp_path: Path,
) -> None:
    known_log(tmp_path)
    report = attention_report(folded(tmp_path), NOW, since=parse_age("3d"))
    assert report.since == iso(NOW - 3 * D)
    assert (report.totals.asked, report.totals.answered, report.totals.reminders) == (2, 1, 0)
    assert report.recaps == 0
    assert [w.week for w in report.per_week] == ["2026-W11"]
    assert report.timing.median_ms == 1_800_000


def test_person_restricts_time_to_answer_to_that_persons_answers(tmp_path: Path) -> None:
    known_log(tmp_path)
    report = attention_report(folded(tmp_path), NOW, person="alice")
    assert [p.person for p in report.per_person] == ["alice"]
    assert (report.timing.answered, report.timing.median_ms, report.timing.p90_ms) == (
        3,
        600_000,
        1_560_000,
    )
    assert report.totals.asked == 6  # what was asked is the instance's, whoever answers


def test_an_empty_log_spends_no_attention(tmp_path: Path) -> None:
    (tmp_path / ".regulator").mkdir()
    report = attention_report(folded(tmp_path), NOW, since=parse_age("7d"))
    assert report.totals.asked == 0 and report.timing.median_ms is None
    assert render_attention(report)[-1] == (
        "no questions in this window: nobody's attention was spent"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [("12h", 12 * H), ("7d", 7 * D), ("4w", 28 * D), ("all", None)],
)
def test_ages_in_hours_days_and_weeks(text: str, expected: timedelta | None) -> None:
    assert parse_age(text) == expected


@pytest.mark.parametrize("text", ["7", "0d", "-1d", "7 days", "1.5d", "d", ""])
def test_a_bad_age_is_refused_naming_the_argument(text: str) -> None:
    with pytest.raises(ValueError, match=r"^--since .* is not an age"):
        parse_age(text)


def test_percentiles_interpolate_between_closest_ranks() -> None:
    assert percentile(list(range(1, 11)), 0.9) == 9  # 9.1, rounded to the millisecond
    assert percentile([10, 20, 30, 40], 0.5) == 25
    assert percentile([7], 0.9) == 7
    assert percentile([], 0.5) is None


def test_durations_and_weeks_read_as_people_write_them() -> None:
    assert [format_duration(v) for v in (None, 850, 42_000, 250_000, 11_100_000)] == [
        "-",
        "850ms",
        "42s",
        "4m 10s",
        "3h 05m",
    ]
    assert iso_week(datetime(2026, 1, 1, tzinfo=UTC)) == "2026-W01"
    assert iso_week(datetime(2027, 1, 1, tzinfo=UTC)) == "2026-W53"


# -- the CLI ------------------------------------------------------------------------------------


def test_attention_cli_prints_the_figures_as_json_and_text(instance: Path) -> None:
    now = datetime.now(UTC)
    monday = (now - timedelta(days=28)).replace(hour=9, minute=0, second=0, microsecond=0)
    t0 = monday - timedelta(days=monday.weekday())
    known_log(instance, t0)
    result = run_cli("attention", "--since", "all", "--json", cwd=instance)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert (data["asked"], data["answered"], data["timedOut"], data["waiting"]) == (6, 4, 1, 1)
    assert data["timeToAnswer"] == {"answered": 4, "medianMs": 360_000, "p90Ms": 1_440_000}
    assert data["blockingPerAttempt"] == 2 and data["overCap"] == []
    assert [w["week"] for w in data["perWeek"]] == [iso_week(t0), iso_week(t0 + 7 * D)]
    assert data["perPerson"][0] == {
        "person": "alice",
        "timeToAnswer": {"answered": 3, "medianMs": 600_000, "p90Ms": 1_560_000},
    }

    text = cli("attention", "--since", "all", "--person", "bob", cwd=instance)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == "attention spent over the whole log (time to answer: bob's answers only)"
    assert lines[1] == (
        "blocking questions: 6 asked; 4 answered, 1 timed out, 1 unavailable, 1 cancelled, "
        "1 waiting"
    )
    assert "time to answer: median 2m 00s, p90 2m 00s (1 answered)" in lines
    assert "  bob  1 answered  median 2m 00s, p90 2m 00s" in lines

    # The default window is a week: the questions four weeks ago are outside it.
    recent = json.loads(cli("attention", "--json", cwd=instance).stdout)
    assert recent["asked"] == 0


def test_attention_cli_refuses_a_bad_since_with_usage(instance: Path) -> None:
    result = cli("attention", "--since", "soon", cwd=instance)
    assert result.returncode == 2
    assert result.stderr.startswith("usage: regulator attention")
    assert 'regulator: --since "soon" is not an age' in result.stderr
