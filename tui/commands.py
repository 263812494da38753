"""The command palette: the room's commands before anything is typed, and "go to" any unit or
obligation by id or prefix once something is.

The provider is made by Textual, with the App as ``self.app``; it reads only what ``Palette``
names (the models, the commands the App offers now), and a "go to" hit posts a message to the
App (``messages``), as a key would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

from .messages import GoToObligation, OpenUnit
from .render import one_line

if TYPE_CHECKING:
    from .model import InstanceView


class Palette(Protocol):
    """What the palette reads from the App it is opened in."""

    @property
    def models(self) -> Sequence[InstanceView]: ...

    def palette_commands(self) -> Iterable[tuple[str, str, Callable[[], Any]]]: ...


class RoomCommands(Provider):
    @property
    def room(self) -> Palette:
        return cast("Palette", self.app)

    async def discover(self) -> Hits:
        for name, help_text, callback in self.room.palette_commands():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        room = self.room
        post = self.app.post_message
        matcher = self.matcher(query)
        for name, help_text, callback in room.palette_commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
        q = query.strip().lower()
        if len(q) < 2:
            return
        count = 0
        for index, model in enumerate(room.models):
            if not model.loaded:
                continue
            for unit_id in list(model.units):
                if q in unit_id.lower():
                    yield Hit(
                        1.0,
                        f"go to unit {unit_id}",
                        partial(post, OpenUnit(index, unit_id)),
                        help=model.name,
                    )
                    count += 1
            with model.lock:
                found = [o for oid, o in model.log.obligations.items() if oid.startswith(q)][:50]
            for o in found:
                subject = one_line(o.subject, model.redactor)[:60]
                yield Hit(
                    1.0,
                    f"go to obligation {o.id[:8]}: {subject}",
                    partial(post, GoToObligation(index, o.id)),
                    help=o.status,
                )
                count += 1
            if count > 50:
                return


__all__ = ["Palette", "RoomCommands"]
