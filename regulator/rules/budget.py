"""Budgets and model routes (docs/design.md#budgets-and-models): what one attempt may spend and run
on.

* :func:`choose_models` and :func:`available_models` pick the models a unit may run on: its
  route (primary, then fallbacks, in order), filtered to what is available. Nothing outside the
  route is ever tried.
* :class:`BudgetMeter` counts one attempt's consumption against its ceiling; the first ceiling
  crossed is recorded once and stays (a halted attempt does not come back to life because a
  later reading looks smaller).
* :class:`BudgetGuard` owns the attempt's ledger, ``budget.a<M>.json``, and rewrites it
  atomically as usage arrives, so the orchestrator closes on the ledger and the control room
  watches it move.

Availability rule. A model ``provider/model`` is available when either

1. its provider has a non-empty credential in the environment (:data:`PROVIDER_CREDENTIALS`:
   ``ANTHROPIC_API_KEY`` for ``anthropic``, ``OPENAI_API_KEY`` for ``openai``,
   ``GOOGLE_API_KEY`` or ``GEMINI_API_KEY`` for ``google``, …), or
2. its full id is listed in ``REGULATOR_MODELS`` (comma-separated), for tests, scripted
   sessions and hosts that authenticate some other way.

"Available" means only that much: the provider may still be down, which is what the fallbacks
are for. Credential values are never read beyond "is it set".
"""

from __future__ import annotations

import math
import os
from collections.abc import Container, Mapping
from dataclasses import dataclass
from pathlib import Path

from regulator.protocol.clock import Clock, now_iso, parse_iso, system_clock
from regulator.protocol.execution import (
    BudgetConsumed,
    BudgetDimension,
    BudgetExhaustion,
    BudgetLedger,
    Compaction,
    LedgerCeiling,
)
from regulator.protocol.policies import Ceiling, Route
from regulator.store import Layout, RecordNotFound, read_json, write_json_atomic

__all__ = [
    "MODELS_ENV",
    "PROVIDER_CREDENTIALS",
    "AvailableModels",
    "BudgetGuard",
    "BudgetMeter",
    "available_models",
    "choose_models",
    "ledger_ceiling",
    "no_model_error",
    "read_ledger",
    "summary",
]

MODELS_ENV = "REGULATOR_MODELS"

# Provider prefix of a model id → the environment variables any one of which authenticates it.
PROVIDER_CREDENTIALS: dict[str, tuple[str, ...]] = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openai": ("OPENAI_API_KEY",),
    "google": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    "mistral": ("MISTRAL_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
}


# --- model routes -----------------------------------------------------------------------------


@dataclass(frozen=True)
class AvailableModels:
    """The models this environment can run: a whole provider, or named models."""

    providers: frozenset[str]
    models: frozenset[str]

    def __contains__(self, model: object) -> bool:
        if not isinstance(model, str):
            return False
        provider = model.split("/", 1)[0]
        return model in self.models or provider in self.providers


def available_models(env: Mapping[str, str] | None = None) -> AvailableModels:
    """What is available under ``env`` (default ``os.environ``), by the module's rule."""
    env = os.environ if env is None else env
    providers = frozenset(
        provider
        for provider, names in PROVIDER_CREDENTIALS.items()
        if any(env.get(name, "").strip() for name in names)
    )
    listed = frozenset(name.strip() for name in env.get(MODELS_ENV, "").split(",") if name.strip())
    return AvailableModels(providers=providers, models=listed)


def choose_models(route: Route, available: Container[str]) -> list[str]:
    """The route in order (primary, then fallbacks), only what is available, each once."""
    chosen: list[str] = []
    for model in (route.primary, *route.fallback):
        if model in available and model not in chosen:
            chosen.append(model)
    return chosen


def no_model_error(route: Route) -> str:
    """The dispatch failure when nothing in the route is available (normalizes to environment)."""
    names = ", ".join(dict.fromkeys((route.primary, *route.fallback)))
    return (
        f"no model in the route is available ({names}); set the provider's API key or list "
        f"the model in {MODELS_ENV}"
    )


# --- ceilings and the meter -------------------------------------------------------------------


def ledger_ceiling(ceiling: Ceiling) -> LedgerCeiling:
    """The per-attempt part of a policy ceiling: everything but ``attempts`` (a unit's)."""
    cost: int | float | None = ceiling.cost
    # The policy model reads every cost as a float; write an integral one as the original
    # does (2, not 2.0).
    if isinstance(cost, float) and cost.is_integer():
        cost = int(cost)
    return LedgerCeiling(
        tokens=ceiling.tokens,
        cost=cost,
        wall_clock_ms=ceiling.wall_clock_ms,
        turns=ceiling.turns,
    )


class BudgetMeter:
    """One attempt's consumption against its ceiling."""

    def __init__(
        self, ceiling: LedgerCeiling | Ceiling, consumed: BudgetConsumed | None = None
    ) -> None:
        self.ceiling = ceiling if isinstance(ceiling, LedgerCeiling) else ledger_ceiling(ceiling)
        self.tokens = consumed.tokens if consumed else 0
        self.cost: int | float = consumed.cost if consumed else 0
        self.wall_clock_ms = consumed.wall_clock_ms if consumed else 0
        self.turns = consumed.turns if consumed else 0
        self.exhausted: BudgetDimension | None = None

    def consume(
        self, *, tokens: int = 0, cost: float = 0, wall_clock_ms: int = 0, turns: int = 0
    ) -> None:
        """Add a reading. Negative amounts are refused: consumption only grows."""
        if min(tokens, cost, wall_clock_ms, turns) < 0:
            raise ValueError("budget consumption cannot be negative")
        self.tokens += tokens
        if cost:
            self.cost += cost
        self.wall_clock_ms += wall_clock_ms
        self.turns += turns

    def elapse(self, wall_clock_ms: int) -> None:
        """Set the wall-clock reading (time since the session started); it never goes back."""
        self.wall_clock_ms = max(self.wall_clock_ms, wall_clock_ms)

    def check(self) -> BudgetDimension | None:
        """The first ceiling crossed (``consumed >= ceiling``), in the order tokens, cost (only
        if the ceiling sets one), wall-clock, turns. Once crossed it stays the answer."""
        if self.exhausted is None:
            c = self.ceiling
            if self.tokens >= c.tokens:
                self.exhausted = "tokens"
            elif c.cost is not None and self.cost >= c.cost:
                self.exhausted = "cost"
            elif self.wall_clock_ms >= c.wall_clock_ms:
                self.exhausted = "wallClockMs"
            elif self.turns >= c.turns:
                self.exhausted = "turns"
        return self.exhausted

    @property
    def consumed(self) -> BudgetConsumed:
        return BudgetConsumed(
            tokens=self.tokens,
            cost=self.cost,
            wall_clock_ms=self.wall_clock_ms,
            turns=self.turns,
        )


# --- the guard and its ledger -----------------------------------------------------------------


def read_ledger(layout: Layout, unit_id: str, attempt: int) -> BudgetLedger | None:
    """The attempt's ledger, or ``None`` if the guard never wrote one."""
    try:
        data = read_json(layout.budget(unit_id, attempt))
    except RecordNotFound:
        return None
    return BudgetLedger.from_json_dict(data)


class BudgetGuard:
    """Meters one attempt and keeps ``budget.a<M>.json`` current.

    Every change rewrites the file atomically: a reader sees the previous ledger or the new one.
    The guard checks between readings, so the turn that crosses a ceiling completes; after that
    :attr:`halted` is true for good, and the caller refuses every tool with an effect.
    """

    def __init__(self, layout: Layout, ledger: BudgetLedger, *, clock: Clock = system_clock):
        self.layout = layout
        self.clock = clock
        self._ledger = ledger
        self._started = parse_iso(ledger.started_at)
        self.meter = BudgetMeter(ledger.ceiling, ledger.consumed)
        if ledger.exhausted is not None:
            self.meter.exhausted = ledger.exhausted.dimension

    @classmethod
    def start(
        cls,
        layout: Layout,
        unit_id: str,
        attempt: int,
        ceiling: Ceiling | LedgerCeiling,
        *,
        clock: Clock = system_clock,
        model: str | None = None,
    ) -> BudgetGuard:
        """A fresh ledger for the attempt, written at once (the session has started)."""
        at = now_iso(clock)
        ledger = BudgetLedger(
            unit_id=unit_id,
            attempt=attempt,
            ceiling=ceiling if isinstance(ceiling, LedgerCeiling) else ledger_ceiling(ceiling),
            consumed=BudgetConsumed(tokens=0, cost=0, wall_clock_ms=0, turns=0),
            started_at=at,
            updated_at=at,
            models=[model] if model else [],
            compactions=[],
        )
        guard = cls(layout, ledger, clock=clock)
        guard._write()
        return guard

    @classmethod
    def resume(
        cls, layout: Layout, unit_id: str, attempt: int, *, clock: Clock = system_clock
    ) -> BudgetGuard | None:
        """The guard over an existing ledger (another process of the same attempt)."""
        ledger = read_ledger(layout, unit_id, attempt)
        return None if ledger is None else cls(layout, ledger, clock=clock)

    @property
    def ledger(self) -> BudgetLedger:
        return self._ledger

    @property
    def path(self) -> Path:
        return self.layout.budget(self._ledger.unit_id, self._ledger.attempt)

    @property
    def exhausted(self) -> BudgetExhaustion | None:
        return self._ledger.exhausted

    @property
    def halted(self) -> bool:
        return self._ledger.exhausted is not None

    def record_usage(
        self,
        *,
        tokens: int = 0,
        cost: float = 0,
        turns: int = 0,
        wall_clock_ms: int | None = None,
    ) -> BudgetDimension | None:
        """Add a usage reading, check the ceilings, rewrite the ledger; the crossed dimension.

        Wall-clock is measured from the ledger's ``startedAt`` by the guard's clock unless the
        caller gives the elapsed time itself.
        """
        self.meter.consume(tokens=tokens, cost=cost, turns=turns)
        return self._update(wall_clock_ms)

    def tick(self, wall_clock_ms: int | None = None) -> BudgetDimension | None:
        """Only time passed: check the wall-clock ceiling (and rewrite the ledger)."""
        return self._update(wall_clock_ms)

    def record_model(self, model: str) -> None:
        """The attempt now runs on ``model``; a switch back is a new entry, a repeat is not."""
        models = self._ledger.models
        if models and models[-1] == model:
            return
        self._replace(models=[*models, model])

    def record_compaction(self, reason: str, preserved: bool) -> None:
        entry = Compaction(at=now_iso(self.clock), reason=reason, preserved=preserved)
        self._replace(compactions=[*self._ledger.compactions, entry])

    # -- internals -------------------------------------------------------------------------

    def _elapsed_ms(self) -> int:
        return max(0, int((self.clock() - self._started).total_seconds() * 1000))

    def _update(self, wall_clock_ms: int | None) -> BudgetDimension | None:
        self.meter.elapse(self._elapsed_ms() if wall_clock_ms is None else wall_clock_ms)
        dimension = self.meter.check()
        exhausted = self._ledger.exhausted
        if dimension is not None and exhausted is None:
            # Recorded once, at the reading that crossed it.
            exhausted = BudgetExhaustion(dimension=dimension, at=now_iso(self.clock))
        self._replace(consumed=self.meter.consumed, exhausted=exhausted)
        return dimension

    def _replace(self, **changes: object) -> None:
        self._ledger = self._ledger.replace(**{**changes, "updated_at": now_iso(self.clock)})
        self._write()

    def _write(self) -> None:
        write_json_atomic(self.path, self._ledger.to_json_dict())


# --- the summary line -------------------------------------------------------------------------

_PCT_CAP = 999


def summary(ledger: BudgetLedger) -> str:
    """``120000/400000 tok (30%), 12/60 turns[, exhausted: tokens]`` for status and unit show."""
    used, cap = ledger.consumed.tokens, ledger.ceiling.tokens
    # Half rounds up, and an absurd overrun shows as 999 rather than widening the column.
    pct = min(_PCT_CAP, math.floor(used * 100 / cap + 0.5))
    text = f"{used}/{cap} tok ({pct}%), {ledger.consumed.turns}/{ledger.ceiling.turns} turns"
    if ledger.exhausted is not None:
        text += f", exhausted: {ledger.exhausted.dimension}"
    return text
