"""``regulator room``: the control room.

One app over one or more instances. A worker per instance watches ``.regulator/`` with
watchfiles (a short debounce, not its 1.6 s default) and feeds what changed through the
incremental readers; the screens update in place and keep selection and scroll. A slow timer
re-reads anyway, in case a watch event was lost. The person acting is named once, their grants
shown in the header, and every dialog acts through the CLI's own core functions.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterable
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.command import Hit, Hits, Provider
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import DataTable, Footer, Input, Static, TabbedContent, TabPane

from regulator.host.instance import os_user
from regulator.host.presence import HEARTBEAT_S, PresenceFile
from regulator.protocol.clock import Clock, iso, system_clock
from regulator.protocol.obligations import ObligationState
from regulator.protocol.ours import Receipt
from regulator.protocol.vocab import SEVERITY_ORDER, TERMINAL_STATUSES
from regulator.rules.ledger import Actor, json_line
from regulator.store import locked_log
from regulator.views.attention import attention_report, render_attention

from .dialogs import (
    NOBODY,
    AcknowledgeDialog,
    AnswerDialog,
    Done,
    EscalateDialog,
    HelpScreen,
    ObligationDialog,
    PersonPicker,
    ProblemsScreen,
    QuitConfirm,
    ResolveDialog,
)
from .filtering import Context, compile_filter
from .model import (
    SEVERITY_GLYPH,
    STATUS_GLYPH,
    InstanceModel,
    age,
    grants,
    resolve_person,
    sort_key,
)
from .render import one_line, plain
from .screens.inspector import UnitInspector
from .widgets.rowtable import Column, RowTable

PRESETS = ("owed to me", "all open", "everything")
WATCH_STEP_MS = 20
SAFETY_NET_S = 3.0


class InstanceChanged(Message):
    def __init__(self, index: int, paths: set[Path] | None) -> None:
        super().__init__()
        self.index = index
        self.paths = paths


def _watch_filter(change: Any, path: str) -> bool:
    # The worktrees churn with every git operation and hold nothing the room reads.
    return "/worktrees/" not in path and not path.endswith(".tmp") and "/.git/" not in path


class MainScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1", "tab('instances')", "instances", show=False),
        Binding("2", "tab('inbox')", "inbox", show=False),
        Binding("3", "tab('attention')", "attention", show=False),
        Binding("a", "answer", "answer"),
        Binding("r", "resolve", "resolve"),
        Binding("c", "acknowledge", "ack"),
        Binding("e", "escalate", "escalate"),
        Binding("o", "open_unit", "unit"),
        Binding("slash", "filter", "filter"),
        Binding("f", "preset", "preset"),
        Binding("w", "waiting", "waiting", show=False),
        Binding("escape", "back", "back", show=False),
    ]

    def compose(self) -> ComposeResult:
        yield Static("", id="topbar", classes="topbar")
        yield Static("", id="veto-banner", classes="banner veto hidden")
        yield Static("", id="waiting-banner", classes="banner waiting hidden")
        with TabbedContent(initial="instances", id="tabs"):
            with TabPane("Instances", id="instances"), Vertical():
                yield RowTable(
                    [
                        Column("instance", 18),
                        Column("units", 26),
                        Column("open", 22),
                        Column("owed to a person", 18),
                        Column("last activity", 13),
                        Column("problems", 8),
                        Column("path", None),
                    ],
                    self.app_.render_instance_row,
                    empty="no instance",
                    id="instance-table",
                    classes="instances",
                )
                yield DataTable(id="units", cursor_type="row", zebra_stripes=True)
                yield Static("", id="instance-extra", classes="extra")
            with TabPane("Inbox", id="inbox"):
                yield Input(
                    placeholder="filter: text, is:blocking, kind:consent, unit:…, owed:human, !…",
                    id="filter",
                    classes="filter hidden",
                )
                with Horizontal(classes="split"):
                    yield RowTable(
                        self.app_.inbox_columns(),
                        self.app_.render_obligation_row,
                        empty="nothing owed here right now",
                        id="inbox-table",
                    )
                    with VerticalScroll(id="detail-pane", classes="detail"):
                        yield Static("", id="detail")
            with TabPane("Attention", id="attention"), VerticalScroll(id="attention-scroll"):
                yield Static("", id="attention-text")
        yield Footer()

    @property
    def app_(self) -> RoomApp:
        app = self.app
        assert isinstance(app, RoomApp)
        return app

    _detail_timer: Timer | None = None
    _bindings_state: tuple[bool | None, ...] = ()

    def on_mount(self) -> None:
        self.call_after_refresh(self.app_.refresh_all)
        self.query_one("#units", DataTable).add_columns(
            "status",
            "unit",
            "type",
            "contract",
            "att",
            "last",
            "budget",
            "last decision",
            "owed",
            "reason",
        )
        self.query_one("#instance-table", RowTable).focus()

    # -- actions delegated to the app ---------------------------------------------------------

    def action_tab(self, name: str) -> None:
        self.query_one("#tabs", TabbedContent).active = name
        # Focus moves into the tab: a tab whose pane holds no focus does not stay shown.
        target = {
            "instances": "#instance-table",
            "inbox": "#inbox-table",
            "attention": "#attention-scroll",
        }.get(name)
        if target:
            self.query_one(target).focus()

    def action_answer(self) -> None:
        self.app_.open_dialog("answer")

    def action_resolve(self) -> None:
        self.app_.open_dialog("resolve")

    def action_acknowledge(self) -> None:
        self.app_.open_dialog("acknowledge")

    def action_escalate(self) -> None:
        self.app_.open_dialog("escalate")

    def action_open_unit(self) -> None:
        self.app_.open_unit_of_selection()

    def action_filter(self) -> None:
        self.action_tab("inbox")
        box = self.query_one("#filter", Input)
        box.remove_class("hidden")
        box.cursor_blink = False
        box.focus()

    def action_preset(self) -> None:
        self.app_.cycle_preset()

    def action_waiting(self) -> None:
        self.app_.go_to_waiting()

    def action_back(self) -> None:
        box = self.query_one("#filter", Input)
        if not box.has_class("hidden"):
            box.value = ""
            box.add_class("hidden")
            self.query_one("#inbox-table", RowTable).focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("answer", "resolve", "acknowledge", "escalate"):
            return self.app_.may(action)
        return True

    @on(Input.Changed, "#filter")
    def _filter(self, event: Input.Changed) -> None:
        self.app_.set_filter(event.value)

    @on(Input.Submitted, "#filter")
    def _filter_done(self) -> None:
        self.query_one("#inbox-table", RowTable).focus()

    @on(RowTable.Highlighted, "#inbox-table")
    def _highlight(self, event: RowTable.Highlighted) -> None:
        # Moving fast through a long inbox re-renders only the cursor; the detail pane and the
        # footer follow once the cursor rests (a re-layout per key press is what costs).
        if self._detail_timer is not None:
            self._detail_timer.stop()
        key = event.key
        self._detail_timer = self.set_timer(0.08, lambda: self._rest(key))

    def _rest(self, key: str | None) -> None:
        self._detail_timer = None
        self.app_.show_detail(key)
        state = self.app_.binding_state()
        if state != self._bindings_state:
            self._bindings_state = state
            self.refresh_bindings()

    @on(RowTable.Selected, "#inbox-table")
    def _open(self, event: RowTable.Selected) -> None:
        self.app_.open_obligation(event.key)

    @on(RowTable.Highlighted, "#instance-table")
    def _instance(self, event: RowTable.Highlighted) -> None:
        self.app_.show_instance(event.key)

    @on(RowTable.Selected, "#instance-table")
    def _instance_open(self) -> None:
        self.query_one("#units", DataTable).focus()

    @on(DataTable.RowSelected, "#units")
    def _unit(self, event: DataTable.RowSelected) -> None:
        key = event.row_key.value
        if key:
            index, _, unit_id = str(key).partition(":")
            self.app_.open_unit(int(index), unit_id)


class GoTo(Provider):
    """The command palette: every action, and "go to" any unit or obligation by id or prefix."""

    async def search(self, query: str) -> Hits:
        app = self.app
        assert isinstance(app, RoomApp)
        matcher = self.matcher(query)
        for name, help_text, callback in app.palette_commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
        q = query.strip().lower()
        if len(q) < 2:
            return
        count = 0
        for index, model in enumerate(app.models):
            for unit_id in model.units:
                if unit_id.lower().startswith(q) or q in unit_id.lower():
                    yield Hit(
                        1.0,
                        f"go to unit {unit_id}",
                        partial(app.open_unit, index, unit_id),
                        help=model.name,
                    )
                    count += 1
            for oid, o in model.log.obligations.items():
                if oid.startswith(q):
                    label = (
                        f"go to obligation {oid[:8]}: {one_line(o.subject, model.redactor)[:60]}"
                    )
                    yield Hit(1.0, label, partial(app.go_to_obligation, index, oid), help=o.status)
                    count += 1
                if count > 50:
                    return


class RoomApp(App[None]):
    CSS_PATH = "room.tcss"
    TITLE = "regulator"
    COMMANDS = App.COMMANDS | {GoTo}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark", "help", "help"),
        Binding("exclamation_mark", "problems", "problems"),
        Binding("P", "person", "person"),
        Binding("p", "pause", "pause"),
        # Not priority bindings: over a dialog (a modal screen) no app key fires, ctrl+q either.
        Binding("q", "quit", "quit"),
        Binding("ctrl+q", "quit", "quit", show=False),
    ]
    # Textual declares this as an instance variable on App; ClassVar fails mypy.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]  # noqa: RUF012

    def __init__(
        self,
        roots: list[Path],
        *,
        person: str | None = None,
        clock: Clock = system_clock,
        bell: bool = True,
        watch: bool = True,
        env: dict[str, str] | None = None,
        presence: bool = True,
        definition: Path | None = None,
    ) -> None:
        super().__init__()
        self.clock = clock
        self.models = [InstanceModel(root, clock=clock, definition=definition) for root in roots]
        self.bell_on = bell
        self.watching = watch
        self.paused = False
        self.preset = 0
        self.filter_text = ""
        self.new: set[str] = set()
        self.inbox_keys: list[str] = []
        self.instance_index = 0
        self._stop = asyncio.Event()
        self.presence_on = presence
        self._presence: list[PresenceFile] = []
        self._beating = False
        policy = self.models[0].interaction_policy() if self.models else None
        self.person, self.person_source = resolve_person(person, policy, env)
        self.os_user = os_user()
        self.last_refresh: datetime | None = None

    # -- start and stop ------------------------------------------------------------------------

    def on_mount(self) -> None:
        for model in self.models:
            model.refresh()
        self.last_refresh = self.clock()
        self.push_screen(MainScreen())
        if self.person is None and self.models:
            policy = self.models[0].interaction_policy()
            people = [(p.name, grants(p)) for p in (policy.people if policy else [])]
            if people:
                self.push_screen(PersonPicker(people, self.person_source), self._picked)
        else:
            self._start_presence()
        if self.watching:
            for index, model in enumerate(self.models):
                self.watch_instance(index, model.layout.state)
            self.set_interval(SAFETY_NET_S, self._safety_net)
        self.set_interval(1.0, self._tick)

    def _picked(self, person: str | None) -> None:
        """At start: a cancel (esc) leaves the room looking only."""
        self._switch_to(None if person == NOBODY else person, "picked at start")

    def _repicked(self, person: str | None) -> None:
        """On ``P``: a cancel (esc) keeps whoever was acting; only a pick changes it."""
        if person is None:
            return
        self._switch_to(None if person == NOBODY else person, "picked with P")

    def _switch_to(self, person: str | None, source: str) -> None:
        self.person = person
        self.person_source = source if person else "looking, not acting"
        self._start_presence()
        self.refresh_all()

    def _start_presence(self) -> None:
        for presence in self._presence:
            presence.close()
        self._presence = []
        if not self.presence_on or self.person is None:
            return  # looking only: no session should wait for an answer from here
        self._presence = [PresenceFile(m.layout, self.person, self.clock) for m in self.models]
        self._beat()
        if not self._beating:
            self._beating = True
            self.set_interval(HEARTBEAT_S, self._beat)

    def _beat(self) -> None:
        for presence in self._presence:
            try:
                presence.beat()
            except OSError:
                pass

    async def on_unmount(self) -> None:
        self._stop.set()
        for presence in self._presence:
            presence.close()

    @work(exclusive=False, group="watch")
    async def watch_instance(self, index: int, path: Path) -> None:
        from watchfiles import awatch

        async for changes in awatch(
            path,
            watch_filter=_watch_filter,
            debounce=200,
            step=WATCH_STEP_MS,
            stop_event=self._stop,
            recursive=True,
        ):
            self.post_message(InstanceChanged(index, {Path(p) for _, p in changes}))

    def _safety_net(self) -> None:
        # The logs only: a lost watch event must not hide an append; unit records change
        # with a watch event of their own.
        for index in range(len(self.models)):
            self.post_message(InstanceChanged(index, set()))

    def on_instance_changed(self, message: InstanceChanged) -> None:
        if self.paused:
            return
        model = self.models[message.index]
        changes = model.refresh(message.paths)
        self.last_refresh = self.clock()
        if not (changes.obligations or changes.units):
            self._topbar()
            return
        for o in changes.new_obligations:
            if o.consumer == "human" and SEVERITY_ORDER[o.severity] >= SEVERITY_ORDER["blocking"]:
                key = f"{message.index}:{o.id}"
                self.new.add(key)
                self.notify(
                    f"{o.severity}: {one_line(o.subject, model.redactor)[:70]}",
                    title=f"owed to a person · {model.name}",
                    severity="warning",
                )
                if self.bell_on:
                    self.bell()
        self.refresh_all()
        for screen in self.screen_stack:
            if isinstance(screen, ObligationDialog):
                screen.obligation_changed()
            if isinstance(screen, UnitInspector) and screen.model is model:
                screen.refresh_view()

    def _tick(self) -> None:
        self._topbar()
        self._banners()

    # -- who is acting -------------------------------------------------------------------------

    @property
    def actor(self) -> Actor:
        return Actor(via="room", os_user=self.os_user)

    def binding_state(self) -> tuple[bool | None, ...]:
        return tuple(self.may(a) for a in ("answer", "resolve", "acknowledge", "escalate"))

    def may(self, action: str) -> bool | None:
        """Footer state for an action on the selected obligation: True, None (greyed) or False."""
        selected = self.selected()
        if selected is None or self.person is None:
            return None
        _, o = selected
        if o.status in TERMINAL_STATUSES:
            return None
        if action == "answer":
            return True if o.concern == "interaction" else None
        return True

    def action_person(self) -> None:
        policy = self.models[0].interaction_policy() if self.models else None
        people = [(p.name, grants(p)) for p in (policy.people if policy else [])]
        self.push_screen(
            PersonPicker(
                people,
                f"acting as {self.person or 'nobody'} ({self.person_source})",
                current=self.person,
                escape_means=f"keep {self.person or 'nobody'}",
            ),
            self._repicked,
        )

    # -- quitting ------------------------------------------------------------------------------

    def waiting_on_a_person(self) -> list[Text]:
        """One line per session still waiting in ``ask_human``, the soonest to time out first."""
        waiting = sorted(
            ((m, w) for m in self.models for w in m.sessions_still_running()),
            key=lambda mw: mw[1][2],
        )
        lines = []
        for m, (o, _i, left) in waiting:
            secs = int(left)
            lines.append(
                Text.assemble(
                    "⏳ ",
                    plain(one_line(o.subject, m.redactor)),
                    f" (unit {o.unit}, {m.name}) — {secs // 60}:{secs % 60:02d} left",
                )
            )
        return lines

    async def action_quit(self) -> None:
        """Quit, but ask first while a session waits on a person; staying is the default."""
        waiting = self.waiting_on_a_person()
        if not waiting:
            self.exit()
            return

        def answered(quit_anyway: bool | None) -> None:
            if quit_anyway:
                self.exit()

        self.push_screen(QuitConfirm(waiting), answered)

    # -- the views -------------------------------------------------------------------------------

    @property
    def main(self) -> MainScreen | None:
        for screen in self.screen_stack:
            if isinstance(screen, MainScreen) and screen.is_mounted and screen.query("#topbar"):
                return screen
        return None

    def refresh_all(self, first: bool = False) -> None:
        main = self.main
        if main is None:
            return
        with self.batch_update():
            self._topbar()
            self._banners()
            self._instances()
            self._inbox()
            self._attention()

    def _topbar(self) -> None:
        main = self.main
        if main is None:
            return
        policy = self.models[0].interaction_policy() if self.models else None
        person = policy.person(self.person) if policy and self.person else None
        who = Text.assemble(
            ("regulator ", "bold"),
            "· acting as ",
            (self.person or "nobody", "bold"),
            f" ({grants(person) if self.person else 'looking only'})",
        )
        live = (
            "⏸ paused (p resumes)"
            if self.paused
            else ("● live" if self.watching else "○ not watching")
        )
        as_of = f"as of {iso(self.last_refresh)[11:19]}" if self.last_refresh else ""
        problems = sum(len(m.problems) for m in self.models)
        status = Text(f"  ·  {live} · {as_of}")
        status.append(
            f" · {problems} problem(s) (!)" if problems else " · no problems",
            style="bold red" if problems else "",
        )
        main.query_one("#topbar", Static).update(who + status)

    def _banners(self) -> None:
        main = self.main
        if main is None:
            return
        held = [(m, o) for m in self.models for o in m.instance_veto()]
        veto = main.query_one("#veto-banner", Static)
        if held:
            m, o = held[0]
            more = f" (+{len(held) - 1} more)" if len(held) > 1 else ""
            veto.update(
                Text.assemble(
                    ("■ every dispatch is held by ", "bold"),
                    f"{o.id[:8]}: ",
                    plain(one_line(o.subject, m.redactor)),
                    f" — owed to {o.consumer}{more}",
                )
            )
            veto.remove_class("hidden")
        else:
            veto.add_class("hidden")
        waiting = sorted(
            ((m, w) for m in self.models for w in m.waiting_sessions()), key=lambda mw: mw[1][2]
        )
        banner = main.query_one("#waiting-banner", Static)
        if waiting:
            m, (o, _i, left) = waiting[0]
            secs = int(left)
            banner.update(
                Text.assemble(
                    ("⏳ a session is waiting: ", "bold"),
                    plain(one_line(o.subject, m.redactor)),
                    f" ({o.unit}) — {secs // 60}:{secs % 60:02d} left — w goes to it, a answers",
                )
            )
            banner.remove_class("hidden")
        else:
            banner.add_class("hidden")

    # instances ------------------------------------------------------------------------------

    def render_instance_row(self, key: str, style: Callable[[str], Any]) -> list[Text]:
        model = self.models[int(key)]
        by_status: dict[str, int] = {}
        for unit in model.units.values():
            by_status[unit.status] = by_status.get(unit.status, 0) + 1
        units = " ".join(f"{n} {s}" for s, n in sorted(by_status.items())) or "no units"
        open_ = model.open_obligations()
        sev: dict[str, int] = {}
        for o in open_:
            sev[o.severity] = sev.get(o.severity, 0) + 1
        sev_text = Text()
        for name in ("critical", "blocking", "advisory", "info"):
            if sev.get(name):
                sev_text.append(f"{SEVERITY_GLYPH[name]}{sev[name]} {name[:5]} ", style=style(name))
        owed = model.owed_to_person()
        oldest = min((o.opened_at for o in owed), default=None)
        owed_text = f"{len(owed)}, oldest {age(oldest, self.clock())}" if oldest else "0"
        last = iso(model.last_change)[11:19] if model.last_change else "—"
        problems = len(model.problems)
        veto = "■ " if model.instance_veto() else ""
        return [
            Text(veto + model.name, style=style("veto") if veto else ""),
            Text(units),
            sev_text or Text("nothing open", style=style("dim")),
            Text(owed_text),
            Text(last),
            Text(str(problems), style=style("critical") if problems else style("dim")),
            Text(str(model.root), style=style("dim")),
        ]

    def _instances(self) -> None:
        main = self.main
        if main is None:
            return
        table = main.query_one("#instance-table", RowTable)
        table.set_rows([str(i) for i in range(len(self.models))])
        self.show_instance(table.current_key)

    def show_instance(self, key: str | None) -> None:
        main = self.main
        if main is None or key is None:
            return
        index = int(key)
        self.instance_index = index
        model = self.models[index]
        units = main.query_one("#units", DataTable)
        owed: dict[str, list[ObligationState]] = {}
        for o in model.open_obligations():
            if o.unit:
                owed.setdefault(o.unit, []).append(o)
        wanted = []
        for unit in sorted(model.units.values(), key=lambda u: (u.status != "blocked", u.unit_id)):
            last, decision, budget = model.unit_summary(unit)
            mine = owed.get(unit.unit_id, [])
            owed_text = (
                ",".join(sorted({o.consumer + ("!" if o.blocks else "") for o in mine})) or "—"
            )
            wanted.append(
                (
                    f"{index}:{unit.unit_id}",
                    [
                        unit.status,
                        unit.unit_id,
                        unit.unit_type,
                        f"{unit.contract.id} v{unit.contract.version}",
                        str(unit.attempts),
                        last,
                        budget,
                        decision,
                        owed_text,
                        plain(one_line(unit.reason, model.redactor)[:80]),
                    ],
                )
            )
        keys = [k for k, _ in wanted]
        existing = [str(r.value) for r in units.rows]
        if existing != keys:
            cursor = units.cursor_row
            units.clear()
            for k, cells in wanted:
                units.add_row(*cells, key=k)
            if wanted:
                units.move_cursor(row=min(cursor, len(wanted) - 1))
        else:
            for k, cells in wanted:
                for column, value in zip(units.columns, cells, strict=False):
                    units.update_cell(k, column, value)
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
        current = model.memory.current()
        extra.append("\nmemory: ", style="bold")
        extra.append_text(
            plain(
                "; ".join(
                    f"{s.entry.subject}: {s.entry.note} (review by {s.entry.review_by[:10]})"
                    for s in current
                )
                or "nothing current",
                model.redactor,
            )
        )
        unrouted = model.log.unrouted()
        extra.append(f"\nunrouted messages: {len(unrouted)}", style="bold")
        if unrouted:
            extra.append(" — run `regulator signals route`")
        main.query_one("#instance-extra", Static).update(extra)

    # inbox ------------------------------------------------------------------------------------

    def _filter_context(self, index: int, o: ObligationState) -> Context:
        interaction = self.models[index].interaction(o.id) if o.concern == "interaction" else None
        return Context(
            self.models[index].name,
            interaction.request.kind if interaction else None,
            f"{index}:{o.id}" in self.new,
        )

    def _inbox_rows(self) -> list[str]:
        preset = PRESETS[self.preset]
        keep = compile_filter(self.filter_text)
        rows: list[tuple[tuple[int, int, str], str]] = []
        for index, model in enumerate(self.models):
            for o in model.log.obligations.values():
                if preset != "everything" and o.status in TERMINAL_STATUSES:
                    continue
                if preset == "owed to me" and not self._owed_to_me(model, o):
                    continue
                if self.filter_text and not keep(o, self._filter_context(index, o)):
                    continue
                rows.append((sort_key(o), f"{index}:{o.id}"))
        rows.sort()
        return [key for _, key in rows]

    def _owed_to_me(self, model: InstanceModel, o: ObligationState) -> bool:
        """Owed to a person, and within what the acting person may disposition."""
        if o.consumer != "human":
            return False
        policy = model.interaction_policy()
        person = policy.person(self.person) if policy and self.person else None
        if person is None:
            return True  # nobody named: every person's share is shown
        return SEVERITY_ORDER[person.resolve_up_to] >= SEVERITY_ORDER[o.severity]

    def _inbox(self) -> None:
        main = self.main
        if main is None:
            return
        table = main.query_one("#inbox-table", RowTable)
        table.marked = set(self.new)
        self.inbox_keys = self._inbox_rows()
        table.set_rows(self.inbox_keys)
        pane = main.query_one("#tabs", TabbedContent)
        blocking = sum(1 for k in self.inbox_keys if self._lookup(k)[1].blocks)
        label = f"Inbox ({len(self.inbox_keys)} · {blocking} veto · {PRESETS[self.preset]})"
        pane.get_tab("inbox").label = label
        self.show_detail(table.current_key)

    def _lookup(self, key: str) -> tuple[InstanceModel, ObligationState]:
        index, _, oid = key.partition(":")
        model = self.models[int(index)]
        return model, model.log.obligations[oid]

    def inbox_columns(self) -> list[Column]:
        columns = [
            Column("severity", 10),
            Column("veto", 6),
            Column("status", 6),
            Column("owed", 5),
            Column("concern", 11),
            Column("subject", None),
            Column("unit", 14),
            Column("age", 5),
            Column("delivery", 10),
        ]
        if len(self.models) > 1:
            columns.insert(7, Column("instance", 8))
        return columns

    def render_obligation_row(self, key: str, style: Callable[[str], Any]) -> list[Text]:
        model, o = self._lookup(key)
        closed = o.status in TERMINAL_STATUSES
        vetoes = o.blocks and not closed
        seen = model.seen.get(o.id)
        if seen:
            delivery = f"seen {','.join(sorted(seen))}"
        elif o.deliveries:
            reminded = " +rem" if any(d.reminder for d in o.deliveries) else ""
            delivery = f"×{len(o.deliveries)}{reminded}"
        else:
            delivery = "not sent" if o.consumer == "human" and not closed else ""
        new = key in self.new
        return [
            Text(f"{SEVERITY_GLYPH[o.severity]} {o.severity}", style=style(o.severity)),
            Text("■ veto" if vetoes else "", style=style("veto")),
            Text(f"{STATUS_GLYPH[o.status]} {o.status[:4]}"),
            Text(o.consumer),
            Text(o.concern.replace("-signal", "").replace("-decision", "")),
            (Text("● new ", style=style("new")) if new else Text(""))
            + plain(one_line(o.subject, model.redactor)),
            plain(o.unit or "(instance)", model.redactor),
            *([Text(model.name[:8])] if len(self.models) > 1 else []),
            Text(age(o.opened_at, self.clock())),
            Text(delivery, style=style("dim") if not seen else style("ok")),
        ]

    def selected(self) -> tuple[InstanceModel, ObligationState] | None:
        main = self.main
        if main is None:
            return None
        key = main.query_one("#inbox-table", RowTable).current_key
        if key is None:
            return None
        try:
            return self._lookup(key)
        except KeyError:
            return None

    def show_detail(self, key: str | None) -> None:
        main = self.main
        if main is None:
            return
        detail = main.query_one("#detail", Static)
        if key is None:
            detail.update(
                Text(
                    "Nothing owed to a person right now."
                    if PRESETS[self.preset] == "owed to me"
                    else "Nothing here.",
                    style="italic",
                )
            )
            return
        model, o = self._lookup(key)
        r = model.redactor
        text = Text()
        text.append(
            f"{SEVERITY_GLYPH[o.severity]} {o.severity} · {o.status} · owed to {o.consumer}",
            style="bold",
        )
        if o.blocks and o.status not in TERMINAL_STATUSES:
            text.append(" · ■ vetoes " + (f"unit {o.unit}" if o.unit else "every unit"))
        text.append("\n")
        text.append_text(plain(o.subject, r, "bold"))
        text.append(
            f"\n{o.concern} · {o.unit or 'the instance itself'} · {model.name}"
            f"\nid {o.id}\nopened {o.opened_at} by {o.opened_by}\n"
        )
        interaction = model.interaction(o.id)
        if interaction is not None:
            req = interaction.request
            text.append(f"\n{req.kind} question", style="bold")
            text.append(
                f" (attempt {req.attempt}, asked via {req.channel})\n"
                if req.attempt
                else f" (asked via {req.channel})\n"
            )
            text.append_text(plain(req.question, r))
            text.append("\n")
            if req.options:
                text.append("options: ", style="bold")
                text.append_text(plain(" | ".join(req.options), r))
                text.append("\n")
            if req.action:
                text.append("a yes authorizes: ", style="bold")
                text.append_text(plain(req.action, r))
                text.append("\n")
            for e in req.evidence:
                text.append_text(plain(f"evidence: {e.class_} {e.ref}", r))
                text.append("\n")
            for a in interaction.answers:
                text.append_text(
                    plain(
                        f"{a.at[:19]}  {a.outcome} by {a.by} via {a.channel}"
                        + (f": {a.answer}" if a.answer else ""),
                        r,
                    )
                )
                text.append("\n")
        elif o.question:
            text.append("\nquestion: ", style="bold")
            text.append_text(plain(o.question, r))
            text.append("\n")
        text.append("\nsources\n", style="bold")
        for source in o.sources:
            message = model.log.messages.get(source)
            predecessor = model.log.obligations.get(source)
            if message is not None:
                text.append_text(
                    plain(f"  message {message.kind} {source[:8]}: {message.subject}", r)
                )
            elif predecessor is not None:
                text.append_text(
                    plain(
                        f"  predecessor {source[:8]} ({predecessor.status}): {predecessor.subject}",
                        r,
                    )
                )
            else:
                text.append_text(plain(f"  {source}", r))
            text.append("\n")
        if o.successor:
            text.append_text(plain(f"  successor {o.successor[:8]}", r))
            text.append("\n")
        text.append("\nhistory\n", style="bold")
        for event in o.history:
            kind = event.type.removeprefix("obligation-")
            line = f"  {event.at[:19].replace('T', ' ')}  {kind} by {event.by}"
            for name in ("disposition", "note", "rationale", "channel"):
                value = getattr(event, name, None)
                if value:
                    line += f" · {value}"
            if getattr(event, "reminder", False):
                line += " (reminder)"
            text.append_text(plain(line, r))
            text.append("\n")
        seen = model.seen.get(o.id)
        if seen:
            text.append(f"\nseen by {', '.join(sorted(seen))}\n", style="italic")
        detail.update(text)

    def open_obligation(self, key: str) -> None:
        """Enter on a row: the detail is opened, the "new" mark goes, a receipt is recorded."""
        model, o = self._lookup(key)
        self.new.discard(key)
        if self.person is not None:
            receipt = Receipt(
                obligation_id=o.id, person=self.person, at=iso(self.clock()), via="room"
            )
            try:
                with locked_log(model.layout.receipts) as out:
                    out.append([json_line(receipt)])
            except OSError:
                pass
            model.refresh([model.layout.receipts])
        main = self.main
        if main is not None:
            table = main.query_one("#inbox-table", RowTable)
            table.marked = set(self.new)
            table.invalidate(key)
            main.query_one("#detail-pane").focus()
        self.show_detail(key)

    def set_filter(self, text: str) -> None:
        self.filter_text = text
        self._inbox()

    def cycle_preset(self) -> None:
        self.preset = (self.preset + 1) % len(PRESETS)
        self._inbox()

    def go_to_waiting(self) -> None:
        """To the question a session is waiting on now (the soonest to time out)."""
        waiting = [
            (left, i, o.id)
            for i, m in enumerate(self.models)
            for o, _, left in m.waiting_sessions()
        ]
        if not waiting:
            self.notify("no session is waiting for an answer")
            return
        _, index, oid = min(waiting)
        self.go_to_obligation(index, oid)

    def go_to_obligation(self, index: int, oid: str) -> None:
        while isinstance(self.screen, UnitInspector):
            self.pop_screen()
        key = f"{index}:{oid}"
        main = self.main
        if main is None:
            return
        main.action_tab("inbox")
        table = main.query_one("#inbox-table", RowTable)
        if key not in self.inbox_keys:
            self.preset = PRESETS.index("everything")
            self.filter_text = ""
            main.query_one("#filter", Input).value = ""
            self._inbox()
        table.move_to(key)

    # attention --------------------------------------------------------------------------------

    def _attention(self) -> None:
        main = self.main
        if main is None:
            return
        text = Text()
        for model in self.models:
            policy = model.interaction_policy()
            report = attention_report(
                model.log,
                self.clock(),
                blocking_per_attempt=policy.attention.blocking_per_attempt if policy else None,
            )
            text.append(f"{model.name}\n", style="bold")
            for line in render_attention(report):
                text.append(line + "\n")
            text.append("\n")
        main.query_one("#attention-text", Static).update(text)

    # dialogs ----------------------------------------------------------------------------------

    def open_dialog(self, which: str) -> None:
        selected = self.selected()
        if selected is None:
            self.notify("select an obligation first", severity="warning")
            return
        model, o = selected
        if self.person is None:
            self.notify("nobody is acting: press P to pick a person", severity="warning")
            return
        if which == "answer" and o.concern != "interaction":
            self.notify(
                f"{o.id[:8]} is {o.concern}, not a question a unit asked: resolve it (r)",
                severity="warning",
            )
            return
        dialog: ObligationDialog = {
            "answer": AnswerDialog,
            "resolve": ResolveDialog,
            "acknowledge": AcknowledgeDialog,
            "escalate": EscalateDialog,
        }[which](model, o, self.person, self.actor)
        self.push_screen(dialog, partial(self._dialog_done, model))

    def _dialog_done(self, model: InstanceModel, done: Done | None) -> None:
        if done is None:
            return
        self.notify(done.message, title="done")
        model.refresh()
        self.refresh_all()

    def open_unit_of_selection(self) -> None:
        selected = self.selected()
        if selected is None or selected[1].unit is None:
            self.notify("this obligation names no unit", severity="warning")
            return
        model, o = selected
        self.open_unit(self.models.index(model), o.unit or "")

    def open_unit(self, index: int, unit_id: str) -> None:
        self.push_screen(UnitInspector(self.models[index], unit_id))

    # app-wide actions ---------------------------------------------------------------------------

    def action_help(self) -> None:
        rows = [
            ("↑ ↓ j k", "move"),
            ("enter", "open: the obligation's detail (records that you saw it), a unit"),
            ("a", "answer the selected question"),
            ("r", "resolve: a disposition and a rationale"),
            ("c", "acknowledge: seen, not resolved — the veto stands"),
            ("e", "escalate to another consumer"),
            ("o", "open the obligation's unit in the inspector"),
            ("w", "go to the question a session is waiting on"),
            ("/", "filter the inbox: text, is:blocking, kind:consent, unit:…, owed:human, !…"),
            ("f", "presets: owed to me → all open → everything"),
            ("1 2 3", "instances, inbox, attention"),
            ("[ ]", "inspector: previous / next attempt"),
            ("p", "pause or resume live updates"),
            ("P", "switch the person acting (esc keeps who it is)"),
            ("!", "the problems the readers found"),
            ("ctrl+p", "command palette: every action, and go to a unit or obligation by id"),
            ("ctrl+y/n", "consent, uat: answer yes / no, with the note (enter never answers)"),
            ("esc", "back out one layer; in a dialog: close it, answering nothing"),
            ("q", "quit (asks first while a session waits for an answer)"),
        ]
        self.push_screen(HelpScreen(rows))

    def action_problems(self) -> None:
        self.push_screen(ProblemsScreen([p for m in self.models for p in m.problems]))

    def action_pause(self) -> None:
        self.paused = not self.paused
        if not self.paused:
            for model in self.models:
                model.refresh()
            self.refresh_all()
        self._topbar()

    def palette_commands(self) -> Iterable[tuple[str, str, Callable[[], Any]]]:
        main = self.main
        yield ("answer the selected question", "a", lambda: self.open_dialog("answer"))
        yield ("resolve the selected obligation", "r", lambda: self.open_dialog("resolve"))
        yield ("acknowledge the selected obligation", "c", lambda: self.open_dialog("acknowledge"))
        yield ("escalate the selected obligation", "e", lambda: self.open_dialog("escalate"))
        yield ("switch the person acting", "P", self.action_person)
        yield ("show the problems the readers found", "!", self.action_problems)
        yield ("pause or resume live updates", "p", self.action_pause)
        if main is not None:
            yield ("inbox: owed to me / all open / everything", "f", self.cycle_preset)
            yield ("show instances", "1", lambda: main.action_tab("instances"))
            yield ("show the inbox", "2", lambda: main.action_tab("inbox"))
            yield ("show attention", "3", lambda: main.action_tab("attention"))


def run_room(roots: list[Path], *, person: str | None, bell: bool) -> None:
    RoomApp(roots, person=person, bell=bell).run()


__all__ = ["RoomApp", "os", "run_room"]
