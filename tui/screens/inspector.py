"""The unit inspector: a unit's header, budgets, and the replay of everything that happened to it.

The timeline lists attempts, budgets, decisions, obligation and interaction events, deliveries,
memory, messages, audit evidence and verdicts, and effects, in time order with full
timestamps, grouped by attempt; Enter expands a row to the whole record. Tabs (1 2 3) show the
timeline, the contract and the report.

The replay is built on a worker thread (it reads every store that names the unit); the screen
is up at once, saying it is reading, and takes keys meanwhile. Only the rows in view are
rendered.

The screen is handed what it needs to know (where the unit's instance is in the room, the
notifications so far, which act keys apply and how a next step's key is bound now); what a
person does is posted to the App (``messages``).
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Sequence
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Input, Static, TabbedContent, TabPane, Tabs

from regulator.protocol.execution import UnitRecord
from regulator.rules.budget import summary as budget_summary
from regulator.store.collector import collector_paused
from regulator.views.timeline import Replay, contract_versions, unit_replay

from ..bindings import ACTS, INSPECTOR
from ..keys import TimelineKey, UnitKey
from ..messages import Act, Notice
from ..model import InstanceModel
from ..render import one_line, plain
from ..widgets.footer import RoomFooter
from ..widgets.timeline import KIND_GLYPH, TimelineKeys, TimelineTable
from .acts import ActKeys, MayAct

KIND_FILTER_DEBOUNCE_S = 0.05

__all__ = ["KIND_GLYPH", "UnitInspector"]


def _bar(used: float, ceiling: float, width: int = 20) -> Text:
    share = 0.0 if ceiling <= 0 else min(1.0, used / ceiling)
    filled = round(share * width)
    style = "bold red" if share >= 1 else ("yellow" if share >= 0.8 else "green")
    return Text("█" * filled, style=style) + Text("░" * (width - filled), style="dim")


class UnitInspector(ActKeys, Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = list(INSPECTOR)

    def __init__(
        self,
        model: InstanceModel,
        unit_id: str,
        *,
        index: int,
        may: MayAct,
        next_key: Callable[[str | None], str],
        notices: Sequence[Notice] = (),
    ) -> None:
        """``index``: the instance's position in the room; ``may``: whether an act key applies
        to the unit; ``next_key``: "press R to replan" for a next step's act ('' when nobody
        acts); ``notices``: the room's notifications so far (the last about the unit is shown)."""
        super().__init__()
        self.model = model
        self.unit_id = unit_id
        self.index = index
        self.may = may
        self.next_key = next_key
        self.notices = notices
        self.kind_filter = ""
        self._filter_timer: Timer | None = None
        self.built = 0  # how many times the replay was built (a test waits on it)
        self._collector_paused = False

    @property
    def rows(self) -> Replay:
        return self.timeline.rows

    @property
    def timeline(self) -> TimelineTable:
        return self.query_one(TimelineTable)

    def compose(self) -> ComposeResult:
        # The collector waits until the rows are on screen: a full collection walks the whole
        # room (some 200 ms at a million lines) and would otherwise fall in the opening.
        if gc.isenabled():
            gc.disable()
            self._collector_paused = True
        # First what the unit needs next and the key that gives it; then the unit itself; then
        # what the last act on it said. Each wraps rather than being cut.
        yield Static("", id="unit-next", classes="unit-next")
        yield Static("", id="unit-header", classes="unit-header")
        yield Static("", id="unit-reason", classes="unit-reason")
        yield Static("", id="unit-notice", classes="unit-notice hidden")
        with TabbedContent(id="unit-tabs"):
            with TabPane("1 Timeline", id="tab-timeline"):
                yield Static("", id="budgets", classes="budgets")
                yield Input(
                    placeholder="show only kinds: attempt decision obligation …",
                    id="kind-filter",
                    classes="filter hidden",
                )
                with Horizontal(classes="split"):
                    yield TimelineTable(self.model.redactor, id="timeline")
                    with VerticalScroll(id="record-pane", classes="detail"):
                        yield Static("", id="record")
            with TabPane("2 Contract", id="tab-contract"), VerticalScroll(id="contract-scroll"):
                yield Static("", id="contract")
            with TabPane("3 Report", id="tab-report"), VerticalScroll(id="report-scroll"):
                yield Static("", id="report")
        yield RoomFooter()

    def on_mount(self) -> None:
        try:
            self.timeline.focus()
            latest = next((n for n in reversed(self.notices) if n.unit == self.unit_id), None)
            if latest is not None:
                self.noticed(latest)
            self.refresh_view()
        except NoMatches:  # closed before its parts were up (``o`` then esc at once)
            self._resume_collector()

    def instance_changed(self, model: InstanceModel) -> None:
        """The room read a change of an instance (``RoomApp.on_folded``): this unit's?"""
        if model is self.model:
            self.refresh_view()

    def refresh_view(self) -> None:
        """Read the unit again: the header at once, the replay on a worker."""
        model = self.model
        unit = model.units.get(self.unit_id) or model.store.find_unit(self.unit_id)
        header = self.query_one("#unit-header", Static)
        if unit is None:
            header.update(Text(f"unit {self.unit_id}: no longer present"))
            self._resume_collector()
            return
        header.update(self._header(unit))
        # What the unit said when it last stopped; the first line says what holds it now (a
        # reason such as "awaiting remediate" outlives the remediation).
        reason = self.query_one("#unit-reason", Static)
        reason.update(
            Text.assemble("last stopped: ", plain(one_line(unit.reason, model.redactor)))
            if unit.reason
            else ""
        )
        reason.set_class(not unit.reason, "hidden")
        self._show_next()
        self.refresh_bindings()
        if not self.rows:
            self.timeline.loading = True
        self._build(unit)

    def _show_next(self) -> None:
        step = self.model.next_step(self.unit_id)
        line = self.query_one("#unit-next", Static)
        if step is None:
            line.update("")
            return
        key = self.next_key(step.act)
        text = Text("next: ", style="bold")
        text.append_text(plain(step.text, self.model.redactor))
        if key:
            text.append(f" — {key}", style="bold")
        line.update(text)

    def noticed(self, notice: Notice) -> None:
        """The room gave a notification (``RoomApp.notify``): shown here when about this unit."""
        if notice.unit != self.unit_id:
            return
        try:
            shown = self.query_one("#unit-notice", Static)
        except NoMatches:
            return
        mark = {"error": "✖", "warning": "!"}.get(notice.severity, "·")
        title = f"{notice.title}: " if notice.title else ""
        shown.update(
            Text.assemble(f"{mark} {notice.at} {title}", plain(one_line(notice.message)))
            + Text("  (n: every notice)", style="dim")
        )
        shown.set_class(notice.severity == "error", "-error")
        shown.remove_class("hidden")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ACTS:
            return self.may(action, UnitKey(self.index, self.unit_id))
        return True

    def _act(self, which: str) -> None:
        self.post_message(Act(which, UnitKey(self.index, self.unit_id)))

    def _header(self, unit: UnitRecord) -> Text:
        model = self.model
        lease = next((lease for lease in model.leases if lease.unit_id == self.unit_id), None)
        lease_text = "no lease"
        if lease is not None:
            left = (lease.expires_at - int(model.clock().timestamp() * 1000)) // 1000
            lease_text = f"lease {left // 60} min left" if left > 0 else "lease expired"
        return Text.assemble(
            (f"unit {unit.unit_id}", "bold"),
            f" · {unit.status} · {unit.unit_type}"
            f" · contract {unit.contract.id} v{unit.contract.version}",
            f" · {unit.attempts} attempt(s) · {lease_text}",
        )

    @work(thread=True, exclusive=True, group="inspector")
    def _build(self, unit: UnitRecord) -> None:
        # Every row is placed, grouped and filterable; a row's text is made when it is drawn.
        model = self.model
        kinds = set(self.kind_filter.split())
        # The fold must not change under the replay being read from it.
        with model.lock, collector_paused():
            rows = unit_replay(model.layout, self.unit_id, log=model.log)
            keys = TimelineTable.keys_for(rows, kinds)
        budgets = self._budgets(unit.attempts)
        contract = self._contract(unit.contract.version)
        report = self._report()
        self.app.call_from_thread(self._built, rows, kinds, keys, budgets, contract, report)

    def _built(
        self,
        rows: Replay,
        kinds: set[str],
        keys: TimelineKeys,
        budgets: Text,
        contract: Text,
        report: Text,
    ) -> None:
        if not self.is_attached:
            return  # closed while it was being read
        self.timeline.loading = False
        now = set(self.kind_filter.split())
        # The filter changed while the replay was read: its keys are made again.
        self.timeline.show(rows, now, keys=keys if now == kinds else None)
        if self.focused is None or isinstance(self.focused, Tabs):
            self.timeline.focus()  # a table being loaded could not hold it
        self.query_one("#budgets", Static).update(budgets)
        self.query_one("#contract", Static).update(contract)
        self.query_one("#report", Static).update(report)
        self.built += 1
        self.call_after_refresh(self._resume_collector)

    def _resume_collector(self) -> None:
        if self._collector_paused:
            self._collector_paused = False
            gc.enable()

    def on_unmount(self) -> None:
        self._resume_collector()  # closed before its rows were shown

    def _budgets(self, attempts: int) -> Text:
        lines = Text()
        # The latest first: a short screen shows only the first line.
        for attempt in range(attempts, 0, -1):
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
        lines.rstrip()
        return lines if lines.plain else Text("no budget ledger yet", style="dim")

    def _contract(self, version: int) -> Text:
        contract = self.model.store.contract(self.unit_id, version)
        if contract is None:
            return Text("contract file missing")
        body = plain(
            json.dumps(contract.to_json_dict(), indent=2, ensure_ascii=False), self.model.redactor
        )
        versions = contract_versions(self.model.layout, self.unit_id, store=self.model.store)
        if len(versions) < 2:
            return body  # never replanned: the contract alone, as before
        head = Text("versions\n", style="bold")
        for v in versions:
            c = v.contract
            shown = " (in force)" if c.version == version else ""
            if v.replaces is None:
                head.append(f"v{c.version}{shown}: the first\n")
                continue
            head.append(f"v{c.version}{shown} replans v{v.replaces}: ")
            head.append_text(plain(one_line(v.reason or "", self.model.redactor)))
            head.append("\n")
            for change in v.changes or ("(no decision changes)",):
                head.append_text(plain(f"  {change}", self.model.redactor))
                head.append("\n")
        head.append(f"\nv{version}\n", style="bold")
        return head + body

    def _report(self) -> Text:
        report = self.model.store.latest_report(self.unit_id)
        if report is None:
            return Text(
                "no report: the unit has not called report_result against this contract version"
            )
        return plain(
            json.dumps(report.to_json_dict(), indent=2, ensure_ascii=False), self.model.redactor
        )

    @on(TimelineTable.Highlighted, "#timeline")
    def _show(self, event: TimelineTable.Highlighted) -> None:
        record = self.query_one("#record", Static)
        key = event.key
        if not isinstance(key, TimelineKey):
            record.update("")
            return
        row = self.rows.get(key.ref)
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

    @on(TimelineTable.Selected, "#timeline")
    def _expand(self) -> None:
        self.query_one("#record-pane").focus()

    def action_tab(self, pane: str) -> None:
        self.query_one("#unit-tabs", TabbedContent).active = pane
        # The focus goes into the tab shown: a tab whose pane holds no focus does not stay.
        target = {"tab-contract": "#contract-scroll", "tab-report": "#report-scroll"}.get(pane)
        if target is None:
            self.timeline.focus()
        else:
            self.query_one(target).focus()

    def action_back(self) -> None:
        try:
            kind_filter = self.query_one("#kind-filter", Input)
        except NoMatches:  # esc before the screen's parts were up
            self.app.pop_screen()
            return
        if not kind_filter.has_class("hidden"):
            kind_filter.add_class("hidden")
            self.timeline.focus()
            return
        self.app.pop_screen()

    def action_filter(self) -> None:
        self.action_tab("tab-timeline")
        kind_filter = self.query_one("#kind-filter", Input)
        kind_filter.remove_class("hidden")
        kind_filter.cursor_blink = False
        kind_filter.focus()

    @on(Input.Changed, "#kind-filter")
    def _filtered(self, event: Input.Changed) -> None:
        if self._filter_timer is not None:
            self._filter_timer.stop()
        value = event.value
        self._filter_timer = self.set_timer(KIND_FILTER_DEBOUNCE_S, lambda: self._kinds(value))

    def _kinds(self, value: str) -> None:
        self._filter_timer = None
        self.kind_filter = value
        self.timeline.show(self.rows, set(value.split()))

    @on(Input.Submitted, "#kind-filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        self._kinds(event.value)
        self.timeline.focus()

    def action_attempt(self, step: int) -> None:
        """``[`` and ``]``: to the previous or next attempt's group."""
        table = self.timeline
        headers = table.group_rows()
        later = [i for i in headers if (i > table.cursor if step > 0 else i < table.cursor)]
        if later:
            table.cursor = later[0] if step > 0 else later[-1]
