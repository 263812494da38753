"""No person's act from inside an agent's session: the agent cannot answer its own question.

The agent runs as the same OS user as the person. An answer, a disposition, an identity or
memory decision, a replan, remediation or acceptance run from its session (its environment, or
a process that descends from an agent process) is refused in one line, and nothing is written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from regulator.cli.main import build_parser, main
from regulator.host import agent_process
from regulator.host.person_acts import InsideAgent, inside_agent
from regulator.policy import load_definition
from regulator.rules.asking import ask
from regulator.rules.ledger import Ledger
from regulator.store import Layout

from .conftest import AGENT_MARKERS, cli, run_cli
from .room_fixture import build_fixture, copy_fixture, fixed_clock, on_the_inbox

REFUSED = "regulator: a person's act is refused here: "


def every_file(root: Path) -> dict[str, bytes]:
    """The instance, byte for byte: the repository, its .git and .regulator/."""
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def ask_consent(root: Path, unit: str = "u1") -> str:
    """A consent a unit asked, owed to a person (asked in this process: no agent runs here)."""
    asked = ask(
        Ledger(Layout(root)),
        load_definition(root).interaction,
        kind="consent",
        subject="drop the sessions table",
        question="May I drop the sessions table?",
        action="DROP TABLE sessions",
        unit=unit,
        attempt=1,
    )
    return asked.obligation.id


def answered_by(root: Path, oid: str) -> tuple[str, str | None, str | None]:
    state = Ledger(Layout(root)).refresh().obligations[oid]
    return state.status, state.disposition, state.closed_by


ANSWER_YES = ("--by", "alice", "--answer", "yes")


# --- the session's environment ------------------------------------------------------------------


@pytest.mark.parametrize("name", AGENT_MARKERS)
def test_an_answer_from_an_agent_sessions_environment_is_refused_and_writes_nothing(
    instance: Path, name: str
) -> None:
    oid = ask_consent(instance)
    before = every_file(instance)
    done = run_cli("answer", oid[:8], *ANSWER_YES, cwd=instance, env={name: "1"})
    assert done.returncode == 1
    assert done.stderr.startswith(REFUSED + "its environment")
    assert f"({name}=1)" in done.stderr and len(done.stderr.splitlines()) == 1
    assert every_file(instance) == before
    assert answered_by(instance, oid)[0] == "open"


def test_the_same_answer_from_a_plain_process_is_recorded(instance: Path) -> None:
    oid = ask_consent(instance)
    done = cli("answer", oid[:8], *ANSWER_YES, cwd=instance)
    assert done.returncode == 0, done.stderr
    assert answered_by(instance, oid) == ("resolved", "accepted", "alice")


# --- the process tree -----------------------------------------------------------------------------

# An agent's process: it names itself (PR_SET_NAME, as the kernel shows it) when asked, waits for
# a line on stdin, then runs `regulator ARGS` through a shell with every session variable unset,
# and prints what it did as JSON.
AGENT = """
import ctypes, json, subprocess, sys
name, markers, args = sys.argv[1], sys.argv[2].split(","), sys.argv[3:]
if name != "-":
    ctypes.CDLL(None).prctl(15, name.encode(), 0, 0, 0)
print("ready", flush=True)
sys.stdin.readline()
unset = " ".join(f"-u {m}" for m in markers)
command = ["sh", "-c", f'env {unset} "$@"', "sh", sys.executable, "-m", "regulator", *args]
done = subprocess.run(command, capture_output=True, text=True, timeout=120)
print(json.dumps({"rc": done.returncode, "out": done.stdout, "err": done.stderr}), flush=True)
"""


class Agent:
    """A running agent process that runs one regulator command when told to."""

    def __init__(self, root: Path, tmp: Path, args: list[str], *, name: str = "-") -> None:
        script = tmp / "agent.py"
        script.write_text(AGENT)
        env = {**os.environ, **{m: "session-x" for m in AGENT_MARKERS}}
        self.process = subprocess.Popen(
            [sys.executable, str(script), name, ",".join(AGENT_MARKERS), *args],
            cwd=root,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None and self.process.stdout.readline() == "ready\n"

    @property
    def pid(self) -> int:
        return self.process.pid

    def run(self) -> dict[str, Any]:
        out, _ = self.process.communicate("go\n", timeout=120)
        result: dict[str, Any] = json.loads(out)
        return result


@pytest.fixture
def agents() -> Iterator[list[Agent]]:
    made: list[Agent] = []
    yield made
    for agent in made:
        if agent.process.poll() is None:
            agent.process.kill()
            agent.process.wait()


def test_an_answer_from_under_a_registered_agent_is_refused_with_its_variables_unset(
    instance: Path, tmp_path: Path, agents: list[Agent]
) -> None:
    oid = ask_consent(instance, unit="session-claude-1234")
    agent = Agent(instance, tmp_path, ["answer", oid[:8], *ANSWER_YES])
    agents.append(agent)
    agent_process.register(
        Layout(instance), "session-claude-1234", agent.pid, agent="claude-code", by="hook"
    )
    before = every_file(instance)
    done = agent.run()
    assert done["rc"] == 1
    assert done["err"] == (
        f"{REFUSED}this process descends from agent process {agent.pid} (claude-code, unit "
        "session-claude-1234); act from the control room or from a terminal of your own\n"
    )
    assert every_file(instance) == before
    assert answered_by(instance, oid)[0] == "open"


def test_a_registration_of_a_process_that_is_not_an_ancestor_refuses_nothing(
    instance: Path, tmp_path: Path, agents: list[Agent]
) -> None:
    oid = ask_consent(instance)
    agent = Agent(instance, tmp_path, ["answer", oid[:8], *ANSWER_YES])
    agents.append(agent)
    # Another agent's session: the answer comes from a process outside it.
    elsewhere = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=-1)
    try:
        agent_process.register(Layout(instance), "u1", elsewhere.pid, agent="codex", by="loop")
        done = agent.run()
    finally:
        elsewhere.kill()
        elsewhere.wait()
    assert done["rc"] == 0, done["err"]
    assert answered_by(instance, oid) == ("resolved", "accepted", "alice")


@pytest.mark.skipif(sys.platform != "linux", reason="the process's name is set with prctl")
def test_an_answer_from_under_an_unregistered_claude_process_is_refused(
    instance: Path, tmp_path: Path, agents: list[Agent]
) -> None:
    oid = ask_consent(instance)
    agent = Agent(instance, tmp_path, ["answer", oid[:8], *ANSWER_YES], name="claude")
    agents.append(agent)
    before = every_file(instance)
    done = agent.run()
    assert done["rc"] == 1
    assert done["err"].startswith(
        f"{REFUSED}this process descends from agent process {agent.pid} (claude); "
    )
    assert every_file(instance) == before


def test_an_answer_with_a_one_time_code_is_refused_inside_an_agent_too(instance: Path) -> None:
    oid = ask_consent(instance)
    before = every_file(instance)
    done = run_cli(
        "answer", oid[:8], *ANSWER_YES, "--code", "ABCD-EFGH", cwd=instance, env={"CLAUDECODE": "1"}
    )
    assert done.returncode == 1 and done.stderr.startswith(REFUSED)
    assert every_file(instance) == before


# --- every person's act ---------------------------------------------------------------------------

PERSONS_ACTS = {
    "answer": ["answer", "0000", "--answer", "yes"],
    "obligation ack": ["obligation", "ack", "0000"],
    "obligation resolve": [
        "obligation", "resolve", "0000", "--disposition", "fixed", "--rationale", "r",
    ],
    "obligation escalate": ["obligation", "escalate", "0000", "--to", "S5", "--rationale", "r"],
    "identity accept": [
        "identity", "accept", "0000", "--file", "IDENTITY.md", "--from", "x", "--rationale", "r",
    ],
    "identity reject": ["identity", "reject", "0000", "--rationale", "r"],
    "unit accept": ["unit", "accept", "u1", "ui-looks-right"],
    "unit replan": ["unit", "replan", "u1", "--contract", "c.json", "--no-drive"],
    "unit remediate": ["unit", "remediate", "u1", "--note", "fixed", "--no-drive"],
    "memory retract": ["memory", "retract", "0000", "--reason", "r"],
}  # fmt: skip


def _commands(parser: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*prefix, name), sub
                yield from _commands(sub, (*prefix, name))


def test_every_command_that_takes_a_person_is_one_of_the_persons_acts_refused_here() -> None:
    """A new command with ``--by`` is a person's act: it must be in the list below, tested."""
    taking_by = {
        " ".join(path)
        for path, sub in _commands(build_parser())
        if any("--by" in a.option_strings for a in sub._actions) and path != ("init",)
    }
    assert taking_by == set(PERSONS_ACTS)


@pytest.mark.parametrize("command", sorted(PERSONS_ACTS))
def test_every_persons_act_is_refused_inside_an_agent_before_anything_is_written(
    instance: Path,
    command: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("REGULATOR_UNIT", "u1")
    monkeypatch.chdir(instance)
    before = every_file(instance)
    assert main([*PERSONS_ACTS[command], "--by", "alice"]) == 1
    err = capsys.readouterr().err
    assert err == (
        f"{REFUSED}its environment names the unit an agent runs for (REGULATOR_UNIT=u1); "
        "act from the control room or from a terminal of your own\n"
    )
    assert every_file(instance) == before


@pytest.mark.parametrize("command", [["unit", "drive"], ["unit", "dispatch"], ["unit", "close"]])
def test_accepting_unenforced_gates_is_a_persons_act_refused_inside_an_agent(
    instance: Path,
    command: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Saying in the command that a definition's gates may go unenforced is a person's word: an
    agent cannot drive its own unit past them."""
    monkeypatch.setenv("CLAUDECODE", "1")
    monkeypatch.chdir(instance)
    before = every_file(instance)
    target = "u1" if command[1] == "close" else str(instance / "c.json")
    assert main([*command, target, "--accept-unenforced"]) == 1
    assert capsys.readouterr().err.startswith(REFUSED + "its environment says Claude Code runs it")
    assert every_file(instance) == before


def test_a_persons_act_outside_any_instance_is_still_refused_inside_an_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("REGULATOR_SESSION", "nightly")
    monkeypatch.chdir(tmp_path)
    assert main(["answer", "0000", "--by", "alice", "--answer", "yes"]) == 1
    assert capsys.readouterr().err.startswith(REFUSED + "its environment names an agent's session")


def test_a_variables_value_is_shown_inert_and_cut_short() -> None:
    why = inside_agent(env={"REGULATOR_SESSION": "\x1b]52;c;aGk=\x07" + "x" * 200})
    assert why is not None and "\x1b" not in why and "\x07" not in why
    assert why.startswith("its environment names an agent's session (REGULATOR_SESSION=\\x1b]52")
    assert len(why) < 140


def test_a_plain_process_is_not_inside_an_agent(instance: Path) -> None:
    assert inside_agent([Layout(instance)], env={}) is None


# --- the control room ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_fixture(tmp_path_factory.mktemp("room") / "calc")


@pytest.fixture
def demo(built: Path, tmp_path: Path) -> Path:
    return copy_fixture(built, tmp_path / "calc")


async def _act_in_room(root: Path, env: dict[str, str], keys: list[str]) -> tuple[Any, list[str]]:
    from tui.app import RoomApp
    from tui.screens.main import MainScreen

    app = RoomApp([root], person="alice", clock=fixed_clock, watch=False, env=env)
    async with app.run_test(size=(160, 48)) as pilot:
        main_screen = await on_the_inbox(pilot)
        # Nobody who can answer is here: no session should wait on this room.
        assert not list((root / ".regulator" / "presence").glob("*"))
        table = main_screen.inbox_table
        for key in table.keys:
            if app.lookup(key)[1].concern == "interaction":
                table.move_to(key)
                break
        await pilot.pause(0.2)
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
        deadline = time.monotonic() + 5
        while not app._notifications and time.monotonic() < deadline:
            await pilot.pause(0.02)
        assert isinstance(app.screen, MainScreen)  # no dialog opened
        said = [str(n.message) for n in app._notifications]
        topbar = str(main_screen.query_one("#topbar").render())
        with pytest.raises(InsideAgent):
            app.actor  # noqa: B018 - the actor every act of the room is made with
    return topbar, said


@pytest.mark.room
@pytest.mark.asyncio
async def test_a_room_started_inside_an_agent_shows_its_data_but_refuses_to_act(
    demo: Path,
) -> None:
    before = every_file(demo)
    topbar, said = await _act_in_room(demo, {"REGULATOR_SESSION": "nightly"}, ["a", "r", "c", "e"])
    assert said and all(
        s.startswith(
            "a person's act is refused here: its environment names an agent's session "
            "(REGULATOR_SESSION=nightly); act from a room started in a terminal of your own"
        )
        for s in said
    )
    assert "looking only: this room runs inside an agent's session" in topbar
    assert every_file(demo) == before


@pytest.mark.room
@pytest.mark.asyncio
@pytest.mark.skipif(os.getppid() <= 1, reason="this process's parent is init: none to register")
async def test_a_room_under_a_registered_agent_process_refuses_to_act(demo: Path) -> None:
    # This test's process descends from its parent: registered, that parent is the agent.
    agent_process.register(Layout(demo), "u1", os.getppid(), agent="claude-code", by="hook")
    before = every_file(demo)
    _, said = await _act_in_room(demo, {}, ["a", "enter"])
    assert said == [
        "a person's act is refused here: this process descends from agent process "
        f"{os.getppid()} (claude-code, unit u1); act from a room started in a terminal of your own"
    ]
    assert every_file(demo) == before
