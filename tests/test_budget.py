"""Budgets and model routes, against the seed "Recovery, budgets and model routes" (002)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from regulator.policy import load_definition
from regulator.protocol.execution import BudgetLedger, LedgerCeiling
from regulator.protocol.policies import Route
from regulator.rules.budget import (
    AvailableModels,
    BudgetGuard,
    BudgetMeter,
    available_models,
    choose_models,
    ledger_ceiling,
    no_model_error,
    read_ledger,
    summary,
)
from regulator.rules.recovery import cause_from_error
from regulator.store import Layout

BUDGET = load_definition(None).budget
SONNET, GPT5, FLASH = "anthropic/claude-sonnet-4-5", "openai/gpt-5", "google/gemini-3.8-flash"
START = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


class Clock:
    """Time that moves only when the test says so."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


def ceiling(*, cost: float | None = None) -> LedgerCeiling:
    return LedgerCeiling(tokens=1000, cost=cost, wall_clock_ms=60_000, turns=10)


# --- model routes -----------------------------------------------------------------------------


def test_models_are_tried_primary_first_then_the_fallbacks_in_order() -> None:
    route = BUDGET.route_for("implement")
    assert choose_models(route, {SONNET, GPT5, FLASH}) == [SONNET, GPT5, FLASH]


def test_only_available_models_of_the_route_are_chosen_and_nothing_outside_it() -> None:
    route = BUDGET.route_for("implement")
    assert choose_models(route, {FLASH, "anthropic/claude-opus-9", GPT5}) == [GPT5, FLASH]


def test_a_model_named_twice_in_a_route_is_tried_once() -> None:
    route = Route(primary=SONNET, fallback=[GPT5, SONNET, GPT5])
    assert choose_models(route, {SONNET, GPT5}) == [SONNET, GPT5]


def test_a_provider_with_an_api_key_makes_its_models_available() -> None:
    available = available_models({"OPENAI_API_KEY": "sk-test", "GEMINI_API_KEY": "g"})
    assert choose_models(BUDGET.route_for("implement"), available) == [GPT5, FLASH]
    assert SONNET not in available


def test_an_empty_credential_is_no_credential() -> None:
    assert SONNET not in available_models({"ANTHROPIC_API_KEY": "  "})
    assert SONNET in available_models({"ANTHROPIC_API_KEY": "k"})
    assert FLASH in available_models({"GOOGLE_API_KEY": "k"})


def test_regulator_models_lists_models_available_without_a_credential() -> None:
    available = available_models({"REGULATOR_MODELS": f" {FLASH}, ,openai/gpt-5-mini "})
    assert available == AvailableModels(
        providers=frozenset(), models=frozenset({FLASH, "openai/gpt-5-mini"})
    )
    assert choose_models(BUDGET.route_for("research"), available) == ["openai/gpt-5-mini", FLASH]


def test_no_model_in_the_route_available_is_an_environment_failure() -> None:
    route = BUDGET.route_for("implement")
    assert choose_models(route, available_models({})) == []
    message = no_model_error(route)
    assert SONNET in message and GPT5 in message
    assert cause_from_error(message) == "environment"


# --- ceilings ---------------------------------------------------------------------------------


def test_the_ledgers_ceiling_is_the_unit_types_ceiling_without_attempts() -> None:
    plan = ledger_ceiling(BUDGET.ceiling_for("plan"))
    assert plan.to_json_dict() == {
        "tokens": 150_000,
        "cost": 2,
        "wallClockMs": 1_200_000,
        "turns": 20,
    }


# --- the meter --------------------------------------------------------------------------------


def test_a_ceiling_is_crossed_when_consumption_reaches_it() -> None:
    meter = BudgetMeter(ceiling())
    meter.consume(tokens=999)
    assert meter.check() is None
    meter.consume(tokens=1)
    assert meter.check() == "tokens"


def test_dimensions_are_checked_tokens_cost_wall_clock_turns_and_the_first_is_named() -> None:
    meter = BudgetMeter(ceiling(cost=1.0))
    meter.consume(cost=1.5, turns=10, wall_clock_ms=60_000)
    assert meter.check() == "cost"
    meter = BudgetMeter(ceiling())
    meter.consume(turns=10, wall_clock_ms=60_000)
    assert meter.check() == "wallClockMs"


def test_cost_is_only_checked_when_the_ceiling_sets_one() -> None:
    meter = BudgetMeter(ceiling())
    meter.consume(cost=1_000_000.0)
    assert meter.check() is None


def test_the_first_dimension_crossed_stays_exhausted() -> None:
    meter = BudgetMeter(ceiling())
    meter.consume(turns=10)
    assert meter.check() == "turns"
    meter.consume(tokens=5000)
    assert meter.check() == "turns"
    assert meter.exhausted == "turns"


def test_consumption_never_goes_back() -> None:
    meter = BudgetMeter(ceiling())
    with pytest.raises(ValueError, match="negative"):
        meter.consume(tokens=-1)
    meter.elapse(5000)
    meter.elapse(1000)
    assert meter.wall_clock_ms == 5000


# --- the guard and its ledger -----------------------------------------------------------------


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    (tmp_path / ".regulator").mkdir()
    return Layout(tmp_path)


def on_disk(layout: Layout, attempt: int = 1) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(layout.budget("u1", attempt).read_text())
    return data


def test_the_guard_writes_the_ledger_when_the_attempt_starts(layout: Layout) -> None:
    clock = Clock()
    BudgetGuard.start(layout, "u1", 2, BUDGET.ceiling_for("implement"), clock=clock, model=SONNET)
    assert '"cost": 2,' in layout.budget("u1", 2).read_text()
    assert on_disk(layout, 2) == {
        "unitId": "u1",
        "attempt": 2,
        "ceiling": {"tokens": 400_000, "cost": 2, "wallClockMs": 1_200_000, "turns": 60},
        "consumed": {"tokens": 0, "cost": 0, "wallClockMs": 0, "turns": 0},
        "startedAt": "2026-12-01T12:00:00.000Z",
        "updatedAt": "2026-12-01T12:00:00.000Z",
        "models": [SONNET],
        "compactions": [],
    }


def test_the_guard_rewrites_the_ledger_as_usage_arrives(layout: Layout) -> None:
    clock = Clock()
    guard = BudgetGuard.start(layout, "u1", 1, ceiling(cost=5), clock=clock)
    clock.advance(seconds=3)
    assert guard.record_usage(tokens=120, cost=0.25, turns=1) is None
    data = on_disk(layout)
    assert data["consumed"] == {"tokens": 120, "cost": 0.25, "wallClockMs": 3000, "turns": 1}
    assert data["updatedAt"] == "2026-12-01T12:00:03.000Z"
    clock.advance(seconds=2)
    guard.record_usage(tokens=30, turns=1)
    assert on_disk(layout)["consumed"] == {
        "tokens": 150,
        "cost": 0.25,
        "wallClockMs": 5000,
        "turns": 2,
    }
    assert BudgetLedger.from_json_dict(on_disk(layout)) == guard.ledger


def test_exhaustion_is_recorded_once_at_the_reading_that_crossed_it(layout: Layout) -> None:
    clock = Clock()
    guard = BudgetGuard.start(layout, "u1", 1, ceiling(), clock=clock)
    clock.advance(seconds=1)
    assert guard.record_usage(tokens=1000, turns=1) == "tokens"
    assert guard.halted
    clock.advance(seconds=1)
    assert guard.record_usage(turns=20) == "tokens"
    data = on_disk(layout)
    assert data["exhausted"] == {"dimension": "tokens", "at": "2026-12-01T12:00:01.000Z"}
    assert data["consumed"]["turns"] == 21


def test_wall_clock_counts_from_the_start_of_the_session(layout: Layout) -> None:
    clock = Clock()
    guard = BudgetGuard.start(layout, "u1", 1, ceiling(), clock=clock)
    clock.advance(seconds=59)
    assert guard.tick() is None
    clock.advance(seconds=1)
    assert guard.tick() == "wallClockMs"
    assert on_disk(layout)["consumed"]["wallClockMs"] == 60_000


def test_every_model_is_recorded_in_order_without_consecutive_repeats(layout: Layout) -> None:
    guard = BudgetGuard.start(layout, "u1", 1, ceiling(), clock=Clock(), model=SONNET)
    for model in (SONNET, GPT5, GPT5, SONNET):
        guard.record_model(model)
    assert on_disk(layout)["models"] == [SONNET, GPT5, SONNET]


def test_compactions_are_appended_to_the_ledger(layout: Layout) -> None:
    clock = Clock()
    guard = BudgetGuard.start(layout, "u1", 1, ceiling(), clock=clock)
    clock.advance(minutes=1)
    guard.record_compaction("context window full", preserved=True)
    assert on_disk(layout)["compactions"] == [
        {"at": "2026-12-01T12:01:00.000Z", "reason": "context window full", "preserved": True}
    ]


def test_another_process_of_the_attempt_resumes_the_ledger_and_sees_the_halt(
    layout: Layout,
) -> None:
    clock = Clock()
    assert BudgetGuard.resume(layout, "u1", 1, clock=clock) is None
    first = BudgetGuard.start(layout, "u1", 1, ceiling(), clock=clock)
    first.record_usage(turns=10)
    second = BudgetGuard.resume(layout, "u1", 1, clock=clock)
    assert second is not None and second.halted
    assert second.record_usage(tokens=5) == "turns"
    ledger = read_ledger(layout, "u1", 1)
    assert ledger is not None and ledger.consumed.tokens == 5


# --- the summary ------------------------------------------------------------------------------


def ledger_with(tokens: int, turns: int, exhausted: str | None = None) -> BudgetLedger:
    data: dict[str, Any] = {
        "unitId": "u1",
        "attempt": 1,
        "ceiling": {"tokens": 400_000, "wallClockMs": 1_200_000, "turns": 60},
        "consumed": {"tokens": tokens, "cost": 0, "wallClockMs": 0, "turns": turns},
        "startedAt": "2026-12-01T12:00:00.000Z",
        "updatedAt": "2026-12-01T12:00:00.000Z",
        "models": [],
        "compactions": [],
    }
    if exhausted:
        data["exhausted"] = {"dimension": exhausted, "at": "2026-12-01T12:00:00.000Z"}
    return BudgetLedger.from_json_dict(data)


def test_the_summary_reads_tokens_with_a_percentage_and_turns() -> None:
    assert summary(ledger_with(120_000, 12)) == "120000/400000 tok (30%), 12/60 turns"


def test_the_summary_names_the_exhausted_dimension() -> None:
    assert summary(ledger_with(400_000, 12, "tokens")) == (
        "400000/400000 tok (100%), 12/60 turns, exhausted: tokens"
    )


def test_the_summary_percentage_is_capped_at_999() -> None:
    assert summary(ledger_with(40_000_000, 1)).startswith("40000000/400000 tok (999%)")
