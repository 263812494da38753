"""Every screen and dialog of the control room, as one list.

The snapshot tests and ``screenshots/make.py`` both walk this list, so the README's
screenshots are exactly what the tests pin.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tui.app import RoomApp
from tui.model import InstanceModel

from .room_fixture import SHOWN_ROOT, fixed_clock, settled

Setup = Callable[[Any], Awaitable[None]]


@dataclass(frozen=True)
class Shot:
    name: str
    setup: Setup
    person: str | None = "alice"
    theme: str | None = None


def make_app(root: Path, shot: Shot, *, shown_as: Path = SHOWN_ROOT) -> RoomApp:
    app = RoomApp(
        [root], person=shot.person, clock=fixed_clock, watch=False, presence=False, bell=False
    )
    # The files live in a per-suite temporary directory; the room shows one stable path. The
    # model's files (layout, log, store) were opened from the real root above; `root` is only
    # the path displayed.
    for model in app.models:
        assert isinstance(model, InstanceModel) and model.root.name == shown_as.name
        model.root = shown_as
    if shot.theme:
        app.theme = shot.theme
    return app


async def _none(pilot: Any) -> None:
    await settled(pilot)


async def _tab(pilot: Any, name: str) -> None:
    await settled(pilot)
    pilot.app.main.action_tab(name)
    await settled(pilot)


async def _select(pilot: Any, predicate: Callable[[Any], bool]) -> None:
    app = pilot.app
    await _tab(pilot, "inbox")
    table = app.screen.query_one("#inbox-table")
    for key in table.keys:
        if predicate(app.lookup(key)[1]):
            table.move_to(key)
            break
    await pilot.pause(0.2)  # the detail pane follows once the cursor rests


def _question(kind: str) -> Callable[[Any], bool]:
    return lambda o: o.concern == "interaction" and o.subject.startswith(f"{kind}:")


def _dialog(kind: str, key: str, predicate: Callable[[Any], bool]) -> Setup:
    async def setup(pilot: Any) -> None:
        await _select(pilot, predicate)
        await pilot.press(key)
        await pilot.pause()
        for widget in pilot.app.screen.query("Input"):
            widget.cursor_blink = False
        await pilot.pause()

    return setup


async def _instances(pilot: Any) -> None:
    await _tab(pilot, "instances")


async def _inbox(pilot: Any) -> None:
    await _select(pilot, _question("consent"))


async def _filtered(pilot: Any) -> None:
    await _tab(pilot, "inbox")
    await pilot.press("slash", *"is:blocking unit:p")
    pilot.app.screen.query_one("#filter").cursor_blink = False
    inbox = pilot.app.main.inbox
    while inbox.filtering:  # the filter applies once typing pauses
        await pilot.pause(0.02)
    await pilot.pause()


async def _inspector(pilot: Any) -> None:
    await settled(pilot)
    pilot.app.open_unit(0, "fix-rounding")
    await settled(pilot)


async def _attention(pilot: Any) -> None:
    await _tab(pilot, "attention")


async def _problems(pilot: Any) -> None:
    await settled(pilot)
    await pilot.press("exclamation_mark")
    await pilot.pause()


async def _help(pilot: Any) -> None:
    await settled(pilot)
    await pilot.press("question_mark")
    await pilot.pause()


def _recovery(which: str) -> Setup:
    """The replan or remediate dialog on the fixture's recovery decision (pushed directly: the
    fixture's unit waits on another action, and the dialog is what is pinned)."""

    async def setup(pilot: Any) -> None:
        from tui.dialogs.recovery import RemediateDialog, ReplanDialog

        app = pilot.app
        await _select(pilot, lambda o: o.concern == "recovery-decision")
        model, o = app.selected()
        loop = app.loop_for(model)
        if which == "remediate":
            app.push_screen(RemediateDialog(model, o, app.person, app.actor, loop=loop))
        else:
            current = loop.current_contract(o.unit)
            edited = type(current).from_json_dict(
                {**current.to_json_dict(), "objective": "round half to even, as the spec says"}
            )
            app.push_screen(
                ReplanDialog(
                    model, o, app.person, app.actor, loop=loop, current=current, edited=edited
                )
            )
        await pilot.pause()
        for widget in app.screen.query("Input"):
            widget.cursor_blink = False
        await pilot.pause()

    return setup


async def _inspector_acting(pilot: Any) -> None:
    """The inspector on the unit the recovery policy escalated: its first line names the key,
    and the key opens the resolve dialog over it."""
    await settled(pilot)
    pilot.app.open_unit(0, "flaky-import")
    await settled(pilot)
    await pilot.press("r")
    await pilot.pause()
    for widget in pilot.app.screen.query("Input"):
        widget.cursor_blink = False
    await pilot.pause()


async def _drive_again(pilot: Any) -> None:
    """The drive dialog of a scripted unit: the scenario to play, prefilled."""
    from tui.dialogs.drive import DriveConfirm

    await settled(pilot)
    pilot.app.open_unit(0, "flaky-import")
    await settled(pilot)
    pilot.app.push_screen(
        DriveConfirm(
            "flaky-import", 2, "implement", scenario="../scenarios/finish.yaml", check=None
        )
    )
    await pilot.pause()
    for widget in pilot.app.screen.query("Input"):
        widget.cursor_blink = False
    await pilot.pause()


async def _notifications(pilot: Any) -> None:
    # Kept without toasts (``keep``), so that no toast's timing shows in the picture.
    app = pilot.app
    await settled(pilot)
    app.keep("f4d0c2a1 resolved by alice as rework", title="done", severity="information")
    app.keep(
        "the drive is refused: obligation 8f7f7776 (human, blocking, audit-finding): the base"
        " fails its tests after the hotfix commit must be dispositioned before dispatch",
        title="drive flaky-import",
        unit="flaky-import",
    )
    app.keep(
        "has used 3 of 3 attempt(s): replan its contract to go on — press R to replan",
        title="unit flaky-import: next",
        severity="information",
        unit="flaky-import",
    )
    await pilot.press("n")
    await pilot.pause()


SHOTS: list[Shot] = [
    Shot("instances", _instances),
    Shot("inbox", _inbox),
    Shot("inbox-filtered", _filtered),
    Shot("inspector", _inspector),
    Shot("inspector-acting", _inspector_acting),
    Shot("drive-again", _drive_again),
    Shot("notifications", _notifications),
    Shot("attention", _attention),
    Shot("answer-consent", _dialog("consent", "a", _question("consent"))),
    Shot("answer-choice", _dialog("choice", "a", _question("choice"))),
    Shot("answer-clarification", _dialog("clarification", "a", _question("clarification"))),
    Shot("answer-uat", _dialog("uat", "a", _question("uat"))),
    Shot("answer-recap", _dialog("recap", "a", _question("recap"))),
    Shot(
        "resolve-as-bob",
        _dialog("resolve", "r", lambda o: o.concern == "recovery-decision"),
        person="bob",
    ),
    Shot("acknowledge", _dialog("ack", "c", lambda o: o.concern == "recovery-decision")),
    Shot("escalate", _dialog("escalate", "e", lambda o: o.concern == "recovery-decision")),
    Shot("replan", _recovery("replan")),
    Shot("remediate", _recovery("remediate")),
    Shot("help", _help),
    Shot("problems", _problems),
    Shot("who-is-acting", _none, person=None),
    Shot("inbox-light", _inbox, theme="textual-light"),
]

SIZES: list[tuple[int, int]] = [(80, 24), (160, 48)]
