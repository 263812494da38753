"""The room rebuilt as parts: reading off the UI thread, counts kept as the fold goes, rows kept
up to date change by change, themes, keys a person can rebind, and an 80×24 terminal.

Each test is named after what it shows a person.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import OptionList, Static, TabbedContent
from textual.widgets._footer import FooterKey

from regulator.rules.ledger import Ledger
from regulator.store import Layout
from tui.app import RoomApp
from tui.bindings import all_ids
from tui.dialogs.answer import AnswerDialog
from tui.dialogs.lists import HelpScreen
from tui.dialogs.obligation import AcknowledgeDialog
from tui.inbox_index import InboxIndex
from tui.keymap import load_keymap
from tui.keys import RowKey
from tui.model import InstanceModel
from tui.screens.inspector import UnitInspector

from .room_fixture import (
    app_for,
    build_fixture,
    copy_fixture,
    fixed_clock,
    held_folds,
    on_the_inbox,
    settled,
    wait_for,
)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_fixture(tmp_path_factory.mktemp("room-workers") / "calc")


@pytest.fixture
def demo(built: Path, tmp_path: Path) -> Path:
    return copy_fixture(built, tmp_path / "calc")


def footer_keys(app: RoomApp) -> list[str]:
    return [key.key for key in app.screen.query(FooterKey)]


# --- reading off the UI thread ----------------------------------------------------------------


@pytest.mark.asyncio
async def test_with_a_slow_fold_the_room_takes_keys_and_shows_loading_before_the_data(
    demo: Path,
) -> None:
    app = app_for(demo)
    model = app.models[0]
    gate, started = held_folds(model)  # a fold that takes seconds, until the test lets go
    async with app.run_test(size=(160, 48)) as pilot:
        # The first read starts as soon as the model is built, while the main screen goes up.
        await wait_for(pilot, lambda: started.is_set() and app.main is not None)
        main = app.main
        assert main is not None
        await wait_for(
            pilot, lambda: "reading 1 instance" in str(main.query_one("#topbar").render())
        )
        assert main.inbox_table.loading and not main.inbox_table.keys
        # The screen answers keys meanwhile: a tab, the help, and back.
        await pilot.press("2")
        await pilot.pause()
        assert main.query_one("#tabs", TabbedContent).active == "inbox"
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is main)
        assert not model.loaded and not gate.is_set()
        gate.set()
        await settled(pilot)
        assert len(main.inbox_table.keys) == 6 and not main.inbox_table.loading
        assert "reading" not in str(main.query_one("#topbar").render())


@pytest.mark.asyncio
async def test_quitting_before_an_instance_is_read_asks_first(demo: Path) -> None:
    from tui.dialogs.quit import QuitConfirm

    app = app_for(demo)
    gate, _ = held_folds(app.models[0])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, QuitConfirm))
        shown = " ".join(str(s.render()) for s in app.screen.query(".countdown"))
        assert "calc is still being read" in shown
        await pilot.press("escape")
        gate.set()
        await settled(pilot)
        assert app.is_running


@pytest.mark.asyncio
async def test_the_inspector_is_up_at_once_and_fills_in_when_its_replay_is_read(
    demo: Path,
) -> None:
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        await pilot.press("2")
        app.open_unit(0, "flaky-import")
        await wait_for(pilot, lambda: isinstance(app.screen, UnitInspector))
        screen = app.screen
        assert isinstance(screen, UnitInspector)
        await settled(pilot)
        assert screen.built == 1 and screen.rows
        await pilot.press("2")  # the inspector's tabs are on number keys
        await pilot.pause()
        assert screen.query_one("#unit-tabs", TabbedContent).active == "tab-contract"
        await pilot.press("1")
        await pilot.pause()
        assert screen.query_one("#unit-tabs", TabbedContent).active == "tab-timeline"


# --- counts kept as the fold goes -------------------------------------------------------------


def test_the_banners_counts_are_kept_by_the_fold_and_match_a_full_count(demo: Path) -> None:
    model = InstanceModel(demo, clock=fixed_clock)
    model.refresh()
    ledger = Ledger(Layout(demo))
    held = ledger.open_obligation(
        subject="everything stops",
        concern="audit-finding",
        sources=["m-x"],
        severity="critical",
        consumer="human",
        blocks=True,
    )
    first_owed = next(iter(model.owed))
    ledger.resolve(first_owed, "alice", "fixed", "done")
    was_held = next(iter(model.veto))  # the demo's instance-wide finding
    ledger.resolve(was_held, "alice", "fixed", "repaired")
    changes = model.refresh([demo / ".regulator" / "signals.ndjson"])
    assert not changes.full and {held.id, first_owed, was_held} <= changes.touched

    # What is kept is what a count of every obligation says.
    everything = list(model.log.obligations.values())
    open_ = [o for o in everything if o.status not in ("resolved", "escalated", "superseded")]
    assert list(model.open) == [o.id for o in open_]
    assert set(model.veto) == {o.id for o in open_ if o.blocks and o.unit is None}
    assert held.id in model.veto and was_held not in model.veto
    assert first_owed not in model.owed
    assert model.severity_counts["critical"] == sum(o.severity == "critical" for o in open_)

    # A look at the counts walks no obligation.
    def no_scan() -> list[Any]:
        raise AssertionError("scanned every obligation")

    model.log.open_obligations = no_scan  # type: ignore[method-assign,assignment]
    assert [o.id for o in model.instance_veto()] == list(model.veto)
    assert len(model.owed_to_person()) == len(model.owed)


# --- the inbox, change by change ----------------------------------------------------------------


def test_the_inbox_moves_only_what_a_fold_touched_and_ends_where_a_rebuild_would(
    demo: Path,
) -> None:
    model = InstanceModel(demo, clock=fixed_clock)
    model.refresh()
    index = InboxIndex([model], lambda key: False)
    index.person = "alice"
    index.rebuild()
    ledger = Ledger(Layout(demo))
    first = index.keys[0]
    ledger.resolve(first.oid, "alice", "fixed", "done")
    new = ledger.open_obligation(
        subject="a late one",
        unit="u-late",
        concern="audit-finding",
        sources=["m-late"],
        severity="critical",
        consumer="human",
        blocks=True,
    )
    changes = model.refresh()
    index.update(0, changes.touched)
    fresh = InboxIndex([model], lambda key: False)
    fresh.person = "alice"
    fresh.rebuild()
    assert index.keys == fresh.keys
    assert index.keys[0] == RowKey(0, new.id) and first not in index


def test_typing_more_of_a_filter_narrows_to_what_the_whole_filter_keeps(demo: Path) -> None:
    model = InstanceModel(demo, clock=fixed_clock)
    model.refresh()
    index = InboxIndex([model], lambda key: False)
    index.preset = 2  # everything
    index.rebuild()
    steps = ("c", "co", "con", "cons", "conse", "consent", "consent p", "", "is:", "is:blocking")
    for query in steps:
        index.set_query(query)
        fresh = InboxIndex([model], lambda key: False)
        fresh.preset = 2
        fresh.set_query(query)  # never built: decides every row
        assert index.keys == fresh.keys, query
    assert index.keys


# --- looks ----------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_theme_switch_recolours_every_visible_row(demo: Path) -> None:
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        main = await on_the_inbox(pilot)
        table = main.inbox_table
        rows = range(1, len(table.keys) + 1)
        before = [table.render_line(y) for y in rows]
        app.theme = "textual-light"
        await pilot.pause()
        after = [table.render_line(y) for y in rows]
        assert len(after) == 6
        table._cache.clear()
        assert after == [table.render_line(y) for y in rows]  # nothing kept from the old theme
        cursor = table.cursor
        for n, (old, new) in enumerate(zip(before, after, strict=True)):
            if n != cursor:  # (the cursor's accent is the same in both themes)
                assert [s.style for s in old] != [s.style for s in new]
        # The severity cell of a blocking row now has the light theme's warning colour.
        warning = app.theme_variables["warning"].lower()
        colours = {
            s.style.color.get_truecolor().hex.lower()
            for s in after[1]
            if s.style and s.style.color and s.text.strip().startswith("●")
        }
        assert warning in colours


@pytest.mark.asyncio
async def test_at_80x24_help_and_quit_stay_in_the_footer_and_the_subject_stays_readable(
    demo: Path,
) -> None:
    app = app_for(demo)
    async with app.run_test(size=(80, 24)) as pilot:
        main = await on_the_inbox(pilot)
        keys = footer_keys(app)
        assert keys[:2] == ["question_mark", "q"]
        for key in main.query(FooterKey)[:2]:
            assert key.region.right <= 80 and key.region.width > 0
        table = main.inbox_table
        shown, widths = table._columns_for(table.size.width)
        titles = [table.columns[i].title for i in shown]
        assert "subject" in titles and widths[titles.index("subject")] >= 24
        assert "delivery" not in titles  # what matters less gave way


@pytest.mark.asyncio
async def test_the_selected_row_stays_in_view_after_a_preset_at_80x24(demo: Path) -> None:
    app = app_for(demo)
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot)
        main = app.main
        assert main is not None
        main.action_tab("inbox")
        await pilot.press("f", "f")  # everything: more rows than the screen holds
        await pilot.pause()
        table = main.inbox_table
        assert len(table.keys) > table.scrollable_content_region.height
        await pilot.press("end")
        await pilot.pause()
        last = table.current_key
        await pilot.press("f")  # back to owed to me, and once more round to everything
        await pilot.press("f", "f")
        await pilot.pause()
        assert table.current_key is not None
        app.go_to_obligation(0, last.oid if last else "")
        await pilot.pause()
        visible = table.scrollable_content_region.height - 1
        top = table.scroll_offset.y
        assert table.current_key == last
        assert top <= table.cursor < top + visible


# --- keys -----------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_keymap_file_rebinds_a_key_by_its_binding_id(demo: Path, tmp_path: Path) -> None:
    keymap = tmp_path / "keymap.yaml"
    keymap.write_text("main.acknowledge: x\n")
    app = app_for(demo, keymap=keymap)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        main = app.main
        assert main is not None
        main.action_tab("inbox")
        await pilot.pause(0.2)
        await pilot.press("c")
        await pilot.pause()
        assert app.screen is main  # c no longer acknowledges
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, AcknowledgeDialog))


def test_a_bad_keymap_line_is_named_by_file_line_and_id(tmp_path: Path) -> None:
    keymap = tmp_path / "keymap.yaml"
    keymap.write_text("room.help: h\nroom.nosuch: z\nmain.answer: ''\n")
    loaded, errors = load_keymap(keymap, all_ids())
    assert loaded == {"room.help": "h"}
    assert errors == [
        f"{keymap}:2: 'room.nosuch': no such binding id (see docs/room.md)",
        f"{keymap}:3: main.answer: expected keys such as 'k' or 'ctrl+k,f2'",
    ]
    assert load_keymap(tmp_path / "none.yaml", all_ids()) == ({}, [])


@pytest.mark.asyncio
async def test_the_palette_lists_the_rooms_commands_before_anything_is_typed(
    demo: Path,
) -> None:
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause()
        options = app.screen.query_one(OptionList)

        def prompts() -> list[str]:
            return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]

        await wait_for(pilot, lambda: any("resolve the selected" in p for p in prompts()))
        assert any("answer the selected question" in p for p in prompts())


@pytest.mark.asyncio
async def test_a_dialog_shows_its_own_keys_in_the_footer(demo: Path) -> None:
    app = app_for(demo)
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot)
        main = app.main
        assert main is not None
        main.action_tab("inbox")
        table = main.inbox_table
        for key in table.keys:
            if app.lookup(key)[1].subject.startswith("consent:"):
                table.move_to(key)
        await pilot.pause(0.2)
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, AnswerDialog))
        await pilot.pause()
        assert set(footer_keys(app)) == {"escape", "ctrl+y", "ctrl+n"}


@pytest.mark.asyncio
async def test_an_inbox_rebuilt_while_other_work_holds_an_instances_lock_fills_in_after(
    demo: Path,
) -> None:
    # The rebuild does not wait on a busy instance; a fold's end brings the next rebuild, but
    # the inspector's replay or the opening's per-unit lists bring none: the inbox must try
    # again by itself, or it stays empty while the instances table counts what is owed.
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        main = await on_the_inbox(pilot)
        shown = len(main.inbox_table.keys)
        assert shown > 0
        held, release = threading.Event(), threading.Event()

        def hold() -> None:
            with app.models[0].lock:
                held.set()
                release.wait(30)

        holder = threading.Thread(target=hold, daemon=True)
        holder.start()
        assert held.wait(10)
        try:
            main.inbox.rebuild()  # as a preset or person change does
            assert len(main.inbox_table.keys) == 0  # the busy instance was left out for now
        finally:
            release.set()
            holder.join(10)
        await wait_for(pilot, lambda: len(main.inbox_table.keys) == shown)


# --- a change read while a screen is open over the main one -------------------------------------


@pytest.mark.asyncio
async def test_a_change_read_while_a_dialog_or_the_inspector_is_open_reaches_it(
    demo: Path,
) -> None:
    app = app_for(demo)
    signals = demo / ".regulator" / "signals.ndjson"
    ledger = Ledger(Layout(demo))
    async with app.run_test(size=(160, 48)) as pilot:
        await on_the_inbox(pilot)
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, AcknowledgeDialog))
        dialog = app.screen
        assert isinstance(dialog, AcknowledgeDialog)
        # Someone else closes it meanwhile: the dialog says so, and offers nothing more.
        ledger.resolve(dialog.obligation.id, "alice", "fixed", "done from the command line")
        app.request_fold(0, {signals})
        await wait_for(pilot, lambda: dialog.closed_elsewhere)
        banner = str(dialog.query_one("#closed-banner", Static).render())
        assert banner.startswith("resolved by alice") and "nothing more to do here" in banner
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.main)
        app.open_unit(0, "flaky-import")
        await wait_for(pilot, lambda: isinstance(app.screen, UnitInspector))
        inspector = app.screen
        assert isinstance(inspector, UnitInspector)
        await settled(pilot)
        built = inspector.built
        ledger.open_obligation(
            subject="a new finding",
            concern="audit-finding",
            sources=["m-y"],
            severity="advisory",
            consumer="S3",
            blocks=False,
        )
        app.request_fold(0, {signals})
        await wait_for(pilot, lambda: inspector.built > built)
