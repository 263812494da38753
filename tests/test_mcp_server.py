"""`regulator mcp` and `regulator tool`: real agents reach the one implementation of the tools."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from regulator.host.demo import contract
from regulator.host.loop import Loop
from regulator.host.sessions.command import CommandAdapter
from regulator.policy import load_definition
from regulator.policy.workload import SessionSpec, load_workload
from regulator.rules.regulatory_log import RegulatoryLog
from regulator.store import Layout

from .conftest import git
from .test_agent_ask import answer, open_question, someone_present

__all__ = ["someone_present"]  # a fixture, used by name

MODELS = {"anthropic/claude-sonnet-4-5"}
CLIENT = Path(__file__).parent / "agents" / "mcp_client.py"


@pytest.fixture
def project(instance: Path) -> Path:
    (instance / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(instance, "add", "-A")
    git(instance, "commit", "-q", "-m", "calc")
    return instance


def drive_agent(root: Path, unit_id: str, plan: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    """One attempt whose agent is an MCP client started from the config the loop wrote."""
    plan_path = root.parent / f"{unit_id}.plan.json"
    plan_path.write_text(json.dumps(plan))
    out = root.parent / f"{unit_id}.out.json"
    spec = SessionSpec(
        adapter="command",
        command=[sys.executable, str(CLIENT), "{mcp_config}", str(plan_path), str(out)],
    )
    loop = Loop(
        Layout(root),
        load_definition(root),
        adapters={"script": CommandAdapter(spec)},
        models=MODELS,
    )
    outcome = loop.dispatch(contract(unit_id, "objective", **kw))
    assert out.exists(), f"the agent wrote nothing: {outcome}"
    result: dict[str, Any] = json.loads(out.read_text())
    result["outcome"] = outcome
    return result


def test_an_mcp_client_lists_exactly_the_profiles_tools_with_their_schemas(project: Path) -> None:
    seen = drive_agent(project, "m1", [{"tool": "read_conventions"}])
    grants = set(load_workload(load_definition(project)).grants("implement"))
    assert set(seen["tools"]) == grants | {"report_result"}
    assert seen["tools"]["ask_human"]["required"] == ["kind", "subject", "question"]
    assert "summary" in seen["tools"]["report_result"]["properties"]
    call = seen["calls"][0]
    assert call["isError"] is False
    assert "testCommand" in call["structured"] or call["structured"]


def test_the_servers_instructions_name_only_the_tools_the_session_has(
    project: Path, instance: Path
) -> None:
    # A contracted unit answers its contract with report_result, and checks with run_checks.
    seen = drive_agent(project, "m0", [])
    assert "report_result" in seen["instructions"]
    assert "run_checks" in seen["instructions"] and "ask_human" in seen["instructions"]
    # A session unit a person's agent opens has no contract: it is never told of report_result.
    import time

    from regulator.host.wiring import _Exchange

    server = subprocess.Popen(
        [sys.executable, "-m", "regulator", "mcp"],
        cwd=instance,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        exchange = _Exchange(server, time.monotonic() + 60)
        client = {"name": "t", "version": "1"}
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
        exchange.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
        reply = exchange.reply(1)
        assert isinstance(reply, dict), reply
        said = reply["result"]["instructions"]
    finally:
        server.kill()
        server.wait()
        exchange.selector.close()
    assert "report_result" not in said
    assert "Check your work with run_checks" in said and "needs no person's consent" in said
    assert "Ask a person with ask_human; silence is never consent." in said


def test_a_plan_unit_is_not_offered_the_tools_its_profile_does_not_grant(project: Path) -> None:
    seen = drive_agent(
        project,
        "m2",
        [{"tool": "ask_human", "arguments": {"kind": "recap", "subject": "s", "question": "q"}}],
        unit_type="plan",
    )
    assert set(seen["tools"]) == {"read_conventions", "run_checks", "report_result"}
    assert seen["calls"][0]["isError"] is True
    assert "not granted" in seen["calls"][0]["text"]


def test_nobody_present_pauses_the_attempt_and_refuses_every_effect_after_it(
    project: Path,
) -> None:
    consent = {
        "kind": "consent",
        "subject": "publish",
        "question": "May I push the tag?",
        "action": "git push origin v1.2.0",
    }
    remember = {
        "subject": "mirror",
        "note": "the mirror is slow",
        "reviewBy": "2099-01-01",
    }
    seen = drive_agent(
        project,
        "m3",
        [
            {"tool": "ask_human", "arguments": consent},
            {"tool": "remember", "arguments": remember},
            {"tool": "read_conventions"},
        ],
    )
    asked, remembered, read = seen["calls"]
    assert asked["isError"] is False
    assert asked["structured"]["outcome"] == "unavailable"
    assert asked["structured"]["paused"] is True
    assert "do NOT perform the action" in asked["structured"]["message"]
    obligation = asked["structured"]["obligation"]
    assert remembered["isError"] is True and obligation in remembered["text"]
    assert read["isError"] is False  # pure reads still work
    outcome = seen["outcome"]
    assert outcome.attempt is not None and outcome.attempt.outcome == "paused"
    log = RegulatoryLog(Layout(project))
    log.refresh()
    assert any(o.id.startswith(obligation) for o in log.open_obligations("m3"))


def tool(root: Path, name: str, arguments: dict[str, Any], unit: str) -> tuple[int, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "regulator", "tool", name],
        input=json.dumps(arguments),
        capture_output=True,
        text=True,
        cwd=root,
        env={
            **__import__("os").environ,
            "REGULATOR_INSTANCE": str(root),
            "REGULATOR_UNIT": unit,
            "REGULATOR_ATTEMPT": "1",
        },
        timeout=60,
    )
    assert done.stderr == "" or done.returncode != 0, done.stderr
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else done.stderr


def test_regulator_tool_shares_the_pause_with_the_attempts_other_processes(
    project: Path,
) -> None:
    """An agent without MCP calls `regulator tool` once per call: the pause one call leaves
    holds for the next process of the same attempt."""
    agent = project.parent / "shell-agent.sh"
    out = project.parent / "shell-agent.out"
    choice = json.dumps(
        {"kind": "choice", "subject": "s", "question": "which?", "options": ["a", "b"]}
    )
    agent.write_text(
        "#!/bin/sh\n"
        f"R='{sys.executable} -m regulator tool'\n"
        f"echo '{choice}' | $R ask_human > {out}.1; echo \"exit $?\" >> {out}.1\n"
        f'echo \'{{"message": "hi"}}\' | $R notify_owner > {out}.2; echo "exit $?" >> {out}.2\n'
        f"$R read_conventions --json '{{}}' > {out}.3; echo \"exit $?\" >> {out}.3\n"
    )
    agent.chmod(0o755)
    loop = Loop(
        Layout(project),
        load_definition(project),
        adapters={"script": CommandAdapter(SessionSpec(adapter="command", command=[str(agent)]))},
        models=MODELS,
    )
    outcome = loop.dispatch(contract("m4", "objective"))
    asked, notified, read = (Path(f"{out}.{n}").read_text().splitlines() for n in (1, 2, 3))
    assert json.loads(asked[0])["paused"] is True and asked[1] == "exit 0"
    assert "paused" in json.loads(notified[0])["refused"] and notified[1] == "exit 1"
    assert read[1] == "exit 0"
    assert outcome.attempt is not None and outcome.attempt.outcome == "paused"
    # The attempt is over: nothing acts for the blocked unit any more, and a process the loop
    # did not start for it cannot name it.
    code, said = tool(project, "read_conventions", {}, "m4")
    assert code == 1 and "no agent process registered for that unit" in said


def test_a_consent_answered_in_the_room_reaches_the_mcp_client_with_the_note(
    project: Path, someone_present: None
) -> None:
    consent = {
        "kind": "consent",
        "subject": "clean up",
        "question": "May I delete old releases?",
        "action": "delete releases 1.0 to 1.3",
    }
    seen: dict[str, Any] = {}
    agent = threading.Thread(
        target=lambda: seen.update(
            drive_agent(project, "m5", [{"tool": "ask_human", "arguments": consent}])
        )
    )
    agent.start()
    question = open_question(project)
    answer(project, question.id, "yes", note="only the two oldest")
    agent.join(timeout=120)
    (call,) = seen["calls"]
    assert call["isError"] is False
    result = call["structured"]
    assert (result["answered"], result["disposition"]) == (True, "accepted")
    assert result["answer"] == "yes" and result["note"] == "only the two oldest"
    assert "only the two oldest" in result["message"]
    log = RegulatoryLog(Layout(project))
    log.refresh()
    assert log.obligations[question.id].disposition == "accepted"
    assert seen["outcome"].attempt.outcome != "paused"  # answered: the attempt goes on


def test_a_consent_refused_in_the_room_tells_the_agent_not_to_act(
    project: Path, someone_present: None
) -> None:
    consent = {
        "kind": "consent",
        "subject": "publish",
        "question": "May I push the tag?",
        "action": "git push origin v1.2.0",
    }
    seen: dict[str, Any] = {}
    agent = threading.Thread(
        target=lambda: seen.update(
            drive_agent(project, "m6", [{"tool": "ask_human", "arguments": consent}])
        )
    )
    agent.start()
    question = open_question(project)
    answer(project, question.id, "no", note="not before the freeze ends")
    agent.join(timeout=120)
    result = seen["calls"][0]["structured"]
    assert result["disposition"] == "rejected"
    assert "do NOT perform the action" in result["message"]
    assert "not before the freeze ends" in result["message"]


def answering(root: Path, stop: threading.Event, text: str = "go ahead") -> threading.Thread:
    """A person who answers every question as it appears, from another terminal."""

    def loop() -> None:
        log = RegulatoryLog(Layout(root))
        done: set[str] = set()
        while not stop.is_set():
            log.refresh()
            for o in log.open_obligations():
                if o.concern == "interaction" and o.id not in done:
                    done.add(o.id)
                    answer(root, o.id, text)
            stop.wait(0.05)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


def test_the_seeds_rules_hold_over_mcp(project: Path, someone_present: None) -> None:
    def clarify(n: int) -> dict[str, Any]:
        question = {"kind": "clarification", "subject": f"q{n}", "question": f"which {n}?"}
        return {"tool": "ask_human", "arguments": question}

    from datetime import UTC, datetime, timedelta

    review_by = (datetime.now(UTC) + timedelta(days=91)).date().isoformat()
    stop = threading.Event()
    person = answering(project, stop)
    try:
        seen = drive_agent(
            project,
            "m7",
            [
                clarify(1),
                clarify(2),
                clarify(3),
                {
                    "tool": "ask_human",
                    "arguments": {"kind": "recap", "subject": "r", "question": "I chose x"},
                },
                {
                    "tool": "report_result",
                    "arguments": {
                        "summary": "done",
                        "evidence": [{"class": "test", "ref": "unittest", "observation": "ok"}],
                        "delegatedResults": [],
                        "unresolvedOutcomes": [],
                        "emergentDecisions": [],
                        "deviations": [],
                        "residualUncertainty": [],
                    },
                },
                {"tool": "notify_owner", "arguments": {"message": "halfway there"}},
                {"tool": "notify_owner", "arguments": {"message": "halfway there"}},
                {
                    "tool": "remember",
                    "arguments": {"subject": "s", "note": "n", "reviewBy": review_by},
                },
            ],
        )
    finally:
        stop.set()
        person.join()
    first, second, third, recap, report, sent, again, remember = seen["calls"]
    assert first["structured"]["answered"] and second["structured"]["answered"]
    assert third["isError"] and "attention budget is spent" in third["text"]
    assert "residualUncertainty" in third["text"] and "recap" in third["text"]
    assert recap["isError"] is False
    assert report["isError"] and "no passing run_tests or run_checks" in report["text"]
    assert not (project / ".regulator" / "units" / "m7" / "report.v1.a1.json").exists()
    assert sent["structured"]["sent"] is True and again["structured"]["sent"] is False
    outbox = (project / ".regulator" / "outbox").read_text()
    assert outbox.count("halfway there") == 1
    assert remember["isError"] and "90 days" in remember["text"]


def test_a_session_the_server_made_is_settled_when_the_client_stops_it_with_sigterm(
    instance: Path,
) -> None:
    """As Codex CLI stops its servers: SIGTERM to the process group, SIGKILL to the server
    20 ms later, stdin never closed. The session is settled all the same."""
    import os
    import signal
    import time

    from regulator.host.wiring import _Exchange

    server = subprocess.Popen(
        [sys.executable, "-m", "regulator", "mcp"],
        cwd=instance,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    exchange = _Exchange(server, time.monotonic() + 60)
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
    exchange.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
    assert isinstance(exchange.reply(1), dict)
    exchange.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    consent = {"kind": "consent", "subject": "tag", "question": "May I?", "action": "git tag"}
    call = {"name": "ask_human", "arguments": consent}
    exchange.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
    reply = exchange.reply(2)
    assert isinstance(reply, dict), reply
    assert reply["result"]["structuredContent"]["paused"] is True  # nobody in the room
    (unit_id,) = [p.name for p in (instance / ".regulator" / "units").iterdir()]

    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=0.02)
    except subprocess.TimeoutExpired:
        server.kill()
    server.wait()
    exchange.selector.close()

    unit_file = instance / ".regulator" / "units" / unit_id / "unit.json"
    deadline = time.monotonic() + 30
    while json.loads(unit_file.read_text())["status"] == "dispatched":
        assert time.monotonic() < deadline, "the session was never settled"
        time.sleep(0.05)
    unit = json.loads(unit_file.read_text())
    assert (unit["status"], unit["attempts"]) == ("blocked", 1)  # the question is still owed
    # The client it registered as the session's agent (this test's process, which still runs)
    # stays registered: the child that settled the session proved the unit its own by it. It
    # is forgotten by the first look after the client has gone.
    (left,) = (instance / ".regulator" / "sessions" / "agents").glob("*.json")
    assert json.loads(left.read_text())["unitId"] == unit_id
