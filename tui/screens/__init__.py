"""The room's screens."""
