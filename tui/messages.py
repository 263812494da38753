"""Messages the room's parts send up to the App (which owns the models and acts).

A screen or a dialog never calls the App: what a person did is posted as one of these, and
bubbles up to the App, which decides what happens. What a screen needs to know (which keys
apply, how a key is bound now) it is handed when it is made.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

from .keys import RowKey, UnitKey

if TYPE_CHECKING:  # the room's first screen is drawn before the model (and the core) loads
    from .model import Changes


class InstanceChanged(Message):
    """Files of instance ``index`` changed. The paths are kept by the App; a queued message
    for the same instance stands for a newer one, so a burst of changes is one refresh."""

    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, InstanceChanged) and message.index == self.index


class Folded(Message):
    """A worker folded what changed in instance ``index`` (posted from its thread)."""

    def __init__(self, index: int, changes: Changes, error: str | None = None) -> None:
        super().__init__()
        self.index = index
        self.changes = changes
        self.error = error


@dataclass(frozen=True)
class Notice:
    """One notification the room gave, kept for the notifications log (``n``); ``unit``: the
    unit it is about, when it is about one (the inspector shows the last such)."""

    at: str
    title: str
    message: str
    severity: str
    unit: str | None = None


class Act(Message):
    """An act key (``bindings.ACTS``: answer, resolve, …, drive) was pressed: on ``unit`` when a
    unit is what the screen has in focus, else on the inbox's selected obligation."""

    def __init__(self, which: str, unit: UnitKey | None = None) -> None:
        super().__init__()
        self.which = which
        self.unit = unit


class OpenUnit(Message):
    """Open the inspector on unit ``unit_id`` of instance ``instance``."""

    def __init__(self, instance: int, unit_id: str) -> None:
        super().__init__()
        self.instance = instance
        self.unit_id = unit_id


class OpenSelectedUnit(Message):
    """Open the inspector on the unit of the inbox's selected obligation."""


class OpenObligation(Message):
    """Enter on an inbox row: its detail is opened (and a receipt recorded)."""

    def __init__(self, key: RowKey) -> None:
        super().__init__()
        self.key = key


class GoToObligation(Message):
    """Show obligation ``oid`` of instance ``instance`` in the inbox, wherever the room is."""

    def __init__(self, instance: int, oid: str) -> None:
        super().__init__()
        self.instance = instance
        self.oid = oid


class GoToWaiting(Message):
    """Go to the question a session is waiting on now (the soonest to time out)."""


class Keep(Message):
    """A line for the notifications log, without a toast: what a dialog refused is shown in
    the dialog, and kept once the dialog is gone."""

    def __init__(self, message: str, title: str, unit: str | None) -> None:
        super().__init__()
        self.message = message
        self.title = title
        self.unit = unit


__all__ = [
    "Act",
    "Folded",
    "GoToObligation",
    "GoToWaiting",
    "InstanceChanged",
    "Keep",
    "Notice",
    "OpenObligation",
    "OpenSelectedUnit",
    "OpenUnit",
]
