"""The main screen: the top bar, the banners, and the Instances, Inbox and Attention tabs.

It composes the parts and passes them what they show (``data_bind`` from its own reactives,
which the App sets); the parts send up what a person did, and the screen posts it on to the App
(``messages``), which acts. It is handed what it shows and a way to ask which act keys apply;
it never calls the App. Nothing here renders a row or a pane itself.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import TabbedContent, TabPane, Tabs

from regulator.protocol.clock import Clock

from ..bindings import ACTS, MAIN
from ..inbox_index import PRESETS
from ..keys import RowKey, UnitKey
from ..messages import Act, GoToWaiting, OpenObligation, OpenSelectedUnit, OpenUnit
from ..model import InstanceView
from ..widgets.attention import AttentionView
from ..widgets.banners import VetoBanner, WaitingBanner
from ..widgets.footer import RoomFooter
from ..widgets.inbox import Counts, InboxTable, InboxView
from ..widgets.instances import InstancesView, UnitsTable
from ..widgets.topbar import TopBar
from .acts import ActKeys, MayAct

FOCUS = {"instances": "#instance-table", "inbox": "#inbox-table", "attention": "#attention"}


class MainScreen(ActKeys, Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = list(MAIN)

    # What the parts show, set by the App and bound down in compose. The screen draws none of
    # it itself: a change repaints the parts bound to it, not the whole screen.
    version = reactive(0, init=False, repaint=False)
    person: reactive[str | None] = reactive(None, init=False, repaint=False)
    grants = reactive("", init=False, repaint=False)
    paused = reactive(False, init=False, repaint=False)
    watching = reactive(True, init=False, repaint=False)
    as_of = reactive("", init=False, repaint=False)
    problems = reactive(0, init=False, repaint=False)
    reading = reactive(0, init=False, repaint=False)
    preset = reactive(0, init=False, repaint=False)

    def __init__(
        self,
        models: list[InstanceView],
        clock: Clock,
        new: set[RowKey],
        *,
        may: MayAct,
        person: str | None,
        grants: str,
        watching: bool,
    ) -> None:
        super().__init__()
        self.models = models
        self.clock = clock
        self.new = new  # the App's set, changed in place: the inbox marks what is in it
        self.may = may
        self.set_reactive(MainScreen.person, person)
        self.set_reactive(MainScreen.grants, grants)
        self.set_reactive(MainScreen.watching, watching)
        self.set_reactive(MainScreen.reading, sum(not m.loaded for m in models))

    def compose(self) -> ComposeResult:
        models, clock = self.models, self.clock
        yield TopBar(id="topbar", classes="topbar").data_bind(
            MainScreen.person,
            MainScreen.grants,
            MainScreen.paused,
            MainScreen.watching,
            MainScreen.as_of,
            MainScreen.problems,
            MainScreen.reading,
        )
        yield VetoBanner(models, id="veto-banner").data_bind(MainScreen.version)
        yield WaitingBanner(models, id="waiting-banner").data_bind(MainScreen.version)
        with TabbedContent(initial="instances", id="tabs"):
            with TabPane("Instances", id="instances"):
                yield InstancesView(models, clock, id="instances-view").data_bind(
                    MainScreen.version
                )
            with TabPane("Inbox", id="inbox"):
                yield InboxView(models, clock, self.new, id="inbox-view").data_bind(
                    MainScreen.person, MainScreen.preset
                )
            with TabPane("Attention", id="attention-tab"):
                yield AttentionView(models, clock, id="attention").data_bind(MainScreen.version)
        yield RoomFooter()

    def on_mount(self) -> None:
        self.query_one("#instance-table").focus()
        self.loading_changed()
        # Watched, not messaged: the label changes in the same frame as the inbox's rows.
        self.watch(self.inbox, "counts", self._counted)

    @property
    def inbox(self) -> InboxView:
        return self.query_one(InboxView)

    @property
    def inbox_table(self) -> InboxTable:
        return self.query_one(InboxTable)

    def watch_reading(self) -> None:
        self.loading_changed()

    def loading_changed(self) -> None:
        # Until the first read of every instance is done, the tables say they are loading; the
        # tabs, the keys and the dialogs that need no data work meanwhile.
        busy = self.reading > 0
        for selector in ("#instance-table", "#inbox-table"):
            self.query_one(selector).loading = busy
        if not busy:
            # A table being loaded cannot hold the focus; give it back once the data is in.
            self.call_after_refresh(self._refocus)

    def _refocus(self) -> None:
        if self.focused is None or isinstance(self.focused, Tabs):
            active = self.query_one("#tabs", TabbedContent).active
            name = "attention" if active == "attention-tab" else active
            self.query_one(FOCUS.get(name, "#instance-table")).focus()

    # -- actions: the screen's own, or posted to the App ------------------------------------------

    def action_tab(self, name: str) -> None:
        tab = "attention-tab" if name == "attention" else name
        self.query_one("#tabs", TabbedContent).active = tab
        # Focus moves into the tab: a tab whose pane holds no focus does not stay shown.
        self.query_one(FOCUS[name]).focus()
        if name == "attention":
            self.query_one(AttentionView).make()

    def _unit_in_focus(self) -> UnitKey | None:
        """The unit under the cursor when the units table has the focus: the acts are on it."""
        focused = self.focused
        if isinstance(focused, UnitsTable):
            key = focused.current_key
            return key if isinstance(key, UnitKey) else None
        return None

    def _act(self, which: str) -> None:
        self.post_message(Act(which, self._unit_in_focus()))

    def action_open_unit(self) -> None:
        self.post_message(OpenSelectedUnit())

    def action_filter(self) -> None:
        self.action_tab("inbox")
        self.inbox.open_filter()

    def action_preset(self) -> None:
        self.preset = (self.preset + 1) % len(PRESETS)

    def action_waiting(self) -> None:
        self.post_message(GoToWaiting())

    def action_back(self) -> None:
        self.inbox.close_filter()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ACTS:
            return self.may(action, self._unit_in_focus())
        return True

    # -- messages from the parts -------------------------------------------------------------------

    @on(TabbedContent.TabActivated, "#tabs")
    def _tab_shown(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id == "attention-tab":
            self.query_one(AttentionView).make()

    def _counted(self, counts: Counts | None) -> None:
        if counts is None:
            return
        # The counts take the width of what they can reach, so that filtering keeps the tab's
        # width: a tab that changes width slides the underline for 0.3 s, frames that cost.
        shown = f"{counts.shown:>{len(str(counts.of))}}"
        vetoes = f"{counts.vetoes:>{len(str(counts.of_vetoes))}}"
        label = f"Inbox ({shown} · {vetoes} veto · {counts.preset})"
        tab = self.query_one("#tabs", TabbedContent).get_tab("inbox")
        if str(tab.label) != label:  # the same count again lays out nothing
            tab.label = label

    # ``InboxView.Rested`` goes on up to the App: which act keys apply may have changed.

    @on(InboxTable.Selected, "#inbox-table")
    def _open(self, event: InboxTable.Selected) -> None:
        key = event.key
        assert isinstance(key, RowKey)
        self.post_message(OpenObligation(key))
        self.query_one("#detail-pane").focus()

    @on(UnitsTable.Highlighted, "#units")
    def _unit_highlighted(self) -> None:
        self.refresh_bindings()  # the footer shows the acts this unit allows

    @on(UnitsTable.Selected, "#units")
    def _unit(self, event: UnitsTable.Selected) -> None:
        key = event.key
        assert isinstance(key, UnitKey)
        self.post_message(OpenUnit(key.instance, key.unit_id))


__all__ = ["MainScreen"]
