"""The acts' key actions, shared by every screen that offers them (``bindings.ACTS``).

Each action hands its name to the screen's ``_act``, which knows what is in focus there (the
inbox's selection or a unit in the main screen, the inspected unit in the inspector) and posts
it to the App (``messages.Act``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..keys import UnitKey

# Whether an act key applies (True), is shown greyed (None) or hidden (False): on a unit, or on
# the inbox's selection when the unit is None. The App answers (``RoomApp.may_act``).
MayAct = Callable[[str, UnitKey | None], bool | None]


class ActKeys:
    if TYPE_CHECKING:  # each screen that uses these defines it

        def _act(self, which: str) -> None: ...

    def action_answer(self) -> None:
        self._act("answer")

    def action_resolve(self) -> None:
        self._act("resolve")

    def action_acknowledge(self) -> None:
        self._act("acknowledge")

    def action_escalate(self) -> None:
        self._act("escalate")

    def action_replan(self) -> None:
        self._act("replan")

    def action_remediate(self) -> None:
        self._act("remediate")

    def action_drive(self) -> None:
        self._act("drive")
