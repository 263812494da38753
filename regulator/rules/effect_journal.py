"""The effect journal, ``effects.ndjson`` (docs/design.md#the-effect-journal): act at most once on
the world.

Before a side effect (an outbox line, a notification) its key is written ``intended``; after it,
``committed`` with the result. A process that dies in between leaves a key ``intended``, and
reconciliation asks the world whether the effect happened (``confirmed``) or not (``absent``)
instead of assuming either. A key that is ``committed`` or ``confirmed`` is never acted on again.

Every write that depends on the journal's state (``begin``, ``commit``, ``reconcile``) folds the
file up to its end while holding the file's lock, so two processes cannot both begin the same
effect after one of them committed it. Lock order everywhere: signals → effects → outbox.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from regulator.protocol.clock import Clock, now_iso, system_clock
from regulator.protocol.effects import EffectJournalEntry, parse_effect_line
from regulator.protocol.entry import validate_record
from regulator.protocol.errors import Refused
from regulator.protocol.vocab import EffectStatus
from regulator.store import Layout, LogAppender, Problem, TailReader, dumps_line, locked_log

#: Statuses after which the effect is known to have happened: never act on the key again.
DONE_STATUSES: frozenset[str] = frozenset({"committed", "confirmed"})


class EffectJournalError(Refused):
    """A journal write refused (nothing was written)."""


# --------------------------------------------------------------------------------------------
# The key


def effect_key(unit_id: str | None, tool: str, args: Any) -> str:
    """First 24 hex digits of SHA-256 over ``[unitId or null, tool, args]`` as JS writes it."""
    text = js_json([unit_id, tool, args])
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


_SURROGATE = re.compile("[\ud800-\udfff]")


def js_json(value: Any) -> str:
    """``JSON.stringify(value)``: compact, keys in insertion order, non-ASCII written as is.

    Python's encoder agrees with JS on strings except lone surrogates (JS escapes them) and on
    numbers except their spelling (``1.0`` is ``1`` in JS, ``1e16`` is ``10000000000000000``);
    both are handled here so a key computed in Python matches the original's.
    """
    return _js(value)


def _js(value: Any) -> str:
    if value is None or value is True or value is False:
        return json.dumps(value)
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    if isinstance(value, int):
        # JS numbers are doubles: an integer beyond 2**53 is spelled as the double it becomes.
        return str(value) if abs(value) <= 2**53 else _js_number(float(value))
    if isinstance(value, float):
        return _js_number(value)
    if isinstance(value, Mapping):
        items = (f"{_js(str(k))}:{_js(v)}" for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        return "[" + ",".join(_js(v) for v in value) + "]"
    raise TypeError(f"{type(value).__name__} is not JSON")


def _js_number(value: float) -> str:
    """``Number.prototype.toString`` for a double (ECMA-262 Number::toString, radix 10)."""
    if not math.isfinite(value):
        return "null"  # JSON.stringify writes NaN and ±Infinity as null
    if value == 0:
        return "0"  # -0 too
    sign = "-" if value < 0 else ""
    # repr() is the shortest round-tripping spelling, the same digits JS chooses.
    _, digit_tuple, exponent = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(str(d) for d in digit_tuple)
    assert isinstance(exponent, int)
    k = len(digits)
    n = k + exponent  # value = 0.digits × 10**n
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = f"{digits[:n]}.{digits[n:]}"
    elif -6 < n <= 0:
        body = "0." + "0" * -n + digits
    else:
        e = n - 1
        mantissa = digits if k == 1 else f"{digits[0]}.{digits[1:]}"
        body = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + body


# --------------------------------------------------------------------------------------------
# States


@dataclass(slots=True)
class EffectState:
    """One key folded from its lines: the first fixes what it is, the last what became of it."""

    key: str
    tool: str
    description: str
    status: EffectStatus
    intended_at: str
    unit_id: str | None = None
    result: str | None = None

    @property
    def done(self) -> bool:
        return self.status in DONE_STATUSES

    def to_json(self) -> dict[str, Any]:
        """camelCase, absent optionals left out, in the original's ``EffectState`` order."""
        out: dict[str, Any] = {
            "key": self.key,
            "tool": self.tool,
            "description": self.description,
            "status": self.status,
            "intendedAt": self.intended_at,
        }
        if self.unit_id is not None:
            out["unitId"] = self.unit_id
        if self.result is not None:
            out["result"] = self.result
        return out


@dataclass(frozen=True, slots=True)
class Begun:
    """What :meth:`EffectJournal.begin` decided: act (``proceed``) or not, and what was there."""

    proceed: bool
    prior: EffectState | None = None


class EffectJournal:
    """The folded ``effects.ndjson`` of one instance, and its three writes."""

    def __init__(self, layout: Layout, clock: Clock = system_clock) -> None:
        self.layout = layout
        self.path = layout.effects
        self.clock = clock
        self._reader: TailReader[EffectJournalEntry] = TailReader(
            self.path, parse_effect_line, label=layout.label(self.path)
        )
        self._states: dict[str, EffectState] = {}

    # -- reading ---------------------------------------------------------------------------

    def refresh(self) -> None:
        """Fold what was appended since the last refresh."""
        while True:
            batch = self._reader.refresh()
            if batch.restarted:
                self._states = {}
            for entry in batch.items:
                self._fold(entry)
            if not batch.more:
                return

    def _fold(self, entry: EffectJournalEntry) -> None:
        state = self._states.get(entry.key)
        if state is None:
            self._states[entry.key] = EffectState(
                key=entry.key,
                tool=entry.tool,
                description=entry.description,
                status=entry.status,
                intended_at=entry.at,
                unit_id=entry.unit_id,
                result=entry.result,
            )
            return
        state.status = entry.status
        if entry.result is not None:
            state.result = entry.result

    @property
    def problems(self) -> list[Problem]:
        """Lines that could not be read (skipped; every other line still counts)."""
        return list(self._reader.problems)

    def states(self) -> list[EffectState]:
        """Every key's current state, in first-intended order (copies: safe to keep)."""
        self.refresh()
        return [replace(s) for s in self._states.values()]

    def state(self, key: str) -> EffectState | None:
        self.refresh()
        found = self._states.get(key)
        return None if found is None else replace(found)

    def pending(self) -> list[EffectState]:
        """Intentions with no recorded outcome: what a crash between acting and recording leaves."""
        return [s for s in self.states() if s.status == "intended"]

    # -- writing ---------------------------------------------------------------------------

    def begin(self, key: str, tool: str, description: str, unit_id: str | None = None) -> Begun:
        """Declare the intention, unless the key already happened (then ``proceed`` is false).

        A key left ``intended`` by a crashed run, or reconciled ``absent``, is declared again:
        reconciliation, not intention, decides what happened to it.
        """
        line: dict[str, Any] = {"key": key, "tool": tool, "description": description}
        if unit_id is not None:
            line["unitId"] = unit_id
        with locked_log(self.path) as out:
            self.refresh()
            found = self._states.get(key)
            prior = None if found is None else replace(found)
            if prior is not None and prior.done:
                return Begun(proceed=False, prior=prior)
            line.update(status="intended", at=now_iso(self.clock))
            self._append(out, line)
        self.refresh()
        return Begun(proceed=True, prior=prior)

    def commit(self, key: str, result: str) -> EffectState:
        """Record that the effect happened, with its result."""
        with locked_log(self.path) as out:
            self.refresh()
            prior = self._states.get(key)
            if prior is None:
                raise EffectJournalError(f"no intention recorded for effect {key}")
            line: dict[str, Any] = {
                "key": key,
                "tool": prior.tool,
                "description": prior.description,
                "status": "committed",
                "at": now_iso(self.clock),
                "result": result,
            }
            if prior.unit_id is not None:
                line["unitId"] = prior.unit_id
            self._append(out, line)
        self.refresh()
        found = self._states[key]
        return replace(found)

    def reconcile(
        self,
        verify: Callable[[EffectState], bool | tuple[bool, str]],
        *,
        where: Callable[[EffectState], bool] | None = None,
    ) -> list[EffectState]:
        """Ask the world about each pending key (``where`` narrows which): confirmed or absent.

        ``verify`` runs under the journal's lock, so nobody commits a key while it is judged.
        It may return ``(happened, result)`` to record what was found (an outcome nobody can
        observe, said as such). Give ``where`` when other writers may be mid-effect on keys
        that are not yours.
        """
        reconciled: list[EffectState] = []
        with locked_log(self.path) as out:
            self.refresh()
            lines: list[bytes] = []
            for state in list(self._states.values()):
                if state.status != "intended" or (where is not None and not where(state)):
                    continue
                verdict = verify(replace(state))
                happened, result = verdict if isinstance(verdict, tuple) else (verdict, None)
                status: EffectStatus = "confirmed" if happened else "absent"
                line: dict[str, Any] = {
                    "key": state.key,
                    "tool": state.tool,
                    "description": state.description,
                    "status": status,
                    "at": now_iso(self.clock),
                }
                if state.unit_id is not None:
                    line["unitId"] = state.unit_id
                if result:
                    line["result"] = result
                lines.append(self._line(line))
                reconciled.append(replace(state, status=status, result=result or state.result))
            if lines:
                out.append(lines)
        self.refresh()
        return reconciled

    def _line(self, line: dict[str, Any]) -> bytes:
        try:
            validate_record(EffectJournalEntry, line, label="effect journal entry")
        except ValueError as exc:
            raise EffectJournalError(str(exc)) from None
        # The dict, not the model: its key order is the original's line order.
        return dumps_line(line)

    def _append(self, out: LogAppender, line: dict[str, Any]) -> None:
        out.append([self._line(line)])
