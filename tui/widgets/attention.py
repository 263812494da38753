"""The Attention tab: what the instances have spent of people's attention.

The report walks every question and obligation, so it is made on a worker thread, and only
while the tab is shown; a change while it is hidden marks it stale for the next look.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.reactive import reactive
from textual.widgets import Static

from regulator.host.session_units import SESSION_TYPE
from regulator.protocol.clock import Clock
from regulator.views.attention import attention_report, render_attention

from ..model import InstanceView


class AttentionView(VerticalScroll):
    version = reactive(0, init=False)

    def __init__(self, models: list[InstanceView], clock: Clock, **kw: Any) -> None:
        super().__init__(**kw)
        self.models = models
        self.clock = clock
        self._made_for = -1

    def compose(self) -> ComposeResult:
        yield Static(Text("reading…", style="italic"), id="attention-text")

    def watch_version(self) -> None:
        if self.is_on_screen:
            self.make()

    def make(self) -> None:
        """Make the report if what it was made from changed since."""
        if self._made_for == self.version:
            return
        self._made_for = self.version
        self.loading = not self.query_one("#attention-text", Static).visual
        self._report(self.version)

    @work(thread=True, exclusive=True, group="attention")
    def _report(self, version: int) -> None:
        text = Text()
        for model in self.models:
            if not model.loaded:
                continue
            policy = model.interaction_policy()
            with model.lock:
                report = attention_report(
                    model.log,
                    self.clock(),
                    blocking_per_attempt=policy.attention.blocking_per_attempt if policy else None,
                    session_units={
                        unit_id
                        for unit_id, unit in model.units.items()
                        if unit.unit_type == SESSION_TYPE
                    },
                    blocking_per_hour=(
                        policy.attention.for_sessions.blocking_per_hour if policy else None
                    ),
                )
            text.append(f"{model.name}\n", style="bold")
            for line in render_attention(report):
                text.append(line + "\n")
            text.append("\n")
        self.app.call_from_thread(self._show, text)

    def _show(self, text: Text) -> None:
        self.loading = False
        self.query_one("#attention-text", Static).update(text)


__all__ = ["AttentionView"]
