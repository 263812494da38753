"""Messages the room's parts send up to the App (which owns the models and acts)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

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


__all__ = ["Folded", "InstanceChanged", "Notice"]
