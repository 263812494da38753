"""The original's definition files load as they are, beside ours, and ``doctor`` compares.

The fixtures under ``tests/fixtures/original/regulator/`` are written from the original's
published shapes (upstream-core §3–§4 and its appendix) and placed as the original places them:
``workload/software-development.json``, ``profiles/*.json`` and ``policies/*.json`` (the budget
policy as ``default.json``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from regulator.host.demo import contract
from regulator.policy import PolicyError, load_definition, shipped_policies_dir
from regulator.policy.original import original_differences
from regulator.policy.workload import load_workload
from regulator.views.doctor import Check, run_doctor

from .conftest import git, run_cli

ORIGINAL = Path(__file__).parent / "fixtures" / "original" / "regulator"


def _placed(root: Path) -> Path:
    """The original's definition at ``root/regulator``, as the original lays it out."""
    shutil.copytree(ORIGINAL, root / "regulator")
    return root / "regulator"


def _edit_json(path: Path, change: Any) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2) + "\n")


def _check(root: Path, name: str) -> Check:
    report = run_doctor(root, load_definition(root))
    return next(c for c in report.checks if c.name == name)


@pytest.fixture
def project(repo: Path) -> Path:
    """A repository with a passing unittest suite and the original's definition, initialized."""
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "tests").mkdir()
    (repo / "tests" / "test_calc.py").write_text(
        "import unittest\nfrom calc import add\n\n"
        "class T(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"
    )
    _placed(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the original's definition")
    result = run_cli("init", "--by", "alice", cwd=repo)
    assert result.returncode == 0, result.stderr
    return repo


@pytest.mark.slow  # a unit dispatched, checked and merged: a few seconds
def test_the_originals_workload_and_policies_placed_as_it_places_them_pass_doctor_and_a_unit_closes(
    project: Path, tmp_path: Path
) -> None:
    doctor = run_cli("doctor", "--json", cwd=project)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["workload"]["detail"] == (
        "software-development v1 from regulator/workload/software-development.json; the "
        "original's format; given no `session`, plan, research, implement, verify, integrate, "
        "close run scripted sessions"
    )
    for kind, file in [
        ("routing", "routing.json"),
        ("interaction", "interaction.json"),
        ("recovery", "recovery.json"),
        ("budget", "default.json"),
    ]:
        assert checks[f"policy {kind}"]["detail"].endswith(f"from regulator/policies/{file}")
    everything = json.dumps(checks)
    assert "the original would refuse" not in everything and "ours:" not in everything

    work = tmp_path / "u1.contract.json"
    work.write_text(json.dumps(contract("u1", "swap the operands").to_json_dict()))
    scenario = tmp_path / "u1.yaml"
    edit = {"path": "calc.py", "content": "def add(a, b):\n    return b + a\n"}
    steps = [{"edit": edit}, {"commit": "swap"}, {"report": {"summary": "swapped"}}]
    scenario.write_text(
        yaml.safe_dump({"models": ["anthropic/claude-sonnet-4-5"], "attempts": [{"steps": steps}]})
    )
    driven = run_cli("unit", "drive", str(work), "--script", str(scenario), cwd=project)
    assert driven.returncode == 0, driven.stdout + driven.stderr
    assert "unit u1 closed: reintegrated as" in driven.stdout
    assert "return b + a" in (project / "calc.py").read_text()
    # The original's `run_tests` check ran at the closeout, as our `tests` check.
    audit = [json.loads(line) for line in (project / ".regulator" / "audit.ndjson").open()]
    ran = [a["record"] for a in audit if a["type"] == "evidence"]
    assert [(r["check"], r["verdict"]) for r in ran] == [("run_tests", "pass")]


def test_doctor_names_a_routing_policy_with_an_empty_description_as_one_the_original_refuses(
    project: Path,
) -> None:
    _edit_json(
        project / "regulator" / "policies" / "routing.json", lambda d: d.update(description="")
    )
    doctor = run_cli("doctor", cwd=project)
    assert doctor.returncode == 0, doctor.stdout  # we accept it: a notice, not a problem
    assert "notice  policy routing    routing v1 from regulator/policies/routing.json" in (
        doctor.stdout
    )
    assert (
        "regulator/policies/routing.json: the original would refuse: description: "
        "must not be empty" in doctor.stdout
    )


def test_fields_that_are_ours_on_purpose_are_named_as_ours_not_as_refusals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    definition = _placed(tmp_path)

    def ours(d: dict[str, Any]) -> None:
        d["waitCeilingMs"] = 600000
        d["people"][1]["osUsers"] = ["alice"]

    _edit_json(definition / "policies" / "interaction.json", ours)
    _edit_json(
        definition / "workload" / "software-development.json",
        lambda d: d["unitTypes"][2].update(session={"adapter": "script"}),
    )
    shutil.copy(shipped_policies_dir() / "agents.yaml", definition / "agents.yaml")

    interaction = _check(tmp_path, "policy interaction")
    assert (interaction.ok, interaction.notices) == (True, [])
    assert interaction.detail == (
        "interaction v1 from regulator/policies/interaction.json; ours: people[1].osUsers, "
        "waitCeilingMs (the original's closed schema refuses them)"
    )
    workload = _check(tmp_path, "workload")
    assert workload.detail.startswith(
        "software-development v1 from regulator/workload/software-development.json; "
        "the original's format; given no `session`, plan, research, verify, integrate, close "
        "run scripted sessions; ours: unitTypes[2].session (the original's closed schema "
        "refuses it)"
    )
    assert not any("would refuse" in n for n in workload.notices)
    agents = _check(tmp_path, "agents")
    assert agents.detail == (
        "agent-effects v1 from regulator/agents.yaml; ours: the original has no hooks and no "
        "agents.yaml"
    )


def test_our_own_workload_and_yaml_policies_in_a_definition_are_named_as_ours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "regulator" / "policies").mkdir(parents=True)
    shutil.copy(shipped_policies_dir() / "budget.yaml", tmp_path / "regulator" / "policies")
    shutil.copy(shipped_policies_dir() / "workload.yaml", tmp_path / "regulator")
    budget = _check(tmp_path, "policy budget")
    assert (budget.notices, budget.detail) == (
        [],
        "default v1 from regulator/policies/budget.yaml; ours: the file name (the original "
        "reads policies/default.json only)",
    )
    workload = _check(tmp_path, "workload")
    assert workload.detail == (
        "software-development v1 from regulator/workload.yaml; ours: this project's workload "
        "format (the original reads workload/<name>.json only)"
    )
    # The shipped files are this project's own: nothing is said about them.
    assert _check(tmp_path, "policy routing").detail.endswith("routing.yaml (shipped)")


def test_the_originals_unit_types_run_scripted_sessions_and_its_run_tests_is_our_tests_check() -> (
    None
):
    workload = load_workload(load_definition(None, ORIGINAL))
    assert workload.label == "software-development v1"
    kinds = workload.unit_types
    assert list(kinds) == ["plan", "research", "implement", "verify", "integrate", "close"]
    assert {k.session.adapter for k in kinds.values()} == {"script"}
    assert [name for name, k in kinds.items() if k.checks == ["tests"]] == [
        "implement",
        "verify",
        "integrate",
    ]
    assert kinds["plan"].requires_contract is False
    # The agent's own tools (read, bash, …) are not ours to grant; the session tools are.
    assert workload.grants("verify") == ["read_conventions", "run_checks", "report_result"]
    assert "session" not in kinds


def test_an_original_workload_naming_a_profile_the_definition_lacks_is_refused_at_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    definition = _placed(tmp_path)
    (definition / "profiles" / "intelligence.json").unlink()
    with pytest.raises(PolicyError) as refused:
        load_workload(load_definition(None, definition))
    assert refused.value.problems == [
        "regulator/workload/software-development.json:16: unitTypes[1].profile: no profile "
        "'intelligence' in regulator/profiles/ (profiles/intelligence.json)"
    ]
    assert not _check(tmp_path, "workload").ok


def test_a_definition_with_both_our_workload_and_the_originals_is_refused_naming_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    definition = _placed(tmp_path)
    shutil.copy(shipped_policies_dir() / "workload.yaml", definition)
    with pytest.raises(PolicyError, match="more than one file defines the workload") as refused:
        load_workload(load_definition(None, definition))
    assert "regulator/workload.yaml, regulator/workload/software-development.json" in str(
        refused.value
    )


def test_the_shipped_policies_pass_the_originals_schemas() -> None:
    for kind, file in [
        ("routing", "routing.yaml"),
        ("interaction", "interaction.yaml"),
        ("recovery", "recovery.yaml"),
        ("budget", "budget.yaml"),
    ]:
        data = yaml.safe_load((shipped_policies_dir() / file).read_text())
        found = original_differences(kind, data)
        assert (found.refused, found.ours) == ([], []), file


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d.update(extra=1), "extra: not a field of this record (the record is closed)"),
        (lambda d: d.update(version=0), "version: input should be greater than or equal to 1"),
        (lambda d: d.update(unitTypes=[]), "unitTypes: must hold at least one entry"),
        (
            lambda d: d["unitTypes"][0].update(requiresContract="false"),
            "unitTypes[0].requiresContract: input should be a valid boolean",
        ),
        (
            lambda d: d["unitTypes"][2]["checks"].append(""),
            "unitTypes[2].checks[6]: must not be empty",
        ),
        (
            lambda d: d["unitTypes"][2]["checks"].append({"options": {}}),
            "unitTypes[2].checks[6].name: required, and missing",
        ),
    ],
)
def test_the_originals_check_refuses_what_its_closed_workload_schema_refuses(
    change: Any, expected: str
) -> None:
    data = json.loads((ORIGINAL / "workload" / "software-development.json").read_text())
    change(data)
    found = original_differences("workload", data)
    assert found.ours == []
    (line,) = found.refused
    assert line.startswith(expected)
