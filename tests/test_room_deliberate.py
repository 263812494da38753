"""Deliberate answers and no silent exits in the control room, driven with Pilot.

A consent or acceptance is given only by a key or button meant for it, never by a default
Enter; what a person types beside an answer travels with it; single letters typed into a field
stay in the field; quitting while a session waits on a person asks first; and Esc in the person
picker cancels.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Button, Input, OptionList

from regulator.host.leases import LeaseStore
from regulator.policy import load_definition
from regulator.rules.asking import ask
from regulator.rules.ledger import Ledger
from regulator.store import Layout
from tui.app import MainScreen, RoomApp
from tui.dialogs.answer import AnswerDialog
from tui.dialogs.person import PersonPicker
from tui.dialogs.quit import QuitConfirm
from tui.model import InstanceModel
from tui.screens.inspector import UnitInspector
from tui.widgets.rowtable import RowTable

from .room_fixture import (
    SHOWN_ROOT,
    DialogHost,
    app_for,
    build_fixture,
    copy_fixture,
    fixed_clock,
    on_the_inbox,
    read_model,
    room_actor,
    settled,
    wait_for,
)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_fixture(tmp_path_factory.mktemp("room-deliberate") / "calc")


@pytest.fixture
def demo(built: Path, tmp_path: Path) -> Path:
    return copy_fixture(built, tmp_path / "calc")


def signals(root: Path) -> bytes:
    return (root / ".regulator" / "signals.ndjson").read_bytes()


def state(root: Path, oid: str) -> Any:
    return Ledger(Layout(root)).refresh().obligations[oid]


def travelled(root: Path, oid: str, note: str) -> bool:
    """The note is in the recorded answer and in the disposition's rationale."""
    log = Ledger(Layout(root)).refresh()
    interaction = log.interaction_for(oid)
    assert interaction is not None and interaction.answers
    answer = interaction.answers[-1]
    rationale = log.obligations[oid].rationale or ""
    return answer.outcome == "answered" and note in (answer.answer or "") and note in rationale


def question(kind: str) -> Callable[[Any], bool]:
    return lambda o: o.concern == "interaction" and o.subject.startswith(f"{kind}:")


def answering(root: Path, kind: str) -> tuple[Any, DialogHost]:
    """The answer dialog on the open question of ``kind``, alone in a host App, acting as alice:
    for what the dialog does on its own (the tests that need the room behind it open it there,
    with ``open_answer``)."""
    model = read_model(root)
    o = next(o for o in model.log.obligations.values() if o.status == "open" and question(kind)(o))
    return o, DialogHost(AnswerDialog(model, o, "alice", room_actor()))


async def open_answer(app: RoomApp, pilot: Any, kind: str) -> tuple[Any, AnswerDialog]:
    """Highlight the first open question of ``kind`` in the inbox and press ``a`` on it."""
    await on_the_inbox(pilot)
    table = app.screen.query_one("#inbox-table", RowTable)
    for key in table.keys:
        o = app.lookup(key)[1]
        if question(kind)(o):
            table.move_to(key)
            await pilot.pause(0.2)
            await pilot.press("a")
            await wait_for(pilot, lambda: isinstance(app.screen, AnswerDialog))
            dialog = app.screen
            assert isinstance(dialog, AnswerDialog)
            return o, dialog
    raise AssertionError(f"no {kind} question in the inbox")


# --- consent and uat: the note first, and no default key -----------------------------------


@pytest.mark.parametrize("kind", ["consent", "uat"])
async def test_a_consent_or_uat_dialog_opens_in_the_note_field_not_on_a_button(
    demo: Path, kind: str
) -> None:
    _, host = answering(demo, kind)
    async with host.run_test(size=(160, 48)) as pilot:
        await host.shown(pilot)
        dialog = host.dialog
        assert isinstance(dialog.focused, Input) and dialog.focused.id == "note"


async def test_a_refusal_reason_typed_at_once_stays_in_the_note_and_answers_nothing(
    demo: Path,
) -> None:
    """The reported slip: `n`, `o`, … typed straight away refused with no reason and then
    opened another unit's inspector."""
    before = signals(demo)
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        _, dialog = await open_answer(app, pilot, "consent")
        await pilot.press(*"no, open the release first", "enter")
        await pilot.pause()
        assert app.screen is dialog  # still answering, no inspector opened
        assert not any(isinstance(s, UnitInspector) for s in app.screen_stack)
        assert dialog.query_one("#note", Input).value == "no, open the release first"
        assert "Enter answers nothing" in str(dialog.query_one("#refusal").render())
    assert signals(demo) == before


@pytest.mark.parametrize("kind", ["consent", "uat"])
async def test_enter_on_an_untouched_consent_or_uat_dialog_answers_nothing(
    demo: Path, kind: str
) -> None:
    before = signals(demo)
    _, host = answering(demo, kind)
    async with host.run_test(size=(160, 48)) as pilot:
        await host.shown(pilot)
        await pilot.press("enter", "enter", "space", "y", "ctrl+s", "enter")
        await pilot.pause()
        assert host.screen is host.dialog and not host.results
    assert signals(demo) == before


@pytest.mark.parametrize(("kind", "yes"), [("consent", "accepted"), ("uat", "verified")])
async def test_ctrl_y_answers_yes_and_the_typed_note_travels_with_it(
    demo: Path, kind: str, yes: str
) -> None:
    o, host = answering(demo, kind)
    async with host.run_test(size=(160, 48)) as pilot:
        await host.shown(pilot)
        await pilot.press(*"checked on staging", "ctrl+y")
        await wait_for(pilot, lambda: bool(host.results))
    after = state(demo, o.id)
    assert (after.status, after.disposition) == ("resolved", yes)
    assert travelled(demo, o.id, "checked on staging")


@pytest.mark.parametrize("kind", ["consent", "uat"])
async def test_ctrl_n_refuses_and_the_typed_reason_travels_with_the_refusal(
    demo: Path, kind: str
) -> None:
    o, host = answering(demo, kind)
    async with host.run_test(size=(160, 48)) as pilot:
        await host.shown(pilot)
        await pilot.press(*"not before the freeze ends", "ctrl+n")
        await wait_for(pilot, lambda: bool(host.results))
    after = state(demo, o.id)
    assert (after.status, after.disposition) == ("resolved", "rejected")
    assert travelled(demo, o.id, "not before the freeze ends")


async def test_a_yes_typed_in_the_note_of_a_refusal_is_still_a_refusal(demo: Path) -> None:
    o, host = answering(demo, "consent")
    async with host.run_test(size=(160, 48)) as pilot:
        await host.shown(pilot)
        await pilot.press(*"yes", "ctrl+n")
        await wait_for(pilot, lambda: bool(host.results))
    assert state(demo, o.id).disposition == "rejected"


# --- silence: closing is not answering --------------------------------------------------------


@pytest.mark.parametrize("kind", ["consent", "uat"])
async def test_esc_after_typing_a_note_records_nothing(demo: Path, kind: str) -> None:
    before = signals(demo)
    _, host = answering(demo, kind)
    async with host.run_test(size=(160, 48)) as pilot:
        await host.shown(pilot)
        await pilot.press(*"fine by me", "escape")
        await wait_for(pilot, lambda: host.results == [None])
    assert signals(demo) == before


async def test_leaving_the_room_with_a_consent_dialog_open_records_nothing(demo: Path) -> None:
    before = signals(demo)
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        await open_answer(app, pilot, "consent")
        await pilot.press(*"ok")
        app.exit()
    assert signals(demo) == before


async def test_the_refusal_button_comes_first_after_the_note_and_answers_when_pressed(
    demo: Path,
) -> None:
    o, host = answering(demo, "consent")
    async with host.run_test(size=(160, 48)) as pilot:
        await host.shown(pilot)
        await pilot.press(*"too risky", "tab")
        focused = host.dialog.focused
        assert isinstance(focused, Button) and focused.id == "no"
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(host.results))
    assert state(demo, o.id).disposition == "rejected"
    assert travelled(demo, o.id, "too risky")


@pytest.mark.parametrize("kind", ["consent", "uat"])
async def test_the_consent_and_uat_dialogs_show_the_keys_that_answer(demo: Path, kind: str) -> None:
    _, host = answering(demo, kind)
    async with host.run_test(size=(160, 48)) as pilot:
        await host.shown(pilot)
        dialog = host.dialog
        labels = {b.id: str(b.label) for b in dialog.query(Button)}
        assert "ctrl+y" in labels["yes"] and "ctrl+n" in labels["no"]
        shown = str(dialog.query_one("#recorded-as").render())
        assert "ctrl+y" in shown and "ctrl+n" in shown and "Enter answers nothing" in shown


# --- letters typed into a field stay there ---------------------------------------------------


@pytest.mark.parametrize("kind", ["consent", "clarification", "recap"])
async def test_letters_typed_into_a_dialog_field_never_fire_a_shortcut(
    demo: Path, kind: str
) -> None:
    before = signals(demo)
    app = app_for(demo)
    typed = "quit? P p ! y n o r e c a w 1 2 3 / f"
    async with app.run_test(size=(160, 48)) as pilot:
        _, dialog = await open_answer(app, pilot, kind)
        await pilot.press(*typed)
        await pilot.pause()
        assert app.screen is dialog and app.is_running
        assert not app.paused and app.person == "alice"
        field = dialog.query_one("#note" if kind == "consent" else "#answer", Input)
        assert field.value == typed
    assert signals(demo) == before


async def test_app_letters_do_nothing_over_a_dialog_whose_focus_is_on_a_button(
    demo: Path,
) -> None:
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        _, dialog = await open_answer(app, pilot, "consent")
        dialog.query_one("#cancel", Button).focus()
        await pilot.press("q", "p", "P", "question_mark", "exclamation_mark")
        await pilot.pause()
        assert app.screen is dialog and app.is_running
        assert not app.paused and app.person == "alice"


# --- choice: no option picked for you -----------------------------------------------------


async def test_enter_on_a_fresh_choice_picks_nothing(demo: Path) -> None:
    before = signals(demo)
    _, host = answering(demo, "choice")
    async with host.run_test(size=(160, 48)) as pilot:
        await host.shown(pilot)
        dialog = host.dialog
        assert dialog.query_one("#options", OptionList).highlighted is None
        await pilot.press("enter")
        await pilot.pause()
        assert host.screen is dialog and not host.results
    assert signals(demo) == before


async def test_a_choice_number_highlights_that_option_and_enter_answers_it(demo: Path) -> None:
    o, host = answering(demo, "choice")
    async with host.run_test(size=(160, 48)) as pilot:
        await host.shown(pilot)
        dialog = host.dialog
        await pilot.press("2")
        await pilot.pause()
        assert host.screen is dialog and not host.results  # a number only highlights
        assert dialog.query_one("#options", OptionList).highlighted == 1
        assert "JSON lines file" in str(dialog.query_one("#recorded-as").render())
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(host.results))
    assert (state(demo, o.id).disposition, state(demo, o.id).rationale) == (
        "fixed",
        "JSON lines file",
    )


async def test_a_digit_that_is_not_ascii_highlights_no_option(demo: Path) -> None:
    # "٢" (Arabic-Indic two) is a digit to str.isdigit and int() reads it as 2; "²" is a digit
    # that int() cannot read. Neither is a number the dialog offers.
    before = signals(demo)
    _, host = answering(demo, "choice")
    async with host.run_test(size=(160, 48)) as pilot:
        await host.shown(pilot)
        dialog = host.dialog
        for key in ("\u0662", "\u00b2", "\uff12"):
            await pilot.press(key)
            await pilot.pause()
            assert host.screen is dialog and host.is_running
            assert dialog.query_one("#options", OptionList).highlighted is None, key
    assert signals(demo) == before


# --- quitting while a session waits -------------------------------------------------------


def a_session_waits(root: Path, *, leased: bool = True) -> str:
    """A question asked on the room's channel, its unit holding a live lease: `ask_human` is
    waiting in a session for a person."""
    ask(
        Ledger(Layout(root), clock=fixed_clock),
        load_definition(root).interaction,
        kind="consent",
        subject="drop the cache",
        question="May I drop the cache?",
        action="rm -rf .cache",
        unit="room-ask",
        attempt=1,
        channel="tui",
    )
    if leased:
        LeaseStore(Layout(root), fixed_clock).acquire(
            "room-ask", resource=str(root / "wt"), branch="unit/room-ask"
        )
    log = Ledger(Layout(root)).refresh()
    return next(o.id for o in log.obligations.values() if o.unit == "room-ask")


async def test_q_with_a_session_waiting_asks_first_and_enter_stays(demo: Path) -> None:
    a_session_waits(demo)
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, QuitConfirm))
        confirm = app.screen
        shown = " ".join(str(s.render()) for s in confirm.query(".countdown"))
        assert "drop the cache" in shown and "room-ask" in shown and "5:00 left" in shown
        await pilot.press("enter")  # the default is to stay
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
        assert app.is_running
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: isinstance(app.screen, QuitConfirm))
        await pilot.press("q", "ctrl+q", "escape")  # a second q is not a yes; esc stays
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
        assert app.is_running


async def test_quit_from_the_command_palette_asks_first_too(demo: Path) -> None:
    a_session_waits(demo)
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"quit")
        await pilot.pause(1.0)  # the palette searches in the background
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, QuitConfirm))
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
        assert app.is_running


async def test_quit_anyway_quits_with_a_session_waiting(demo: Path) -> None:
    a_session_waits(demo)
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, QuitConfirm))
        await pilot.press("tab", "enter")
        await wait_for(pilot, lambda: not app.is_running)


async def test_q_with_no_session_waiting_quits_at_once(demo: Path) -> None:
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running)


async def test_a_question_whose_session_is_gone_does_not_hold_the_quit(demo: Path) -> None:
    """Asked on the room's channel, but its unit neither holds a lease nor is dispatched."""
    a_session_waits(demo, leased=False)
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running)


# --- who is acting ------------------------------------------------------------------------


async def test_p_then_esc_keeps_the_person_acting(demo: Path) -> None:
    app = app_for(demo, person="bob")
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        await pilot.press("P")
        await wait_for(pilot, lambda: isinstance(app.screen, PersonPicker))
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
        assert app.person == "bob"
        assert "acting as bob" in str(app.screen.query_one("#topbar").render())


async def test_p_opens_on_the_person_acting_so_enter_changes_nothing(demo: Path) -> None:
    app = app_for(demo, person="bob")
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        await pilot.press("P")
        await wait_for(pilot, lambda: isinstance(app.screen, PersonPicker))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
        assert app.person == "bob"


async def test_p_offers_looking_only_as_an_explicit_choice(demo: Path) -> None:
    app = app_for(demo, person="bob")
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        await pilot.press("P")
        await wait_for(pilot, lambda: isinstance(app.screen, PersonPicker))
        await pilot.press("end", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
        assert app.person is None
        assert "acting as nobody" in str(app.screen.query_one("#topbar").render())


async def test_esc_in_the_picker_at_start_leaves_the_room_looking_only(demo: Path) -> None:
    app = RoomApp(
        [demo], person=None, clock=fixed_clock, watch=False, presence=False, env={"USER": "x"}
    )
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, PersonPicker))
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
        assert app.person is None


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_the_quit_confirmation_looks_as_recorded(
    snap_compare: Any, demo: Path, size: tuple[int, int]
) -> None:
    a_session_waits(demo)
    app = RoomApp([demo], person="alice", clock=fixed_clock, watch=False, presence=False)
    for model in app.models:
        assert isinstance(model, InstanceModel)
        model.root = SHOWN_ROOT  # the path shown, not the temporary directory

    async def press_q(pilot: Any) -> None:
        await settled(pilot)
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, QuitConfirm))
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=press_q)
