"""Scripted sessions: a YAML scenario of tool calls and outcomes, played through the real tools.

A scenario lists attempts; attempt N plays ``attempts[N-1]`` (the last one again when there
are fewer). Each step is one of:

``call: {tool: NAME, input: {...}}``   call a session tool (a refusal is observed, not fatal)
``report: {...}``                      report_result, unset fields defaulting to empty lists
``ask: {kind, subject, question, options?, action?}``   ask_human
``edit: {path, content}``              write a file in the worktree
``commit: MESSAGE``                    commit everything in the worktree
``usage: {tokens, cost, turns}``       usage the provider reported (metered by the guard)
``exceed: DIMENSION``                  usage that crosses the attempt's ceiling on DIMENSION
``sleep: MS``                          wall-clock passes (interrupted at the ceiling)
``fail: TEXT``                         the session dies with an error
``provider-error: TEXT``               the model's provider fails (failover to the next model)
``end: silent``                        stop here, without a report

A scenario stops early when the budget guard halts the attempt, as a real session is stopped.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import yaml

from regulator.host import gitops
from regulator.host.sessions import SessionAdapter, SessionResult, SessionRun
from regulator.host.tools import ToolFailed, ToolRefused
from regulator.protocol.errors import Refused

_REPORT_DEFAULTS: dict[str, Any] = {
    "evidence": [],
    "delegatedResults": [],
    "unresolvedOutcomes": [],
    "emergentDecisions": [],
    "deviations": [],
    "residualUncertainty": [],
}


class ScenarioError(Refused):
    """A scenario file the person gave that cannot be played (unreadable, not a mapping with
    a list of attempts): refused, nothing is run; give another file."""


def load_scenario(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ScenarioError(f"{path}: cannot read the scenario: {exc}") from None
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("attempts"), list)
        or not data["attempts"]
    ):
        raise ScenarioError(f"{path}: a scenario is a mapping with a non-empty list `attempts`")
    return data


class ScriptAdapter(SessionAdapter):
    name = "script"

    def __init__(self, scenario: dict[str, Any]) -> None:
        self.scenario = scenario

    def steps_for(self, attempt: int) -> list[dict[str, Any]]:
        attempts = self.scenario["attempts"]
        chosen = attempts[min(attempt, len(attempts)) - 1]
        steps = chosen.get("steps", []) if isinstance(chosen, dict) else chosen
        return list(steps or [])

    def run(self, run: SessionRun) -> SessionResult:
        session_id = f"script-{uuid.uuid4()}"
        guard = run.guard
        for index, step in enumerate(self.steps_for(run.attempt), start=1):
            if guard.halted:
                break
            if not isinstance(step, dict) or len(step) != 1:
                return SessionResult(
                    session_id, error=f"scenario step {index}: one action per step"
                )
            ((action, value),) = step.items()
            guard.tick()
            if guard.halted:
                break
            try:
                stop = self._step(run, action, value)
            except (ToolRefused, ToolFailed):
                continue  # the tools recorded the refusal or failure as an observation
            if isinstance(stop, SessionResult):
                stop.session_id = session_id
                return stop
            if stop:
                break
        guard.tick()
        return SessionResult(session_id)

    def _step(self, run: SessionRun, action: str, value: Any) -> bool | SessionResult:
        tools, guard = run.tools, run.guard
        if action == "call":
            tools.call(str(value["tool"]), dict(value.get("input") or {}))
        elif action == "report":
            tools.call("report_result", {**_REPORT_DEFAULTS, **dict(value or {})})
        elif action == "ask":
            result = tools.call("ask_human", dict(value))
            return bool(result.get("paused"))  # a paused session stops, as the gate tells it
        elif action == "edit":
            target = run.worktree / str(value["path"])
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(str(value["content"]), encoding="utf-8")
        elif action == "commit":
            gitops.git(run.worktree, "add", "-A")
            if not gitops.git(run.worktree, "status", "--porcelain").stdout.strip():
                return False  # nothing changed (a replayed step): there is nothing to commit
            gitops.git(
                run.worktree, *gitops.identity_args(run.worktree), "commit", "-q", "-m", str(value)
            )
        elif action == "usage":
            guard.record_usage(
                tokens=int(value.get("tokens", 0)),
                cost=float(value.get("cost", 0)),
                turns=int(value.get("turns", 1)),
            )
        elif action == "exceed":
            ceiling = guard.ledger.ceiling
            if value == "tokens":
                guard.record_usage(tokens=ceiling.tokens, cost=0.0, turns=0)
            elif value == "turns":
                guard.record_usage(tokens=0, cost=0.0, turns=ceiling.turns)
            elif value == "cost":
                guard.record_usage(tokens=0, cost=float(ceiling.cost or 0) + 1, turns=0)
            else:
                return SessionResult(
                    "", error=f"scenario: exceed {value!r} is not tokens, cost or turns"
                )
        elif action == "sleep":
            self._sleep(run, int(value))
        elif action == "fail":
            return SessionResult("", error=str(value))
        elif action == "provider-error":
            return SessionResult("", provider_error=str(value))
        elif action == "end":
            return True
        else:
            return SessionResult("", error=f"scenario: unknown step {action!r}")
        return False

    def _sleep(self, run: SessionRun, ms: int) -> None:
        """Let wall-clock pass, checking the ceiling as it does: a session is stopped at it."""
        deadline = time.monotonic() + ms / 1000
        while not run.guard.halted:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            run.sleep(min(left, 0.05))
            run.guard.tick()
