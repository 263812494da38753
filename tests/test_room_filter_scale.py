"""The inbox's filter and tabs over a few hundred obligations: what a person sees as they type,
clear and switch, and what the room does not redo for it.

Each test is named after what it shows a person.
"""

from __future__ import annotations

import gc
import subprocess
import weakref
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input

from regulator.rules.ledger import Ledger
from regulator.store import Layout
from tui.app import RoomApp
from tui.filtering import Context, compile_filter, haystack
from tui.inbox_index import InboxIndex
from tui.keys import RowKey
from tui.model import InstanceModel

from .room_fixture import app_for, settled, wait_for

ROWS = 600


@pytest.fixture(scope="module")
def busy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An instance with ``ROWS`` open obligations owed to a person, in one transaction."""
    from regulator.host.instance import init_instance

    root = tmp_path_factory.mktemp("filter-scale") / "busy"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    init_instance(root, by="alice")
    with Ledger(Layout(root)).transaction() as txn:
        for n in range(ROWS):
            txn.open(
                subject=f"batch-{n:03d} of group-{n % 7} needs a look",
                unit=f"u-{n % 7}",
                concern="audit-finding",
                sources=[f"m-{n}"],
                severity=("blocking", "critical", "advisory")[n % 3],
                consumer="human",
                blocks=n % 5 == 0,
            )
    return root


# An hour after the obligations were opened: the rows' ages do not change between two looks.
LATER = datetime.now(UTC) + timedelta(hours=1)


def later() -> datetime:
    return LATER


def subjects(app: RoomApp) -> list[str]:
    main = app.main
    assert main is not None
    return [app.lookup(key)[1].subject for key in main.inbox_table.keys]


def in_view(app: RoomApp) -> bool:
    main = app.main
    assert main is not None
    table = main.inbox_table
    top = table.scroll_offset.y
    return top <= table.cursor < top + table.scrollable_content_region.height - 1


@pytest.mark.asyncio
async def test_the_filter_narrows_widens_and_clears_and_the_selected_row_stays_in_view(
    busy: Path,
) -> None:
    app = app_for(busy, clock=later)
    async with app.run_test(size=(100, 30)) as pilot:
        await settled(pilot)
        main = app.main
        assert main is not None
        await pilot.press("2")
        table = main.inbox_table
        assert len(table.keys) == ROWS
        # Far down the list, where the first screen does not reach.
        target = table.keys[450]
        batch = app.lookup(target)[1].subject[: len("batch-NNN")]
        table.move_to(target)
        await pilot.pause()
        assert table.scroll_offset.y > 300 and in_view(app)

        await pilot.press("slash", *batch[:-1])  # "batch-NN": ten batches
        await wait_for(pilot, lambda: len(table.keys) == 10)
        first = int(batch[-3:-1]) * 10
        assert sorted(subjects(app)) == [
            f"batch-{n:03d} of group-{n % 7} needs a look" for n in range(first, first + 10)
        ]
        assert table.current_key == target and in_view(app)  # still selected, and shown

        await pilot.press("backspace")  # "batch-N": wider again
        await wait_for(pilot, lambda: len(table.keys) == 100)
        assert all(s.startswith(batch[:-2]) for s in subjects(app))
        assert table.current_key == target and in_view(app)

        await pilot.press("escape")  # cleared: every row again, the selection kept in view
        await wait_for(pilot, lambda: len(table.keys) == ROWS)
        assert table.current_key == target and in_view(app)
        assert table.scroll_offset.y > 300


@pytest.mark.asyncio
async def test_typing_fast_filters_by_every_character_typed(busy: Path) -> None:
    app = app_for(busy, clock=later)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        main = app.main
        assert main is not None
        inbox = main.inbox
        await pilot.press("2", "slash")
        await pilot.press(*"batch-12")  # a person's keys
        await wait_for(pilot, lambda: not inbox.filtering and inbox.index.query == "batch-12")
        assert len(subjects(app)) == 10
        # Faster than any person: every character's change arrives at once, one burst.
        box = main.query_one("#filter", Input)
        for n in range(1, len("batch-123") + 1):
            box.value = "batch-123"[:n]
        await wait_for(pilot, lambda: not inbox.filtering and inbox.index.query == "batch-123")
        assert subjects(app) == ["batch-123 of group-4 needs a look"]


@pytest.mark.asyncio
async def test_a_theme_switch_recolours_every_visible_row_from_its_cells_up(busy: Path) -> None:
    app = app_for(busy, clock=later)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        main = app.main
        assert main is not None
        await pilot.press("2")
        await pilot.pause()
        table = main.inbox_table
        rows = range(1, table.scrollable_content_region.height)
        for y in rows:
            table.render_line(y)  # drawn, and kept, in the old theme
        app.theme = "nord"  # its warning, error and primary differ from textual-dark's
        await pilot.pause()
        after = [table.render_line(y) for y in rows]
        table._cache.clear()
        table._cells.clear()
        assert after == [table.render_line(y) for y in rows]  # nothing kept from before
        colour = {"critical": "error", "blocking": "warning", "advisory": "primary"}
        checked = 0
        for y, line in zip(rows, after, strict=True):
            at = table.scroll_offset.y + y - 1
            if at == table.cursor:
                continue  # (the cursor's own colours)
            severity = app.lookup(table.keys[at])[1].severity
            cell = next(s for s in line if s.text.strip())
            assert cell.style is not None and cell.style.color is not None
            shown = cell.style.color.get_truecolor().hex.lower()
            assert shown == app.theme_variables[colour[severity]].lower(), (y, severity)
            checked += 1
        assert checked == len(rows) - 1


@pytest.mark.asyncio
async def test_the_detail_shows_the_selected_row_as_soon_as_a_filter_changes_it(
    busy: Path,
) -> None:
    app = app_for(busy, clock=later)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        main = app.main
        assert main is not None
        await pilot.press("2")
        await pilot.pause(0.2)
        inbox = main.inbox
        inbox.set_filter("batch-321")
        # In the same turn, not after the pause a moving cursor waits for.
        key = inbox.detail.key
        assert key is not None and key == main.inbox_table.current_key
        assert app.lookup(key)[1].subject.startswith("batch-321 ")


@pytest.mark.asyncio
async def test_filtering_keeps_the_inbox_tab_as_wide_as_it_was(busy: Path) -> None:
    app = app_for(busy, clock=later)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        main = app.main
        assert main is not None
        await pilot.press("2")
        await pilot.pause()
        tab = main.query_one("#tabs").get_tab("inbox")  # type: ignore[attr-defined]
        before = str(tab.label)
        assert before.startswith(f"Inbox ({ROWS} · ")
        main.inbox.set_filter("batch-12")  # 10 rows: the count is padded to the width of 600
        await pilot.pause()
        after = str(tab.label)
        assert after.startswith("Inbox ( 10 · ") and len(after) == len(before)


@pytest.mark.asyncio
async def test_switching_tabs_does_not_draw_the_inbox_rows_again(busy: Path) -> None:
    app = app_for(busy, clock=later)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot)
        main = app.main
        assert main is not None
        await pilot.press("2")
        await pilot.pause(0.2)
        table = main.inbox_table
        made: list[RowKey] = []  # rows the subclass was asked for
        drawn: list[object] = []  # lines laid out from their cells
        render_row, line = table.render_row, table._line

        def counting(key: RowKey) -> Any:
            made.append(key)
            return render_row(key)

        def lines(cells: Any, width: int) -> Any:
            drawn.append(cells)
            return line(cells, width)

        table.render_row = counting  # type: ignore[method-assign]
        table._line = lines  # type: ignore[method-assign]
        for key in ("1", "2", "3", "2"):
            await pilot.press(key)
            await pilot.pause(0.1)
        assert main.query_one("#tabs").active == "inbox"  # type: ignore[attr-defined]
        assert made == []  # the focus came and went: only the cursor's colour changed
        assert len(drawn) <= 4  # the header and the cursor's line each time, not the screenful


def test_free_text_qualifiers_and_negation_keep_what_the_whole_query_keeps(busy: Path) -> None:
    model = InstanceModel(busy)
    model.refresh()
    index = InboxIndex([model], lambda key: False)
    index.preset = 1  # all open
    index.rebuild()
    queries = (
        "group-3",
        "group-3 is:critical",
        "group-3 is:critical !batch",
        "group-3 is:critical !veto",
        "is:veto unit:u-2 look",
        "b",
        "ba",
        "",
        "!group-1",
        "LOOK Batch-00",
        "batch 12",
    )
    for query in queries:
        index.set_query(query)
        keep = compile_filter(query)
        expected = sorted(
            o.id
            for o in model.open.values()
            if keep(o, Context(model.name, None, False, haystack(o, model.name)))
        )
        assert sorted(k.oid for k in index.keys) == expected, query
        assert len(index) == len(expected)


def test_the_inbox_rows_are_plain_values_the_cycle_collector_does_not_walk(busy: Path) -> None:
    model = InstanceModel(busy)
    model.refresh()
    index = InboxIndex([model], lambda key: False)
    index.preset = 1
    index.rebuild()
    index.set_query("batch")
    gc.collect()
    assert len(index.rows) == ROWS
    assert not any(gc.is_tracked(row) for row in index.rows)


def test_texts_made_ahead_stay_with_their_rows_when_a_fold_moves_rows(busy: Path) -> None:
    model = InstanceModel(busy)
    model.refresh()
    index = InboxIndex([model], lambda key: False)
    index.preset = 1
    index.rebuild()
    while not index.warm(50):  # every row's text made ahead, as the open filter does
        pass

    def expect(query: str) -> list[str]:
        keep = compile_filter(query)
        return sorted(
            o.id
            for o in model.log.obligations.values()
            if o.status == "open"
            and keep(o, Context(model.name, None, False, haystack(o, model.name)))
        )

    first = [k.oid for k in list(index.keys)[:3]]  # the first rows, before the filter
    index.set_query("group-3")
    assert sorted(k.oid for k in index.keys) == expect("group-3")
    # A fold drops a few rows (gone from the log): the rows after them move up.
    gone = list(dict.fromkeys([*first, *(k.oid for k in list(index.keys)[:5])]))
    for oid in gone:
        del model.log.obligations[oid]
    index.update(0, gone)
    for query in ("group-3 needs", "group-3", "batch-01", "", "batch-0", "batch-00"):
        index.set_query(query)
        assert sorted(k.oid for k in index.keys) == expect(query), query


class Cycle:
    me: object = None


@pytest.mark.asyncio
async def test_opening_the_filter_moves_what_the_room_holds_out_of_the_collectors_walks(
    busy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Full collections walked every object the room holds again (a pause of 60-160 ms on a
    # 1M-line instance, on whichever keystroke came next): once the rows' texts are made, what
    # is held by then is frozen.
    from tui.widgets.inbox import InboxView

    monkeypatch.setattr(InboxView, "WARM_SLICE", 50)  # several slices, as for a large inbox
    app = app_for(busy, clock=later)
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            await settled(pilot)
            main = app.main
            assert main is not None
            await pilot.press("2")
            await pilot.pause()
            # Old garbage (a cycle that lived long enough to reach the oldest generation, as
            # a closed inspector does) must be freed, not frozen for the rest of the session.
            cycle = Cycle()
            cycle.me = cycle
            gone = weakref.ref(cycle)
            gc.collect(1)  # promoted to the oldest generation while still held
            del cycle
            before = gc.get_freeze_count()
            await pilot.press("slash")
            await wait_for(pilot, lambda: gc.get_freeze_count() > before)
            assert gone() is None, "garbage was frozen with what the room holds"
            await pilot.press(*"batch-12")
            await wait_for(pilot, lambda: main.inbox.index.query == "batch-12")
            assert len(subjects(app)) == 10
    finally:
        gc.unfreeze()
