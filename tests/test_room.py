"""The control room, driven headless with Textual's Pilot on a demo instance.

Each test is named after what it shows a person. Writes go through the same core functions as
the CLI, so each test checks the files, not just the screen.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import OptionList

from regulator.rules.ledger import Ledger
from regulator.store import Layout
from tui.app import MainScreen, RoomApp
from tui.dialogs.answer import AnswerDialog
from tui.dialogs.obligation import AcknowledgeDialog, EscalateDialog, ResolveDialog
from tui.keys import RowKey
from tui.screens.inspector import UnitInspector
from tui.widgets.detail import ObligationDetail
from tui.widgets.rowtable import RowTable

from .room_fixture import (
    app_for,
    build_fixture,
    copy_fixture,
    fixed_clock,
    on_the_inbox,
    settled,
    wait_for,
)

pytestmark = pytest.mark.asyncio


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_fixture(tmp_path_factory.mktemp("room") / "calc")


@pytest.fixture
def demo(built: Path, tmp_path: Path) -> Path:
    return copy_fixture(built, tmp_path / "calc")


def signals(root: Path) -> bytes:
    return (root / ".regulator" / "signals.ndjson").read_bytes()


def state(root: Path, oid: str) -> Any:
    log = Ledger(Layout(root)).refresh()
    return log.obligations[oid]


def inbox(app: RoomApp) -> RowTable[Any]:
    return app.screen.query_one("#inbox-table", RowTable)


async def select(app: RoomApp, pilot: Any, predicate: Callable[[Any], bool]) -> Any:
    """Move the inbox cursor to the first obligation that satisfies ``predicate``."""
    await on_the_inbox(pilot)
    table = inbox(app)
    for key in table.keys:
        _, o = app.lookup(key)
        if predicate(o):
            table.move_to(key)
            await pilot.pause(0.2)  # the detail pane follows once the cursor rests
            return o
    raise AssertionError("no such obligation in the inbox")


def question(kind: str) -> Callable[[Any], bool]:
    return lambda o: o.concern == "interaction" and o.subject.startswith(f"{kind}:")


# --- answering ----------------------------------------------------------------------------


async def test_a_consent_yes_is_recorded_as_accepted(demo: Path) -> None:
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        o = await select(app, pilot, question("consent"))
        await pilot.press("a")
        assert isinstance(app.screen, AnswerDialog)
        await pilot.press("ctrl+y")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
    assert state(demo, o.id).disposition == "accepted"


async def test_a_consent_no_is_recorded_as_rejected_not_as_a_timeout(demo: Path) -> None:
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        o = await select(app, pilot, question("consent"))
        await pilot.press("a")
        await pilot.press(*"not before the freeze ends")  # the dialog opens in the note
        await pilot.click("#no")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
    after = state(demo, o.id)
    assert (after.status, after.disposition) == ("resolved", "rejected")
    assert after.rationale == "no — not before the freeze ends"
    log = Ledger(Layout(demo)).refresh()
    answers = log.interaction_for(o.id).answers  # type: ignore[union-attr]
    assert answers[-1].outcome == "answered" and answers[-1].channel == "tui"


async def test_a_choice_offers_only_its_options_and_records_the_pick(demo: Path) -> None:
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        o = await select(app, pilot, question("choice"))
        await pilot.press("a")
        dialog = app.screen
        assert isinstance(dialog, AnswerDialog)
        from textual.widgets import Input, OptionList

        options = dialog.query_one("#options", OptionList)
        shown = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert shown == ["1. sqlite file", "2. JSON lines file", "3. no persistence"]
        # Only a note may be typed: the answer itself is one of the options.
        assert [field.id for field in dialog.query(Input)] == ["note"]
        await pilot.press("down", "down", "enter")  # nothing is highlighted at first
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
    after = state(demo, o.id)
    assert (after.disposition, after.rationale) == ("fixed", "JSON lines file")


async def test_a_clarification_is_answered_in_free_text(demo: Path) -> None:
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        o = await select(app, pilot, question("clarification"))
        await pilot.press("a")
        await pilot.press(*"400, with a message")
        dialog = app.screen
        assert "will be recorded as: fixed" in str(dialog.query_one("#recorded-as").render())
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
    assert state(demo, o.id).rationale == "400, with a message"


async def test_a_uat_verified_is_recorded_as_verified(demo: Path) -> None:
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        o = await select(app, pilot, question("uat"))
        await pilot.press("a", "ctrl+y")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
    assert state(demo, o.id).disposition == "verified"


async def test_a_recap_is_answered_as_a_correction(demo: Path) -> None:
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        o = await select(app, pilot, question("recap"))
        await pilot.press("a", *"keep the refactors in", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
    assert (state(demo, o.id).disposition, state(demo, o.id).rationale) == (
        "fixed",
        "keep the refactors in",
    )


async def test_an_empty_answer_keeps_the_dialog_open_and_writes_nothing(demo: Path) -> None:
    before = signals(demo)
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        await select(app, pilot, question("clarification"))
        await pilot.press("a", "enter")
        assert isinstance(app.screen, AnswerDialog)
        assert app.screen.query_one("#answer").has_class("-invalid")
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)
    assert signals(demo) == before


# --- authority ---------------------------------------------------------------------------


async def test_the_resolve_dialog_offers_only_the_dispositions_the_person_may_use(
    demo: Path,
) -> None:
    app = app_for(demo, person="bob")
    async with app.run_test(size=(160, 48)) as pilot:
        await select(app, pilot, lambda o: o.concern == "recovery-decision")
        await pilot.press("r")
        dialog = app.screen
        assert isinstance(dialog, ResolveDialog)
        assert "accepted-risk" not in dialog.allowed and "fixed" in dialog.allowed
        from textual.widgets import OptionList

        options = dialog.query_one("#dispositions", OptionList)
        risk = options.get_option("accepted-risk")
        assert risk.disabled and "may not accept risk" in str(risk.prompt)


async def test_a_refused_action_shows_the_refusal_in_the_dialog_and_writes_nothing(
    demo: Path,
) -> None:
    before = signals(demo)
    app = app_for(demo, person="carol")
    async with app.run_test(size=(160, 48)) as pilot:
        await select(app, pilot, question("clarification"))
        await pilot.press("a", *"42", "enter")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, AnswerDialog)  # still open
        refusal = str(dialog.query_one("#refusal").render())
        assert '"carol" is not a person the interaction policy (interaction v1) names' in refusal
    assert signals(demo) == before


async def test_acknowledge_records_the_note_and_the_veto_stands(demo: Path) -> None:
    app = app_for(demo, person="bob")
    async with app.run_test(size=(160, 48)) as pilot:
        o = await select(app, pilot, lambda o: o.concern == "recovery-decision")
        await pilot.press("c")
        assert isinstance(app.screen, AcknowledgeDialog)
        await pilot.press(*"on it", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
    after = state(demo, o.id)
    assert after.status == "acknowledged" and after.acknowledged_by == ["bob"] and after.blocks
    assert after.history[-1].note == "on it"


async def test_escalate_closes_and_says_the_successor(demo: Path) -> None:
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        o = await select(app, pilot, lambda o: o.concern == "recovery-decision")
        await pilot.press("e")
        dialog = app.screen
        assert isinstance(dialog, EscalateDialog)
        # Each consumer is a role, with the people who may decide it there.
        options = dialog.query_one("#consumers", OptionList)
        s5 = str(options.get_option_at_index(dialog.consumers.index("S5")).prompt)
        assert "identity and policy" in s5 and "may decide: alice" in s5 and "bob" not in s5
        await pilot.click("#rationale")
        await pilot.press(*"needs S5", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))  # closed on success
        (said,) = [n.message for n in app.notices if n.title == "done"]  # kept in the log
        assert "successor" in said and "is now what is owed" in said
    after = state(demo, o.id)
    assert after.status == "escalated" and after.successor[:8] in said


async def test_escalate_to_a_person_addresses_the_successor_to_them(demo: Path) -> None:
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        o = await select(app, pilot, lambda o: o.concern == "recovery-decision")
        await pilot.press("e")
        dialog = app.screen
        assert isinstance(dialog, EscalateDialog)
        # Beside the consumers, a person for each one the policy lets decide it at its severity.
        options = dialog.query_one("#consumers", OptionList)
        prompts = [str(options.get_option_at_index(i).prompt) for i in range(len(dialog.targets))]
        people = [name for _, name in dialog.targets if name is not None]
        # The demo's recovery decision is blocking: alice (critical) and bob (blocking) may.
        assert o.severity == "blocking" and people == dialog.people() == ["alice", "bob"]
        assert [p for p in prompts if p.startswith("a person: ")] == [
            f"a person: {name} — owed to human, delivered to this person alone" for name in people
        ]
        pick = "bob"  # not the person at this room: it leaves alice's "owed to me"
        options.highlighted = dialog.targets.index(("human", pick))
        await pilot.click("#rationale")
        await pilot.press(*"yours", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
        (said,) = [n.message for n in app.notices if n.title == "done"]
        assert f"escalated to human ({pick}): successor" in said
    successor = state(demo, state(demo, o.id).successor)
    assert successor.consumer == "human"
    lines = (demo / ".regulator" / "addressees.ndjson").read_text().splitlines()
    assert [json.loads(line)["obligationId"] for line in lines] == [successor.id]
    assert json.loads(lines[0])["person"] == pick and json.loads(lines[0])["by"] == "alice"
    # Owed to that person: shown so, and in "owed to me" for them alone.
    for person, listed in (("alice", False), ("bob", True)):
        room = app_for(demo, person=person)
        async with room.run_test(size=(160, 48)) as pilot:
            await on_the_inbox(pilot)
            keys = [k for k in inbox(room).keys if k.oid == successor.id]
            assert bool(keys) == listed, person
            model = room.models[0]
            assert model.owed_to(model.log.obligations[successor.id]) == pick
            if keys:
                inbox(room).move_to(keys[0])
                await pilot.pause(0.2)  # the detail follows once the cursor rests
                detail = room.screen.query_one("#detail", ObligationDetail)
                assert "owed to bob" in str(detail.render()).splitlines()[0]
                row = inbox(room).render_row(keys[0])
                assert "bob" in [str(cell) for cell in row]


# --- finding things ---------------------------------------------------------------------------


async def test_filtering_keeps_only_the_matching_obligations(demo: Path) -> None:
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        await pilot.press("2")
        assert len(inbox(app).keys) == 6
        await pilot.press("slash", *"kind:consent")
        await wait_for(pilot, lambda: len(inbox(app).keys) == 1)  # the filter is debounced
        keys = inbox(app).keys
        assert app.lookup(keys[0])[1].subject.startswith("consent:")
        await pilot.press("escape")
        await pilot.pause()
        assert len(inbox(app).keys) == 6
        await pilot.press("f")  # all open: S3's and S5's too
        await pilot.pause()
        assert len(inbox(app).keys) > 6


async def test_go_to_an_obligation_by_id_prefix_from_the_palette(demo: Path) -> None:
    log = Ledger(Layout(demo)).refresh()
    target = next(o for o in log.obligations.values() if o.concern == "policy-proposal")
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*target.id[:6])
        await pilot.pause(1.0)  # the palette searches in the background
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
        assert inbox(app).current_key == RowKey(0, target.id)


async def test_the_timeline_of_a_demo_unit_lists_its_records_in_time_order(demo: Path) -> None:
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        app.open_unit(0, "flaky-import")
        await settled(pilot)
        screen = app.screen
        assert isinstance(screen, UnitInspector)
        table = screen.query_one("#timeline", RowTable)
        rows = [screen.rows[k.ref] for k in table.keys if not k.group]
        kinds = [r.kind for r in rows]
        for kind in ("attempt", "decision", "obligation", "budget"):
            assert kind in kinds, kind
        assert [r.at for r in rows] == sorted(r.at for r in rows)
        attempts = [r for r in rows if r.kind == "attempt"]
        assert {r.attempt for r in attempts} == {1, 2, 3}
        app.open_unit(0, "publish-release")
        await settled(pilot)
        second = app.screen
        assert isinstance(second, UnitInspector)
        kinds = [r.kind for r in second.rows.values()]
        assert "interaction" in kinds and "delivery" in kinds


# --- live ---------------------------------------------------------------------------------


async def test_an_obligation_appended_by_another_process_appears_in_the_inbox(demo: Path) -> None:
    import subprocess
    import sys

    app = RoomApp([demo], person="alice", clock=fixed_clock, presence=False, bell=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        before = len(inbox(app).keys)
        await pilot.pause(0.3)  # the watcher is up
        code = (
            "from regulator.rules.ledger import Ledger; "
            "from regulator.store import Layout; import sys;"
            "Ledger(Layout(__import__('pathlib').Path(sys.argv[1])))"
            ".open_obligation(subject='from elsewhere',"
            " unit='u9', concern='audit-finding', sources=['m'], severity='blocking',"
            " consumer='human', blocks=True)"
        )
        subprocess.run([sys.executable, "-c", code, str(demo)], check=True)
        started = time.monotonic()
        await wait_for(pilot, lambda: len(inbox(app).keys) == before + 1, 5)
        elapsed = time.monotonic() - started
        assert any(app.lookup(k)[1].subject == "from elsewhere" for k in inbox(app).keys)
        assert any(k in app.new for k in inbox(app).keys)  # marked new until opened
    assert elapsed < 5


# --- what reaches the screen -----------------------------------------------------------------


async def test_markup_ansi_and_osc52_in_a_question_show_as_literal_text_and_canaries_never(
    demo: Path,
) -> None:
    from regulator.policy import load_definition
    from regulator.rules.asking import ask

    canary = "sup3r-s3cret-canary-value"
    (demo / ".regulator" / "canaries").write_text(canary + "\n")
    evil = (
        f"[bold red]Approve?[/] \x1b[2J\x1b]52;c;aGVsbG8=\x07 token {canary}"
        " ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    )
    ask(
        Ledger(Layout(demo)),
        load_definition(demo).interaction,
        kind="clarification",
        subject="evil [link=http://x]click[/link]",
        question=evil,
        unit="u-evil",
        attempt=1,
    )
    app = app_for(demo)
    async with app.run_test(size=(200, 60)) as pilot:
        await select(app, pilot, lambda o: o.unit == "u-evil")
        await pilot.pause()
        detail = app.screen.query_one("#detail")
        text = str(detail.render())
        assert "[bold red]Approve?[/]" in text  # the markup is literal text
        assert "[link=http://x]click[/link]" in text
        assert "\x1b" not in text and "\\x1b" in text  # escapes are shown, never sent
        assert canary not in text and "ghp_abcdefghijklmnop" not in text
        svg = app.export_screenshot()
        assert canary not in svg
        await pilot.press("a")
        await pilot.pause()
        assert canary not in app.export_screenshot()


async def test_an_inspector_closed_before_its_parts_are_up_leaves_the_room_working(
    demo: Path,
) -> None:
    # ``o`` then esc at once: the inspector is closed before it was composed; its opening
    # must neither fail on parts that are not there nor leave the cycle collector off.
    import gc

    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        app.open_unit(0, "flaky-import")
        app.pop_screen()
        await settled(pilot)
        assert isinstance(app.screen, MainScreen) and gc.isenabled()
        app.open_unit(0, "flaky-import")
        await pilot.press("escape")
        await settled(pilot)
        assert isinstance(app.screen, MainScreen) and gc.isenabled()
        app.open_unit(0, "flaky-import")
        await settled(pilot)
        assert isinstance(app.screen, UnitInspector)  # and it still opens as before
