"""The command palette: the room's commands before anything is typed, and "go to" any unit or
obligation by id or prefix once something is."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider

from .render import one_line

if TYPE_CHECKING:
    from .app import RoomApp


class RoomCommands(Provider):
    @property
    def room(self) -> RoomApp:
        from .app import RoomApp

        app = self.app
        assert isinstance(app, RoomApp)
        return app

    async def discover(self) -> Hits:
        for name, help_text, callback in self.room.palette_commands():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        room = self.room
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
                        partial(room.open_unit, index, unit_id),
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
                    partial(room.go_to_obligation, index, o.id),
                    help=o.status,
                )
                count += 1
            if count > 50:
                return


__all__ = ["RoomCommands"]
