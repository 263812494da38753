"""The room over an instance on another machine (``ssh://host/path``), with the transport a
local subprocess: REGULATOR_SSH names a script that drops the host and runs the rest here, as
sshd would run it there."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from textual.widgets import Input, OptionList

from regulator.host.remote import RemoteTarget, parse_target, remote_command
from regulator.protocol.errors import HostFailure, Refused
from regulator.rules.authority import process_os_user
from regulator.rules.ledger import Actor
from tui.app import MainScreen, RoomApp
from tui.dialogs.answer import AnswerDialog
from tui.dialogs.obligation import AcknowledgeDialog, EscalateDialog, ResolveDialog
from tui.model import AckAct
from tui.remote import RemoteInstanceModel

from .conftest import run_cli
from .room_fixture import build_fixture, copy_fixture, fixed_clock, settled, wait_for
from .test_room import question, select, state

pytestmark = pytest.mark.asyncio


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_fixture(tmp_path_factory.mktemp("remote") / "calc")


@pytest.fixture
def there(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = copy_fixture(built, tmp_path / "calc")
    script = tmp_path / "fake-ssh"
    calls = tmp_path / "ssh-calls"
    # ssh gives the remote shell one string; so does this, after dropping "--" and the host.
    script.write_text(
        f'#!/bin/sh\necho "$*" >> {calls}\n[ "$1" = -- ] || exit 99\nshift 2\nexec sh -c "$*"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("REGULATOR_SSH", str(script))
    monkeypatch.setenv("REGULATOR_REMOTE", str(Path(sys.executable).parent / "regulator"))
    monkeypatch.delenv("REGULATOR_PERSON", raising=False)
    return root


def remote_app(root: Path) -> RoomApp:
    return RoomApp(
        [f"ssh://localhost{root}"], person="alice", clock=fixed_clock, watch=False, presence=False
    )


async def test_an_ssh_url_names_host_port_and_path() -> None:
    target = parse_target("ssh://bob@build:2222/srv/repo")
    assert (target.host, target.port, target.path) == ("bob@build", 2222, "/srv/repo")
    with pytest.raises(ValueError, match="no path"):
        parse_target("ssh://build")


@pytest.mark.parametrize(
    "given",
    [
        "ssh://-oProxyCommand=touch%20pwned/srv/repo",
        "ssh://-oProxyCommand=x:22/srv/repo",
        "ssh://bob@-oProxyCommand=x/srv/repo",
        "ssh://-oProxyCommand=x@build/srv/repo",
        "ssh://-l@build/srv/repo",
        "ssh://bob%20-oX@build/srv/repo",
        "ssh://bu ild/srv/repo",
    ],
)
async def test_a_host_or_user_that_ssh_would_take_for_an_option_is_refused(given: str) -> None:
    with pytest.raises(ValueError, match=r"is not a (host|user) name"):
        parse_target(given)


async def test_the_ssh_command_line_ends_ssh_options_before_the_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("REGULATOR_SSH", raising=False)
    monkeypatch.delenv("REGULATOR_REMOTE", raising=False)
    argv = remote_command(parse_target("ssh://bob@build:2222/srv/-repo"), "stream")
    remote = "regulator stream --instance /srv/-repo"
    assert argv == ["ssh", "-p", "2222", "--", "bob@build", remote]


@pytest.mark.skipif(shutil.which("ssh") is None, reason="no ssh client here")
async def test_real_ssh_takes_whatever_follows_the_double_dash_as_the_destination(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The system's ssh parses the command line, with -G (print the configuration it would use,
    # connect nowhere) and without the remote command, which -G would take for the host.
    wrapper = tmp_path / "ssh-config"
    wrapper.write_text(
        "import os, sys\nos.execvp('ssh', ['ssh', '-G', '-F', '/dev/null', *sys.argv[1:-1]])\n"
    )
    monkeypatch.setenv("REGULATOR_SSH", f"{sys.executable} {wrapper}")
    good = subprocess.run(
        remote_command(parse_target("ssh://bob@build:2222/srv/repo"), "stream"),
        capture_output=True,
        text=True,
        check=True,
    )
    assert {"user bob", "hostname build", "port 2222"} <= set(good.stdout.splitlines())
    # A target made past the parser: after "--" ssh reads it as a host (and refuses it as one),
    # never as the option -oProxyCommand, which would run the command here.
    target = RemoteTarget("-oProxyCommand=touch_pwned", None, "/srv/repo")
    bad = subprocess.run(remote_command(target, "stream"), capture_output=True, text=True)
    assert bad.returncode != 0 and "proxycommand" not in bad.stdout.lower()
    assert "hostname contains invalid characters" in bad.stderr


async def test_room_refuses_an_ssh_host_that_is_an_option_before_running_ssh(
    tmp_path: Path,
) -> None:
    calls = tmp_path / "ssh-calls"
    script = tmp_path / "fake-ssh"
    script.write_text(f'#!/bin/sh\necho "$*" >> {calls}\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    result = run_cli(
        "room",
        "ssh://-oProxyCommand=touch%20pwned/srv/repo",
        cwd=tmp_path,
        env={"REGULATOR_SSH": str(script)},
    )
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.splitlines() == [
        "regulator: ssh://-oProxyCommand=touch%20pwned/srv/repo: "
        "'-oproxycommand=touch%20pwned' is not a host name"
    ]
    assert not calls.exists()


async def test_a_remote_inbox_shows_and_an_answer_lands_there_with_its_os_user(
    there: Path,
) -> None:
    app = remote_app(there)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        model = app.models[0]
        assert isinstance(model, RemoteInstanceModel) and model.connection == "connected"
        assert model.owed_to_person()  # the remote inbox, folded over there
        o = await select(app, pilot, question("consent"))
        await pilot.press("a")
        assert isinstance(app.screen, AnswerDialog)
        await pilot.press("ctrl+y")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
        # The stream brings the answer back: the room shows the remote state.
        await wait_for(pilot, lambda: model.log.obligations[o.id].status == "resolved")
    assert state(there, o.id).disposition == "accepted"
    records = [
        orjson.loads(line)
        for line in (there / ".regulator" / "provenance.ndjson").read_bytes().splitlines()
    ]
    last = records[-1]
    assert (last["via"], last["osUser"]) == ("cli", process_os_user())


async def test_a_remote_refusal_is_shown_in_the_dialog_and_nothing_is_written(
    there: Path,
) -> None:
    app = RoomApp(
        [f"ssh://localhost{there}"], person="nobody-here", clock=fixed_clock, watch=False,
        presence=False,
    )  # fmt: skip
    before = (there / ".regulator" / "signals.ndjson").read_bytes()
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        await select(app, pilot, lambda o: o.consumer == "human")
        await pilot.press("r")
        dialog = app.screen
        assert isinstance(dialog, ResolveDialog)
        dialog.query_one("#rationale", Input).value = "because"
        await pilot.click("#resolve")
        refusal = dialog.query_one("#refusal")
        await wait_for(pilot, lambda: not refusal.has_class("hidden"))
        assert "nobody-here" in str(refusal.render())
        assert app.screen is dialog
    assert (there / ".regulator" / "signals.ndjson").read_bytes() == before


async def test_a_remote_escalation_and_ack_are_read_from_the_hosts_json(there: Path) -> None:
    # The successor's id comes from what the host's `obligation escalate --json` said, and an
    # acknowledgement carries its note there (the host's `obligation ack --note`).
    app = remote_app(there)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        model = app.models[0]
        assert isinstance(model, RemoteInstanceModel)
        o = await select(app, pilot, lambda o: o.consumer == "human" and o.severity != "critical")
        await pilot.press("c")
        dialog = app.screen
        assert isinstance(dialog, AcknowledgeDialog)
        dialog.query_one("#note", Input).value = "looking at it"
        await pilot.click("#ack")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
        await wait_for(pilot, lambda: model.log.obligations[o.id].status == "acknowledged")
        await pilot.press("e")
        dialog = app.screen
        assert isinstance(dialog, EscalateDialog)
        dialog.query_one("#rationale", Input).value = "S3 decides"
        dialog.query_one("#consumers", OptionList).highlighted = dialog.consumers.index("S3")
        await pilot.click("#escalate")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
        said = app.notices[-1].message
    there_now = state(there, o.id)
    assert there_now.status == "escalated" and there_now.successor
    assert f"successor {there_now.successor[:8]} is now what is owed" in said
    assert there_now.history[-2].note == "looking at it"


async def test_an_act_that_exits_0_without_its_json_is_a_host_failure_not_a_guess(
    there: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A host whose regulator predates --json on the acts (here: one that prints the human line
    # and exits 0): the room does not guess what was done from text; it says it cannot tell.
    old = tmp_path / "old-regulator"
    old.write_text("#!/bin/sh\necho 'obligation 3f2a acknowledged by alice'\n")
    old.chmod(old.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("REGULATOR_REMOTE", str(old))
    model = RemoteInstanceModel(parse_target(f"ssh://localhost{there}"))
    actor = Actor(via="room", os_user="alice")
    with pytest.raises(HostFailure, match="did not say what it did as JSON"):
        model.acts.acknowledge(AckAct("3f2a", "alice", actor))
    # And a refusal there is its stderr line, as a refusal.
    monkeypatch.setenv("REGULATOR_REMOTE", str(Path(sys.executable).parent / "regulator"))
    with pytest.raises(Refused, match="no obligation"):
        model.acts.acknowledge(AckAct("ffffffff", "alice", actor))


async def test_a_killed_stream_shows_disconnected_then_reconnects_from_its_cursor(
    there: Path, tmp_path: Path
) -> None:
    app = remote_app(there)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        model = app.models[0]
        assert isinstance(model, RemoteInstanceModel)
        held, cursor = len(model.log.obligations), model.cursor
        proc: Any = model._proc
        os.killpg(proc.pid, signal.SIGKILL)
        await wait_for(pilot, lambda: "disconnected, retrying" in model.name)
        main = app.main
        assert main is not None
        await wait_for(pilot, lambda: main.problems >= 1)  # the top bar counts it
        await wait_for(pilot, lambda: model.connection == "connected")
        assert model.drops == 1 and len(model.log.obligations) == held
    calls = (tmp_path / "ssh-calls").read_text().splitlines()
    streams = [c for c in calls if " stream " in c]
    assert "--since 0 " in streams[0] and f"--since {cursor} " in streams[1]


async def test_a_remote_that_cannot_be_reached_says_so_in_its_row_and_quitting_asks_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An ssh that cannot connect, as `room ssh://localhost/…` without sshd: its words.
    script = tmp_path / "no-sshd"
    script.write_text(
        "#!/bin/sh\necho 'ssh: connect to host localhost port 22: Connection refused' >&2\n"
        "exit 255\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("REGULATOR_SSH", str(script))
    app = remote_app(tmp_path / "repo")
    async with app.run_test(size=(160, 48)) as pilot:
        model = app.models[0]
        assert isinstance(model, RemoteInstanceModel)
        await wait_for(pilot, lambda: model.connection.startswith("disconnected"), 20)
        assert not model.loaded
        await wait_for(pilot, lambda: app.main is not None, 20)
        table = app.screen.query_one("#instance-table")
        await pilot.pause(0.2)
        row = " ".join(str(t) for t in table.render_row(0))  # type: ignore[attr-defined]
        assert "not reached" in row and "Connection refused" in row and "reading" not in row
        # Nothing there was ever read: no session there can be waiting on this room.
        assert app.waiting_on_a_person() == []
