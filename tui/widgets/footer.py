"""The footer: the keys that apply where the focus is, help and quit always first.

Textual's footer lists the focused widget's keys before the app's, so on a narrow terminal
the app's own (``?`` help, ``q`` quit) are the ones cut off. This one puts the pinned keys
first and then the rest in Textual's order.

It is made again only when the keys it would show changed (Textual's remakes it at every
change of bindings, twice when a screen is pushed, though the keys are the same), and each key
is made already wide or compact (Textual's is made compact, then made wide on mount: two
stylings a key).
"""

from __future__ import annotations

from typing import NamedTuple

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from ..bindings import PINNED


class _Key(NamedTuple):
    key: str
    display: str
    description: str
    action: str
    enabled: bool
    tooltip: str
    palette: bool = False


class RoomFooter(Footer):
    _shown: tuple[_Key, ...] | None = None  # the keys composed last

    def on_resize(self) -> None:
        # Narrow: less space between keys, so more of them show.
        self.compact = self.app.size.width < 120
        # Where it would cover the last keys, the palette's key goes (ctrl+p still works).
        self.show_command_palette = self.app.size.width >= 100

    def _wanted(self) -> tuple[_Key, ...]:
        if not self._bindings_ready:
            return ()
        active = self.screen.active_bindings
        shown: dict[str, _Key] = {}
        pinned: set[str] = set()
        for _, binding, enabled, tooltip in active.values():
            if binding.show and binding.action not in shown:
                shown[binding.action] = _Key(
                    binding.key,
                    self.app.get_key_display(binding),
                    binding.description,
                    binding.action,
                    enabled,
                    tooltip,
                )
                if binding.id in PINNED:
                    pinned.add(binding.action)
        keys = sorted(shown.values(), key=lambda k: 0 if k.action in pinned else 1)
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE:
            palette = active.get(self.app.COMMAND_PALETTE_BINDING)
            if palette is not None:
                _, binding, enabled, _tooltip = palette
                keys.append(
                    _Key(
                        binding.key,
                        self.app.get_key_display(binding),
                        binding.description,
                        binding.action,
                        enabled,
                        binding.tooltip or binding.description,
                        palette=True,
                    )
                )
        return tuple(keys)

    async def recompose(self) -> None:
        if self.is_attached and self._shown == self._wanted():
            return  # the same keys: nothing to make again
        await super().recompose()

    def compose(self) -> ComposeResult:
        keys = self._wanted()
        compact = self.compact
        self._shown = keys
        for k in keys:
            # Made as it will be shown, so its watcher does not restyle it on mount: the
            # palette's key is not bound to the footer and stays compact, as in Textual's.
            compact_key = compact or k.palette
            key = FooterKey(
                k.key,
                k.display,
                k.description,
                k.action,
                classes=("-command-palette " if k.palette else "")
                + ("-compact" if compact_key else ""),
                disabled=not k.enabled,
                tooltip=k.tooltip,
            )
            key.set_reactive(FooterKey.compact, compact_key)
            yield key if k.palette else key.data_bind(compact=Footer.compact)


__all__ = ["RoomFooter"]
