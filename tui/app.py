"""``regulator room``: the control room's App — the models, the person acting, and routing.

The screen's parts render themselves (``tui/widgets/``); this holds what they are shown from
and decides what happens when a person acts. Reading never happens on the UI thread: a worker
thread per instance folds what changed (one at a time per instance; changes that arrive
meanwhile are gathered into the next fold), and the screen stays usable, showing that it is
reading, until the first fold of each instance is in. A watcher per instance (watchfiles, a
short debounce) says which files changed; a slow timer re-reads the logs anyway, in case a
watch event was lost.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import App
from textual.binding import Binding, BindingType

from regulator.host.instance import os_user
from regulator.host.loop import Loop
from regulator.host.presence import HEARTBEAT_S, PresenceFile
from regulator.protocol.clock import Clock, iso, system_clock
from regulator.protocol.errors import RegulatorError, message_of
from regulator.protocol.obligations import ObligationState
from regulator.protocol.ours import Receipt
from regulator.protocol.vocab import SEVERITY_ORDER, TERMINAL_STATUSES
from regulator.rules.ledger import Actor, json_line
from regulator.store import locked_log

from .bindings import APP, HELP, INSPECTOR, MAIN, all_ids
from .commands import RoomCommands
from .dialogs import (
    NOBODY,
    AcknowledgeDialog,
    AnswerDialog,
    Done,
    DriveConfirm,
    EscalateDialog,
    HelpScreen,
    ObligationDialog,
    PersonPicker,
    ProblemsScreen,
    QuitConfirm,
    RemediateDialog,
    ReplanDialog,
    ResolveDialog,
    drive_unit,
    edit_contract,
    waits_on,
)
from .inbox_index import PRESETS
from .keymap import keymap_path, load_keymap
from .keys import RowKey
from .messages import Folded, InstanceChanged
from .model import Changes, InstanceModel, grants, resolve_person
from .remote import RemoteInstanceModel, open_model
from .render import one_line, plain
from .screens.inspector import UnitInspector
from .screens.main import MainScreen
from .widgets.rowtable import RowTable

WATCH_STEP_MS = 20
SAFETY_NET_S = 3.0

__all__ = ["MainScreen", "RoomApp", "run_room"]


def _watch_filter(change: Any, path: str) -> bool:
    # The worktrees churn with every git operation and hold nothing the room reads.
    return "/worktrees/" not in path and not path.endswith(".tmp") and "/.git/" not in path


class RoomApp(App[None]):
    CSS_PATH = "room.tcss"
    TITLE = "regulator"
    COMMANDS = App.COMMANDS | {RoomCommands}
    BINDINGS: ClassVar[list[BindingType]] = list(APP)
    # Textual declares these as instance variables on App; ClassVar fails mypy.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]  # noqa: RUF012
    VERTICAL_BREAKPOINTS = [(0, "-short"), (36, "-tall")]  # noqa: RUF012

    def __init__(
        self,
        roots: Sequence[Path | str],
        *,
        person: str | None = None,
        clock: Clock = system_clock,
        bell: bool = True,
        watch: bool = True,
        env: dict[str, str] | None = None,
        presence: bool = True,
        definition: Path | None = None,
        keymap: Path | None = None,
    ) -> None:
        super().__init__()
        self.clock = clock
        self.models = [open_model(root, clock=clock, definition=definition) for root in roots]
        self.bell_on = bell
        self.watching = watch
        self.paused = False
        # Obligations owed to a person that arrived while the room was open; shared with the
        # inbox (it marks them), so it is changed in place, never replaced.
        self.new: set[RowKey] = set()
        self._stop = asyncio.Event()
        self.presence_on = presence
        self._presence: list[PresenceFile] = []
        self._beating = False
        policy = self.models[0].interaction_policy() if self.models else None
        self.person, self.person_source = resolve_person(person, policy, env)
        self.os_user = os_user()
        self.last_refresh: datetime | None = None
        self.keymap_file = keymap if keymap is not None else keymap_path(env)
        # Folding: which instance has a fold running, and what changed since it started
        # (None: everything).
        self._folding: set[int] = set()
        self._pending: dict[int, set[Path] | None] = {}
        self._changed: dict[int, set[Path]] = {}
        self._bindings_state: tuple[bool | None, ...] = ()
        # The loop a replan or remediation acts through and drives with (tests script it).
        self.loop_for: Callable[[InstanceModel], Loop] = lambda m: Loop(
            m.layout, m.definition, clock=m.clock
        )

    # -- start and stop ------------------------------------------------------------------------

    def on_mount(self) -> None:
        keymap, errors = load_keymap(self.keymap_file, all_ids())
        if keymap:
            self.set_keymap(keymap)
        for error in errors:
            self.notify(error, title="keymap", severity="error", timeout=10)
        self.push_screen(MainScreen(self))
        if self.person is None and self.models:
            policy = self.models[0].interaction_policy()
            people = [(p.name, grants(p)) for p in (policy.people if policy else [])]
            if people:
                self.push_screen(PersonPicker(people, self.person_source), self._picked)
        else:
            self._start_presence()
        self._show_person()
        for index in range(len(self.models)):
            self.request_fold(index, None)
        for index, model in enumerate(self.models):
            if isinstance(model, RemoteInstanceModel):  # its stream says when it changed
                model.start(partial(self._remote_changed, index))
        if self.watching:
            for index, model in enumerate(self.models):
                if not model.remote:
                    self.watch_instance(index, model.layout.state)
            self.set_interval(SAFETY_NET_S, self._safety_net)

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
        self._show_person()

    def _start_presence(self) -> None:
        for presence in self._presence:
            presence.close()
        self._presence = []
        if not self.presence_on or self.person is None:
            return  # looking only: no session should wait for an answer from here
        self._presence = [
            PresenceFile(m.layout, self.person, self.clock) for m in self.models if not m.remote
        ]
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
        for model in self.models:
            if isinstance(model, RemoteInstanceModel):
                model.close()

    # -- reading, off the UI thread --------------------------------------------------------------

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
            self._changed.setdefault(index, set()).update(Path(p) for _, p in changes)
            self.post_message(InstanceChanged(index))

    def _remote_changed(self, index: int) -> None:  # from a remote model's stream thread
        self.post_message(InstanceChanged(index))

    def _safety_net(self) -> None:
        # The logs only: a lost watch event must not hide an append; unit records change
        # with a watch event of their own.
        for index in range(len(self.models)):
            self._changed.setdefault(index, set())
            self.post_message(InstanceChanged(index))

    def on_instance_changed(self, message: InstanceChanged) -> None:
        if self.paused:
            return  # what changed stays gathered; resuming reads everything anyway
        self.request_fold(message.index, self._changed.pop(message.index, set()))

    def request_fold(self, index: int, paths: set[Path] | None) -> None:
        """Fold instance ``index`` (``paths`` changed; None: everything) on a worker thread.

        One fold per instance at a time: what changes while one runs is gathered into the next.
        """
        if paths is None or (index in self._pending and self._pending[index] is None):
            self._pending[index] = None
        else:
            gathered = self._pending.setdefault(index, set())
            assert gathered is not None
            gathered.update(paths)
        if index not in self._folding:
            self._start_fold(index)

    def _start_fold(self, index: int) -> None:
        paths = self._pending.pop(index)
        self._folding.add(index)
        self.run_worker(
            partial(self._fold, index, paths),
            thread=True,
            exclusive=True,
            group=f"fold-{index}",
            exit_on_error=False,
        )

    def _fold(self, index: int, paths: set[Path] | None) -> None:
        """On a worker thread: fold, then tell the UI thread what changed."""
        try:
            changes = self.models[index].refresh(paths)
        except Exception as exc:  # a reader bug must not take the room down
            self.post_message(Folded(index, Changes(), error=f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(Folded(index, changes))

    def on_folded(self, message: Folded) -> None:
        index, changes = message.index, message.changes
        model = self.models[index]
        self._folding.discard(index)
        if message.error:
            self.notify(message.error, title=f"reading {model.name}", severity="error")
        self.last_refresh = self.clock()
        main = self.main
        changed = changes.full or changes.obligations or changes.units
        if changed:
            for o in changes.new_obligations:
                self._arrived(index, model, o)
        if main is not None:
            with self.batch_update():
                if changed:
                    main.inbox.apply(index, changes)
                    main.version += 1
                main.as_of = iso(self.last_refresh)[11:19]
                main.problems = sum(m.problem_count for m in self.models)
                main.reading = sum(not m.loaded for m in self.models)
        if changed:
            for screen in self.screen_stack:
                if isinstance(screen, ObligationDialog):
                    screen.obligation_changed()
                if isinstance(screen, UnitInspector) and screen.model is model:
                    screen.refresh_view()
        if index in self._pending and not self.paused:
            self._start_fold(index)

    def _arrived(self, index: int, model: InstanceModel, o: ObligationState) -> None:
        """Something new owed to a person at blocking or above: marked, told, and rung."""
        if o.consumer != "human" or SEVERITY_ORDER[o.severity] < SEVERITY_ORDER["blocking"]:
            return
        self.new.add(RowKey(index, o.id))
        self.notify(
            f"{o.severity}: {one_line(o.subject, model.redactor)[:70]}",
            title=f"owed to a person · {model.name}",
            severity="warning",
        )
        if self.bell_on:
            self.bell()

    @property
    def loaded(self) -> bool:
        """Every instance has been read once (and nothing is being read now)."""
        return all(m.loaded for m in self.models) and not self._folding

    # -- who is acting -------------------------------------------------------------------------

    @property
    def actor(self) -> Actor:
        return Actor(via="room", os_user=self.os_user)

    def grants_text(self) -> str:
        policy = self.models[0].interaction_policy() if self.models else None
        return grants(policy.person(self.person) if policy and self.person else None)

    def _show_person(self) -> None:
        main = self.main
        if main is None:
            return
        main.grants = self.grants_text()
        main.person = self.person
        self.refresh_bindings()

    def binding_state(self) -> tuple[bool | None, ...]:
        actions = ("answer", "resolve", "acknowledge", "escalate", "replan", "remediate")
        return tuple(self.may(a) for a in actions)

    def may(self, action: str) -> bool | None:
        """Footer state for an action on the selected obligation: True, None (greyed) or False."""
        selected = self.selected()
        if selected is None or self.person is None:
            return None
        model, o = selected
        if o.status in TERMINAL_STATUSES:
            return None
        if action == "answer":
            return True if o.concern == "interaction" else None
        if action in ("replan", "remediate"):
            return waits_on(model, o) == action  # hidden unless the unit waits on it
        return True

    def selection_rested(self) -> None:
        state = self.binding_state()
        if state != self._bindings_state:
            self._bindings_state = state
            self.refresh_bindings()

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
        """One line per session still waiting in ``ask_human``, the soonest to time out first;
        an instance not read yet is a line too (it may hold one)."""
        lines = [
            Text(f"⏳ {m.name} is still being read: a session there may be waiting")
            for m in self.models
            if not m.loaded
        ]
        waiting = sorted(
            ((m, w) for m in self.models if m.loaded for w in m.sessions_still_running()),
            key=lambda mw: mw[1][2],
        )
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

    # -- the selection -------------------------------------------------------------------------

    @property
    def main(self) -> MainScreen | None:
        for screen in self.screen_stack:
            if isinstance(screen, MainScreen) and screen.is_mounted and screen.query("#topbar"):
                return screen
        return None

    @property
    def inbox_table(self) -> RowTable[RowKey] | None:
        main = self.main
        return main.inbox_table if main is not None else None

    def lookup(self, key: RowKey) -> tuple[InstanceModel, ObligationState]:
        model = self.models[key.instance]
        return model, model.log.obligations[key.oid]

    def selected(self) -> tuple[InstanceModel, ObligationState] | None:
        table = self.inbox_table
        key = table.current_key if table is not None else None
        if key is None:
            return None
        try:
            return self.lookup(key)
        except KeyError:
            return None

    # -- routing what a person does ----------------------------------------------------------------

    def open_obligation(self, key: RowKey) -> None:
        """Enter on a row: the detail is opened, the "new" mark goes, a receipt is recorded."""
        model, o = self.lookup(key)
        self.new.discard(key)
        if self.person is not None and not model.remote:  # no receipt is written here for a host
            receipt = Receipt(
                obligation_id=o.id, person=self.person, at=iso(self.clock()), via="room"
            )
            try:
                with locked_log(model.layout.receipts) as out:
                    out.append([json_line(receipt)])
            except OSError:
                pass
            self.request_fold(key.instance, {model.layout.receipts})
        main = self.main
        if main is not None:
            main.inbox_table.invalidate(key)
            main.inbox.detail.key = key

    @property
    def preset(self) -> int:
        main = self.main
        return main.preset if main is not None else 0

    def cycle_preset(self) -> None:
        main = self.main
        if main is not None:
            main.preset = (main.preset + 1) % len(PRESETS)

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
        main = self.main
        if main is None:
            return
        key = RowKey(index, oid)
        main.action_tab("inbox")
        inbox = main.inbox
        if key not in inbox.index:
            main.preset = PRESETS.index("everything")
            inbox.set_filter("")
            if key not in inbox.index:
                inbox.rebuild()
        main.inbox_table.move_to(key)

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
        self.request_fold(self.models.index(model), None)

    def open_recovery(self, which: str) -> None:
        """``R`` / ``m``: act on the recovery decision the selected obligation's unit waits on."""
        selected = self.selected()
        if selected is None or self.person is None:
            self.notify("select an obligation, acting as someone (P)", severity="warning")
            return
        model, o = selected
        if waits_on(model, o) != which or o.unit is None:
            self.notify(f"{o.id[:8]}: its unit waits on no {which} decision", severity="warning")
            return
        try:
            loop, unit_id = self.loop_for(model), o.unit
            current = loop.current_contract(unit_id)
        except RegulatorError as exc:  # a policy that does not load, a missing contract
            self.notify(message_of(exc), title=which, severity="error")
            return
        if which == "remediate":
            dialog: ObligationDialog = RemediateDialog(model, o, self.person, self.actor, loop=loop)
            self.push_screen(dialog, partial(self._recovered, model, loop, unit_id, False))
            return
        edited, why = edit_contract(self, current)
        if edited is None:
            self.notify(why, title="replan", severity="warning")
            return
        dialog = ReplanDialog(
            model, o, self.person, self.actor, loop=loop, current=current, edited=edited
        )
        self.push_screen(dialog, partial(self._recovered, model, loop, unit_id, True))

    def _recovered(
        self, model: InstanceModel, loop: Loop, unit_id: str, ask: bool, done: Done | None
    ) -> None:
        """A replan asks before driving (it starts a session); a remediation drives at once."""
        self._dialog_done(model, done)
        if done is None:
            return
        go = partial(drive_unit, self, model, loop, unit_id)
        if not ask:
            go()
            return
        version = loop.current_contract(unit_id).version
        self.push_screen(DriveConfirm(unit_id, version), lambda yes: go() if yes else None)

    def open_unit_of_selection(self) -> None:
        selected = self.selected()
        if selected is None or selected[1].unit is None:
            self.notify("this obligation names no unit", severity="warning")
            return
        model, o = selected
        self.open_unit(self.models.index(model), o.unit or "")

    def open_unit(self, index: int, unit_id: str) -> None:
        if self.models[index].remote:
            self.notify(
                f"{self.models[index].name}: the inspector (replay, unit actions) does not reach"
                " a remote instance yet; run `regulator unit show` on that host",
                severity="warning",
            )
            return
        self.push_screen(UnitInspector(self.models[index], unit_id))

    # -- app-wide actions ----------------------------------------------------------------------

    def key_for(self, binding_id: str) -> str:
        """The keys bound to ``binding_id`` now (a keymap may have changed them), for display."""
        from .widgets.rowtable import RowTable as Table

        for binding in [*APP, *MAIN, *INSPECTOR, *Table.BINDINGS]:
            if isinstance(binding, Binding) and binding.id == binding_id:
                keys = self._keymap.get(binding_id, binding.key)
                return " ".join(
                    self.get_key_display(Binding(k.strip(), "")) for k in keys.split(",")
                )
        return ""

    def action_help(self) -> None:
        rows = [
            (" ".join(self.key_for(i) for i in ids.split()) if ids else "", what)
            for ids, what in HELP
        ]
        self.push_screen(HelpScreen(rows))

    def action_problems(self) -> None:
        self.push_screen(ProblemsScreen([p for m in self.models for p in m.problems]))

    def action_pause(self) -> None:
        self.paused = not self.paused
        if not self.paused:
            for index in range(len(self.models)):
                self._changed.pop(index, None)
                self.request_fold(index, None)
        main = self.main
        if main is not None:
            main.paused = self.paused

    def palette_commands(self) -> Iterable[tuple[str, str, Callable[[], Any]]]:
        main = self.main
        yield ("answer the selected question", "a", lambda: self.open_dialog("answer"))
        yield ("resolve the selected obligation", "r", lambda: self.open_dialog("resolve"))
        yield ("acknowledge the selected obligation", "c", lambda: self.open_dialog("acknowledge"))
        yield ("escalate the selected obligation", "e", lambda: self.open_dialog("escalate"))
        yield ("go to the question a session is waiting on", "w", self.go_to_waiting)
        yield (
            "replan the selected unit (edit its contract)",
            "R",
            partial(self.open_recovery, "replan"),
        )
        yield ("remediate the selected unit", "m", partial(self.open_recovery, "remediate"))
        yield ("switch the person acting", "P", self.action_person)
        yield ("show the problems the readers found", "!", self.action_problems)
        yield ("pause or resume live updates", "p", self.action_pause)
        yield ("show every key", "?", self.action_help)
        if main is not None:
            yield ("inbox: owed to me / all open / everything", "f", self.cycle_preset)
            yield ("show instances", "1", lambda: main.action_tab("instances"))
            yield ("show the inbox", "2", lambda: main.action_tab("inbox"))
            yield ("show attention", "3", lambda: main.action_tab("attention"))
            yield ("filter the inbox", "/", main.action_filter)


def run_room(roots: list[Path], *, person: str | None, bell: bool) -> None:
    RoomApp(roots, person=person, bell=bell).run()
