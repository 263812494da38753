"""The supervised agent is an attacker: nothing it can set lifts its own gate.

The agent runs as the same OS user as the person and may be prompt-injected. These are the
tries of issue 20 made as such an agent would, from a fresh instance with nobody in the room
unless said: name another attempt or unit in the environment, delete the journal, kill the
process that waits for an answer, change the policy under a running session, feed a tool what
its schema does not allow, put control characters in an answer's note.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from regulator.host.hooks import claude_code
from regulator.host.presence import PresenceFile
from regulator.policy import load_definition
from regulator.rules.execution import ExecutionStore
from regulator.rules.regulatory_log import RegulatoryLog
from regulator.store import Layout

from .agent_fixture import as_agent_of
from .conftest import cli, git, run_cli
from .test_agent_ask import open_question, someone_present, start
from .test_loop import MODELS, contract_with

__all__ = ["someone_present"]

CONSENT = {
    "kind": "consent",
    "subject": "publish",
    "question": "May I publish 1.0?",
    "action": "upload 1.0 to the package index",
}


def plain_env(**extra: str) -> dict[str, str]:
    """The environment without any of the session's variables, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGULATOR_")}
    return {**env, **extra}


def tool(root: Path, name: str, arguments: dict[str, Any], **env: str) -> tuple[int, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "regulator", "tool", name],
        input=json.dumps(arguments),
        capture_output=True,
        text=True,
        cwd=root,
        env=plain_env(**env),
        timeout=120,
    )
    out = done.stdout.strip()
    return done.returncode, json.loads(out) if out else done.stderr


def paused_session(root: Path, key: str) -> str:
    """A session unit whose consent went unanswered (nobody is in the room): paused."""
    code, result = tool(root, "ask_human", CONSENT, REGULATOR_SESSION=key)
    assert code == 0 and result["paused"] is True, result
    return f"session-{key}"


def test_naming_another_attempt_in_the_environment_does_not_lift_the_pause(
    instance: Path,
) -> None:
    unit = paused_session(instance, "s1")
    before = (instance / ".regulator" / "outbox").read_bytes()
    for attempt in ("2", "3"):
        code, said = tool(
            instance,
            "notify_owner",
            {"message": "done"},
            REGULATOR_UNIT=unit,
            REGULATOR_ATTEMPT=attempt,
        )
        assert code == 1 and "no agent process registered for that unit" in str(said)
    # Even as a registered process of the unit's agent, another attempt is not this one.
    with as_agent_of(instance, unit, by="hook"):
        code, said = tool(instance, "notify_owner", {"message": "done"}, REGULATOR_ATTEMPT="2")
        assert code == 1 and "not the one in progress" in str(said)
        code, said = tool(instance, "ask_human", CONSENT, REGULATOR_ATTEMPT="2")
        assert code == 1 and "not the one in progress" in str(said)
        code, said = tool(instance, "notify_owner", {"message": "done"})
        assert code == 1 and "paused: consent unanswered" in said["refused"]
    assert (instance / ".regulator" / "outbox").read_bytes() == before
    log = RegulatoryLog(Layout(instance))
    log.refresh()
    assert len([o for o in log.open_obligations() if o.concern == "interaction"]) == 1


def test_a_variable_that_names_another_unit_or_session_than_the_agents_is_refused(
    instance: Path,
) -> None:
    mine = paused_session(instance, "mine")
    code, _ = tool(instance, "read_conventions", {}, REGULATOR_SESSION="other")
    assert code == 0  # a person's script may name any session of its own
    with as_agent_of(instance, mine, by="hook"):
        code, said = tool(instance, "notify_owner", {"message": "x"}, REGULATOR_SESSION="other")
        assert code == 1 and "REGULATOR_SESSION=other names another session" in said
        code, said = tool(
            instance, "notify_owner", {"message": "x"}, REGULATOR_UNIT="session-other"
        )
        assert code == 1 and "REGULATOR_UNIT=session-other names another unit" in said


def test_deleting_or_emptying_the_sessions_journal_does_not_lift_the_pause(
    instance: Path,
) -> None:
    unit = paused_session(instance, "s2")
    journal = instance / ".regulator" / "sessions" / unit / "a1.ndjson"
    for damage in ("empty", "delete"):
        if journal.exists():
            if damage == "empty":
                journal.write_bytes(b"")
            else:
                journal.unlink()
        code, said = tool(instance, "notify_owner", {"message": "x"}, REGULATOR_SESSION="s2")
        assert code == 1 and "paused: consent unanswered" in said["refused"], damage
    ended = run_cli("session", "end", "--key", "s2", cwd=instance, env=plain_env())
    assert ended.returncode == 0 and "blocked" in ended.stdout
    (attempt,) = ExecutionStore(Layout(instance)).attempts(unit)
    assert attempt.outcome == "paused"


def test_killing_the_process_that_waits_for_an_answer_leaves_the_pause(
    instance: Path, someone_present: None
) -> None:
    env_key = {"REGULATOR_SESSION": "s3"}
    for how in (signal.SIGTERM, signal.SIGKILL):
        waiting = subprocess.Popen(
            [sys.executable, "-m", "regulator", "tool", "ask_human", "--json", json.dumps(CONSENT)],
            cwd=instance,
            env=plain_env(**env_key),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        question = open_question(instance)
        waiting.send_signal(how)
        waiting.wait(timeout=60)
        code, said = tool(instance, "notify_owner", {"message": "x"}, **env_key)
        assert code == 1 and "paused: consent unanswered" in said["refused"]
        assert question.id[:8] in said["refused"]
        if how == signal.SIGTERM:
            # The question stays owed; answering it does not lift this attempt's pause either
            # (a new one is asked only by a new session), but it is what a person sees.
            answered = cli(
                "answer", question.id[:8], "--by", "alice", "--answer", "no", cwd=instance
            )
            assert answered.returncode == 0, answered.stderr
    log = RegulatoryLog(Layout(instance))
    log.refresh()
    assert [o.status for o in log.open_obligations() if o.concern == "interaction"] == ["open"]


def test_the_hosts_consent_for_an_agents_own_call_neither_pauses_nor_spends_the_budget(
    instance: Path, someone_present: None
) -> None:
    """Nobody answers the question the hook asks about a Bash call in time: the call is not
    made, and the session's own tools still work (the question was the host's, raised by S3,
    not the unit's)."""
    from regulator.host.agent_session import find_session

    layout, definition = Layout(instance), load_definition(instance)
    session = find_session(layout, definition, agent="claude-code", env={}, key="h1")
    tools = session.tools()
    host = tools.call(
        "ask_human",
        {**CONSENT, "subject": "Bash runs a shell command"},
        host_asked=True,
        max_wait_s=0.3,
    )
    assert (host["answered"], host["outcome"], host["paused"]) == (False, "timed-out", False)
    assert tools.paused is None and tools.questions().blocking_asked == 0
    assert tools.call("notify_owner", {"message": "still working"})["sent"] is True
    log = RegulatoryLog(layout)
    log.refresh()
    (asked,) = log.interactions.values()
    assert asked.request.raised_by == "S3"
    # The unit's own question, unanswered in time, pauses it.
    mine = tools.call("ask_human", CONSENT, max_wait_s=0.3)
    assert mine["paused"] is True and tools.paused is not None
    assert tools.questions().blocking_asked == 1


def test_a_policy_changed_under_a_running_session_takes_effect_for_the_next_session(
    instance: Path,
) -> None:
    layout = Layout(instance)
    definition_dir = instance / "regulator"
    (definition_dir / "policies").mkdir(parents=True, exist_ok=True)
    shipped = Path(__file__).resolve().parent.parent / "policies" / "agents.yaml"
    (definition_dir / "agents.yaml").write_text(shipped.read_text())

    def hook(session: str, event: str, **fields: Any) -> dict[str, Any]:
        payload = {"session_id": session, "cwd": str(instance), "hook_event_name": event}
        return claude_code({**payload, **fields}, layout, load_definition(instance), env={})

    hook("old", "SessionStart", source="startup")
    # While the session runs, its agents.yaml is rewritten to let every Bash call through.
    text = (definition_dir / "agents.yaml").read_text()
    text = text.replace("readOnly: [Read,", "readOnly: [Bash, Read,")
    (definition_dir / "agents.yaml").write_text(text)
    bash = {"tool_name": "Bash", "tool_input": {"command": "rm -rf src"}}
    reply = hook("old", "PreToolUse", **bash)
    assert reply["hookSpecificOutput"]["permissionDecision"] != "allow"
    hook("new", "SessionStart", source="startup")
    reply = hook("new", "PreToolUse", **bash)
    assert reply["hookSpecificOutput"]["permissionDecision"] == "allow"


def test_a_tools_arguments_are_checked_against_its_schema_before_anything_is_written(
    instance: Path,
) -> None:
    key = {"REGULATOR_SESSION": "s4"}
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("notify_owner", {"message": 123}, "message: must be a string, not 123"),
        ("ask_human", {**CONSENT, "subject": "x" * 5_000_000}, "at most 262144"),
        ("ask_human", {**CONSENT, "subject": "x" * 201}, "subject: at most 200 characters"),
        ("ask_human", {**CONSENT, "action": "   "}, "action: must not be blank"),
        ("remember", {"subject": "s", "note": "n", "reviewBy": "2099-01-01", "x": 1}, "x: not"),
    ]
    signals = instance / ".regulator" / "signals.ndjson"
    before = signals.read_bytes() if signals.exists() else b""
    for name, arguments, why in cases:
        code, said = tool(instance, name, arguments, **key)
        assert code == 1 and why in said["refused"], (name, said)
    assert (signals.read_bytes() if signals.exists() else b"") == before


def test_control_characters_in_a_persons_note_reach_the_agent_as_text(
    instance: Path, someone_present: None
) -> None:
    asking = start(
        "ask",
        "--kind",
        "consent",
        "--subject",
        "deploy",
        "--question",
        "Deploy now?",
        "--action",
        "deploy 1.0",
        "--json",
        cwd=instance,
    )
    question = open_question(instance)
    note = "fine\x1b]52;c;cm0gLXJmIH4=\x07 \u202eevil"
    answered = cli(
        "answer", question.id[:8], "--by", "alice", "--answer", "yes", "--note", note, cwd=instance
    )
    assert answered.returncode == 0, answered.stderr
    out, _ = asking.communicate(timeout=120)
    result = json.loads(out)
    for text in (result["note"], result["message"]):
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
        assert "\\x1b" in text and "\\u202e" in text


def test_a_report_for_another_attempt_is_refused_and_the_unit_does_not_close_on_it(
    repo: Path,
) -> None:
    """A loop-driven agent paused on its consent writes a report as "attempt 2", commits, and
    the person then answers no: the next attempt does not close the unit on that report."""
    run = cli("init", "--by", "alice", cwd=repo)
    assert run.returncode == 0, run.stderr
    report = {
        "summary": "done",
        "evidence": [],
        "delegatedResults": [],
        "unresolvedOutcomes": [],
        "emergentDecisions": [],
        "deviations": [],
        "residualUncertainty": [],
    }
    agent = repo.parent / "agent.sh"
    out = repo.parent / "agent.out"
    regulator = f"{sys.executable} -m regulator tool"
    agent.write_text(
        "#!/bin/sh\n"
        f"{regulator} ask_human --json '{json.dumps(CONSENT)}' > {out}.ask\n"
        "echo work > work.txt && git add work.txt && git commit -qm 'while paused'\n"
        f"REGULATOR_ATTEMPT=2 {regulator} report_result --json '{json.dumps(report)}' "
        f'> {out}.a2 2>&1; echo "exit $?" >> {out}.a2\n'
        f"{regulator} report_result --json '{json.dumps(report)}' > {out}.a1; "
        f'echo "exit $?" >> {out}.a1\n'
    )
    agent.chmod(0o755)
    from regulator.host.loop import Loop
    from regulator.host.sessions.command import CommandAdapter
    from regulator.policy.workload import SessionSpec

    loop = Loop(
        Layout(repo),
        load_definition(repo),
        adapters={"script": CommandAdapter(SessionSpec(adapter="command", command=[str(agent)]))},
        models=MODELS,
    )
    work = contract_with("release")
    outcome = loop.dispatch(work)
    assert outcome.attempt is not None and outcome.attempt.outcome == "paused"
    a2 = Path(f"{out}.a2").read_text()
    assert "REGULATOR_ATTEMPT=2 names another attempt" in a2 and a2.rstrip().endswith("exit 1")
    assert "paused" in Path(f"{out}.a1").read_text()
    unit_dir = repo / ".regulator" / "units" / "release"
    assert not list(unit_dir.glob("report.*"))
    question = open_question(repo)
    answered = cli("answer", question.id[:8], "--by", "alice", "--answer", "no", cwd=repo)
    assert answered.returncode == 0, answered.stderr
    # The next attempt's agent does nothing: nothing closes the unit on the old attempt's work.
    agent.write_text("#!/bin/sh\nexit 0\n")
    again = loop.dispatch(work)
    assert again.status == "blocked" and again.attempt is not None
    assert again.attempt.outcome == "no-report"
    assert "while paused" not in git(repo, "log", "--format=%s", "main")


def test_a_session_process_that_outlives_its_attempt_records_nothing_for_it(
    instance: Path,
) -> None:
    """An MCP server (or any process) of attempt 1 still running once the unit has moved on
    acts for nothing: not a report, an effect or a question of an attempt that has ended."""
    from regulator.host.agent_session import find_session
    from regulator.host.session_units import end_session_unit
    from regulator.host.tools import ToolRefused

    layout, definition = Layout(instance), load_definition(instance)
    tools = find_session(layout, definition, agent="mcp", env={}, key="late").tools()
    assert tools.call("notify_owner", {"message": "before the end"})["sent"] is True
    assert end_session_unit(layout, tools.unit_id) == "closed"
    for name, arguments in (("notify_owner", {"message": "after"}), ("ask_human", CONSENT)):
        try:
            tools.call(name, arguments)
        except ToolRefused as exc:
            assert "attempt 1 of unit session-late is not in progress (the unit is closed)" in str(
                exc
            )
        else:
            raise AssertionError(f"{name} acted for an attempt that had ended")
    assert tools.call("read_conventions", {})  # a pure read still answers


def test_a_paused_session_cannot_run_the_projects_code_through_run_checks(
    instance: Path,
) -> None:
    """run_checks runs the test command, code the agent wrote: once paused, only the pure read
    (read_conventions) still answers."""
    paused_session(instance, "s5")
    code, said = tool(instance, "run_checks", {}, REGULATOR_SESSION="s5")
    assert code == 1 and "paused: consent unanswered" in said["refused"]
    code, _ = tool(instance, "read_conventions", {}, REGULATOR_SESSION="s5")
    assert code == 0


def test_a_paused_session_s_hook_denies_every_tool_with_an_effect_whoever_is_in_the_room(
    instance: Path,
) -> None:
    """Not only those with a declared consent effect: Claude Code's own Write (no decision
    otherwise, and under acceptEdits it runs unasked), a subagent, another server's MCP tool,
    a tool no one has named. A read still runs; regulator's own tools keep their own gate."""
    unit = paused_session(instance, "claude-p1")  # the unit Claude Code's session p1 runs in
    layout, definition = Layout(instance), load_definition(instance)
    PresenceFile(layout, "alice").beat()  # someone is in the room now: no question is asked

    def pre_tool(name: str, tool_input: dict[str, Any], **env: str) -> dict[str, Any]:
        payload = {
            "hook_event_name": "PreToolUse",
            "session_id": "p1",
            "cwd": str(instance),
            "tool_name": name,
            "tool_input": tool_input,
        }
        return claude_code(payload, layout, definition, env=env)

    written = {"file_path": str(instance / "release.txt"), "content": "1.0\n"}
    calls = [
        ("Write", written),
        ("Edit", {**written, "old_string": "a", "new_string": "b"}),
        ("Bash", {"command": "git tag v1.0"}),
        ("WebFetch", {"url": "https://example.com", "prompt": "read"}),
        ("Agent", {"prompt": "publish 1.0"}),
        ("mcp__github__create_release", {"tag": "v1.0"}),
        ("SomeToolOfTomorrow", {}),
    ]
    for name, tool_input in calls:
        reply = pre_tool(name, tool_input)["hookSpecificOutput"]
        assert reply["permissionDecision"] == "deny", name
        assert reply["permissionDecisionReason"].startswith(
            "regulator: this session is paused (consent unanswered: publish (obligation "
        ), name
        # Nothing the agent sets in its environment names it out of the pause.
        elsewhere = pre_tool(name, tool_input, REGULATOR_UNIT="other", REGULATOR_SESSION="x")
        assert elsewhere["hookSpecificOutput"]["permissionDecision"] == "deny", name
    read = pre_tool("Read", {"file_path": str(instance / "README.md")})
    assert read["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert (
        pre_tool("Bash", {"command": "git log --oneline"})["hookSpecificOutput"][
            "permissionDecision"
        ]
        == "allow"
    )
    assert pre_tool("mcp__regulator__notify_owner", {"message": "x"}) == {}
    # Nothing was asked of the person in the room for any of them.
    log = RegulatoryLog(layout)
    log.refresh()
    assert [o.unit for o in log.open_obligations() if o.concern == "interaction"] == [unit]
    assert not (instance / "release.txt").exists()
