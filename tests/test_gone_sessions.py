"""A session whose agent was killed before it could settle it is settled the next time someone
looks; one whose agent may still run never is. And from inside an agent, `session end` ends
only that agent's own session.

The agents here are real processes (`sleep`), registered as the hook or the MCP server
registers theirs, then killed; nothing is faked but their being an agent.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from regulator.host.agent_process import agents_dir, pid_space, register, spawn
from regulator.host.agent_session import SessionAddress, open_session
from regulator.host.session_units import (
    end_session_unit,
    settle_gone_sessions,
    start_session_unit,
)
from regulator.policy import load_definition
from regulator.rules.execution import ExecutionStore
from regulator.rules.regulatory_log import RegulatoryLog
from regulator.store import Layout, locked_directory

from .conftest import cli, run_cli

CONSENT = {
    "kind": "consent",
    "subject": "drop the table",
    "question": "May I drop the sessions table?",
    "action": "DROP TABLE sessions",
}


@pytest.fixture
def agents() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes that stand for agents; any still running at the end is killed."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait()


def an_agent(agents: list[subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(["sleep", "300"])
    agents.append(process)
    return process


def killed(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait()  # reaped: its pid names no process now


def session(instance: Path, key: str, agent: subprocess.Popen[bytes], by: str = "hook") -> str:
    layout = Layout(instance)
    made = start_session_unit(
        layout, load_definition(instance), key, agent="claude-code", cwd=instance
    )
    register(layout, made.unit_id, agent.pid, agent="claude-code", by=by)
    return made.unit_id


def ask_unanswered(instance: Path, unit_id: str) -> dict[str, Any]:
    """A consent the session asks with nobody in the room: it pauses, and stays owed."""
    tools = open_session(
        Layout(instance), load_definition(instance), SessionAddress(unit_id, None), cwd=instance
    )
    result: dict[str, Any] = tools.call("ask_human", CONSENT)
    assert result["paused"] is True
    return result


def unit(instance: Path, unit_id: str) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(
        (instance / ".regulator" / "units" / unit_id / "unit.json").read_text()
    )
    return record


def registered(instance: Path) -> set[int]:
    return {int(p.stem) for p in agents_dir(Layout(instance)).glob("*.json")}


# -- regulator doctor ---------------------------------------------------------------------------


def test_doctor_leaves_a_live_session_alone_and_settles_it_blocked_once_its_agent_is_killed(
    instance: Path, agents: list[subprocess.Popen[bytes]]
) -> None:
    agent = an_agent(agents)
    unit_id = session(instance, "s1", agent)
    ask_unanswered(instance, unit_id)

    alive = cli("doctor", cwd=instance)
    assert "sessions          no running session unit's agent has gone" in alive.stdout
    assert unit(instance, unit_id)["status"] == "dispatched"

    killed(agent)
    done = cli("doctor", cwd=instance)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "notice  sessions          1 session unit(s) settled now" in done.stdout
    assert (
        f"{unit_id} settled (blocked): its agent process {agent.pid} had ended without "
        "settling it" in done.stdout
    )
    settled = unit(instance, unit_id)
    assert (settled["status"], settled["attempts"]) == ("blocked", 1)
    shown = cli("unit", "show", unit_id, cwd=instance).stdout
    assert "attempt 1: paused — consent unanswered: drop the table" in shown
    assert agent.pid not in registered(instance)  # the ended agent is forgotten
    # A second look finds nothing more to do, and writes nothing.
    again = cli("doctor", cwd=instance)
    assert "no running session unit's agent has gone" in again.stdout


def test_a_killed_session_that_owed_nothing_is_closed(
    instance: Path, agents: list[subprocess.Popen[bytes]]
) -> None:
    agent = an_agent(agents)
    unit_id = session(instance, "s1", agent, by="mcp")
    killed(agent)
    (settled,) = settle_gone_sessions(Layout(instance))
    assert (settled.unit_id, settled.became, settled.pids) == (unit_id, "closed", (agent.pid,))
    assert unit(instance, unit_id)["status"] == "closed"


def test_an_agent_that_has_exited_but_is_not_reaped_has_gone(
    instance: Path, agents: list[subprocess.Popen[bytes]]
) -> None:
    agent = an_agent(agents)
    unit_id = session(instance, "s1", agent)
    agent.send_signal(signal.SIGKILL)
    deadline = time.monotonic() + 10
    while Path(f"/proc/{agent.pid}/stat").read_text().split(") ")[1][0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    (settled,) = settle_gone_sessions(Layout(instance))  # a zombie calls nothing any more
    assert settled.unit_id == unit_id


def test_a_session_with_one_agent_process_still_running_is_not_settled(
    instance: Path, agents: list[subprocess.Popen[bytes]]
) -> None:
    # A resumed Claude Code joins its unit while the first process is gone: two registrations.
    first, resumed = an_agent(agents), an_agent(agents)
    unit_id = session(instance, "s1", first)
    register(Layout(instance), unit_id, resumed.pid, agent="claude-code", by="hook")
    killed(first)
    assert settle_gone_sessions(Layout(instance)) == []
    assert unit(instance, unit_id)["status"] == "dispatched"
    assert registered(instance) == {resumed.pid}  # only the ended one is forgotten


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("pidSpace", "another-boot pid:[4026531836]"),  # another machine, or a reboot
        ("pidSpace", None),  # written without it: where, nobody knows
        ("processStart", None),  # written where there was no /proc
    ],
)
def test_a_registration_that_cannot_be_checked_here_is_never_taken_for_gone(
    instance: Path, agents: list[subprocess.Popen[bytes]], field: str, value: str | None
) -> None:
    agent = an_agent(agents)
    unit_id = session(instance, "s1", agent)
    path = agents_dir(Layout(instance)) / f"{agent.pid}.json"
    record = json.loads(path.read_text())
    assert record["pidSpace"] == pid_space()
    record[field] = value
    path.write_text(json.dumps(record))
    killed(agent)
    assert settle_gone_sessions(Layout(instance)) == []
    assert unit(instance, unit_id)["status"] == "dispatched"
    assert path.exists()


def test_a_session_no_process_was_registered_for_is_never_settled_by_a_look(
    instance: Path,
) -> None:
    layout = Layout(instance)
    made = start_session_unit(
        layout, load_definition(instance), "nightly", agent="shell", cwd=instance
    )
    assert settle_gone_sessions(layout) == []
    assert unit(instance, made.unit_id)["status"] == "dispatched"


# -- the next session that would join it --------------------------------------------------------


def test_a_resumed_session_whose_first_process_was_killed_gets_the_next_unit(
    instance: Path, agents: list[subprocess.Popen[bytes]]
) -> None:
    first = an_agent(agents)
    unit_id = session(instance, "claude-s1", first)
    ask_unanswered(instance, unit_id)
    # While the first process runs, the same key joins its unit.
    layout, definition = Layout(instance), load_definition(instance)
    joined = start_session_unit(layout, definition, "claude-s1", agent="claude-code", cwd=instance)
    assert (joined.unit_id, joined.created) == (unit_id, False)

    killed(first)
    resumed = start_session_unit(layout, definition, "claude-s1", agent="claude-code", cwd=instance)
    assert (resumed.unit_id, resumed.created) == (f"{unit_id}-2", True)
    assert unit(instance, unit_id)["status"] == "blocked"  # its question still owed


def test_a_new_session_settles_the_others_whose_agent_has_gone(
    instance: Path, agents: list[subprocess.Popen[bytes]]
) -> None:
    gone = an_agent(agents)
    unit_id = session(instance, "mcp-0c1f9a2e", gone, by="mcp")
    killed(gone)
    start_session_unit(
        Layout(instance), load_definition(instance), "other", agent="shell", cwd=instance
    )
    assert unit(instance, unit_id)["status"] == "closed"


# -- one settler at a time ----------------------------------------------------------------------


def test_a_session_settled_while_another_end_waited_is_not_settled_twice(
    instance: Path, agents: list[subprocess.Popen[bytes]]
) -> None:
    layout = Layout(instance)
    unit_id = session(instance, "s1", an_agent(agents))
    ended: list[str] = []
    with locked_directory(layout.state / "sessions" / unit_id):
        waiting = threading.Thread(target=lambda: ended.append(end_session_unit(layout, unit_id)))
        waiting.start()
        waiting.join(0.3)
        assert waiting.is_alive()  # it waits for the lock
        # Meanwhile another settler (holding the lock) records the attempt and closes the unit.
        store = ExecutionStore(layout)
        record = store.unit(unit_id)
        store.record_attempt(
            unit_id,
            contract_version=record.contract.version,
            started_at=record.created_at,
            ended_at=record.created_at,
            outcome="no-report",
        )
        store.set_status(unit_id, "closed", "the interactive session ended")
    waiting.join(30)
    assert ended == ["closed"]
    assert unit(instance, unit_id)["attempts"] == 1


# -- session end from inside an agent -----------------------------------------------------------


def end_from_inside(instance: Path, own: str, target: str) -> subprocess.CompletedProcess[str]:
    """`regulator session end TARGET` run by a child of an agent process registered for
    ``own`` (as a command Claude Code's shell runs is)."""
    layout = Layout(instance)
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGULATOR_")}
    script = f'"{sys.executable}" -m regulator session end {target}'
    agent = spawn(
        layout,
        ["/bin/sh", "-c", script],
        unit_id=own,
        attempt=1,
        agent="claude-code",
        by="hook",
        cwd=instance,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = agent.communicate(timeout=120)
    return subprocess.CompletedProcess(script, agent.returncode, out, err)


def test_from_inside_an_agent_session_end_ends_its_own_session(instance: Path) -> None:
    layout, definition = Layout(instance), load_definition(instance)
    mine = start_session_unit(layout, definition, "mine", agent="claude-code", cwd=instance)
    done = end_from_inside(instance, mine.unit_id, mine.unit_id)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{mine.unit_id}: closed"


def test_from_inside_an_agent_session_end_of_another_session_is_refused_in_one_line(
    instance: Path,
) -> None:
    layout, definition = Layout(instance), load_definition(instance)
    mine = start_session_unit(layout, definition, "mine", agent="claude-code", cwd=instance)
    other = start_session_unit(layout, definition, "nightly", agent="shell", cwd=instance)
    before = (instance / ".regulator" / "units" / other.unit_id / "unit.json").read_bytes()
    done = end_from_inside(instance, mine.unit_id, other.unit_id)
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"regulator: session end {other.unit_id} is refused here: ")
    assert f"(claude-code, unit {mine.unit_id})" in line
    assert f"an agent may end only its own session (its own is {mine.unit_id})" in line
    after = (instance / ".regulator" / "units" / other.unit_id / "unit.json").read_bytes()
    assert after == before  # nothing written


def test_an_agent_known_by_its_environment_alone_may_end_no_session(instance: Path) -> None:
    layout, definition = Layout(instance), load_definition(instance)
    other = start_session_unit(layout, definition, "nightly", agent="shell", cwd=instance)
    done = run_cli("session", "end", other.unit_id, cwd=instance, env={"CLAUDECODE": "1"})
    assert done.returncode == 1
    assert "it has no session unit of its own" in done.stderr
    assert unit(instance, other.unit_id)["status"] == "dispatched"
    # From a terminal of one's own, any session unit may be ended.
    person = cli("session", "end", other.unit_id, cwd=instance)
    assert person.returncode == 0 and person.stdout.strip().endswith("closed")


# -- what `answer` says of a session unit ------------------------------------------------------


def test_answering_a_paused_sessions_question_says_it_stays_paused_to_its_end(
    instance: Path, agents: list[subprocess.Popen[bytes]]
) -> None:
    agent = an_agent(agents)
    unit_id = session(instance, "s1", agent)
    ask_unanswered(instance, unit_id)
    log = RegulatoryLog(Layout(instance))
    log.refresh()
    (owed,) = log.open_obligations(unit_id)

    paused = cli("answer", owed.id[:8], "--by", "alice", "--answer", "no", cwd=instance)
    assert paused.returncode == 0, paused.stderr
    assert "the next attempt carries the answer" not in paused.stdout
    assert paused.stdout.strip().endswith(
        f"; session unit {unit_id} stays paused until its session ends (a session has no next "
        "attempt), then closes if nothing else is owed on it"
    )

    killed(agent)
    settle_gone_sessions(Layout(instance))
    assert unit(instance, unit_id)["status"] == "closed"  # answered: nothing owed any more


def test_answering_after_the_session_ended_names_session_end(instance: Path) -> None:
    layout, definition = Layout(instance), load_definition(instance)
    made = start_session_unit(layout, definition, "s1", agent="shell", cwd=instance)
    ask_unanswered(instance, made.unit_id)
    assert end_session_unit(layout, made.unit_id) == "blocked"
    log = RegulatoryLog(layout)
    log.refresh()
    (owed,) = log.open_obligations(made.unit_id)
    done = cli("answer", owed.id[:8], "--by", "alice", "--answer", "no", cwd=instance)
    assert done.stdout.strip().endswith(
        f"; session unit {made.unit_id} has ended: `regulator session end {made.unit_id}` "
        "closes it once nothing else is owed on it"
    )
    assert cli("session", "end", made.unit_id, cwd=instance).stdout.strip().endswith("closed")
