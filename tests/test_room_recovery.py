"""The room acts on what a blocked unit waits on: a replan (the contract edited in $EDITOR) and
a remediation, each through the same core functions as ``regulator unit replan|remediate``, and
the unit driven again on a worker thread.
"""

from __future__ import annotations

import json
import shutil
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Button, Input

from regulator.host.demo import contract
from regulator.host.loop import Loop
from regulator.rules.audit_log import AuditLog
from regulator.rules.execution import ExecutionStore
from regulator.store import Layout
from tui.app import MainScreen, RoomApp
from tui.dialogs.drive import DriveConfirm
from tui.dialogs.recovery import RemediateDialog, ReplanDialog
from tui.screens.inspector import UnitInspector

from . import room_fixture
from .conftest import git
from .room_fixture import settled
from .test_loop import SILENT, loop_for, project
from .test_original_definitions import ORIGINAL
from .test_remediate_clarify import driven_once
from .test_replan import CLOSES, _state

__all__ = ["project"]

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]


def room(root: Path, person: str = "alice") -> RoomApp:
    app = RoomApp([root], person=person, watch=False, presence=False)

    def scripted(_model: Any) -> Loop:
        return loop_for(root, {"attempts": [SILENT, CLOSES]})

    app.loop_for = scripted
    return app


# A drive runs git and a scripted session on a worker thread: it may take a while.
wait_for = partial(room_fixture.wait_for, seconds=60, step=0.05)


async def select_wait(app: RoomApp, pilot: Any, unit_id: str) -> Any:
    """The inbox cursor on the recovery decision ``unit_id`` waits on."""
    await settled(pilot)
    model = app.models[0]
    (o,) = [
        o
        for o in model.log.obligations.values()
        if o.concern == "recovery-decision" and o.unit == unit_id and o.status == "open"
    ]
    app.go_to_obligation(0, o.id)
    await pilot.pause(0.2)
    assert app.selected() is not None and app.selected()[1].id == o.id  # type: ignore[index]
    return o


def status(root: Path, unit_id: str) -> str:
    return ExecutionStore(Layout(root)).unit(unit_id).status


def fake_editor(tmp_path: Path, change: str) -> str:
    """An $EDITOR that rewrites the contract file it is given (``change`` is Python on ``c``)."""
    script = tmp_path / "editor.py"
    script.write_text(
        "import json, sys\n"
        "p = sys.argv[1]\n"
        "c = json.load(open(p))\n"
        f"{change}\n"
        "json.dump(c, open(p, 'w'))\n"
    )
    return f"{sys.executable} {script}"


# --- remediate ------------------------------------------------------------------------------


async def test_a_remediation_recorded_in_the_room_drives_the_unit_again_to_close(
    project: Path,
) -> None:
    driven_once(project, "docs", "remediate")
    app = room(project)
    async with app.run_test(size=(160, 48)) as pilot:
        o = await select_wait(app, pilot, "docs")
        assert app.may("remediate") is True and app.may("replan") is False
        await pilot.press("m")
        dialog = app.screen
        assert isinstance(dialog, RemediateDialog)
        await pilot.press("enter")  # no note: refused in the dialog
        assert "say what was remediated" in str(dialog.query_one("#refusal").render())
        dialog.query_one("#note", Input).value = "installed mkdocs"
        dialog.query_one("#command", Input).value = "git --version"
        await pilot.click("#remediate")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
        await wait_for(pilot, lambda: status(project, "docs") == "closed")
    log = loop_for(project, {"attempts": []}).log
    assert log.obligations[o.id].disposition == "fixed"
    prompt = (Layout(project).unit_dir("docs") / "prompt.a2.md").read_text()
    assert "resolved by alice as fixed: remediated: installed mkdocs" in prompt


async def test_a_remediation_of_an_original_unit_type_asks_before_driving_what_is_not_enforced(
    project: Path,
) -> None:
    # The original's definition: `implement` has checks regulator does not run, so the room
    # names them and drives only on the person's yes, which the verdict records.
    shutil.rmtree(project / "regulator", ignore_errors=True)  # a policy init may have written
    shutil.copytree(ORIGINAL, project / "regulator")
    recovery = project / "regulator" / "policies" / "recovery.json"
    policy = json.loads(recovery.read_text())
    policy["rules"] = [{"cause": "no-report", "actions": ["remediate"]}]
    recovery.write_text(json.dumps(policy))
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "the original's definition")
    writes = {
        "steps": [
            {"edit": {"path": "src/notes.py", "content": "NOTES = 1\n"}},
            {"commit": "notes"},
            {"report": {"summary": "done"}},
        ]
    }
    loop = loop_for(project, {"attempts": [SILENT]})
    loop.accept_unenforced = "with --accept-unenforced"
    driven = loop.drive(contract("docs", "write the notes"))
    assert [d.action for d in driven.decisions] == ["remediate"]
    app = RoomApp([project], person="alice", watch=False, presence=False)
    app.loop_for = lambda _model: loop_for(project, {"attempts": [SILENT, writes]})
    async with app.run_test(size=(160, 48)) as pilot:
        await select_wait(app, pilot, "docs")
        await pilot.press("m")
        dialog = app.screen
        assert isinstance(dialog, RemediateDialog)
        dialog.query_one("#note", Input).value = "installed the tools"
        await pilot.click("#remediate")
        await wait_for(pilot, lambda: isinstance(app.screen, DriveConfirm))
        confirm = app.screen
        shown = str(confirm.query_one("#unenforced").render())
        assert "regulator does not enforce all that implement asks: checks run_checks" in shown
        assert str(confirm.query_one("#drive", Button).label) == "Drive without them (d)"
        assert status(project, "docs") == "blocked"  # nothing driven before the yes
        await pilot.press("d")
        await wait_for(pilot, lambda: status(project, "docs") == "closed")
    verdict = AuditLog(Layout(project)).audit_for("docs").latest_verdict
    assert verdict is not None and verdict.verdict == "pass"
    assert verdict.reasons[-1].startswith(
        "not enforced here, accepted for this run in the room by alice (OS user "
    )


async def test_a_remediation_whose_command_fails_shows_its_output_and_writes_nothing(
    project: Path,
) -> None:
    driven_once(project, "docs", "remediate")
    before = _state(project)
    app = room(project)
    async with app.run_test(size=(160, 48)) as pilot:
        await select_wait(app, pilot, "docs")
        await pilot.press("m")
        dialog = app.screen
        assert isinstance(dialog, RemediateDialog)
        dialog.query_one("#note", Input).value = "fixed it"
        dialog.query_one("#command", Input).value = "git no-such-command"
        await pilot.click("#remediate")
        output = dialog.query_one("#remediation-output")
        await wait_for(pilot, lambda: not output.has_class("hidden"))
        assert "no-such-command" in str(output.render())
        assert "the remediation is not recorded" in str(dialog.query_one("#refusal").render())
        assert app.screen is dialog
    assert _state(project) == before


async def test_a_person_the_policy_does_not_name_is_not_offered_the_remediation(
    project: Path,
) -> None:
    driven_once(project, "docs", "remediate")
    before = _state(project)
    app = room(project, person="carol")
    async with app.run_test(size=(160, 48)) as pilot:
        await select_wait(app, pilot, "docs")
        await pilot.press("m")
        dialog = app.screen
        assert isinstance(dialog, RemediateDialog)
        assert dialog.query_one("#remediate", Button).disabled
        assert '"carol" is not a person' in str(dialog.query_one("#authority").render())
        dialog.query_one("#note", Input).value = "fixed it"
        await pilot.press("enter")
        assert app.screen is dialog
    assert _state(project) == before


# --- replan ---------------------------------------------------------------------------------


async def test_a_replan_from_the_room_edits_the_contract_and_drives_under_version_2(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    driven_once(project, "parser", "replan")
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", fake_editor(tmp_path, "c['objective'] = 'parse with a grammar'"))
    before = _state(project)
    app = room(project)
    async with app.run_test(size=(160, 48)) as pilot:
        o = await select_wait(app, pilot, "parser")
        assert app.may("replan") is True and app.may("remediate") is False
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, ReplanDialog))
        dialog = app.screen
        await pilot.press("enter")  # no reason typed: refused, nothing written
        assert "a replan needs a reason" in str(dialog.query_one("#refusal").render())
        assert _state(project) == before
        dialog.query_one("#reason", Input).value = "a grammar, not a hand-written parser"
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DriveConfirm))
        await pilot.press("d")
        await wait_for(pilot, lambda: status(project, "parser") == "closed")
        app.open_unit(0, "parser")
        await wait_for(pilot, lambda: isinstance(app.screen, UnitInspector))
        inspector = app.screen
        assert isinstance(inspector, UnitInspector)
        await wait_for(pilot, lambda: inspector.built > 0)
        shown = str(inspector.query_one("#contract").render())
        assert "v2 (in force) replans v1: a grammar, not a hand-written parser" in shown
        assert "v1: the first" in shown
    store = ExecutionStore(Layout(project))
    assert store.current_contract("parser").objective == "parse with a grammar"  # type: ignore[union-attr]
    assert [a.contract_version for a in store.attempts("parser")] == [1, 2]
    log = loop_for(project, {"attempts": []}).log
    assert log.obligations[o.id].disposition == "replan"


async def test_a_replan_the_gate_refuses_shows_its_problems_and_writes_nothing(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    driven_once(project, "parser", "replan")
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", fake_editor(tmp_path, "c['unitId'] = 'another-unit'"))
    before = _state(project)
    app = room(project)
    async with app.run_test(size=(160, 48)) as pilot:
        await select_wait(app, pilot, "parser")
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, ReplanDialog))
        dialog = app.screen
        dialog.query_one("#reason", Input).value = "rename it"
        await pilot.press("enter")
        refusal = str(dialog.query_one("#refusal").render())
        assert "the replan gate refuses it; nothing is written" in refusal
        assert "unitId" in refusal or "unit" in refusal
        assert app.screen is dialog
    assert _state(project) == before
    assert status(project, "parser") == "blocked"


async def test_an_editor_that_changes_nothing_replans_nothing(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    driven_once(project, "parser", "replan")
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", f"{sys.executable} -c pass")
    before = _state(project)
    app = room(project)
    async with app.run_test(size=(160, 48)) as pilot:
        await select_wait(app, pilot, "parser")
        await pilot.press("R")
        await pilot.pause(0.5)
        assert isinstance(app.screen, MainScreen)
    assert _state(project) == before
