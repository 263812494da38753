"""The room at start and at rest: a first screen before the core is imported, instances read
one after another and shown as they come in, and an idle room that reads and redraws nothing.

Each test is named after what it shows a person.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static
from textual.widgets._footer import FooterKey

import tui.app
import tui.remote
from regulator.cli.main import main
from regulator.host.presence import Heartbeat, PresenceFile, present
from regulator.rules.ledger import Ledger
from regulator.store import Layout
from tui.app import RoomApp
from tui.dialogs.lists import HelpScreen
from tui.model import InstanceModel
from tui.widgets.banners import WaitingBanner
from tui.widgets.reading import Reading
from tui.widgets.topbar import TopBar

from .room_fixture import (
    app_for,
    build_fixture,
    copy_fixture,
    fixed_clock,
    held_folds,
    settled,
    wait_for,
)
from .test_room_deliberate import a_session_waits

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_fixture(tmp_path_factory.mktemp("room-startup") / "calc")


@pytest.fixture
def demo(built: Path, tmp_path: Path) -> Path:
    return copy_fixture(built, tmp_path / "calc")


def open_obligation(root: Path, subject: str) -> str:
    return (
        Ledger(Layout(root))
        .open_obligation(
            subject=subject,
            unit="u-late",
            concern="audit-finding",
            sources=["m-late"],
            severity="blocking",
            consumer="human",
            blocks=True,
        )
        .id
    )


# --- the first screen -------------------------------------------------------------------------


def test_importing_the_room_imports_no_record_models_policies_or_readers() -> None:
    # What the first screen waits for: the CLI's room command and the App's module, nothing of
    # the core beyond them (pydantic and the readers are most of the start-up time).
    probe = (
        "import sys\n"
        "import regulator.cli.main, regulator.cli.room_cmds, tui.app\n"
        "heavy = ('pydantic', 'regulator.rules.ledger', 'regulator.rules.regulatory_log',\n"
        "         'regulator.policy', 'regulator.host', 'regulator.views', 'tui.model',\n"
        "         'tui.screens', 'tui.dialogs', 'tui.remote')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert out.stdout.strip() == "[]"


@pytest.mark.asyncio
async def test_the_first_screen_shows_the_keys_and_what_is_read_before_the_models_exist(
    demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = threading.Event()
    open_model = tui.remote.open_model

    def slow_open(root: Any, **kw: Any) -> Any:
        gate.wait(timeout=15)  # the core takes its time to import and read the policies
        return open_model(root, **kw)

    monkeypatch.setattr(tui.remote, "open_model", slow_open)
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: bool(app.screen.query("#opening")))
        top = str(app.screen.query_one(TopBar).render())
        assert "acting as alice" in top and "reading 1 instance" in top
        assert "reading calc…" in str(app.screen.query_one("#opening", Static).render())
        await wait_for(pilot, lambda: bool(app.screen.query(FooterKey)))
        keys = [key.key for key in app.screen.query(FooterKey)]
        assert keys[:2] == ["question_mark", "q"]
        assert app._models is None and app.main is None
        # Keys work meanwhile, and the room opens beneath a dialog a person opened.
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        gate.set()
        await wait_for(pilot, lambda: app._models is not None and app.models[0].loaded)
        await wait_for(pilot, lambda: not app._folding)  # the first read is in, help still up
        assert isinstance(app.screen, HelpScreen) and app.main is None
        await pilot.press("escape")
        await settled(pilot)
        main = app.main
        assert main is not None and app.screen is main
        assert len(main.inbox_table.keys) == 6


def test_an_instance_that_cannot_be_opened_ends_the_room_and_the_command_names_why(
    demo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    policies = demo / "regulator" / "policies"
    shutil.rmtree(policies, ignore_errors=True)
    policies.parent.mkdir(exist_ok=True)
    policies.write_text("not a directory\n")
    run = RoomApp.run
    monkeypatch.setattr(RoomApp, "run", lambda self: run(self, headless=True))
    assert main(["room", str(demo), "--as", "alice"]) != 0
    err = capsys.readouterr().err
    assert "policies" in err and "directory" in err


# --- reading -----------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_while_an_instance_is_still_read_the_ones_read_already_are_shown_and_it_says_so(
    demo: Path, tmp_path: Path
) -> None:
    other = copy_fixture(demo, tmp_path / "other" / "calc2")
    app = app_for(demo, other)
    gate, _ = held_folds(app.models[1])
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.main is not None and bool(app.main.inbox.index.keys))
        main = app.main
        assert main is not None
        assert {key.instance for key in main.inbox.index.keys} == {0}
        assert "reading 1 instance" in str(main.query_one("#topbar").render())
        # Meanwhile the tables say so, still: a spinner's redraws would take the interpreter
        # from the read they wait for.
        cover = main.inbox_table._cover_widget
        assert isinstance(cover, Reading) and cover.auto_refresh is None
        assert "reading…" in str(cover.render())
        gate.set()
        await settled(pilot)
        assert {key.instance for key in main.inbox.index.keys} == {0, 1}


@pytest.mark.asyncio
async def test_one_watcher_tells_each_instance_of_its_own_changes(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tui.app, "SAFETY_NET_S", 1000.0)  # only the watcher may tell
    other = copy_fixture(demo, tmp_path / "other" / "calc2")
    app = app_for(demo, other, watch=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        assert [w.name for w in app.workers if w.group == "watch"] == ["watch_instances"]
        oid = open_obligation(other, "only the second instance changed")
        await wait_for(pilot, lambda: oid in app.models[1].log.obligations)
        assert oid not in app.models[0].log.obligations


def test_presence_files_do_not_wake_the_rooms_watcher() -> None:
    state = "/srv/repo/.regulator"
    assert not tui.app._watch_filter(None, f"{state}/presence/host-41.json")
    assert tui.app._watch_filter(None, f"{state}/signals.ndjson")


# --- at rest -----------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_an_idle_room_reads_an_instance_again_only_when_its_log_changed(
    demo: Path,
) -> None:
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        model = app.models[0]
        reads = 0
        fold = model.refresh

        def counted(paths: Any = None) -> Any:
            nonlocal reads
            reads += 1
            return fold(paths)

        model.refresh = counted  # type: ignore[method-assign]
        app._safety_net()
        await settled(pilot)
        assert reads == 0
        oid = open_obligation(demo, "appended while the room rested")
        app._safety_net()
        await settled(pilot)
        assert reads == 1 and oid in model.log.obligations


@pytest.mark.asyncio
async def test_the_countdown_ticks_only_while_a_session_waits_and_a_same_banner_is_not_redrawn(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        main = app.main
        assert main is not None
        banner = main.query_one(WaitingBanner)
        assert not banner.display and banner._ticking is None
        redraws: list[dict[str, Any]] = []

        def refresh(**kw: Any) -> WaitingBanner:
            redraws.append(kw)
            return banner

        monkeypatch.setattr(banner, "refresh", refresh)
        banner.update()
        banner.update()
        assert redraws == []

    waiting = copy_fixture(demo, tmp_path / "waiting" / "calc")
    a_session_waits(waiting)
    app = app_for(waiting)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        main = app.main
        assert main is not None
        banner = main.query_one(WaitingBanner)
        assert banner.display and banner._ticking is not None


def test_presence_is_kept_fresh_by_a_thread_of_its_own_and_removed_when_it_stops(
    demo: Path,
) -> None:
    layout = Layout(demo)
    heartbeat = Heartbeat([PresenceFile(layout, "alice", fixed_clock)], every=0.02).start()
    deadline = time.monotonic() + 10
    while heartbeat.beats < 3:
        assert time.monotonic() < deadline, "no heartbeat"
        time.sleep(0.01)
    assert [p.person for p in present(layout, fixed_clock)] == ["alice"]
    heartbeat.stop()
    beats = heartbeat.beats
    assert layout.list_presence() == []
    assert not heartbeat._thread.is_alive() and heartbeat.beats == beats


@pytest.mark.asyncio
async def test_once_the_instances_are_read_the_inspectors_per_unit_lists_are_made_off_screen(
    demo: Path,
) -> None:
    # The first inspector opened on a large instance paid ~0.1 s making the log's per-unit
    # lists on the UI's critical path; the opening worker makes them after the first reads.
    app = app_for(demo)
    async with app.run_test(size=(120, 40)) as pilot:
        await settled(pilot)
        model = app.models[0]
        assert isinstance(model, InstanceModel)
        log = model.log
        await wait_for(pilot, lambda: log._unit_obligations is not None)
        assert log._unit_messages is not None and log._unit_interactions is not None
        units = {o.unit for o in log.obligations.values() if o.unit}
        assert units, "the fixture has obligations naming units"
        for unit in units:
            assert log.obligations_of(unit) == [
                o for o in log.obligations.values() if o.unit == unit
            ]


def test_presence_is_not_beaten_while_the_room_does_not_answer(demo: Path) -> None:
    # Presence says a person can see the room; a thread beating for a UI that stopped would
    # keep sessions waiting on a screen nobody can read.
    layout = Layout(demo)
    answering = threading.Event()
    heartbeat = Heartbeat(
        [PresenceFile(layout, "alice", fixed_clock)], every=0.02, alive=answering.is_set
    ).start()
    try:
        time.sleep(0.2)  # ten beats' worth of a UI that does not answer
        assert heartbeat.beats == 0 and layout.list_presence() == []
        answering.set()
        deadline = time.monotonic() + 10
        while heartbeat.beats < 2:
            assert time.monotonic() < deadline, "no heartbeat once the room answered"
            time.sleep(0.01)
        assert [p.person for p in present(layout, fixed_clock)] == ["alice"]
    finally:
        heartbeat.stop()


@pytest.mark.asyncio
async def test_the_rooms_heartbeat_follows_whether_its_ui_thread_runs(demo: Path) -> None:
    app = RoomApp(
        [demo],
        person="alice",
        clock=fixed_clock,
        presence=True,
        watch=False,
        keymap=demo.parent / "no-keymap.yaml",
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await settled(pilot)
        heartbeat = app._heartbeat
        assert heartbeat is not None and heartbeat.alive == app.ui_answering
        assert app.ui_answering()
        app._ui_seen -= 60  # as if the UI thread had not run for a minute
        assert not app.ui_answering()
        await wait_for(pilot, app.ui_answering)  # its timer runs again: answering


@pytest.mark.parametrize("ticks", [0, 1, 2, 3, 5, 8])
async def test_leaving_the_room_while_its_main_screen_is_mounted_ends_it_cleanly(
    demo: Path, ticks: int
) -> None:
    """A ``q`` (or a test's end) while the main screen's parts are still mounting: the screens
    are pruned under them, and the room ends with no error from a part that went first."""
    import asyncio

    from tui.screens.main import MainScreen

    app = app_for(demo)
    async with app.run_test(size=(160, 48)):
        while not any(isinstance(s, MainScreen) for s in app.screen_stack):
            await asyncio.sleep(0)
        for _ in range(ticks):
            await asyncio.sleep(0)
    # run_test re-raises what the room raised while it ended; nothing did.
    assert app.return_code in (None, 0)


@pytest.mark.asyncio
@pytest.mark.parametrize("keys", [False, True])
async def test_what_the_room_builds_for_later_waits_for_the_data_on_screen_and_quiet_keys(
    demo: Path, monkeypatch: pytest.MonkeyPatch, keys: bool
) -> None:
    """The opening worker's warm-up is Python work that takes the interpreter from the UI
    thread: begun beside the first drawing of the data, it delayed it by more than a second
    at 1M lines, and beside a key, the key's answer by as much. It starts once the data is
    drawn, and goes on only once a person's keys have been quiet for a while."""
    from regulator.rules import regulatory_log as rl

    seen: list[tuple[bool, float]] = []
    build = rl.RegulatoryLog.obligations_of

    def spy(self: Any, *args: Any, **kw: Any) -> Any:
        seen.append((app._data_drawn.is_set(), time.monotonic() - app._input_at))
        return build(self, *args, **kw)

    monkeypatch.setattr(rl.RegulatoryLog, "obligations_of", spy)
    app = app_for(demo)
    async with app.run_test(size=(120, 40)) as pilot:
        if keys:
            for _ in range(3):
                await pilot.press("2")  # the inbox tab, again and again while it reads
                await pilot.pause(0.05)
        await settled(pilot)
        await wait_for(pilot, lambda: bool(seen))
    drawn, quiet = seen[0]
    assert drawn
    if keys:
        assert quiet >= tui.app.INPUT_QUIET_S
