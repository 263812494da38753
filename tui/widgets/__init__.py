"""The room's own widgets."""
