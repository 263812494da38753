"""``regulator unit show``: what a unit went through, its failure observations included."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from regulator.protocol.execution import FailureObservation, WorkContract
from regulator.rules.execution import ExecutionStore
from regulator.store import Layout

from .conftest import cli


def contract() -> WorkContract:
    data: dict[str, Any] = {
        "kind": "task",
        "id": "greet",
        "version": 1,
        "unitId": "u1",
        "unitType": "implementation",
        "workload": {"name": "demo", "version": 1},
        "objective": "add a greeting",
        "constraintRefs": [],
        "fixed": [],
        "delegated": [],
        "unresolved": [],
        "expectedEvidence": [
            {"id": "tests", "description": "the tests pass", "class": "test", "required": True}
        ],
        "provenance": {"createdBy": "S3", "createdAt": "2026-12-01T09:00:00.000Z"},
    }
    return WorkContract.from_json_dict(data)


def observe(store: ExecutionStore, attempt: int, minute: int, **fields: Any) -> None:
    data: dict[str, Any] = {
        "unitId": "u1",
        "attempt": attempt,
        "at": f"2026-12-01T10:{minute:02d}:00.000Z",
        "source": "tool",
        "cause": "tool-error",
        "message": "boom",
        **fields,
    }
    store.record_observation(FailureObservation.from_json_dict(data))


def a_unit_with_observations(instance: Path) -> None:
    store = ExecutionStore(Layout(instance))
    store.create_unit(contract())
    store.record_attempt(
        "u1",
        contract_version=1,
        started_at="2026-12-01T10:00:00.000Z",
        ended_at="2026-12-01T10:05:00.000Z",
        outcome="no-report",
    )
    store.record_attempt(
        "u1",
        contract_version=1,
        started_at="2026-12-01T10:06:00.000Z",
        ended_at="2026-12-01T10:09:00.000Z",
        outcome="check-failure",
    )
    observe(store, 1, 1, toolName="bash", message="exit 2: no such file")
    observe(store, 2, 7, source="provider", cause="timeout", message="no answer in 60s")
    observe(store, 1, 3, source="orchestrator", cause="no-report", message="ended silently")
    # The third attempt is still running: its observation has no attempt line yet.
    observe(store, 3, 10, cause="check-failure", message="pytest: 1 failed\n  test_greet")


def test_unit_show_lists_each_attempts_failure_observations_under_that_attempt(
    instance: Path,
) -> None:
    a_unit_with_observations(instance)
    shown = cli("unit", "show", "u1", cwd=instance)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    start = lines.index("  attempt 1: no-report")
    assert lines[start : start + 8] == [
        "  attempt 1: no-report",
        "    observed 2026-12-01T10:01:00.000Z: tool-error from tool bash: exit 2: no such file",
        "    observed 2026-12-01T10:03:00.000Z: no-report from orchestrator: ended silently",
        "  attempt 2: check-failure",
        "    observed 2026-12-01T10:07:00.000Z: timeout from provider: no answer in 60s",
        "  attempt 3: not ended",
        "    observed 2026-12-01T10:10:00.000Z: check-failure from tool: pytest: 1 failed",
        "        test_greet",
    ]


def test_unit_show_prints_an_observations_control_characters_as_visible_text(
    instance: Path,
) -> None:
    a_unit_with_observations(instance)
    store = ExecutionStore(Layout(instance))
    observe(
        store,
        2,
        8,
        toolName="sh\x1b[2J",
        message="ok\r\x1b]52;c;ZXZpbA==\x07\u202eevil\nnext line",
    )
    shown = cli("unit", "show", "u1", cwd=instance)
    assert shown.returncode == 0, shown.stderr
    assert "\x1b" not in shown.stdout and "\r" not in shown.stdout
    assert "\u202e" not in shown.stdout and "\x07" not in shown.stdout
    assert (
        "    observed 2026-12-01T10:08:00.000Z: tool-error from tool sh\\x1b[2J: "
        "ok\\x0d\\x1b]52;c;ZXZpbA==\\x07\\u202eevil\n      next line"
    ) in shown.stdout
