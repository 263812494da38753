"""``regulator room``: the control room's App — the models, the person acting, and routing.

The screen's parts render themselves (``tui/widgets/``); this holds what they are shown from
and decides what happens when a person acts. Reading never happens on the UI thread: a worker
thread per instance folds what changed (one at a time per instance; changes that arrive
meanwhile are gathered into the next fold), and the screen stays usable, showing that it is
reading, until the first fold of each instance is in. A watcher (watchfiles, a short debounce)
says which files changed; a slow timer looks at the logs' sizes anyway, in case a watch event
was lost.

Opening is in two steps, so that a person sees the room at once: this module imports Textual
and the top bar only, and the first screen (the top bar, the keys, "reading <instance>…") is
drawn before the core (records, policies, the readers: most of the start-up time) is imported
and the models are built, on a worker thread. The main screen replaces it when they are.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import events, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.command import Provider
from textual.css.query import NoMatches
from textual.message import Message
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Static

from regulator.protocol.clock import iso
from regulator.protocol.vocab import SEVERITY_ORDER, TERMINAL_STATUSES

from .bindings import APP, HELP, INSPECTOR, MAIN, TABLE, all_ids
from .errors import severity_of
from .keymap import keymap_path, load_keymap
from .keys import RowKey
from .messages import (
    Act,
    Folded,
    GoToObligation,
    GoToWaiting,
    InstanceChanged,
    Keep,
    Notice,
    OpenObligation,
    OpenSelectedUnit,
    OpenUnit,
)
from .widgets.footer import RoomFooter
from .widgets.topbar import TopBar

if TYPE_CHECKING:
    from regulator.host.loop import Loop
    from regulator.host.presence import Heartbeat
    from regulator.protocol.clock import Clock
    from regulator.protocol.obligations import ObligationState
    from regulator.rules.ledger import Actor

    from .dialogs.base import ActDialog, Done
    from .keys import UnitKey
    from .model import Changes, InstanceModel, InstanceView
    from .screens.main import MainScreen
    from .widgets.inbox import InboxView
    from .widgets.rowtable import RowTable

WATCH_STEP_MS = 20
SAFETY_NET_S = 3.0
SHOW_WHILE_READING_S = 0.5
# What the opening worker builds for later waits until a person's keys have been quiet this
# long (``_give_way``).
INPUT_QUIET_S = 0.3
# The workers that make what a person asked to see.
VIEW_WORKERS = frozenset({"inspector", "attention"})
# How long the opening worker waits for the first reads to be drawn before it goes on with
# what it builds for later (a room whose screen never draws them must not wait for ever).
DRAWN_WAIT_S = 10.0
# Presence stops beating when the UI thread has not run for this long (it notes each second).
UI_ALIVE_EVERY_S = 1.0
UI_SILENT_AFTER_S = 4.0

__all__ = ["MainScreen", "RoomApp", "run_room"]


def __getattr__(name: str) -> Any:
    # ``MainScreen`` can still be imported from this module, without being imported with it.
    if name == "MainScreen":
        from .screens.main import MainScreen

        return MainScreen
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _watch_filter(change: Any, path: str) -> bool:
    # The worktrees churn with every git operation and hold nothing the room reads; presence
    # files are rewritten every few seconds (this room's own too) and shown nowhere.
    return (
        "/worktrees/" not in path
        and not path.endswith(".tmp")
        and "/.git/" not in path
        and "/presence/" not in path
    )


def _room_commands() -> type[Provider]:
    # The palette's provider reads the models: imported when the palette first opens.
    from .commands import RoomCommands

    return RoomCommands


def _name(root: Path | str) -> str:
    return str(root).rstrip("/").rsplit("/", 1)[-1]


def _merged(a: Changes, b: Changes) -> Changes:
    """Two folds' changes of one instance, as one."""
    from .model import Changes

    return Changes(
        new_obligations=[*a.new_obligations, *b.new_obligations],
        obligations=a.obligations or b.obligations,
        units=a.units or b.units,
        touched=a.touched | b.touched,
        full=a.full or b.full,
    )


def _hms(when: datetime) -> str:
    return iso(when)[11:19]


def _default_loop(model: InstanceModel) -> Loop:
    from regulator.host.loop import Loop

    return Loop(model.layout, model.definition, clock=model.clock)


class RoomApp(App[None]):
    CSS_PATH = "room.tcss"
    TITLE = "regulator"
    COMMANDS = App.COMMANDS | {_room_commands}
    BINDINGS: ClassVar[list[BindingType]] = list(APP)
    # Textual declares these as instance variables on App; ClassVar fails mypy.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]  # noqa: RUF012
    VERTICAL_BREAKPOINTS = [(0, "-short"), (36, "-tall")]  # noqa: RUF012

    def __init__(
        self,
        roots: Sequence[Path | str],
        *,
        person: str | None = None,
        clock: Clock | None = None,
        bell: bool = True,
        watch: bool = True,
        env: dict[str, str] | None = None,
        presence: bool = True,
        definition: Path | None = None,
        keymap: Path | None = None,
        scenario: str | None = None,
    ) -> None:
        super().__init__()
        if clock is None:
            from regulator.protocol.clock import system_clock

            clock = system_clock
        self.clock: Clock = clock
        self.roots = list(roots)
        self._definition = definition
        self._models: list[InstanceView] | None = None
        # Why nobody may act from this room (it runs inside an agent's session), once read.
        self._refusal: tuple[str | None] | None = None
        self._models_lock = threading.Lock()
        self._main: MainScreen | None = None
        self.open_error: Exception | None = None
        self.bell_on = bell
        self.watching = watch
        self.paused = False
        # Obligations owed to a person that arrived while the room was open; shared with the
        # inbox (it marks them), so it is changed in place, never replaced.
        self.new: set[RowKey] = set()
        self._stop = asyncio.Event()
        # Set once the data of every instance has been drawn (``_show_unshown``): what the
        # opening worker builds afterwards waits for it (``_open``).
        self._data_drawn = threading.Event()
        self._input_at = 0.0  # when a person last pressed a key or the mouse (``_give_way``)
        self.presence_on = presence
        self._heartbeat: Heartbeat | None = None
        self._ui_timer: Timer | None = None
        self._ui_seen = time.monotonic()
        self._env = env
        # Who acts is known before the policy is read when it is named (--as, the environment);
        # the OS user is looked up in the policy once the models are built.
        self._given_person = person
        environ = os.environ if env is None else env
        if person:
            self.person: str | None = person
            self.person_source = "--as"
        elif environ.get("REGULATOR_PERSON"):
            self.person, self.person_source = environ["REGULATOR_PERSON"], "REGULATOR_PERSON"
        else:
            self.person, self.person_source = None, "nobody named yet"
        self.last_refresh: datetime | None = None
        self.keymap_file = keymap if keymap is not None else keymap_path(env)
        # Folding: which instance has a fold running, and what changed since it started
        # (None: everything).
        self._folding: set[int] = set()
        self._pending: dict[int, set[Path] | None] = {}
        self._changed: dict[int, set[Path]] = {}
        # What folds changed that the inbox and the parts do not show yet, per instance.
        self._unshown: dict[int, Changes] = {}
        self._show_timer: Timer | None = None
        self._bindings_state: tuple[bool | None, ...] = ()
        # The loop a replan or remediation acts through and drives with (tests script it).
        self.loop_for: Callable[[InstanceModel], Loop] = _default_loop
        # Every notification given, for the log a key away (``n``): a toast goes, this stays.
        self.notices: list[Notice] = []
        # The scenario file last used to drive a scripted unit, per instance (the drive dialog
        # is prefilled with it; at first with ``scenario``: the demo's).
        self.scenario_default = scenario
        self.scenarios: dict[int, str] = {}
        # Instances whose next fold follows an act on a unit: its next step is then said.
        self._after_act: dict[int, str] = {}

    @property
    def models(self) -> list[InstanceView]:
        """One model per instance, built on first use: by the opening worker when the room
        starts, or at once when something (a test) asks before."""
        if self._models is None:
            with self._models_lock:
                if self._models is None:
                    from .remote import open_model

                    self._models = [
                        open_model(root, clock=self.clock, definition=self._definition)
                        for root in self.roots
                    ]
        return self._models

    @property
    def opened(self) -> bool:
        """The models are built and the main screen is up."""
        return self.main is not None

    # -- start and stop ------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        """The first screen, drawn before the core is imported: the top bar, the keys, and
        what is being read. The main screen covers it once the models are built."""
        top = TopBar(id="opening-topbar", classes="topbar")
        top.person = self.person or "…"  # the OS user is looked up in the policy, being read
        top.grants = "reading the policy…"
        top.watching = self.watching
        top.reading = len(self.roots)
        yield top
        opening = Static(
            Text("\n".join(f"◌ reading {_name(root)}…" for root in self.roots), style="italic"),
            id="opening",
        )
        opening.styles.padding = (1, 2)
        yield opening
        yield RoomFooter()

    def get_loading_widget(self) -> Widget:
        from .widgets.reading import Reading

        return Reading()

    def on_mount(self) -> None:
        keymap, errors = load_keymap(self.keymap_file, all_ids())
        if keymap:
            self.set_keymap(keymap)
        for error in errors:
            self.notify(error, title="keymap", severity="error", timeout=10)
        # The first frame goes out before the heavy imports start competing with it.
        self.call_after_refresh(self._begin_opening)

    def _begin_opening(self) -> None:
        self.run_worker(self._open, thread=True, group="open", exit_on_error=False)

    def _open(self) -> None:
        """On a worker thread: import the core and build the models, open the room, then read
        each instance for the first time, one after another (reads side by side share one
        interpreter lock and only add switching, and the collector each read turns off and on
        again under the others)."""
        try:
            models = self.models
            from .screens import main  # noqa: F401 (imported here, not on the UI thread)

            if models:
                models[0].interaction_policy()  # who acts, when nobody was named
        except Exception as exc:  # an instance that cannot be opened: the room ends, and the
            # command says why as it says any error (``open_error``)
            self.open_error = exc
            self.call_from_thread(self.exit, None, 1)
            return
        self.post_message(self.Opened())
        for index, model in enumerate(models):
            if self._stop.is_set():
                return
            model.interaction_policy()  # the inbox asks it for every row
            self._fold(index, None)
        # What follows waits until the data is drawn: run beside the UI thread's first drawing
        # of it, it took the interpreter from that thread for most of a second at 1M lines.
        deadline = time.monotonic() + DRAWN_WAIT_S
        while not self._data_drawn.wait(0.05):
            if self._stop.is_set():
                return
            if time.monotonic() > deadline:
                break
        # Once every instance is on screen, the log's per-unit lists the inspector reads,
        # made here rather than on the UI thread when a person first looks, each under the
        # model's lock, held briefly: the instances pane takes it too. Before that, what the
        # first keys open: imported here rather than on the UI thread, after the first reads
        # a person waits for.
        from regulator.store.collector import collector_paused

        from .dialogs import answer, drive, lists, obligation, recovery  # noqa: F401
        from .model import InstanceModel
        from .screens import inspector  # noqa: F401

        for model in models:
            if self._give_way():
                return
            if not isinstance(model, InstanceModel):  # a remote host folds its own log
                continue
            log = model.log
            with collector_paused():
                for make in (log.obligations_of, log.messages_of, log.interactions_of):
                    if self._give_way():
                        return
                    with model.lock:
                        make("")

    def _give_way(self) -> bool:
        """Between two pieces of what the opening worker builds for later: wait while a
        person is pressing keys, or the inspector or the attention report is being made (the
        work would take the interpreter from the thread answering them: a first tab switch
        took a second beside it); whether the room ends."""
        while time.monotonic() - self._input_at < INPUT_QUIET_S or self._views_working():
            if self._stop.is_set():
                return True
            time.sleep(0.02)
        return self._stop.is_set()

    def _views_working(self) -> bool:
        try:
            return any(w.is_running and w.group in VIEW_WORKERS for w in list(self.workers))
        except RuntimeError:  # the UI thread changed the set meanwhile: look again later
            return True

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, (events.Key, events.MouseDown, events.MouseScrollDown)):
            self._input_at = time.monotonic()
        await super().on_event(event)

    class Opened(Message):
        """The models are built: the room can open."""

    async def on_room_app_opened(self, _message: Opened) -> None:
        """The models are built (their first reads go on, on the opening worker)."""
        from .model import InstanceModel, resolve_person
        from .remote import RemoteInstanceModel

        self._folding.update(range(len(self.models)))
        policy = self.models[0].interaction_policy() if self.models else None
        self.person, self.person_source = resolve_person(self._given_person, policy, self._env)
        if self.person is not None:
            self._start_presence()
        for index, model in enumerate(self.models):
            if isinstance(model, RemoteInstanceModel):  # its stream says when it changed
                model.start(partial(self._remote_changed, index))
        if self.watching:
            local = {
                i: m.layout.state for i, m in enumerate(self.models) if isinstance(m, InstanceModel)
            }
            if local:
                self.watch_instances(local)
            self.set_interval(SAFETY_NET_S, self._safety_net)
        await self._show_main()

    async def _show_main(self) -> None:
        """The main screen over the first one; beneath a dialog a person opened meanwhile
        (help, the quit question), it waits for the dialog to close."""
        from .dialogs.person import PersonPicker
        from .model import grants
        from .screens.main import MainScreen
        from .widgets.inbox import InboxView

        if len(self.screen_stack) > 1:
            self.set_timer(0.1, self._show_main)
            return
        main = MainScreen(
            self.models,
            self.clock,
            self.new,
            may=self.may_act,
            person=self.person,
            grants=self.grants_text(),
            watching=self.watching,
        )
        await self.push_screen(main)
        # The screen is mounted; the contents of its tabs may be mounted a moment later, and
        # everything that shows a fold reaches them through ``main``: it is None until then.
        # A room left meanwhile (``q``, or a test's end) prunes the screen: nothing to show.
        while not main.query(InboxView):
            if not (self.is_running and main.is_attached):
                return
            await asyncio.sleep(0.01)
        self._main = main
        if self.person is None and self.models:
            policy = self.models[0].interaction_policy()
            people = [(p.name, grants(p)) for p in (policy.people if policy else [])]
            if people:
                self.push_screen(PersonPicker(people, self.person_source), self._picked)
        self._show_person()
        # What was read while the first screen was up.
        self._show_unshown()
        if self.last_refresh is not None:
            main.as_of = _hms(self.last_refresh)
        main.problems = sum(m.problem_count for m in self.models)

    def _picked(self, person: str | None) -> None:
        """At start: a cancel (esc) leaves the room looking only."""
        from .dialogs.person import NOBODY

        self._switch_to(None if person == NOBODY else person, "picked at start")

    def _repicked(self, person: str | None) -> None:
        """On ``P``: a cancel (esc) keeps whoever was acting; only a pick changes it."""
        from .dialogs.person import NOBODY

        if person is None:
            return
        self._switch_to(None if person == NOBODY else person, "picked with P")

    def _switch_to(self, person: str | None, source: str) -> None:
        self.person = person
        self.person_source = source if person else "looking, not acting"
        self._start_presence()
        self._show_person()

    def _start_presence(self) -> None:
        from regulator.host.presence import Heartbeat, PresenceFile

        from .model import InstanceModel

        self._stop_presence()
        if not self.presence_on or self.person is None or self.acting_refusal is not None:
            return  # looking only: no session should wait for an answer from here
        files = [
            PresenceFile(m.layout, self.person, self.clock)
            for m in self.models
            if isinstance(m, InstanceModel)
        ]
        if files:
            # The beats come from a thread, but presence means a person can see this room: they
            # stop when the UI thread has not run its own timer for a while.
            self._ui_seen = time.monotonic()
            self._ui_timer = self.set_interval(UI_ALIVE_EVERY_S, self._ui_ran)
            self._heartbeat = Heartbeat(files, alive=self.ui_answering).start()

    def _ui_ran(self) -> None:
        self._ui_seen = time.monotonic()

    def ui_answering(self) -> bool:
        """The UI thread ran lately (called from the heartbeat's thread)."""
        return time.monotonic() - self._ui_seen < UI_SILENT_AFTER_S

    def _stop_presence(self) -> None:
        if self._ui_timer is not None:
            self._ui_timer.stop()
            self._ui_timer = None
        if self._heartbeat is not None:
            self._heartbeat.stop()
            self._heartbeat = None

    async def on_unmount(self) -> None:
        from .remote import RemoteInstanceModel

        self._stop.set()
        self._stop_presence()
        for model in self._models or []:
            if isinstance(model, RemoteInstanceModel):
                model.close()

    # -- reading, off the UI thread --------------------------------------------------------------

    @work(exclusive=False, group="watch")
    async def watch_instances(self, states: dict[int, Path]) -> None:
        """One watcher for every local instance; each change is told to its own instance."""
        from watchfiles import awatch

        prefixes = sorted(((str(path) + os.sep, i) for i, path in states.items()), reverse=True)
        async for changes in awatch(
            *states.values(),
            watch_filter=_watch_filter,
            debounce=200,
            step=WATCH_STEP_MS,
            stop_event=self._stop,
            recursive=True,
        ):
            told: set[int] = set()
            for _, changed in changes:
                for prefix, index in prefixes:  # the longest first: a nested instance is its own
                    if changed.startswith(prefix):
                        self._changed.setdefault(index, set()).add(Path(changed))
                        told.add(index)
                        break
            for index in told:
                self.post_message(InstanceChanged(index))

    def _remote_changed(self, index: int) -> None:  # from a remote model's stream thread
        self.post_message(InstanceChanged(index))

    def _safety_net(self) -> None:
        """A lost watch event must not hide an append: the logs' sizes are looked at (a stat
        each), and an instance is read only when they moved; unit records change with a watch
        event of their own. The header's "as of" moves on when nothing did."""
        unchanged = True
        for index, model in enumerate(self.models):
            if index in self._folding or index in self._pending:
                unchanged = False
            elif model.unread_changes():
                unchanged = False
                self._changed.setdefault(index, set())
                self.post_message(InstanceChanged(index))
        main = self.main
        if unchanged and main is not None and not self.paused:
            self.last_refresh = self.clock()
            main.as_of = _hms(self.last_refresh)

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
        from .model import Changes

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
        changed = changes.full or changes.obligations or changes.units
        if changes.obligations or changes.full:
            # A closed obligation is new no more (its row, and ``is:new``, agree).
            for key in [k for k in self.new if k.instance == index]:
                closed = model.log.obligations.get(key.oid)
                if closed is None or closed.status in TERMINAL_STATUSES:
                    self.new.discard(key)
        if changed:
            for o in changes.new_obligations:
                self._arrived(index, model, o)
            was = self._unshown.get(index)
            self._unshown[index] = changes if was is None else _merged(was, changes)
        if changed and any(not m.loaded for m in self.models):
            # Instances are still being read for the first time: what is in is shown every
            # SHOW_WHILE_READING_S, not after each read (each showing re-sorts the inbox).
            if self._show_timer is None:
                self._show_timer = self.set_timer(SHOW_WHILE_READING_S, self._show_unshown)
        else:
            self._show_unshown()
        main = self.main
        if main is not None:
            with self.batch_update():
                main.as_of = _hms(self.last_refresh)
                main.problems = sum(m.problem_count for m in self.models)
                main.reading = sum(not m.loaded for m in self.models)
        if changed:
            # The dialogs and the inspector say what a change means to them (named, not
            # imported here: the first reads run before those modules are needed).
            for screen in self.screen_stack:
                instance_changed = getattr(screen, "instance_changed", None)
                if instance_changed is not None:
                    instance_changed(model)
        if index in self._after_act:
            self._say_next_step(index)
        if index in self._pending and not self.paused:
            self._start_fold(index)

    def _show_unshown(self) -> None:
        """The inbox and the parts bound to ``version`` show what the folds brought."""
        if self._show_timer is not None:
            self._show_timer.stop()
            self._show_timer = None
        main = self.main
        if main is None or not self._unshown:
            return
        unshown, self._unshown = self._unshown, {}
        with self.batch_update():
            full = [i for i, c in unshown.items() if c.full]
            if full:  # a rebuild: every instance read so far, as it is now
                main.inbox.apply(full[0], unshown[full[0]])
            else:
                for i, c in unshown.items():
                    main.inbox.apply(i, c)
            main.version += 1
        if not self._data_drawn.is_set() and all(m.loaded for m in self.models):
            self.call_after_refresh(self._data_drawn.set)

    def _arrived(self, index: int, model: InstanceView, o: ObligationState) -> None:
        """Something new owed to a person at blocking or above: marked, told, and rung."""
        from .render import one_line

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
        """The room is open and every instance has been read once (and nothing is being read
        now)."""
        if self._models is None or self.main is None:
            return False
        return all(m.loaded for m in self._models) and not self._folding

    # -- who is acting -------------------------------------------------------------------------

    @property
    def os_user(self) -> str:
        from regulator.host.instance import os_user

        return os_user()

    @property
    def acting_refusal(self) -> str | None:
        """Why nobody may act from this room, in one line: it runs inside an agent's session
        (its environment, or an agent process among its ancestors); ``None`` when it does not.
        Read once: where a process runs does not change while it runs."""
        if self._refusal is None:
            from regulator.host.person_acts import FROM_ROOM, inside_agent, refusal

            from .model import InstanceModel

            environ = os.environ if self._env is None else self._env
            layouts = [m.layout for m in self.models if isinstance(m, InstanceModel)]
            why = inside_agent(layouts, env=environ)
            self._refusal = (None if why is None else refusal(why, FROM_ROOM),)
        return self._refusal[0]

    @property
    def actor(self) -> Actor:
        """Who acts, for provenance: every act of the room is made with it, so a room inside
        an agent's session is refused here, before a dialog opens or anything is written."""
        from regulator.rules.ledger import Actor

        refused = self.acting_refusal
        if refused is not None:
            from regulator.host.person_acts import InsideAgent

            raise InsideAgent(refused)
        return Actor(via="room", os_user=self.os_user)

    def _acting(self) -> Actor | None:
        """The actor, or ``None`` with the refusal said where the room says one."""
        from regulator.host.person_acts import InsideAgent
        from regulator.protocol.errors import message_of

        try:
            return self.actor
        except InsideAgent as exc:
            self.notify(message_of(exc), title="refused", severity=severity_of(exc), markup=False)
            return None

    def grants_text(self) -> str:
        from .model import grants

        if self.acting_refusal is not None:
            return "looking only: this room runs inside an agent's session"
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
        from .bindings import ACTS

        return tuple(self.may(a) for a in ACTS)

    def may(self, action: str) -> bool | None:
        """Footer state for an action on the selected obligation: True, None (greyed) or False."""
        selected = self.selected()
        if selected is None or self.person is None:
            return None
        model, o = selected
        if action == "drive":  # the obligation's unit, once nothing holds it (resolved or not)
            if o.unit is None or model.remote:
                return None
            step = model.next_step(o.unit)
            return True if step is not None and step.act == "drive" else None
        if o.status in TERMINAL_STATUSES:
            return None
        if action == "answer":
            return True if o.concern == "interaction" else None
        if action in ("replan", "remediate"):
            from .dialogs.recovery import waits_on

            return waits_on(model, o) == action  # hidden unless the unit waits on it
        return True

    def selection_rested(self) -> None:
        if not self.screen_stack:  # the room is ending: a rest posted before has no keys to show
            return
        state = self.binding_state()
        if state != self._bindings_state:
            self._bindings_state = state
            self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Until the models are built there is no policy to pick from, no problems to list,
        # and nothing being read to pause: shown, greyed.
        if action in ("person", "problems", "pause") and not self.opened:
            return None
        return True

    def action_person(self) -> None:
        from .dialogs.person import PersonPicker
        from .model import grants

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
        from .render import one_line, plain

        if self._models is None:
            return [
                Text(f"⏳ {_name(root)} is still being read: a session there may be waiting")
                for root in self.roots
            ]
        lines = [
            Text(f"⏳ {m.name} is still being read: a session there may be waiting")
            for m in self.models
            # A remote instance never reached holds nothing this room could answer.
            if not m.loaded
            and not (m.remote and getattr(m, "connection", "") not in ("connected", "connecting…"))
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

    def _handle_exception(self, error: Exception) -> None:
        # Leaving the room prunes its screens while their parts may still be mounting (a ``q``
        # or a test's end during the opening): a part that looks for a sibling already pruned
        # has nothing left to show, and the room was ending anyway. Textual's own tab strip
        # says so as a ValueError ("No Tab with id ...") when its tabs went first.
        if not self.is_running and (
            isinstance(error, NoMatches)
            or (isinstance(error, ValueError) and str(error).startswith("No Tab with id"))
        ):
            return
        super()._handle_exception(error)

    async def action_quit(self) -> None:
        """Quit, but ask first while a session waits on a person; staying is the default."""
        from .dialogs.quit import QuitConfirm

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
        """The main screen, once it is up (a look at it costs no query of the DOM)."""
        main = self._main
        return main if main is not None and main.is_attached else None

    @property
    def inbox_table(self) -> RowTable[RowKey] | None:
        main = self.main
        return main.inbox_table if main is not None else None

    def lookup(self, key: RowKey) -> tuple[InstanceView, ObligationState]:
        model = self.models[key.instance]
        return model, model.log.obligations[key.oid]

    def selected(self) -> tuple[InstanceView, ObligationState] | None:
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
        from regulator.protocol.ours import Receipt
        from regulator.rules.ledger import json_line
        from regulator.store import locked_log

        from .model import InstanceModel

        model, o = self.lookup(key)
        self.new.discard(key)
        # No receipt is written here for a host, nor by a room inside an agent's session: a
        # receipt says a person saw the obligation.
        if (
            self.person is not None
            and isinstance(model, InstanceModel)
            and self.acting_refusal is None
        ):
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
            main.action_preset()

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
        from .inbox_index import PRESETS
        from .screens.inspector import UnitInspector

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

    # -- what the screens and the dialogs post (``messages``) -----------------------------------

    def on_act(self, message: Act) -> None:
        """An act key: on the unit in focus, else on the inbox's selected obligation."""
        which, unit = message.which, message.unit
        if unit is not None:
            self.act_on_unit(which, unit.instance, unit.unit_id)
        elif which in ("replan", "remediate"):
            self.open_recovery(which)
        elif which == "drive":
            self.drive_selected()
        else:
            self.open_dialog(which)

    def on_open_unit(self, message: OpenUnit) -> None:
        self.open_unit(message.instance, message.unit_id)

    def on_open_selected_unit(self, _message: OpenSelectedUnit) -> None:
        self.open_unit_of_selection()

    def on_open_obligation(self, message: OpenObligation) -> None:
        self.open_obligation(message.key)

    def on_go_to_obligation(self, message: GoToObligation) -> None:
        self.go_to_obligation(message.instance, message.oid)

    def on_go_to_waiting(self, _message: GoToWaiting) -> None:
        self.go_to_waiting()

    def on_keep(self, message: Keep) -> None:
        self.keep(message.message, title=message.title, severity="error", unit=message.unit)

    def on_inbox_view_rested(self, _message: InboxView.Rested) -> None:
        """The inbox's cursor came to rest: which act keys apply may have changed."""
        self.selection_rested()

    def may_act(self, which: str, unit: UnitKey | None) -> bool | None:
        """Footer state for an act key (the screens ask): on ``unit``, else on the selection."""
        if unit is not None:
            return self.may_on_unit(which, unit.instance, unit.unit_id)
        return self.may(which)

    def next_key(self, act: str | None) -> str:
        """``press R to replan`` for a next step's act, or '' while nobody is acting."""
        return self.key_for_act(act) if self.person is not None else ""

    def open_dialog(
        self, which: str, target: tuple[InstanceView, ObligationState] | None = None
    ) -> None:
        """Answer, resolve, acknowledge or escalate ``target`` (else the inbox's selection)."""
        from .dialogs.answer import AnswerDialog
        from .dialogs.obligation import AcknowledgeDialog, EscalateDialog, ResolveDialog

        actor = self._acting()
        if actor is None:
            return
        selected = target if target is not None else self.selected()
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
                unit=o.unit,
            )
            return
        dialog: ActDialog = {
            "answer": AnswerDialog,
            "resolve": ResolveDialog,
            "acknowledge": AcknowledgeDialog,
            "escalate": EscalateDialog,
        }[which](model, o, self.person, actor)
        self.push_screen(dialog, partial(self._dialog_done, model, o.unit))

    def _dialog_done(self, model: InstanceView, unit_id: str | None, done: Done | None) -> None:
        if done is None:
            return
        self.notify(done.message, title="done", unit=unit_id)
        index = self.models.index(model)
        if unit_id is not None and not model.remote:
            # Once the act is read back, the unit's next step is said (``on_folded``).
            self._after_act[index] = unit_id
        self.request_fold(index, None)

    def _say_next_step(self, index: int) -> None:
        unit_id = self._after_act.pop(index, None)
        if unit_id is None:
            return
        step = self.models[index].next_step(unit_id)
        if step is None:
            return
        key = self.key_for_act(step.act)
        self.notify(
            f"{step.text}" + (f" — {key}" if key else ""),
            title=f"unit {unit_id}: next",
            unit=unit_id,
        )

    def key_for_act(self, act: str | None) -> str:
        """``press R to replan``: the key that takes a next step, as bound now ('' for none)."""
        words = {
            "answer": ("main.answer", "answer"),
            "resolve": ("main.resolve", "resolve"),
            "replan": ("main.replan", "replan"),
            "remediate": ("main.remediate", "remediate"),
            "drive": ("main.drive", "drive it again"),
        }.get(act or "")
        if words is None:
            return ""
        return f"press {self.key_for(words[0])} to {words[1]}"

    # -- acting on a unit: the inspector and the units table ------------------------------------

    def unit_obligation(
        self, model: InstanceView, unit_id: str, which: str
    ) -> ObligationState | None:
        """The obligation an act on a unit is on: what its next step names (the wait, the
        question, the veto), else its first open obligation; for ``answer``, its question."""
        step = model.next_step(unit_id)
        named = step.obligation if step is not None else None
        with model.lock:
            open_ = sorted(model.log.open_obligations(unit_id), key=lambda o: not o.blocks)
        if which == "answer":
            if named is not None and named.concern == "interaction":
                return named
            return next((o for o in open_ if o.concern == "interaction"), None)
        return named if named is not None else (open_[0] if open_ else None)

    def may_on_unit(self, which: str, index: int, unit_id: str) -> bool | None:
        """Footer state for an act on a unit (the inspector's, the units table's)."""
        if self.person is None or not self.models:
            return None
        model = self.models[index]
        if model.remote:
            return None
        step = model.next_step(unit_id)
        if step is None:
            return None
        if which == "drive":
            return True if step.act == "drive" else None
        if which == "remediate":
            return True if step.act == "remediate" else None
        if which == "replan":
            unit = model.units.get(unit_id)
            return True if unit is not None and unit.status in ("blocked", "contracted") else None
        return True if self.unit_obligation(model, unit_id, which) is not None else None

    def act_on_unit(self, which: str, index: int, unit_id: str) -> None:
        """``a r c e R m d`` on a unit: the same acts as the inbox's, on what the unit waits on."""
        model = self.models[index]
        if model.remote:
            self.notify(
                f"{model.name}: unit acts do not reach a remote instance yet; act on its"
                " obligations in the inbox, or run `regulator` on that host",
                severity="warning",
            )
            return
        if which == "drive":
            self.drive_again(index, unit_id)
            return
        if which in ("replan", "remediate"):
            step = model.next_step(unit_id)
            wait = step.obligation if step is not None and step.act == which else None
            self.open_recovery(which, (model, unit_id, wait))
            return
        o = self.unit_obligation(model, unit_id, which)
        if o is None:
            what = "no question open" if which == "answer" else "nothing open"
            self.notify(f"unit {unit_id}: {what} to {which}", severity="warning", unit=unit_id)
            return
        self.open_dialog(which, (model, o))

    def drive_again(self, index: int, unit_id: str) -> None:
        """``d``: drive a unit nothing holds any more (the room asks first)."""
        from regulator.protocol.errors import RegulatorError, message_of

        if self._acting() is None:
            return
        if self.person is None:
            self.notify("nobody is acting: press P to pick a person", severity="warning")
            return
        model = self.models[index]
        step = model.next_step(unit_id)
        if step is None or step.act != "drive":
            why = step.text if step is not None else "no such unit"
            key = self.key_for_act(step.act if step is not None else None)
            self.notify(
                f"unit {unit_id} is not ready to drive: {why}" + (f" — {key}" if key else ""),
                title=f"drive {unit_id}",
                severity="warning",
                unit=unit_id,
            )
            return
        try:
            loop = self._local_loop(model)
        except RegulatorError as exc:
            self.notify(
                message_of(exc), title=f"drive {unit_id}", severity=severity_of(exc), unit=unit_id
            )
            return
        self._offer_drive(model, loop, unit_id, ask=True)

    def open_recovery(
        self,
        which: str,
        target: tuple[InstanceView, str, ObligationState | None] | None = None,
    ) -> None:
        """``R`` / ``m``: act on the recovery decision a unit waits on: the selected
        obligation's unit, or ``target`` (a unit, and the wait, if any). A replan needs no
        wait: a unit that spent its attempts goes on under a new version."""
        from regulator.protocol.errors import RegulatorError, message_of

        from .dialogs.recovery import RemediateDialog, ReplanDialog, edit_contract, waits_on

        actor = self._acting()
        if actor is None:
            return
        if self.person is None:
            self.notify("nobody is acting: press P to pick a person", severity="warning")
            return
        wait: ObligationState | None
        if target is None:
            selected = self.selected()
            if selected is None:
                self.notify("select an obligation, acting as someone (P)", severity="warning")
                return
            model, wait = selected
            if waits_on(model, wait) != which or wait.unit is None:
                self.notify(
                    f"{wait.id[:8]}: its unit waits on no {which} decision", severity="warning"
                )
                return
            unit_id = wait.unit
        else:
            model, unit_id, wait = target
            if wait is not None and waits_on(model, wait) != which:
                wait = None
            if which == "remediate" and wait is None:
                step = model.next_step(unit_id)
                self.notify(
                    f"unit {unit_id} waits on no remediation"
                    + (f": {step.text}" if step is not None else ""),
                    title="remediate",
                    severity="warning",
                    unit=unit_id,
                )
                return
        try:
            loop = self._local_loop(model)
            current = loop.current_contract(unit_id)
        except RegulatorError as exc:  # a policy that does not load, a missing contract
            self.notify(message_of(exc), title=which, severity=severity_of(exc), unit=unit_id)
            return
        if which == "remediate":
            assert wait is not None
            dialog: ActDialog = RemediateDialog(model, wait, self.person, actor, loop=loop)
            self.push_screen(dialog, partial(self._recovered, model, loop, unit_id, False))
            return
        edited, why = edit_contract(self, current)
        if edited is None:
            self.notify(why, title="replan", severity="warning", unit=unit_id)
            return
        dialog = ReplanDialog(
            model, wait, self.person, actor, loop=loop, current=current, edited=edited
        )
        self.push_screen(dialog, partial(self._recovered, model, loop, unit_id, True))

    def _recovered(
        self, model: InstanceView, loop: Loop, unit_id: str, ask: bool, done: Done | None
    ) -> None:
        """A replan asks before driving (it starts a session); a remediation drives at once,
        unless the unit type has gates regulator does not enforce or runs scripted sessions:
        then the person is asked (driving accepts those gates for this drive)."""
        self._dialog_done(model, unit_id, done)
        if done is None:
            return
        self._offer_drive(model, loop, unit_id, ask=ask)

    def _offer_drive(self, model: InstanceView, loop: Loop, unit_id: str, *, ask: bool) -> None:
        """Drive ``unit_id``: at once, or after the drive dialog (asked for, or needed to name
        what is not enforced or the scenario to play). What refuses the drive is said where
        the person acted (the dialog, else a notification kept in the log)."""
        from regulator.protocol.errors import RegulatorError, message_of

        from .dialogs.drive import DriveConfirm, drive_refusal, needs_scenario, use_scenario

        index = self.models.index(model)
        try:
            contract = loop.current_contract(unit_id)
        except RegulatorError as exc:
            self.notify(
                message_of(exc), title=f"drive {unit_id}", severity=severity_of(exc), unit=unit_id
            )
            return
        gaps = loop.workload.unenforced(contract.unit_type)
        accepted = f"in the room by {self.person or 'the person at the room'}" if gaps else None
        scripted = needs_scenario(loop, contract.unit_type)

        def check(given: str | None) -> str | None:
            if given is not None:
                try:
                    use_scenario(loop, Path(given).expanduser())
                except RegulatorError as exc:
                    return message_of(exc)
                self.scenarios[index] = given
            loop.accept_unenforced = accepted
            return drive_refusal(loop, unit_id)

        go = partial(self._drive, model, loop, unit_id, accepted)
        if not ask and not gaps and not scripted:
            refused = check(None)
            if refused is not None:
                self.notify(refused, title=f"drive {unit_id}", severity="error", unit=unit_id)
                return
            go()
            return
        prefill = self.scenarios.get(index, self.scenario_default or "") if scripted else None
        dialog = DriveConfirm(
            unit_id, contract.version, contract.unit_type, gaps, scenario=prefill, check=check
        )
        self.push_screen(dialog, lambda yes: go() if yes else None)

    def _drive(
        self, model: InstanceView, loop: Loop, unit_id: str, accepted: str | None = None
    ) -> None:
        """Drive the unit under its contract in force, on a worker thread; the room stays
        usable and is told when it starts and how it ended (a notification about the unit,
        kept in the log), and reads the instance again. ``accepted``: how the person accepted,
        for this drive, what regulator does not enforce of the unit type (the gate refuses it
        else)."""
        from regulator.protocol.errors import RegulatorError, message_of

        self.notify(f"driving unit {unit_id} …", title=f"drive {unit_id}", unit=unit_id)
        loop.accept_unenforced = accepted
        index = self.models.index(model)

        def said(text: str, severity: str) -> None:
            self.notify(text, title=f"drive {unit_id}", severity=severity, unit=unit_id)
            self.request_fold(index, None)

        def drive() -> None:
            try:
                contract = loop.current_contract(unit_id)
                outcome = loop.drive(contract).outcome
            except RegulatorError as exc:
                self.call_from_thread(said, message_of(exc), severity_of(exc))
                return
            if outcome.status == "closed":
                text, severity = f"unit {unit_id} closed under v{contract.version}", "information"
            else:
                problems = "; ".join(outcome.problems)
                text = f"unit {unit_id}: {outcome.reason or outcome.status}" + (
                    f" ({problems})" if problems else ""
                )
                severity = "warning" if outcome.status != "refused" else "error"
            self.call_from_thread(said, text, severity)

        self.run_worker(drive, thread=True, group=f"drive-{unit_id}", exit_on_error=False)

    def drive_selected(self) -> None:
        """``d`` with no unit in focus: drive the unit of the inbox's selected obligation."""
        selected = self.selected()
        if selected is None or selected[1].unit is None:
            self.notify("select a unit, or an obligation on one", severity="warning")
            return
        model, o = selected
        self.drive_again(self.models.index(model), o.unit or "")

    def open_unit_of_selection(self) -> None:
        selected = self.selected()
        if selected is None or selected[1].unit is None:
            self.notify("this obligation names no unit", severity="warning")
            return
        model, o = selected
        self.open_unit(self.models.index(model), o.unit or "")

    def _local_loop(self, model: InstanceView) -> Loop:
        """The loop that drives ``model``'s units: a local instance's only."""
        from regulator.protocol.errors import Refused

        from .model import InstanceModel

        if not isinstance(model, InstanceModel):
            raise Refused(f"{model.name}: driving does not reach a remote instance yet")
        return self.loop_for(model)

    def open_unit(self, index: int, unit_id: str) -> None:
        from .model import InstanceModel
        from .screens.inspector import UnitInspector

        model = self.models[index]
        if not isinstance(model, InstanceModel):
            self.notify(
                f"{model.name}: the inspector (replay, unit actions) does not reach"
                " a remote instance yet; run `regulator unit show` on that host",
                severity="warning",
            )
            return
        self.push_screen(
            UnitInspector(
                model,
                unit_id,
                index=index,
                may=self.may_act,
                next_key=self.next_key,
                notices=self.notices,
            )
        )

    # -- app-wide actions ----------------------------------------------------------------------

    def key_for(self, binding_id: str) -> str:
        """The keys bound to ``binding_id`` now (a keymap may have changed them), for display."""
        for binding in [*APP, *MAIN, *INSPECTOR, *TABLE]:
            if isinstance(binding, Binding) and binding.id == binding_id:
                keys = self._keymap.get(binding_id, binding.key)
                return " ".join(
                    self.get_key_display(Binding(k.strip(), "")) for k in keys.split(",")
                )
        return ""

    def action_help(self) -> None:
        from .dialogs.lists import HelpScreen

        rows = [
            (" ".join(self.key_for(i) for i in ids.split()) if ids else "", what)
            for ids, what in HELP
        ]
        self.push_screen(HelpScreen(rows))

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: Any = "information",
        timeout: float | None = None,
        markup: bool = True,
        unit: str | None = None,
    ) -> None:
        """A toast, and a line kept in the notifications log (``n``); ``unit``: the unit it is
        about (the inspector on that unit shows it under its first line)."""
        self.keep(str(message), title=title, severity=str(severity), unit=unit)
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def keep(
        self, message: str, *, title: str = "", severity: str = "error", unit: str | None = None
    ) -> None:
        """Keep a line in the notifications log without a toast: what a dialog refused is
        shown in the dialog, and kept here once the dialog is gone."""
        notice = Notice(_hms(self.clock()), title, message, severity, unit)
        self.notices.append(notice)
        for screen in self.screen_stack:
            noticed = getattr(screen, "noticed", None)
            if noticed is not None:
                noticed(notice)

    def action_notifications(self) -> None:
        from .dialogs.lists import NotificationsScreen

        self.push_screen(NotificationsScreen(list(self.notices)))

    def action_problems(self) -> None:
        from .dialogs.lists import ProblemsScreen

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
        if main is None:
            return  # still opening: nothing to act on yet
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
        yield ("drive the selected unit again", "d", lambda: main.action_drive())
        yield ("show the notifications log", "n", self.action_notifications)
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
