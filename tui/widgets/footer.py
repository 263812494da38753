"""The footer: the keys that apply where the focus is, help and quit always first.

Textual's footer lists the focused widget's keys before the app's, so on a narrow terminal
the app's own (``?`` help, ``q`` quit) are the ones cut off. This one puts the pinned keys
first and then the rest in Textual's order.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from ..bindings import PINNED


class RoomFooter(Footer):
    def on_resize(self) -> None:
        # Narrow: less space between keys, so more of them show.
        self.compact = self.app.size.width < 120
        # Where it would cover the last keys, the palette's key goes (ctrl+p still works).
        self.show_command_palette = self.app.size.width >= 100

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        active = self.screen.active_bindings
        shown: dict[str, tuple[Binding, bool, str]] = {}
        for _, binding, enabled, tooltip in active.values():
            if binding.show and binding.action not in shown:
                shown[binding.action] = (binding, enabled, tooltip)
        ordered = sorted(
            shown.values(),
            key=lambda item: 0 if item[0].id in PINNED else 1,
        )
        for binding, enabled, tooltip in ordered:
            yield FooterKey(
                binding.key,
                self.app.get_key_display(binding),
                binding.description,
                binding.action,
                disabled=not enabled,
                tooltip=tooltip,
            ).data_bind(compact=Footer.compact)
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE:
            palette = active.get(self.app.COMMAND_PALETTE_BINDING)
            if palette is not None:
                _, binding, enabled, _tooltip = palette
                yield FooterKey(
                    binding.key,
                    self.app.get_key_display(binding),
                    binding.description,
                    binding.action,
                    classes="-command-palette",
                    disabled=not enabled,
                    tooltip=binding.tooltip or binding.description,
                )


__all__ = ["RoomFooter"]
