"""The original's definition files load as they are, beside ours, and ``doctor`` compares.

The fixtures under ``tests/fixtures/original/regulator/`` are written from the original's
published shapes (docs/design.md#policies) and placed as the original places them:
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
from regulator.host.loop import Loop
from regulator.host.sessions.script import ScriptAdapter
from regulator.policy import PolicyError, load_definition, shipped_policies_dir
from regulator.policy.original import original_differences
from regulator.policy.workload import load_workload
from regulator.rules.authority import process_os_user
from regulator.rules.execution import ExecutionStore
from regulator.store import Layout
from regulator.views.doctor import Check, run_doctor

from .conftest import cli, git
from .test_replan import _state

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
    """A repository with its code in src/ (where the original's `implement` profile may write),
    a passing unittest suite in tests/, and the original's definition, initialized."""
    (repo / "src").mkdir()
    (repo / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "tests").mkdir()
    (repo / "tests" / "test_calc.py").write_text(
        "import pathlib, sys, unittest\n"
        "sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / 'src'))\n"
        "from calc import add\n\n"
        "class T(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"
    )
    _placed(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the original's definition")
    result = cli("init", "--by", "alice", cwd=repo)
    assert result.returncode == 0, result.stderr
    return repo


@pytest.mark.slow  # a unit dispatched, checked and merged: a few seconds
def test_the_originals_workload_and_policies_placed_as_it_places_them_pass_doctor_and_a_unit_closes(
    project: Path, tmp_path: Path
) -> None:
    doctor = cli("doctor", "--json", cwd=project)
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
    assert "would refuse this file" not in everything and "beyond the TypeScript" not in everything

    # A write inside the profile's writablePaths (src/) closes, the unrun checks accepted.
    work, scenario = _unit(tmp_path, "u1", [SWAP, {"commit": "swap"}, REPORT])
    driven = cli("unit", "drive", str(work), "--script", str(scenario), ACCEPT, cwd=project)
    assert driven.returncode == 0, driven.stdout + driven.stderr
    assert "unit u1 closed: reintegrated as" in driven.stdout
    assert "return b + a" in (project / "src" / "calc.py").read_text()
    # The original's `run_tests` check ran at the closeout, as our `tests` check, and where the
    # unit wrote was checked against the profile's writablePaths.
    ran, (verdict,) = _audit(project)
    assert [(r["check"], r["verdict"]) for r in ran] == [
        ("run_tests", "pass"),
        ("writable_paths", "pass"),
    ]
    assert ran[1]["observation"] == (
        "1 path(s) changed, within profile implement's writablePaths (src/, test/)\nsrc/calc.py"
    )
    assert verdict["verdict"] == "pass"


ACCEPT = "--accept-unenforced"
SWAP = {"edit": {"path": "src/calc.py", "content": "def add(a, b):\n    return b + a\n"}}
REPORT = {"report": {"summary": "swapped"}}
MODEL = "anthropic/claude-sonnet-4-5"
UNRUN = "run_checks, inherited-tests, identity-untouched, export-signature, glossary-lint"


def _unit(
    tmp_path: Path, unit_id: str, *attempts: list[dict[str, Any]], unit_type: str = "implement"
) -> tuple[Path, Path]:
    """A contract for ``unit_id`` and a scenario playing ``attempts`` (lists of steps)."""
    work = tmp_path / f"{unit_id}.contract.json"
    made = contract(unit_id, "swap the operands", unit_type=unit_type)
    work.write_text(json.dumps(made.to_json_dict()))
    scenario = tmp_path / f"{unit_id}.yaml"
    scenario.write_text(
        yaml.safe_dump({"models": [MODEL], "attempts": [{"steps": s} for s in attempts]})
    )
    return work, scenario


def _audit(project: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The audit log's evidence records and verdicts."""
    audit = [json.loads(line) for line in (project / ".regulator" / "audit.ndjson").open()]
    return (
        [a["record"] for a in audit if a["type"] == "evidence"],
        [a["verdict"] for a in audit if a["type"] == "verdict"],
    )


def test_doctor_names_a_routing_policy_with_an_empty_description_as_one_the_original_refuses(
    project: Path,
) -> None:
    _edit_json(
        project / "regulator" / "policies" / "routing.json", lambda d: d.update(description="")
    )
    doctor = cli("doctor", cwd=project)
    assert doctor.returncode == 0, doctor.stdout  # we accept it: a notice, not a problem
    assert "notice  policy routing    routing v1 from regulator/policies/routing.json" in (
        doctor.stdout
    )
    assert (
        "regulator/policies/routing.json: the TypeScript regulator would refuse this file: "
        "description: must not be empty" in doctor.stdout
    )


def test_fields_that_are_ours_on_purpose_are_named_as_ours_not_as_refusals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    definition = _placed(tmp_path)

    def ours(d: dict[str, Any]) -> None:
        d["waitCeilingMs"] = 600000
        d["people"][1]["osUsers"] = ["alice"]
        d["people"][1]["channels"] = [{"type": "webhook", "url": "https://example.org/hook"}]
        d["attention"]["session"] = {"blockingPerHour": 3}

    _edit_json(definition / "policies" / "interaction.json", ours)
    _edit_json(
        definition / "workload" / "software-development.json",
        lambda d: d["unitTypes"][2].update(session={"adapter": "script"}),
    )
    shutil.copy(shipped_policies_dir() / "agents.yaml", definition / "agents.yaml")

    interaction = _check(tmp_path, "policy interaction")
    assert (interaction.ok, interaction.notices) == (True, [])
    assert interaction.detail == (
        "interaction v1 from regulator/policies/interaction.json; beyond the TypeScript "
        "regulator: attention.session, people[1].osUsers, people[1].channels, waitCeilingMs "
        "(its closed schema refuses them)"
    )
    workload = _check(tmp_path, "workload")
    assert workload.detail.startswith(
        "software-development v1 from regulator/workload/software-development.json; "
        "the original's format; given no `session`, plan, research, verify, integrate, close "
        "run scripted sessions; beyond the TypeScript regulator: unitTypes[2].session (its "
        "closed schema refuses it)"
    )
    assert not any("would refuse" in n for n in workload.notices)
    agents = _check(tmp_path, "agents")
    assert agents.detail == (
        "agent-effects v1 from regulator/agents.yaml; beyond the TypeScript regulator: "
        "it has no hooks and no agents.yaml"
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
        "default v1 from regulator/policies/budget.yaml; beyond the TypeScript regulator: "
        "the file name (it reads policies/default.json only)",
    )
    workload = _check(tmp_path, "workload")
    assert workload.detail == (
        "software-development v1 from regulator/workload.yaml; beyond the TypeScript "
        "regulator: this project's workload format (it reads workload/<name>.json only)"
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


# --- what regulator cannot enforce is refused unless the person says so ----------------------


def _nothing_written(project: Path, unit_id: str) -> None:
    assert not (project / ".regulator" / "units" / unit_id).exists()
    assert not (project / ".regulator" / "audit.ndjson").exists()


@pytest.mark.slow  # a unit dispatched, checked and merged: a few seconds
def test_unit_drive_of_unrun_checks_is_refused_without_the_flag_and_with_it_closes_saying_so(
    project: Path, tmp_path: Path
) -> None:
    work, scenario = _unit(tmp_path, "u2", [SWAP, {"commit": "swap"}, REPORT])
    for command in ("drive", "dispatch"):
        refused = cli("unit", command, str(work), "--script", str(scenario), cwd=project)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        (line,) = [x for x in refused.stdout.splitlines() if x.startswith("✖")]
        assert line == (
            "✖ unitType: regulator does not enforce all that implement asks: checks "
            f"{UNRUN} are not run; to drive it anyway, add --accept-unenforced (the closeout's "
            "verdict records it)"
        )
        _nothing_written(project, "u2")

    driven = cli("unit", "drive", str(work), "--script", str(scenario), ACCEPT, cwd=project)
    assert driven.returncode == 0, driven.stdout + driven.stderr
    _, (verdict,) = _audit(project)
    assert verdict["verdict"] == "pass"
    said = (
        f"not enforced here, accepted for this run with --accept-unenforced (OS user "
        f"{process_os_user()}): checks {UNRUN} are not run"
    )
    assert verdict["reasons"] == [said]
    shown = cli("unit", "show", "u2", cwd=project)
    assert f"    {said}" in shown.stdout.splitlines()


@pytest.mark.slow
def test_a_research_unit_whose_profile_withholds_the_agents_shell_is_refused_without_the_flag(
    project: Path, tmp_path: Path
) -> None:
    work, scenario = _unit(tmp_path, "r1", [REPORT], unit_type="research")
    refused = cli("unit", "drive", str(work), "--script", str(scenario), cwd=project)
    assert refused.returncode == 1
    assert (
        "✖ unitType: regulator does not enforce all that research asks: profile intelligence "
        "withholds the agent's own tools write, edit, bash, which regulator does not take away; "
        "to drive it anyway, add --accept-unenforced" in refused.stdout
    )
    _nothing_written(project, "r1")


@pytest.mark.slow
def test_a_unit_of_the_original_that_wrote_outside_src_and_test_does_not_close_audit_pass(
    project: Path, tmp_path: Path
) -> None:
    outside = {"edit": {"path": "README.md", "content": "# rewritten by the unit\n"}}
    work, scenario = _unit(tmp_path, "u3", [SWAP, outside, {"commit": "swap"}, REPORT])
    before = (project / "README.md").read_text()
    driven = cli("unit", "drive", str(work), "--script", str(scenario), ACCEPT, cwd=project)
    assert driven.returncode == 1, driven.stdout + driven.stderr
    assert "unit u3 closed" not in driven.stdout
    assert (project / "README.md").read_text() == before  # nothing merged
    ran, verdicts = _audit(project)
    assert verdicts[0]["verdict"] == "fail"
    first = "wrote outside profile implement's writablePaths (src/, test/): README.md"
    assert verdicts[0]["reasons"][0] == first
    assert "writable_paths" in verdicts[0]["failed"]
    writes = [r for r in ran if r["check"] == "writable_paths"]
    assert writes[0]["verdict"] == "fail"
    assert writes[0]["observation"] == f"{first}\nREADME.md\nsrc/calc.py"
    store = ExecutionStore(Layout(project))
    assert store.attempts("u3")[0].outcome == "check-failure"
    shown = cli("unit", "show", "u3", cwd=project).stdout
    assert "  audit: fail (" in shown and f"    {first}" in shown.splitlines()


def test_a_write_left_uncommitted_and_one_committed_by_an_earlier_attempt_fail_the_closeout(
    project: Path,
) -> None:
    # An untracked file the unit's shell left behind counts, and so does a commit of an
    # attempt that never reported: the branch as reintegration would merge it is checked.
    scratch = {"edit": {"path": "scratch/notes.txt", "content": "left behind\n"}}
    outside = {"edit": {"path": "Makefile", "content": "test:\n\ttrue\n"}}
    silent = {"end": "silent"}
    loop = Loop(
        Layout(project),
        load_definition(project),
        adapters={"script": ScriptAdapter({"attempts": [{"steps": [SWAP, scratch, REPORT]}]})},
        models=[MODEL],
        wait_for_person=False,
    )
    loop.accept_unenforced = "with --accept-unenforced"
    outcome = loop.dispatch(contract("u4", "swap", unit_type="implement"))
    assert outcome.status == "blocked"
    assert outcome.reason is not None and "audit refused closeout: fail" in outcome.reason
    _, verdicts = _audit(project)
    assert verdicts[-1]["reasons"][0] == (
        "wrote outside profile implement's writablePaths (src/, test/): scratch/notes.txt"
    )

    loop.adapters["script"] = ScriptAdapter(
        {"attempts": [{"steps": [outside, {"commit": "make"}, silent]}, {"steps": [REPORT]}]}
    )
    loop.dispatch(contract("u5", "swap", unit_type="implement"))  # no report: no closeout
    outcome = loop.dispatch(contract("u5", "swap", unit_type="implement"))
    assert outcome.status == "blocked", outcome
    _, verdicts = _audit(project)
    assert verdicts[-1]["unitId"] == "u5" and verdicts[-1]["attempt"] == 2
    assert verdicts[-1]["reasons"][0] == (
        "wrote outside profile implement's writablePaths (src/, test/): Makefile"
    )


def test_unit_close_of_an_original_unit_type_with_unrun_checks_needs_the_flag_too(
    project: Path,
) -> None:
    outside = {"edit": {"path": "README.md", "content": "# rewritten by the unit\n"}}
    loop = Loop(
        Layout(project),
        load_definition(project),
        adapters={"script": ScriptAdapter({"attempts": [{"steps": [outside, REPORT]}]})},
        models=[MODEL],
        wait_for_person=False,
    )
    loop.accept_unenforced = "with --accept-unenforced"
    assert loop.dispatch(contract("u6", "swap", unit_type="implement")).status == "blocked"
    assert len(_audit(project)[1]) == 1
    refused = cli("unit", "close", "u6", cwd=project)
    assert refused.returncode == 1
    assert "✖ unitType: regulator does not enforce all that implement asks" in refused.stdout
    assert len(_audit(project)[1]) == 1  # no closeout ran
    again = cli("unit", "close", "u6", ACCEPT, cwd=project)
    assert again.returncode == 1
    assert "unit u6: audit refused closeout: fail" in again.stdout
    assert _audit(project)[1][1]["reasons"][0].startswith("wrote outside profile implement's")


def test_doctor_says_what_is_refused_for_driving_and_what_is_checked_at_closeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _placed(tmp_path)
    workload = _check(tmp_path, "workload")
    assert workload.ok
    shown, profiles = "regulator/workload/software-development.json", "regulator/profiles/"
    assert workload.notices == [
        f"{shown}: checks this project's closeout does not run: run_checks (implement, verify); "
        "inherited-tests (implement, verify, integrate); identity-untouched (implement, verify, "
        "integrate); export-signature (implement, verify, integrate); glossary-lint (implement, "
        "verify, integrate) (`run_tests` runs, as our `tests`); `unit drive`, `dispatch` and "
        "`close` refuse these unit types unless given --accept-unenforced",
        f"{shown}: no unit type `session`: an agent a person runs by hand is refused "
        "(docs/agents.md)",
        f"{profiles}: profiles that withhold an agent's own tools, which regulator cannot take "
        "away: intelligence (write, edit, bash); research (write, edit, bash); `unit drive`, "
        "`dispatch` and `close` refuse the unit types under them unless given "
        "--accept-unenforced",
        f"{profiles}: thinkingLevel and advice are not applied: implement (thinkingLevel, "
        "advice); intelligence (advice); research (thinkingLevel, advice)",
        f"{profiles}: writablePaths are checked at closeout against every path a unit changed, "
        "shell writes included (the original limits write and edit only): implement (src/, "
        "test/); intelligence (none); research (none)",
    ]
    loaded = load_workload(load_definition(tmp_path))
    assert loaded.unenforced("plan") == [
        "profile research withholds the agent's own tools write, edit, bash, which regulator "
        "does not take away"
    ]
    assert loaded.unenforced("integrate") == [
        "checks inherited-tests, identity-untouched, export-signature, glossary-lint are not run"
    ]


def test_doctor_says_a_session_unit_types_writable_paths_and_checks_are_not_applied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "regulator" / "policies").mkdir(parents=True)
    data = yaml.safe_load((shipped_policies_dir() / "workload.yaml").read_text())
    data["profiles"]["interactive"]["writablePaths"] = ["docs/"]
    (tmp_path / "regulator" / "workload.yaml").write_text(yaml.safe_dump(data))
    assert _check(tmp_path, "workload").notices == [
        "regulator/workload.yaml: unit type `session`: profile interactive's writablePaths are "
        "not applied: a session a person runs by hand has no closeout"
    ]


@pytest.mark.slow
def test_unit_remediate_that_would_drive_an_unenforced_unit_type_is_refused_before_writing(
    project: Path,
) -> None:
    silent = {"end": "silent"}
    loop = Loop(
        Layout(project),
        load_definition(project),
        adapters={"script": ScriptAdapter({"attempts": [{"steps": [silent]}]})},
        models=[MODEL],
        wait_for_person=False,
    )
    loop.accept_unenforced = "with --accept-unenforced"
    loop.dispatch(contract("u7", "swap", unit_type="implement"))
    before = _state(project)
    refused = cli(
        "unit", "remediate", "u7", "--by", "alice", "--note", "fixed", cwd=project
    )  # fmt: skip
    assert refused.returncode == 1
    assert refused.stderr.startswith(
        "regulator: unitType: regulator does not enforce all that implement asks"
    )
    assert refused.stderr.rstrip().endswith("or record it with --no-drive")
    assert _state(project) == before
    # With --no-drive nothing is driven, so nothing needs accepting: remediate's own check.
    recorded = cli(
        "unit", "remediate", "u7", "--by", "alice", "--note", "fixed", "--no-drive", cwd=project
    )  # fmt: skip
    assert "waits on no remediate decision" in recorded.stderr
