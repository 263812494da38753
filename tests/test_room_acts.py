"""The room acts where a unit is shown: the inspector and the units table offer the inbox's acts
with the same keys, on what the unit waits on; after each act the unit's next step is said;
a scripted unit is driven again with the scenario the person gives; what refuses is kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, OptionList

from regulator.host.loop import Loop
from regulator.policy import load_definition
from regulator.rules.execution import ExecutionStore
from regulator.rules.ledger import Ledger
from regulator.rules.regulatory_log import RegulatoryLog
from regulator.store import Layout
from regulator.views.next_step import next_step_of
from tui.app import MainScreen, RoomApp
from tui.dialogs.drive import DriveConfirm
from tui.dialogs.lists import NotificationsScreen
from tui.dialogs.obligation import ResolveDialog
from tui.dialogs.recovery import ReplanDialog
from tui.screens.inspector import UnitInspector
from tui.widgets.instances import UnitsTable

from .conftest import run_cli
from .room_fixture import build_fixture, copy_fixture, settled
from .test_loop import project
from .test_remediate_clarify import driven_once
from .test_room_recovery import fake_editor, status, wait_for

__all__ = ["project"]

pytestmark = [pytest.mark.slow]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_fixture(tmp_path_factory.mktemp("room-acts") / "calc")


@pytest.fixture
def demo(built: Path, tmp_path: Path) -> Path:
    return copy_fixture(built, tmp_path / "calc")


def room(root: Path, **kw: Any) -> RoomApp:
    # The shipped workload runs scripted sessions: no scenario is given to the loop here, so
    # driving asks for one, as it does for a person.
    return RoomApp([root], person="alice", watch=False, presence=False, **kw)


def first_line(inspector: UnitInspector) -> str:
    return str(inspector.query_one("#unit-next").render())


def next_text(root: Path, unit_id: str) -> str:
    layout = Layout(root)
    log = RegulatoryLog(layout)
    log.refresh()
    store = ExecutionStore(layout)
    ceiling = load_definition(root).budget.ceiling_for("implement").attempts
    return next_step_of(log, store, store.unit(unit_id), attempt_ceiling=ceiling).text


async def inspect(app: RoomApp, pilot: Any, unit_id: str) -> UnitInspector:
    await settled(pilot)
    app.open_unit(0, unit_id)
    await wait_for(pilot, lambda: isinstance(app.screen, UnitInspector))
    inspector = app.screen
    assert isinstance(inspector, UnitInspector)
    await wait_for(pilot, lambda: inspector.built > 0)
    return inspector


async def test_the_inspector_replans_and_drives_a_scripted_unit_again_until_it_closes(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, script = driven_once(project, "parser", "replan")
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", fake_editor(tmp_path, "c['objective'] = 'parse with a grammar'"))
    app = room(project, scenario=str(script))
    async with app.run_test(size=(160, 48)) as pilot:
        inspector = await inspect(app, pilot, "parser")
        # The first line says what the unit waits on and the key that gives it.
        line = first_line(inspector)
        assert "waits on a replan" in line and "press R to replan" in line
        assert inspector.check_action("replan", ()) is True
        assert inspector.check_action("remediate", ()) is None  # greyed: it waits on no fix
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, ReplanDialog))
        app.screen.query_one("#reason", Input).value = "a grammar"
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DriveConfirm))
        dialog = app.screen
        assert isinstance(dialog, DriveConfirm)
        field = dialog.query_one("#scenario", Input)
        assert field.value == str(script)  # prefilled with the last one used
        field.value = str(tmp_path / "no-such.yaml")
        await pilot.press("enter")  # refused where the person acted; the dialog stays
        assert "cannot read the scenario" in str(dialog.query_one("#refusal").render())
        assert app.screen is dialog and status(project, "parser") == "blocked"
        field.value = str(script)
        await pilot.press("enter")
        await wait_for(pilot, lambda: status(project, "parser") == "closed")
        await wait_for(pilot, lambda: "closed: nothing more to do" in first_line(inspector))
        await wait_for(
            pilot, lambda: "closed under v2" in str(inspector.query_one("#unit-notice").render())
        )
        assert isinstance(app.screen, UnitInspector)  # never left the room, nor the inspector
    assert any("closed under v2" in n.message for n in app.notices)


async def test_resolving_in_the_inspector_says_the_next_step(project: Path) -> None:
    driven_once(project, "flaky", "escalate")
    app = room(project)
    async with app.run_test(size=(160, 48)) as pilot:
        inspector = await inspect(app, pilot, "flaky")
        assert "press r to resolve" in first_line(inspector)
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, ResolveDialog))
        dialog = app.screen
        assert isinstance(dialog, ResolveDialog)
        assert dialog.obligation.concern == "recovery-decision"
        options = dialog.query_one("#dispositions", OptionList)
        # Each disposition says what it means.
        rework = str(options.get_option("rework").prompt)
        assert "the unit runs again under the same contract" in rework
        options.highlighted = [o.id for o in options._options].index("rework")
        dialog.query_one("#rationale", Input).value = "try once more"
        await pilot.press("tab", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, UnitInspector))
        await wait_for(pilot, lambda: "ready to drive" in first_line(inspector))
        assert "press d to drive it again" in first_line(inspector)
        said = [n.message for n in app.notices if n.title == "unit flaky: next"]
        assert said and said[-1].startswith("ready to drive")
    # The CLI's `unit show` says the same, from the same core function.
    assert next_text(project, "flaky").startswith("ready to drive")


async def test_the_units_table_offers_the_inbox_acts_with_the_same_keys(project: Path) -> None:
    driven_once(project, "parser", "replan")
    app = room(project)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        main = app.screen
        assert isinstance(main, MainScreen)
        units = main.query_one("#units", UnitsTable)
        units.focus()
        await pilot.pause(0.2)
        assert main.check_action("replan", ()) is True
        assert main.check_action("remediate", ()) is None
        assert main.check_action("drive", ()) is None  # held by its wait
        await pilot.press("c")  # acknowledge what the unit waits on
        await wait_for(pilot, lambda: not isinstance(app.screen, MainScreen))
        assert type(app.screen).__name__ == "AcknowledgeDialog"
        assert app.screen.obligation.concern == "recovery-decision"  # type: ignore[attr-defined]


async def test_a_refused_drive_is_said_and_kept_in_the_notifications_log(project: Path) -> None:
    _, script = driven_once(project, "docs", "remediate")
    # Something holds every unit: the remediation is recorded, the drive after it refused.
    with Ledger(Layout(project)).transaction() as txn:
        txn.open(
            subject="the base fails its tests",
            unit=None,
            concern="audit-finding",
            sources=["verify-base"],
            severity="blocking",
            consumer="human",
            blocks=True,
            opened_by="S3*",
        )
    app = room(project, scenario=str(script))
    async with app.run_test(size=(160, 48)) as pilot:
        inspector = await inspect(app, pilot, "docs")
        await pilot.press("m")
        await wait_for(pilot, lambda: not isinstance(app.screen, UnitInspector))
        app.screen.query_one("#note", Input).value = "installed mkdocs"
        await pilot.press("enter")
        # A scripted unit: the drive asks for its scenario, and the gate refuses it there.
        await wait_for(pilot, lambda: isinstance(app.screen, DriveConfirm))
        dialog = app.screen
        await pilot.press("enter")
        refusal = str(dialog.query_one("#refusal").render())
        assert "the drive is refused" in refusal and "must be dispositioned" in refusal
        assert app.screen is dialog
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, UnitInspector))
        notice = inspector.query_one("#unit-notice")
        await wait_for(pilot, lambda: "the drive is refused" in str(notice.render()))
        await wait_for(pilot, lambda: "every dispatch is held by" in first_line(inspector))
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, NotificationsScreen))
        log = " ".join(str(s.render()) for s in app.screen.query(".notice"))
        assert "the drive is refused" in log and "remediated by alice" in log
    assert status(project, "docs") == "blocked"


def test_unit_show_says_the_next_step_and_the_command(project: Path) -> None:
    driven_once(project, "parser", "replan")
    shown = run_cli("unit", "show", "parser", cwd=project)
    assert shown.returncode == 0, shown.stderr
    assert "  next: waits on a replan" in shown.stdout
    assert "regulator unit replan parser --contract FILE" in shown.stdout


def test_a_unit_that_spent_its_attempts_is_told_to_replan(project: Path) -> None:
    driven_once(project, "flaky", "escalate")
    loop = Loop(Layout(project), load_definition(project))
    wait = loop.waiting_on("flaky")
    assert wait is not None
    # Its attempts spent (as a unit that retried to the ceiling), nothing holds it but that.
    store = ExecutionStore(Layout(project))
    unit = store.unit("flaky")
    ceiling = load_definition(project).budget.ceiling_for(unit.unit_type).attempts
    log = RegulatoryLog(Layout(project))
    log.refresh()
    step = next_step_of(log, store, unit, attempt_ceiling=1)
    assert step.act == "resolve" and step.obligation is not None
    assert step.obligation.id == wait.obligation.id
    with Ledger(Layout(project)).transaction() as txn:
        txn.resolve(wait.obligation.id, "alice", "rework", "once more")
    log.refresh()
    spent = next_step_of(log, store, unit, attempt_ceiling=1)
    assert spent.act == "replan" and "has used 1 of 1 attempt(s)" in spent.text
    assert next_step_of(log, store, unit, attempt_ceiling=ceiling).act == "drive"


async def test_enter_on_a_choice_with_nothing_picked_says_so(demo: Path) -> None:
    from tui.dialogs.answer import AnswerDialog

    from .room_fixture import DialogHost, read_model, room_actor
    from .test_room import question

    root = demo
    model = read_model(root)
    o = next(o for o in model.open_obligations() if question("choice")(o))
    host = DialogHost(AnswerDialog(model, o, "alice", room_actor()))
    async with host.run_test(size=(160, 48)) as pilot:
        await host.shown(pilot)
        dialog = host.dialog
        await pilot.press("enter")
        assert "pick an option first" in str(dialog.query_one("#refusal").render())
        assert host.screen is dialog and not host.results
        assert host.kept == ["pick an option first: ↑ ↓ or its number, then enter"]


async def test_a_choice_carries_a_note_with_the_option_picked(demo: Path) -> None:
    from tui.dialogs.answer import AnswerDialog

    from .room_fixture import DialogHost, read_model, room_actor
    from .test_room import question, state

    root = demo
    model = read_model(root)
    o = next(o for o in model.open_obligations() if question("choice")(o))
    host = DialogHost(AnswerDialog(model, o, "alice", room_actor()))
    async with host.run_test(size=(160, 48)) as pilot:
        await host.shown(pilot)
        await pilot.press("2")  # highlights the second option; typing in the note next
        host.dialog.query_one("#note", Input).focus()
        await pilot.press(*"until 2027", "enter")
        await wait_for(pilot, lambda: bool(host.results))
    after = state(root, o.id)
    assert after.disposition == "fixed"
    assert "JSON lines file" in (after.rationale or "") and "until 2027" in (after.rationale or "")


async def test_a_closed_obligation_loses_its_new_mark(demo: Path) -> None:
    from tui.keys import RowKey

    from .test_room import question

    root = demo
    app = room(root)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        model = app.models[0]
        (o,) = [x for x in model.open_obligations() if question("consent")(x)]
        key = RowKey(0, o.id)
        app.new.add(key)  # as if it had arrived while the room was open
        table = app.main.inbox_table  # type: ignore[union-attr]
        assert "● new" in str(table.render_row(key)[5])
        with Ledger(Layout(root)).transaction() as txn:
            txn.resolve(o.id, "alice", "rejected", "not now")
        app.request_fold(0, None)
        await wait_for(pilot, lambda: key not in app.new)
        assert "● new" not in str(table.render_row(key)[5])
