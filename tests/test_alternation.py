"""Alternation (ours): a unit taking turns between two causes escalates before the ceiling,
when the recovery policy asks for it; without the field the original's counting stands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from regulator.policy import shipped_policies_dir
from regulator.protocol.policies import RecoveryPolicy, fields_of_ours
from regulator.rules.recovery import decide

from .test_loop import contract_with, loop_for, project
from .test_replan import policy_committed

__all__ = ["project"]


def shipped(**extra: Any) -> RecoveryPolicy:
    data = yaml.safe_load((shipped_policies_dir() / "recovery.yaml").read_text())
    return RecoveryPolicy.from_json_dict({**data, **extra})


class Prior:
    def __init__(self, cause: str) -> None:
        self.cause = cause


def causes(*names: str) -> list[Any]:
    return [Prior(n) for n in names]


def test_four_decisions_taking_turns_between_two_causes_escalate_with_alternation_named() -> None:
    policy = shipped(alternationWindow=4)
    decided = decide(
        policy, "no-report", causes("check-failure", "no-report", "check-failure"), 3, 9
    )
    assert decided.action == "escalate" and decided.occurrence == 2
    assert "alternate between check-failure and no-report" in decided.rationale
    assert "names retry" in decided.rationale
    # Three in turn are not yet four; and a third cause breaks the pattern.
    assert decide(policy, "check-failure", causes("check-failure", "no-report"), 2, 9).action == (
        "repair"
    )
    assert (
        decide(policy, "no-report", causes("timeout", "no-report", "check-failure"), 3, 9).action
        == "retry"
    )


def test_without_the_field_the_original_counts_per_cause_only() -> None:
    policy = shipped()
    decided = decide(
        policy, "no-report", causes("check-failure", "no-report", "check-failure"), 3, 9
    )
    assert (decided.action, decided.occurrence) == ("retry", 2)
    assert "altern" not in decided.rationale
    assert fields_of_ours(policy) == []
    assert fields_of_ours(shipped(alternationWindow=4)) == ["alternationWindow"]


def test_an_alternation_window_below_three_is_refused_with_the_field_named() -> None:
    with pytest.raises(ValueError, match="alternationWindow"):
        shipped(alternationWindow=2)


BROKEN: dict[str, Any] = {
    "steps": [
        {"edit": {"path": "calc.py", "content": "def add(a, b):\n    return a - b\n"}},
        {"commit": "oops"},
        {"report": {"summary": "s"}},
    ]
}
SILENT: dict[str, Any] = {"steps": [{"end": "silent"}]}


@pytest.mark.parametrize("window", [4, None])
def test_a_unit_alternating_check_failure_and_no_report_escalates_on_the_fourth_attempt(
    project: Path, window: int | None
) -> None:
    def recovery(policy: dict[str, Any]) -> None:
        if window is not None:
            policy["alternationWindow"] = window

    def budget(policy: dict[str, Any]) -> None:
        policy["budgets"]["default"]["attempts"] = 5

    policy_committed(project, "recovery", recovery)
    policy_committed(project, "budget", budget)
    loop = loop_for(project, {"attempts": [BROKEN, SILENT, BROKEN, SILENT, SILENT]})
    driven = loop.drive(contract_with("flip"))
    made = [(d.cause, d.action) for d in driven.decisions]
    assert made[:3] == [
        ("check-failure", "repair"),
        ("no-report", "retry"),
        ("check-failure", "repair"),
    ]
    if window is not None:
        assert made[3:] == [("no-report", "escalate")]
        assert driven.decisions[3].attempt == 4
        assert "alternate between check-failure and no-report" in driven.decisions[3].rationale
        assert loop.store.unit("flip").reason == "escalated to S5: no-report (recovery v1)"
    else:
        # The original: the fourth is no-report's second occurrence, a retry; the fifth its
        # third, which the rule escalates.
        assert made[3:] == [("no-report", "retry"), ("no-report", "escalate")]
        assert "altern" not in " ".join(d.rationale for d in driven.decisions)
