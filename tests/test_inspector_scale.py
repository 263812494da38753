"""The inspector on a unit with thousands of records: it places, groups and filters every row,
but makes (and redacts) only the rows a person is shown.

Each test is named after what it shows a person.
"""

from __future__ import annotations

import gc
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from regulator.rules.ledger import Ledger
from regulator.store import Layout
from regulator.views.timeline import unit_replay, unit_timeline
from tui.app import RoomApp
from tui.keys import TimelineKey
from tui.screens.inspector import UnitInspector
from tui.widgets.footer import RoomFooter
from tui.widgets.timeline import TimelineTable

from . import room_fixture
from .room_fixture import END, app_for, build_fixture, copy_fixture

UNIT = "flaky-import"
MANY = 1500  # obligations appended for the unit, each opened and delivered: 3,000 rows
CANARY = "CANARY-5d1e88a0c4f2"
GITHUB_TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
# What a person can be shown at once at 160×48, with room to spare: far below MANY.
SCREENFULS = 150


class Ticking:
    """A clock a millisecond further on at each reading."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=1)
        return self.now


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = build_fixture(tmp_path_factory.mktemp("inspector-scale") / "calc")
    layout = Layout(root)
    layout.canaries.write_text(f"{CANARY}\n", encoding="utf-8")
    # After everything the demo wrote: these rows are the end of the unit's timeline, and the
    # last one carries the secrets.
    ledger = Ledger(layout, clock=Ticking(END + timedelta(hours=1)))
    with ledger.transaction() as txn:
        for n in range(MANY):
            last = n == MANY - 1
            state = txn.open(
                subject=f"flaky run {n}" + (f" printed {CANARY}" if last else ""),
                unit=UNIT,
                concern="operational-signal",
                sources=[f"m-{n}"],
                severity="advisory",
                consumer="S3",
                blocks=False,
                question=f"Rotate GITHUB_TOKEN={GITHUB_TOKEN}?" if last else None,
            )
            txn.deliver(state.id, "S3", "outbox")
    return root


@pytest.fixture
def demo(built: Path, tmp_path: Path) -> Path:
    return copy_fixture(built, tmp_path / "calc")


# A replay of thousands of rows takes its time on a loaded machine.
wait_for = partial(room_fixture.wait_for, seconds=20)


async def opened(app: RoomApp, pilot: Any) -> UnitInspector:
    await wait_for(pilot, lambda: app.loaded)
    app.open_unit(0, UNIT)
    await wait_for(pilot, lambda: isinstance(app.screen, UnitInspector))
    screen = app.screen
    assert isinstance(screen, UnitInspector)
    await wait_for(pilot, lambda: screen.built > 0)
    await pilot.pause()
    return screen


def on_screen(table: TimelineTable) -> str:
    return "\n".join(
        "".join(segment.text for segment in table.render_line(y)) for y in range(table.size.height)
    )


def test_a_replay_makes_no_row_until_it_is_read_and_then_the_same_rows(demo: Path) -> None:
    layout = Layout(demo)
    replay = unit_replay(layout, UNIT)
    assert len(replay) >= 2 * MANY
    assert replay.finished == 0
    assert replay.kinds.count("delivery") >= MANY
    last = replay.row(len(replay) - 1)
    assert replay.finished == 1
    assert replay[last.ref] is last  # made once, then kept
    # Made late, redacted all the same: the last obligation's opening holds both secrets.
    opening = replay.row(len(replay) - 2)
    assert opening.redacted and last.redacted
    assert opening.record["obligation"]["question"] == "Rotate GITHUB_TOKEN=«redacted»"
    made = repr([opening, last])
    assert CANARY not in made and GITHUB_TOKEN not in made
    assert replay.rows() == unit_timeline(layout, UNIT)


@pytest.mark.room
@pytest.mark.asyncio
async def test_the_inspector_on_a_unit_with_thousands_of_records_makes_only_the_rows_shown(
    demo: Path,
) -> None:
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await opened(app, pilot)
        table = screen.timeline
        assert len(table.keys) > 2 * MANY  # every row placed and grouped
        shown = on_screen(table)
        assert "obligation-opened" in shown
        assert 0 < screen.rows.finished <= SCREENFULS
        await pilot.press("pagedown", "pagedown")
        await pilot.pause()
        assert screen.rows.finished <= SCREENFULS


@pytest.mark.room
@pytest.mark.asyncio
async def test_a_secret_in_the_last_record_of_a_long_timeline_is_redacted_when_shown(
    demo: Path,
) -> None:
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await opened(app, pilot)
        table = screen.timeline
        await pilot.press("G")  # to the last row: the delivery of the last obligation
        await pilot.pause()
        await pilot.press("up")  # its opening, which holds the question
        await pilot.pause()
        await pilot.press("enter")  # the whole record
        await pilot.pause()
        record = str(screen.query_one("#record", Static).render())
        assert "GITHUB_TOKEN=«redacted»" in record
        shown = on_screen(table)
        assert f"flaky run {MANY - 1} printed «red" in shown  # cut to the column's width
        for secret in (CANARY, GITHUB_TOKEN):
            assert secret not in record and secret not in shown
        assert screen.rows.finished <= SCREENFULS


@pytest.mark.room
@pytest.mark.asyncio
async def test_the_kind_filter_finds_every_row_of_a_kind_deep_in_a_long_timeline(
    demo: Path,
) -> None:
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await opened(app, pilot)
        table = screen.timeline
        replay = screen.rows
        await pilot.press("slash", *"delivery", "enter")
        await wait_for(pilot, lambda: screen.kind_filter == "delivery")
        await pilot.pause()
        listed = [key.ref for key in table.keys if not key.group]
        deliveries = [
            ref for ref, kind in zip(replay.refs, replay.kinds, strict=True) if kind == "delivery"
        ]
        assert listed == deliveries and len(listed) >= MANY
        assert listed[-1] == replay.refs[-1]  # the very last record of the timeline
        await pilot.press("G")
        await pilot.pause()
        assert "delivered via outbox" in on_screen(table)
        assert replay.finished <= SCREENFULS


def test_the_timeline_keeps_its_keys_as_numbers_and_finds_every_row_it_lists(
    demo: Path,
) -> None:
    replay = unit_replay(Layout(demo), UNIT)
    for kinds in (set(), {"delivery"}, {"obligation", "attempt"}):
        expected: list[tuple[str, int | None, bool]] = []
        current: int | None = None
        for ref, kind, attempt in zip(replay.refs, replay.kinds, replay.attempts, strict=True):
            if kinds and kind not in kinds:
                continue
            # A group from an attempt's first row to the next attempt's: what falls between
            # (no attempt, or an earlier one) stays in the group it follows.
            if current is None or (attempt is not None and attempt > current):
                expected.append((f"group-{len(expected)}", attempt, True))
                current = attempt or 0
            expected.append((ref, attempt, False))
        gc.collect()
        tracked = len(gc.get_objects())
        keys = TimelineTable.keys_for(replay, kinds)
        assert len(gc.get_objects()) - tracked < 10  # no object a row for the collector
        assert [(k.ref, k.attempt, k.group) for k in keys] == expected
        assert all(keys.locate(key) == n for n, key in enumerate(keys))
        if kinds:  # a row of another kind is not listed
            hidden = next(
                r for r, k in zip(replay.refs, replay.kinds, strict=True) if k not in kinds
            )
            assert keys.locate(TimelineKey(hidden)) is None
        assert keys.locate(TimelineKey("group-1", None, group=True)) is None


@pytest.mark.room
@pytest.mark.asyncio
async def test_the_collector_is_back_on_once_the_inspector_shows_its_rows_or_is_closed(
    demo: Path,
) -> None:
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await opened(app, pilot)
        await wait_for(pilot, gc.isenabled)
        assert on_screen(screen.timeline).count("obligation-opened") > 1
        app.pop_screen()
        await pilot.pause()
        model = app.models[0]
        with model.lock:  # the replay cannot be read while this is held
            app.open_unit(0, UNIT)
            await wait_for(pilot, lambda: isinstance(app.screen, UnitInspector))
            again = app.screen
            assert isinstance(again, UnitInspector)
            await wait_for(
                pilot, lambda: any(table.loading for table in again.query(TimelineTable))
            )
            assert not gc.isenabled()
            app.pop_screen()  # closed before its rows were read
            await wait_for(pilot, gc.isenabled)
        assert again.built == 0


@pytest.mark.room
@pytest.mark.asyncio
async def test_the_footer_is_not_made_again_when_the_keys_it_shows_are_the_same(
    demo: Path,
) -> None:
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await opened(app, pilot)
        footer = screen.query_one(RoomFooter)
        shown = list(footer.children)
        assert "kinds" in " ".join(str(key.render()) for key in shown)
        screen.query_one("#record-pane").focus()
        await pilot.pause()
        screen.timeline.focus()
        await pilot.pause()
        await pilot.pause()
        assert list(footer.children) == shown
