"""Asking outside `unit drive`: `regulator ask`, Claude Code's hooks and session units.

A person is "in the room" here through a real presence file kept fresh by a thread, and
answers with `regulator answer` from another process, as a second terminal would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from regulator.host.presence import PresenceFile
from regulator.rules.regulatory_log import RegulatoryLog
from regulator.store import Layout

from .conftest import cli, run_cli

RECORDED = Path(__file__).parent / "agents" / "claude_code"


@pytest.fixture
def someone_present(instance: Path) -> Iterator[None]:
    presence = PresenceFile(Layout(instance), "alice")
    stop = threading.Event()

    def beat() -> None:
        while not stop.is_set():
            presence.beat()
            stop.wait(0.5)

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join()
    presence.close()


def start(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGULATOR_")}
    process = subprocess.Popen(
        [sys.executable, "-m", "regulator", *args],
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    if stdin is not None:
        assert process.stdin is not None
        process.stdin.write(stdin)
    assert process.stdin is not None
    process.stdin.close()
    process.stdin = None  # communicate() must not flush it again
    return process


def open_question(root: Path, deadline_s: float = 60) -> Any:
    """The interaction obligation that appears in the log, once it does."""
    log = RegulatoryLog(Layout(root))
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        log.refresh()
        waiting = [o for o in log.open_obligations() if o.concern == "interaction"]
        if waiting:
            return waiting[0]
        time.sleep(0.05)
    raise AssertionError("no question appeared")


def answer(root: Path, oid: str, text: str, note: str | None = None) -> None:
    extra = ["--note", note] if note else []
    done = run_cli("answer", oid[:8], "--by", "alice", "--answer", text, *extra, cwd=root)
    assert done.returncode == 0, done.stderr


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=60)
    return process.returncode, out, err


CONSENT = [
    "ask",
    "--kind",
    "consent",
    "--subject",
    "clean up",
    "--question",
    "May I delete the old releases?",
    "--action",
    "delete releases 1.0 to 1.3",
]


def test_a_consent_asked_from_a_shell_prints_the_yes_and_the_note_and_exits_0(
    instance: Path, someone_present: None
) -> None:
    asking = start(*CONSENT, cwd=instance)
    question = open_question(instance)
    answer(instance, question.id, "yes", note="only the two oldest")
    code, out, err = finish(asking)
    assert code == 0, err
    assert out.splitlines() == ["yes", "only the two oldest"]
    log = RegulatoryLog(Layout(instance))
    log.refresh()
    assert log.obligations[question.id].disposition == "accepted"


def test_a_consent_refused_in_the_room_exits_1_with_the_reason(
    instance: Path, someone_present: None
) -> None:
    asking = start(*CONSENT, cwd=instance)
    question = open_question(instance)
    answer(instance, question.id, "no", note="we keep them for the audit")
    code, out, _ = finish(asking)
    assert code == 1
    assert "we keep them for the audit" in out


def test_nobody_in_the_room_exits_3_and_the_question_stays_owed(instance: Path) -> None:
    code, _, err = finish(start(*CONSENT, cwd=instance))
    assert code == 3
    assert "Silence is not consent" in err
    log = RegulatoryLog(Layout(instance))
    log.refresh()
    (owed,) = [o for o in log.open_obligations() if o.concern == "interaction"]
    assert owed.unit is not None
    unit = json.loads((instance / ".regulator" / "units" / owed.unit / "unit.json").read_text())
    assert unit["status"] == "blocked"  # the session unit holds the question, with its veto


def hook(root: Path, payload: dict[str, Any]) -> subprocess.Popen[str]:
    return start("hook", "claude-code", cwd=root, stdin=json.dumps({**payload, "cwd": str(root)}))


def payload(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((RECORDED / f"{name}.json").read_text())
    return data


def decision(process: subprocess.Popen[str]) -> dict[str, Any]:
    code, out, err = finish(process)
    assert code == 0, err
    reply: dict[str, Any] = json.loads(out)
    output: dict[str, Any] = reply.get("hookSpecificOutput", {})
    return output


def test_a_read_is_allowed_with_no_question(instance: Path, someone_present: None) -> None:
    reply = decision(hook(instance, payload("pre_tool_use_read")))
    assert reply["permissionDecision"] == "allow"
    log = RegulatoryLog(Layout(instance))
    log.refresh()
    assert not log.interactions


def test_a_destructive_command_becomes_a_consent_question_and_yes_allows_it(
    instance: Path, someone_present: None
) -> None:
    asking = hook(instance, payload("pre_tool_use_bash_rm"))
    question = open_question(instance)
    assert "rm -rf build" in (question.question or "")
    answer(instance, question.id, "yes")
    reply = decision(asking)
    assert reply["hookEventName"] == "PreToolUse"
    assert reply["permissionDecision"] == "allow"


def test_a_refused_command_is_denied_with_the_persons_note(
    instance: Path, someone_present: None
) -> None:
    asking = hook(instance, payload("pre_tool_use_bash_rm"))
    question = open_question(instance)
    answer(instance, question.id, "no", note="build/ holds the release artefacts")
    reply = decision(asking)
    assert reply["permissionDecision"] == "deny"
    assert "build/ holds the release artefacts" in reply["permissionDecisionReason"]


def test_with_nobody_present_the_hook_hands_the_decision_to_claude_codes_prompt(
    instance: Path,
) -> None:
    reply = decision(hook(instance, payload("pre_tool_use_bash_rm")))
    assert reply["permissionDecision"] == "ask"
    log = RegulatoryLog(Layout(instance))
    log.refresh()
    assert not log.interactions  # nobody was there: nobody was asked


def test_session_start_and_end_open_and_close_the_session_unit(instance: Path) -> None:
    reply = decision(hook(instance, payload("session_start")))
    assert "session-claude-" in reply["additionalContext"]
    units = instance / ".regulator" / "units"
    (unit_dir,) = list(units.iterdir())
    assert json.loads((unit_dir / "unit.json").read_text())["status"] == "dispatched"
    finish(hook(instance, payload("session_end")))
    assert json.loads((unit_dir / "unit.json").read_text())["status"] == "closed"


def test_session_start_tells_the_model_its_tools_by_the_names_it_calls_them(
    instance: Path,
) -> None:
    context = decision(hook(instance, payload("session_start")))["additionalContext"]
    assert "Ask a person with mcp__regulator__ask_human; silence is never consent." in context
    assert "Check your work with mcp__regulator__run_checks" in context
    assert "report_result" not in context  # a session unit has no contract to answer


def test_a_resumed_claude_code_session_gets_a_new_unit_and_the_old_stays_closed(
    instance: Path,
) -> None:
    decision(hook(instance, payload("session_start")))
    finish(hook(instance, payload("session_end")))
    resumed = decision(hook(instance, {**payload("session_start"), "source": "resume"}))
    units = sorted(p.name for p in (instance / ".regulator" / "units").iterdir())
    assert len(units) == 2 and units[1] == units[0] + "-2"
    assert units[1] in resumed["additionalContext"]
    status = {
        u: json.loads((instance / ".regulator" / "units" / u / "unit.json").read_text())["status"]
        for u in units
    }
    assert status == {units[0]: "closed", units[1]: "dispatched"}


def test_a_session_that_ended_owing_a_question_closes_once_it_is_answered(
    instance: Path,
) -> None:
    code, _, _ = finish(start(*CONSENT, cwd=instance))
    assert code == 3
    log = RegulatoryLog(Layout(instance))
    log.refresh()
    (owed,) = [o for o in log.open_obligations() if o.concern == "interaction"]
    again = cli("session", "end", owed.unit or "", cwd=instance)
    assert again.stdout.strip().endswith("blocked")  # still owed: nothing changes
    answer(instance, owed.id, "no", note="not today")
    done = cli("session", "end", owed.unit or "", cwd=instance)
    assert done.returncode == 0 and done.stdout.strip().endswith("closed")


def test_hook_consents_spend_none_of_the_sessions_attention_budget(
    instance: Path, someone_present: None
) -> None:
    for n in range(3):  # the shipped budget is two blocking questions an attempt
        asking = hook(instance, payload("pre_tool_use_bash_rm"))
        question = open_question(instance)
        answer(instance, question.id, "yes")
        assert decision(asking)["permissionDecision"] == "allow", n


def test_a_question_nobody_was_there_to_answer_is_delivered_at_once(instance: Path) -> None:
    code, _, _ = finish(start(*CONSENT, cwd=instance))
    assert code == 3
    outbox = (instance / ".regulator" / "outbox").read_text()
    assert "clean up" in outbox  # no loop step follows a session unit's question


def test_a_write_to_what_governs_the_agent_is_a_consent_question_that_says_so(
    instance: Path, someone_present: None
) -> None:
    target = instance / "regulator" / "agents.yaml"
    write = {
        **payload("pre_tool_use_read"),
        "tool_name": "Write",
        "tool_input": {"file_path": str(target)},
    }
    asking = hook(instance, write)
    question = open_question(instance)
    assert "changes what governs the agent: regulator/agents.yaml" in question.subject
    answer(instance, question.id, "no", note="the gate is mine to set")
    reply = decision(asking)
    assert reply["permissionDecision"] == "deny"
    assert "the gate is mine to set" in reply["permissionDecisionReason"]
