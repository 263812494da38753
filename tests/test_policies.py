"""The shipped policies, the loader's search order, and refusals that name file, line and field."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from regulator.policy import PolicyError, load_definition, load_policy_file, shipped_policies_dir
from regulator.protocol.policies import BudgetPolicy, InteractionPolicy, RoutingPolicy

from .conftest import cli


def test_the_shipped_policies_hold_the_seeds_values() -> None:
    d = load_definition(None)
    assert d.check() == {"routing": [], "interaction": [], "recovery": [], "budget": []}
    routing = d.routing
    assert [(r.kind, r.min_severity, r.consumer) for r in routing.rules][:3] == [
        ("algedonic-signal", "blocking", "human"),
        ("policy-proposal", "info", "S5"),
        ("audit-finding", "blocking", "S3"),
    ]
    assert routing.blocks_at_or_above == "blocking"
    assert routing.floors is not None and routing.floors[0].severity == "blocking"
    people = {p.name: p for p in d.interaction.people}
    assert people["alice"].resolve_up_to == "critical" and people["alice"].accept_risk
    assert people["alice"].act_as_s5
    assert people["bob"].resolve_up_to == "blocking" and not people["bob"].accept_risk
    assert d.interaction.timeouts_ms.consent == 300000
    assert d.interaction.wait_ceiling_ms is None
    rule = d.recovery.rule_for("check-failure")
    assert rule is not None and rule.actions == ["repair", "repair", "replan"]
    assert d.recovery.fallback == ["pause"]


def test_a_unit_type_ceiling_overlays_the_default_field_by_field() -> None:
    budget = load_definition(None).budget
    research = budget.ceiling_for("research")
    assert (research.tokens, research.turns, research.attempts) == (120000, 15, 1)
    assert research.wall_clock_ms == 1200000 and research.cost == 2
    assert budget.ceiling_for("implement") == budget.budgets.default
    assert budget.route_for("research").primary == "anthropic/claude-haiku-4-5"
    assert budget.route_for("implement").primary == "anthropic/claude-sonnet-4-5"


def _definition_with(tmp_path: Path, name: str, text: str) -> Path:
    root = tmp_path / "definition"
    (root / "policies").mkdir(parents=True)
    (root / "policies" / name).write_text(text)
    return root


def test_a_misspelt_severity_names_file_line_field_and_allowed_values(tmp_path: Path) -> None:
    text = (shipped_policies_dir() / "routing.yaml").read_text()
    bad = text.replace(
        "{ kind: audit-finding, minSeverity: blocking",
        "{ kind: audit-finding, minSeverity: blockng",
    )
    root = _definition_with(tmp_path, "routing.yaml", bad)
    problems = load_definition(None, root).check()["routing"]
    assert len(problems) == 1
    line = 1 + next(i for i, text in enumerate(bad.splitlines()) if "blockng" in text)
    assert problems[0].endswith(
        f"routing.yaml:{line}: rules[2].minSeverity: 'blockng' is not one of "
        "info, advisory, blocking, critical"
    )


def test_every_problem_of_a_policy_is_listed_at_once(tmp_path: Path) -> None:
    root = _definition_with(
        tmp_path,
        "interaction.yaml",
        "name: Interaction\nversion: 0\ndescription: x\ntimeoutsMs: {recap: 10}\n"
        "attention: {blockingPerAttempt: 2}\nreminderAfterMs: 3600000\npeople: []\nextra: 1\n",
    )
    with pytest.raises(PolicyError) as caught:
        load_policy_file("interaction", root / "policies" / "interaction.yaml", InteractionPolicy)
    text = "\n".join(caught.value.problems)
    assert "name: 'Interaction' does not match" in text
    assert "version:" in text
    assert "timeoutsMs.recap:" in text and "timeoutsMs.choice: required, and missing" in text
    assert "extra: not a field of this record" in text
    assert len(caught.value.problems) >= 5


def test_a_name_or_model_with_a_trailing_newline_is_refused_as_the_original_refuses_it() -> None:
    # Python's `$` matches before a final newline; the original's JavaScript `$` does not, so
    # the patterns end in `\Z` (and are shown with `$`).
    routing = load_definition(None).routing.to_json_dict()
    with pytest.raises(
        ValueError, match=r"name: 'routing\\n' does not match \^\[a-z\]\[a-z0-9-\]\*\$"
    ):
        RoutingPolicy.from_json_dict({**routing, "name": "routing\n"})
    budget = load_definition(None).budget.to_json_dict()
    budget["models"]["default"]["primary"] = "anthropic/claude\n"
    with pytest.raises(ValueError, match=r"models\.default\.primary: .* does not match"):
        BudgetPolicy.from_json_dict(budget)


def test_a_mapping_key_of_the_wrong_type_is_named_as_a_key(tmp_path: Path) -> None:
    text = (shipped_policies_dir() / "budget.yaml").read_text()
    bad = text.replace("    plan: {", "    1: { turns: 2 }\n    plan: {")
    assert bad != text
    root = _definition_with(tmp_path, "budget.yaml", bad)
    with pytest.raises(PolicyError) as caught:
        load_policy_file("budget", root / "policies" / "budget.yaml", BudgetPolicy)
    (problem,) = caught.value.problems
    assert problem.endswith("budgets.byUnitType: a key: expected `str`, got `int`")


def test_the_originals_json_policies_load_unchanged(tmp_path: Path) -> None:
    # The original's routing.json and default.json, as it ships them (docs/design.md#routing,
    # #budgets-and-models).
    routing = {
        "name": "routing",
        "version": 1,
        "description": "S3 routing",
        "rules": [{"kind": "algedonic-signal", "minSeverity": "blocking", "consumer": "human"}],
        "impactSeverity": {
            "low": "info",
            "medium": "advisory",
            "high": "blocking",
            "critical": "critical",
        },
        "recovery": {
            "remediate": "S3",
            "replan": "S3",
            "clarify": "human",
            "pause": "human",
            "escalate": "human",
        },
        "blocksAtOrAbove": "blocking",
        "floors": [
            {
                "pattern": "\\bINV-\\d{3}\\b|regulator/identity/",
                "severity": "blocking",
                "reason": "r",
            }
        ],
    }
    budget = {
        "name": "default",
        "version": 1,
        "description": "software-development",
        "budgets": {
            "default": {
                "tokens": 400000,
                "cost": 2,
                "wallClockMs": 1200000,
                "turns": 60,
                "attempts": 3,
            }
        },
        "models": {
            "default": {"primary": "anthropic/claude-sonnet-4-5", "fallback": ["openai/gpt-5"]}
        },
        "coordination": {"oscillationThreshold": 4},
    }
    root = tmp_path / "definition"
    (root / "policies").mkdir(parents=True)
    (root / "policies" / "routing.json").write_text(json.dumps(routing, indent=2))
    (root / "policies" / "default.json").write_text(json.dumps(budget, indent=2))
    d = load_definition(None, root)
    assert d.check()["routing"] == [] and d.check()["budget"] == []
    assert isinstance(d.routing, RoutingPolicy) and not d.is_shipped("routing")
    assert isinstance(d.budget, BudgetPolicy) and d.source("budget").name == "default.json"
    assert d.is_shipped("interaction")  # not defined here: the shipped one is in force


def test_a_repository_definition_is_found_under_regulator_policies(repo: Path) -> None:
    (repo / "regulator" / "policies").mkdir(parents=True)
    shutil.copy(shipped_policies_dir() / "interaction.yaml", repo / "regulator" / "policies")
    d = load_definition(repo)
    assert (
        d.source("interaction") == (repo / "regulator" / "policies" / "interaction.yaml").resolve()
    )
    assert d.is_shipped("routing")


def test_doctor_refuses_a_bad_policy_and_writes_nothing(instance: Path) -> None:
    (instance / "regulator" / "policies").mkdir(parents=True, exist_ok=True)
    text = (
        (shipped_policies_dir() / "routing.yaml")
        .read_text()
        .replace("minSeverity: blocking, consumer: human", "minSeverity: blockng, consumer: human")
    )
    (instance / "regulator" / "policies" / "routing.yaml").write_text(text)
    before = {p: p.read_bytes() for p in (instance / ".regulator").rglob("*") if p.is_file()}
    result = cli("doctor", cwd=instance)
    assert result.returncode == 1
    assert (
        "regulator/policies/routing.yaml:" in result.stdout
        and "rules[0].minSeverity: 'blockng' is not one of info, advisory, blocking, critical"
        in result.stdout
    )
    after = {p: p.read_bytes() for p in (instance / ".regulator").rglob("*") if p.is_file()}
    assert after == before


def test_status_refuses_a_bad_policy_with_a_one_line_message(instance: Path) -> None:
    (instance / "regulator" / "policies").mkdir(parents=True, exist_ok=True)
    (instance / "regulator" / "policies" / "recovery.yaml").write_text(
        "name: recovery\nversion: [\n"
    )
    result = cli("status", cwd=instance)
    assert result.returncode == 4  # corrupt state
    assert result.stderr.startswith("regulator: regulator/policies/recovery.yaml:")
    assert "not valid YAML" in result.stderr
