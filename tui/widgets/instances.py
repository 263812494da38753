"""The Instances tab: one row per instance, the units of the one under the cursor, and what
else it holds (leases, memory, unrouted messages).

The instance rows read the counts each model keeps as it folds; the units table is rebuilt
from the unit records (few) when the instance or its units change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widget import Widget

from regulator.protocol.clock import Clock, iso

from ..keys import UnitKey
from ..model import SEVERITY_GLYPH, InstanceView, age
from ..render import one_line, plain
from .rowtable import Column, RowTable


class InstancesTable(RowTable[int]):
    EMPTY = "no instance"

    def __init__(self, models: list[InstanceView], clock: Clock, **kw: Any) -> None:
        super().__init__(
            [
                Column("instance", 16),
                Column("units", None),
                Column("open", 22),
                Column("owed to a person", 16),
                Column("last activity", 13, gives_way=2),
                Column("problems", 8, gives_way=1),
                Column("path", 40, gives_way=3),
            ],
            **kw,
        )
        self.models = models
        self.clock = clock
        self.FLEX_MIN = 16

    def render_row(self, key: int) -> Sequence[Text]:
        model = self.models[key]
        if not model.loaded:
            down = getattr(model, "connection", "connected")  # a remote instance's link
            if model.remote and down not in ("connected", "connecting…"):
                # Never reached: say why (ssh's own words), not "reading…" for ever.
                return [
                    Text(model.name),
                    Text(f"✖ not reached: {down}", style=self.style_for("critical")),
                ]
            return [Text(model.name), Text("reading…", style=self.style_for("dim"))]
        by_status: dict[str, int] = {}
        for unit in model.units.values():
            by_status[unit.status] = by_status.get(unit.status, 0) + 1
        units = " ".join(f"{n} {s}" for s, n in sorted(by_status.items())) or "no units"
        sev_text = Text()
        for name in ("critical", "blocking", "advisory", "info"):
            count = model.severity_counts.get(name, 0)
            if count:
                sev_text.append(
                    f"{SEVERITY_GLYPH[name]}{count} {name[:5]} ", style=self.style_for(name)
                )
        owed = model.owed_to_person()
        oldest = min((o.opened_at for o in owed), default=None)
        owed_text = f"{len(owed)}, oldest {age(oldest, self.clock())}" if oldest else "0"
        last = iso(model.last_change)[11:19] if model.last_change else "—"
        veto = "■ " if model.veto else ""
        problems = model.problem_count
        return [
            Text(veto + model.name, style=self.style_for("veto") if veto else ""),
            Text(units),
            sev_text or Text("nothing open", style=self.style_for("dim")),
            Text(owed_text),
            Text(last),
            Text(str(problems), style=self.style_for("critical" if problems else "dim")),
            Text(str(model.root), style=self.style_for("dim")),
        ]


class UnitsTable(RowTable[UnitKey]):
    EMPTY = "no units"

    def __init__(self, models: list[InstanceView], **kw: Any) -> None:
        super().__init__(
            [
                Column("status", 10),
                Column("unit", 18),
                Column("type", 8, gives_way=4),
                Column("contract", 12, gives_way=5),
                Column("att", 3, gives_way=6),
                Column("last", 10, gives_way=3),
                Column("budget", 14, gives_way=2),
                Column("last decision", 22, gives_way=1),
                Column("owed", 8),
                Column("reason", None),
            ],
            **kw,
        )
        self.models = models
        self.FLEX_MIN = 16
        self._owed: dict[UnitKey, str] = {}

    def show(self, index: int | None) -> None:
        if index is None or not self.models[index].loaded:
            self.set_rows([])
            return
        model = self.models[index]
        owed: dict[str, set[str]] = {}
        for o in model.open_obligations():
            if o.unit:
                owed.setdefault(o.unit, set()).add(o.consumer + ("!" if o.blocks else ""))
        units = sorted(model.units.values(), key=lambda u: (u.status != "blocked", u.unit_id))
        self._owed = {
            UnitKey(index, u.unit_id): ",".join(sorted(owed.get(u.unit_id, ()))) or "—"
            for u in units
        }
        self.set_rows([UnitKey(index, u.unit_id) for u in units])

    def render_row(self, key: UnitKey) -> Sequence[Text]:
        model = self.models[key.instance]
        unit = model.units[key.unit_id]
        last, decision, budget = model.unit_summary(unit)
        style = {"blocked": "blocking", "closed": "dim"}.get(unit.status)
        return [
            Text(unit.status, style=self.style_for(style) if style else ""),
            plain(unit.unit_id),
            Text(unit.unit_type),
            plain(f"{unit.contract.id} v{unit.contract.version}"),
            Text(str(unit.attempts)),
            Text(last),
            Text(budget),
            plain(decision),
            Text(self._owed.get(key, "—")),
            plain(one_line(unit.reason, model.redactor)[:80]),
        ]


class InstanceExtra(Widget):
    """Leases with time left, current memory, and how many messages wait to be routed."""

    DEFAULT_CSS = """
    InstanceExtra { height: auto; max-height: 6; padding: 0 1; }
    """

    def __init__(self, models: list[InstanceView], clock: Clock, **kw: Any) -> None:
        super().__init__(**kw)
        self.models = models
        self.clock = clock
        self._text = Text()
        self._unrouted: dict[int, tuple[int, int]] = {}  # instance → (log lines, count)

    def show(self, index: int | None) -> None:
        if index is None or not self.models[index].loaded:
            self._set(Text())
            return
        model = self.models[index]
        now_ms = int(self.clock().timestamp() * 1000)
        extra = Text()
        extra.append("leases: ", style="bold")
        extra.append(
            ", ".join(
                f"{lease.unit_id} {max(0, (lease.expires_at - now_ms) // 60000)} min left"
                if lease.expires_at > now_ms
                else f"{lease.unit_id} expired"
                for lease in model.leases
            )
            or "none"
        )
        extra.append("\nmemory: ", style="bold")
        extra.append_text(
            plain(
                "; ".join(
                    f"{s.entry.subject}: {s.entry.note} (review by {s.entry.review_by[:10]})"
                    for s in model.current_memory()
                )
                or "nothing current",
                model.redactor,
            )
        )
        lines = model.log.lines
        cached = self._unrouted.get(index)
        if cached is None or cached[0] != lines:
            with model.lock:
                cached = (lines, model.log.unrouted_count())
            self._unrouted[index] = cached
        extra.append(f"\nunrouted messages: {cached[1]}", style="bold")
        if cached[1]:
            extra.append(" — run `regulator signals route`")
        self._set(extra)

    def _set(self, text: Text) -> None:
        # Re-laid out only when what it says changed (every fold of any instance shows it).
        if text != self._text:
            self._text = text
            self.refresh(layout=True)

    def render(self) -> Text:
        return self._text


class InstancesView(Vertical):
    """The tab: attributes come down (``version``), a chosen unit goes up as a message."""

    version = reactive(0, init=False)

    def __init__(self, models: list[InstanceView], clock: Clock, **kw: Any) -> None:
        super().__init__(**kw)
        self.models = models
        self.clock = clock

    def compose(self) -> ComposeResult:
        yield InstancesTable(self.models, self.clock, id="instance-table", classes="instances")
        yield UnitsTable(self.models, id="units")
        yield InstanceExtra(self.models, self.clock, id="instance-extra", classes="extra")

    def watch_version(self) -> None:
        # set_rows posts Highlighted, which fills the units below.
        self.query_one(InstancesTable).set_rows(list(range(len(self.models))))

    def on_mount(self) -> None:
        self.watch_version()

    def _show(self, index: int | None) -> None:
        self.query_one(UnitsTable).show(index)
        self.query_one(InstanceExtra).show(index)

    @on(InstancesTable.Highlighted, "#instance-table")
    def _instance(self, event: InstancesTable.Highlighted) -> None:
        event.stop()
        self._show(event.key)

    @on(InstancesTable.Selected, "#instance-table")
    def _into_units(self, event: InstancesTable.Selected) -> None:
        event.stop()
        self.query_one(UnitsTable).focus()


__all__ = ["InstanceExtra", "InstancesTable", "InstancesView", "UnitsTable"]
