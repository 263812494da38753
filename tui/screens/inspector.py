"""The unit inspector: a unit's header, budgets, and the replay of everything that happened to it.

The timeline lists attempts, budgets, decisions, obligation and interaction events, deliveries,
memory, messages, audit evidence and verdicts, and effects, in time order with full
timestamps, grouped by attempt; Enter expands a row to the whole record. Tabs show the
contract and the report.
"""

from __future__ import annotations

import json
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Input, Static, TabbedContent, TabPane

from regulator.rules.budget import summary as budget_summary
from regulator.views.timeline import TimelineRow, unit_timeline

from ..model import InstanceModel
from ..render import one_line, plain
from ..widgets.rowtable import Column, RowTable

KIND_GLYPH = {
    "unit": "◆",
    "contract": "§",
    "attempt": "▶",
    "budget": "¤",
    "decision": "⚖",
    "obligation": "!",
    "interaction": "?",
    "delivery": "✉",
    "memory": "✎",
    "message": "≈",
    "evidence": "⚙",
    "verdict": "✔",
    "acceptance": "☑",
    "effect": "↯",
    "observation": "⚠",
}


def _bar(used: float, ceiling: float, width: int = 20) -> Text:
    share = 0.0 if ceiling <= 0 else min(1.0, used / ceiling)
    filled = round(share * width)
    style = "bold red" if share >= 1 else ("yellow" if share >= 0.8 else "green")
    return Text("█" * filled, style=style) + Text("░" * (width - filled), style="dim")


class UnitInspector(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "back"),
        Binding("slash", "filter", "filter kinds"),
        Binding("left_square_bracket", "attempt(-1)", "prev attempt"),
        Binding("right_square_bracket", "attempt(1)", "next attempt"),
    ]

    def __init__(self, model: InstanceModel, unit_id: str) -> None:
        super().__init__()
        self.model = model
        self.unit_id = unit_id
        self.rows: dict[str, TimelineRow] = {}
        self.kind_filter = ""

    def compose(self) -> ComposeResult:
        yield Static("", id="unit-header", classes="topbar")
        with TabbedContent(id="unit-tabs"):
            with TabPane("Timeline", id="tab-timeline"):
                yield Static("", id="budgets", classes="budgets")
                yield Input(
                    placeholder="show only kinds: attempt decision obligation …",
                    id="kind-filter",
                    classes="filter hidden",
                )
                with Horizontal(classes="split"):
                    yield RowTable(
                        [
                            Column("at", 23),
                            Column("", 1),
                            Column("kind", 11),
                            Column("att", 3),
                            Column("what", None),
                        ],
                        self._render_row,
                        empty="no records name this unit",
                        id="timeline",
                    )
                    with VerticalScroll(id="record-pane", classes="detail"):
                        yield Static("", id="record")
            with TabPane("Contract", id="tab-contract"), VerticalScroll():
                yield Static("", id="contract")
            with TabPane("Report", id="tab-report"), VerticalScroll():
                yield Static("", id="report")
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_view()
        self.query_one("#timeline", RowTable).focus()

    def refresh_view(self) -> None:
        model = self.model
        unit = model.units.get(self.unit_id) or model.store.find_unit(self.unit_id)
        header = self.query_one("#unit-header", Static)
        if unit is None:
            header.update(Text(f"unit {self.unit_id}: no longer present"))
            return
        lease = next((lease for lease in model.leases if lease.unit_id == self.unit_id), None)
        lease_text = "no lease"
        if lease is not None:
            left = (lease.expires_at - int(model.clock().timestamp() * 1000)) // 1000
            lease_text = (
                f"lease {lease.branch}, {left // 60} min left"
                if left > 0
                else f"lease {lease.branch} expired"
            )
        reason = f" — {one_line(unit.reason, model.redactor)}" if unit.reason else ""
        header.update(
            Text.assemble(
                (f"unit {unit.unit_id}", "bold"),
                f" · {unit.status} · {unit.unit_type}"
                f" · contract {unit.contract.id} v{unit.contract.version}",
                f" · {unit.attempts} attempt(s) · {lease_text}",
                (reason, "italic"),
            )
        )
        self._budgets(unit.attempts)
        rows = unit_timeline(model.layout, self.unit_id, log=model.log)
        self.rows = {r.ref: r for r in rows}
        self._apply_filter()
        self._contract(unit.contract.version)
        self._report()

    def _budgets(self, attempts: int) -> None:
        lines = Text()
        for attempt in range(1, attempts + 1):
            ledger = self.model.store.budget(self.unit_id, attempt)
            if ledger is None:
                continue
            c, limit = ledger.consumed, ledger.ceiling
            lines.append(f"a{attempt} ", style="bold")
            lines.append("tok ")
            lines.append_text(_bar(c.tokens, limit.tokens, 10))
            lines.append(" turns ")
            lines.append_text(_bar(c.turns, limit.turns, 6))
            lines.append(" wall ")
            lines.append_text(_bar(c.wall_clock_ms, limit.wall_clock_ms, 6))
            if limit.cost:
                lines.append(" cost ")
                lines.append_text(_bar(c.cost, float(limit.cost), 6))
            models = ", ".join(m.split("/")[-1] for m in ledger.models) or "no model"
            lines.append(f"  {budget_summary(ledger)} · {models}")
            if ledger.compactions:
                lines.append(f" · {len(ledger.compactions)} compaction(s)")
            lines.append("\n")
        self.query_one("#budgets", Static).update(
            lines if lines.plain else Text("no budget ledger yet", style="dim")
        )

    def _render_row(self, key: str, style: object) -> list[Text]:
        if key.startswith("group:"):
            label = key.split(":")[1]
            title = f"── attempt {label} " if label != "-" else "── outside any attempt "
            return [Text(title, style="bold"), Text(""), Text(""), Text(""), Text("")]
        row = self.rows[key]
        return [
            Text(row.at[:23].replace("T", " ")),
            Text(KIND_GLYPH.get(row.kind, "·")),
            Text(row.kind),
            Text(f"a{row.attempt}" if row.attempt else ""),
            plain(f"{row.title}" + (f" — {row.detail}" if row.detail else ""), self.model.redactor),
        ]

    def _apply_filter(self) -> None:
        kinds = set(self.kind_filter.split())
        keys: list[str] = []
        current: int | str | None = "start"
        for k, r in self.rows.items():
            if kinds and r.kind not in kinds:
                continue
            if r.attempt != current:
                # A group header where the attempt changes: the replay reads attempt by attempt.
                keys.append(f"group:{r.attempt if r.attempt is not None else '-'}:{len(keys)}")
                current = r.attempt
            keys.append(k)
        self.query_one("#timeline", RowTable).set_rows(keys)

    @on(RowTable.Highlighted, "#timeline")
    def _show(self, event: RowTable.Highlighted) -> None:
        record = self.query_one("#record", Static)
        if event.key is None or event.key not in self.rows:
            record.update("")
            return
        row = self.rows.get(event.key)
        if row is None:
            record.update(Text("a group of records of one attempt", style="dim"))
            return
        text = Text.assemble((f"{row.kind} · {row.at}\n", "bold"))
        text.append_text(plain(row.title, self.model.redactor))
        text.append("\n\n")
        text.append_text(
            plain(json.dumps(row.record, indent=2, ensure_ascii=False), self.model.redactor)
        )
        record.update(text)

    @on(RowTable.Selected, "#timeline")
    def _expand(self) -> None:
        self.query_one("#record-pane").focus()

    def _contract(self, version: int) -> None:
        contract = self.model.store.contract(self.unit_id, version)
        target = self.query_one("#contract", Static)
        if contract is None:
            target.update("contract file missing")
            return
        target.update(
            plain(
                json.dumps(contract.to_json_dict(), indent=2, ensure_ascii=False),
                self.model.redactor,
            )
        )

    def _report(self) -> None:
        report = self.model.store.latest_report(self.unit_id)
        target = self.query_one("#report", Static)
        if report is None:
            target.update(
                "no report: the unit has not called report_result against this contract version"
            )
            return
        target.update(
            plain(
                json.dumps(report.to_json_dict(), indent=2, ensure_ascii=False), self.model.redactor
            )
        )

    def action_back(self) -> None:
        kind_filter = self.query_one("#kind-filter", Input)
        if not kind_filter.has_class("hidden"):
            kind_filter.add_class("hidden")
            self.query_one("#timeline", RowTable).focus()
            return
        self.app.pop_screen()

    def action_filter(self) -> None:
        kind_filter = self.query_one("#kind-filter", Input)
        kind_filter.remove_class("hidden")
        kind_filter.cursor_blink = False
        kind_filter.focus()

    @on(Input.Changed, "#kind-filter")
    def _filtered(self, event: Input.Changed) -> None:
        self.kind_filter = event.value
        self._apply_filter()

    @on(Input.Submitted, "#kind-filter")
    def _filter_done(self) -> None:
        self.query_one("#timeline", RowTable).focus()

    def action_attempt(self, step: int) -> None:
        """``[`` and ``]``: to the previous or next attempt's group."""
        table = self.query_one("#timeline", RowTable)
        headers = [i for i, k in enumerate(table.keys) if k.startswith("group:")]
        later = [i for i in headers if (i > table.cursor if step > 0 else i < table.cursor)]
        if later:
            table.cursor = later[0] if step > 0 else later[-1]
