"""The S3 loop with scripted sessions: dispatch, verify, route, close — on real instances."""

from __future__ import annotations

import json
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from regulator.host.demo import SimClock, contract
from regulator.host.loop import Loop
from regulator.host.sessions.command import CommandAdapter
from regulator.host.sessions.script import ScriptAdapter
from regulator.policy import load_definition, shipped_policies_dir
from regulator.policy.workload import SessionSpec
from regulator.store import Layout

from .conftest import cli, git, run_cli

MODELS = {"anthropic/claude-sonnet-4-5"}


@pytest.fixture
def project(instance: Path) -> Path:
    """The instance with a passing unittest suite, committed."""
    (instance / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (instance / "tests").mkdir()
    (instance / "tests" / "test_calc.py").write_text(
        "import unittest\nfrom calc import add\n\n"
        "class T(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"
    )
    git(instance, "add", "-A")
    git(instance, "commit", "-q", "-m", "calc")
    return instance


def contract_with(unit_id: str, **fields: Any) -> Any:
    data = {**contract(unit_id, f"objective of {unit_id}").to_json_dict(), **fields}
    return type(contract(unit_id, "x")).from_json_dict(data)


def loop_for(root: Path, scenario: dict[str, Any], **kw: Any) -> Loop:
    return Loop(
        Layout(root),
        load_definition(root),
        adapters={"script": ScriptAdapter(scenario)},
        models=MODELS,
        wait_for_person=False,
        **kw,
    )


def write_contract(root: Path, unit_id: str, **kw: Any) -> Path:
    path = root.parent / f"{unit_id}.contract.json"
    path.write_text(json.dumps(contract(unit_id, f"objective of {unit_id}", **kw).to_json_dict()))
    return path


def write_scenario(root: Path, name: str, scenario: dict[str, Any]) -> Path:
    path = root.parent / f"{name}.yaml"
    path.write_text(yaml.safe_dump(scenario))
    return path


def with_policy(root: Path, kind: str, change: Any) -> None:
    """A repository definition: the shipped ``kind`` policy with ``change`` applied."""
    target = root / "regulator" / "policies"
    target.mkdir(parents=True, exist_ok=True)
    data = yaml.safe_load((shipped_policies_dir() / f"{kind}.yaml").read_text())
    change(data)
    (target / f"{kind}.yaml").write_text(yaml.safe_dump(data))


SILENT: dict[str, Any] = {"steps": [{"end": "silent"}]}


def test_no_report_invalid_report_no_report_drive_to_retry_repair_escalate_and_stop(
    project: Path,
) -> None:
    work = contract_with(
        "u1", unresolved=[{"id": "d1", "subject": "s", "reason": "r", "handling": "defer"}]
    )
    bad_report = {"steps": [{"report": {"summary": "done"}}]}  # leaves d1 without an outcome
    driven = loop_for(project, {"attempts": [SILENT, bad_report, SILENT]}).drive(work)
    assert [(d.cause, d.action, d.occurrence) for d in driven.decisions] == [
        ("no-report", "retry", 1),
        ("invalid-report", "repair", 1),
        ("no-report", "escalate", 2),
    ]
    assert driven.outcome.status == "blocked"


def test_a_retry_at_the_attempt_ceiling_escalates_with_an_algedonic_signal_owed_to_a_person(
    project: Path,
) -> None:
    def always_retry(d: dict[str, Any]) -> None:
        d["rules"] = [{"cause": "no-report", "actions": ["retry"]}]

    with_policy(project, "recovery", always_retry)
    loop = loop_for(project, {"attempts": [SILENT]})
    driven = loop.drive(contract("u2", "x"))
    assert [d.action for d in driven.decisions] == ["retry", "retry", "escalate"]
    last = driven.decisions[-1]
    assert "3 of 3" in last.rationale and "escalate" in last.rationale
    log = loop.log
    signal = log.messages[last.id]
    assert signal.kind == "algedonic-signal" and signal.unit == "u2"
    owed = [o for o in log.open_obligations("u2") if o.consumer == "human"]
    assert len(owed) == 1 and owed[0].concern == "recovery-decision" and owed[0].blocks
    assert last.id in owed[0].sources
    assert loop.store.unit("u2").reason == "escalated to S5: no-report (recovery v1)"
    assert [d.occurrence for d in driven.decisions] == [1, 2, 3]


def test_a_check_failure_is_repaired_and_the_unit_closes_by_merge(project: Path) -> None:
    broken = {
        "steps": [
            {"edit": {"path": "calc.py", "content": "def add(a, b):\n    return a - b\n"}},
            {"commit": "oops"},
            {"report": {"summary": "s"}},
        ]
    }
    fixed = {
        "steps": [
            {"edit": {"path": "calc.py", "content": "def add(a, b):\n    return b + a\n"}},
            {"commit": "fix"},
            {"report": {"summary": "s"}},
        ]
    }
    loop = loop_for(project, {"attempts": [broken, fixed]})
    driven = loop.drive(contract("u3", "x"))
    assert [(d.cause, d.action) for d in driven.decisions] == [("check-failure", "repair")]
    assert driven.outcome.status == "closed" and driven.outcome.merged
    assert "return b + a" in (project / "calc.py").read_text()
    assert git(project, "log", "-1", "--format=%s").strip() == "Reintegrate unit/u3"
    verdicts = loop.audit.audit_for("u3").verdicts
    assert [v.verdict for v in verdicts] == ["fail", "pass"]
    assert not (project / ".regulator" / "worktrees" / "u3").exists()


def test_a_consent_asked_with_nobody_present_pauses_and_the_answer_is_the_next_hint(
    project: Path,
) -> None:
    ask = {
        "steps": [
            {
                "ask": {
                    "kind": "consent",
                    "subject": "push",
                    "question": "May I push?",
                    "action": "git push",
                }
            }
        ]
    }
    report = {"steps": [{"report": {"summary": "did not push"}}]}
    contract_path = write_contract(project, "u4")
    scenario = write_scenario(project, "u4", {"attempts": [ask, report], "models": sorted(MODELS)})
    first = run_cli("unit", "drive", str(contract_path), "--script", str(scenario), cwd=project)
    assert first.returncode == 1
    assert (
        "unit u4: paused: awaiting a person — consent: push — May I push? (obligation "
        in first.stdout
    )
    assert "attempt" not in first.stdout.split("\n")[1]  # no decision was taken
    loop = loop_for(project, {"attempts": [report]})
    assert loop.store.attempts("u4")[-1].outcome == "paused"
    assert loop.store.decisions("u4") == []
    oid = next(o.id for o in loop.log.open_obligations("u4"))
    again = cli("unit", "drive", str(contract_path), "--script", str(scenario), cwd=project)
    assert again.returncode == 1 and "must be dispositioned before dispatch" in again.stdout
    answered = cli(
        "answer", oid[:8], "--by", "alice", "--answer", "no", "--note", "not today", cwd=project
    )
    assert answered.returncode == 0
    done = cli("unit", "drive", str(contract_path), "--script", str(scenario), cwd=project)
    assert done.returncode == 0, done.stdout + done.stderr
    prompt = (project / ".regulator" / "units" / "u4" / "prompt.a2.md").read_text()
    assert (
        "Your question (consent: push: May I push?) was answered by alice — rejected: "
        "no — not today. Do not perform what was refused." in prompt
    )


def test_a_unit_paused_past_the_wait_ceiling_is_routed_under_timeout_and_its_lease_released(
    project: Path,
) -> None:
    with_policy(project, "interaction", lambda d: d.update(waitCeilingMs=600000))
    clock = SimClock(datetime.now(UTC))
    ask = {"steps": [{"ask": {"kind": "clarification", "subject": "q", "question": "Which?"}}]}
    loop = loop_for(project, {"attempts": [ask]}, clock=clock)
    work = contract("u5", "x")
    loop.drive(work)
    assert loop.route("u5") is None  # inside the ceiling: waiting for a person, not failing
    assert (project / ".regulator" / "leases" / "u5.json").exists()
    clock.advance(11)
    decision = loop.route("u5")
    assert decision is not None and (decision.cause, decision.action) == ("timeout", "retry")
    assert not (project / ".regulator" / "leases" / "u5.json").exists()
    log = loop.log
    question = [o for o in log.open_obligations("u5") if o.concern == "interaction"]
    assert len(question) == 1 and question[0].status == "open"
    refused = loop.dispatch(work, hint=decision.hint)
    assert refused.status == "refused"
    assert any("must be dispositioned before dispatch" in p for p in refused.problems)


def test_a_session_past_its_wall_clock_ceiling_is_stopped_and_budget_exhausted(
    project: Path,
) -> None:
    def shrink(d: dict[str, Any]) -> None:
        d["budgets"]["default"]["wallClockMs"] = 300

    with_policy(project, "budget", shrink)
    loop = loop_for(
        project, {"attempts": [{"steps": [{"sleep": 20000}, {"report": {"summary": "late"}}]}]}
    )
    started = time.monotonic()
    outcome = loop.dispatch(contract("u6", "x"))
    assert time.monotonic() - started < 10
    assert outcome.attempt is not None and outcome.attempt.outcome == "budget-exhausted"
    ledger = loop.store.budget("u6", 1)
    assert ledger is not None and ledger.exhausted is not None
    assert ledger.exhausted.dimension == "wallClockMs"
    assert loop.store.unit("u6").reason == "budget exhausted: wallClockMs"


def test_a_command_session_past_its_wall_clock_ceiling_is_killed(project: Path) -> None:
    def shrink(d: dict[str, Any]) -> None:
        d["budgets"]["default"]["wallClockMs"] = 500

    with_policy(project, "budget", shrink)
    adapter = CommandAdapter(SessionSpec(adapter="command", command=["sleep", "30"]))
    loop = Loop(
        Layout(project), load_definition(project), adapters={"script": adapter}, models=MODELS
    )
    started = time.monotonic()
    outcome = loop.dispatch(contract("u7", "x"))
    assert time.monotonic() - started < 15
    assert outcome.attempt is not None and outcome.attempt.outcome == "budget-exhausted"


def test_a_command_session_meters_the_usage_its_agent_prints(project: Path) -> None:
    script = project.parent / "agent.sh"
    script.write_text(
        '#!/bin/sh\necho \'{"type":"result","num_turns":3,"total_cost_usd":0.12,'
        '"usage":{"input_tokens":1000,"output_tokens":234}}\'\n'
    )
    script.chmod(0o755)
    spec = SessionSpec(
        adapter="command", command=[str(script), "{prompt_file}"], usage_format="claude-json"
    )
    loop = Loop(
        Layout(project),
        load_definition(project),
        adapters={"script": CommandAdapter(spec)},
        models=MODELS,
    )
    outcome = loop.dispatch(contract("u8", "x"))
    assert outcome.attempt is not None and outcome.attempt.outcome == "no-report"
    ledger = loop.store.budget("u8", 1)
    assert ledger is not None
    assert (ledger.consumed.tokens, ledger.consumed.turns) == (1234, 3)
    config = json.loads((project / ".regulator" / "units" / "u8" / "mcp.a1.json").read_text())
    assert config["mcpServers"]["regulator"]["env"]["REGULATOR_UNIT"] == "u8"


def test_the_units_mcp_server_is_never_a_regulator_package_the_agent_wrote(
    project: Path, tmp_path: Path
) -> None:
    adapter = CommandAdapter(SessionSpec(adapter="command", command=["true"]))
    loop = Loop(
        Layout(project), load_definition(project), adapters={"script": adapter}, models=MODELS
    )
    assert loop.dispatch(contract("u8b", "x")).attempt is not None
    config = json.loads((project / ".regulator" / "units" / "u8b" / "mcp.a1.json").read_text())
    server = config["mcpServers"]["regulator"]
    # The client starts the server in the worktree, where the agent may write ./regulator.
    planted = tmp_path / "worktree" / "regulator"
    planted.mkdir(parents=True)
    (planted / "__init__.py").write_text("")
    (planted / "__main__.py").write_text("print('planted')\n")
    args = [*server["args"][:-1], "--version"]  # the same program, asked something quick
    ran = subprocess.run(
        [server["command"], *args], cwd=planted.parent, capture_output=True, text=True, timeout=60
    )
    assert ran.stdout.startswith("regulator "), ran.stdout


def test_no_model_in_the_route_is_an_environment_failure(project: Path) -> None:
    loop = Loop(
        Layout(project),
        load_definition(project),
        adapters={"script": ScriptAdapter({"attempts": [SILENT]})},
        models=set(),
    )
    outcome = loop.dispatch(contract("u9", "x"))
    assert outcome.attempt is not None and outcome.attempt.outcome == "error"
    decision = loop.route("u9")
    assert decision is not None and decision.cause == "environment"


def test_a_provider_failure_moves_to_the_next_model_in_a_fresh_session(project: Path) -> None:
    scenario = {"attempts": [{"steps": [{"provider-error": "overloaded"}]}]}
    models = {"anthropic/claude-sonnet-4-5", "openai/gpt-5"}
    loop = Loop(
        Layout(project),
        load_definition(project),
        adapters={"script": ScriptAdapter(scenario)},
        models=models,
    )
    loop.dispatch(contract("u10", "x"))
    ledger = loop.store.budget("u10", 1)
    assert ledger is not None and ledger.models == ["anthropic/claude-sonnet-4-5", "openai/gpt-5"]


def test_an_unsound_contract_is_refused_before_anything_is_written(project: Path) -> None:
    work = contract_with(
        "u11",
        unresolved=[
            {"id": "d1", "subject": "s", "reason": "r", "handling": "resolve-before-execution"}
        ],
    )
    outcome = loop_for(project, {"attempts": [SILENT]}).dispatch(work)
    assert outcome.status == "refused" and outcome.problems
    assert not (project / ".regulator" / "units" / "u11").exists()


def test_the_demo_finishes_in_under_a_minute_and_shows_every_state(tmp_path: Path) -> None:
    started = time.monotonic()
    result = cli("demo", str(tmp_path / "demo"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 60
    view = json.loads(
        cli("status", "--json", "--instance", str(tmp_path / "demo"), cwd=tmp_path).stdout
    )
    inst = view["instance"]
    units = {u["unit"]["unitId"]: u for u in inst["units"]}
    assert units["fix-rounding"]["unit"]["status"] == "closed"
    assert [d["action"] for d in units["fix-rounding"]["decisions"]] == ["repair"]
    kinds = {
        i["request"]["kind"]
        for i in inst["interactions"]
        if not i["answers"] or i["answers"][-1]["outcome"] != "answered"
    }
    assert kinds == {"consent", "choice", "clarification", "uat", "recap"}
    for unit in ("publish-release", "pick-storage", "clarify-api", "check-ui"):
        assert units[unit]["unit"]["reason"].startswith("paused: awaiting a person")
    assert units["flaky-import"]["decisions"][-1]["action"] == "escalate"
    assert units["build-docs"]["decisions"][-1]["action"] == "remediate"
    obligations = inst["obligations"]
    intel = [o for o in obligations if o["concern"] == "intelligence-signal"]
    assert sorted(o["unit"] for o in intel) == ["clarify-api", "pick-storage"]
    assert any(o["concern"] == "policy-proposal" and o["consumer"] == "S5" for o in obligations)
    assert any(
        o["concern"] == "audit-finding" and "unit" not in o and o["blocks"] for o in obligations
    )
    assert any(any(d["reminder"] for d in o["deliveries"]) for o in obligations)
    memory = (tmp_path / "demo" / ".regulator" / "memory.ndjson").read_text()
    assert "memory-recorded" in memory
    assert (tmp_path / "demo" / ".regulator" / "outbox").read_text().count("\n") >= 8


def test_the_demo_brings_its_own_example_people_and_commits_them(tmp_path: Path) -> None:
    from regulator.host.demo import build_demo

    root = tmp_path / "demo"
    build_demo(root)
    # Not the person running the demo, whom a plain `init` would name: alice and bob.
    people = load_definition(root).interaction.people
    assert [(p.name, p.os_users) for p in people] == [("alice", None), ("bob", None)]
    assert "regulator/policies/interaction.yaml" in git(root, "ls-files").split()
