"""The CLI's own errors, apart from the dispatcher so that a command module never imports it.

Both are refusals: what was typed is not something the command can do. Every other error of
regulator reaches the dispatcher as one of the three roots of ``regulator.protocol.errors``.
"""

from __future__ import annotations

from regulator.protocol.errors import Refused


class CliError(Refused):
    """A refusal found by a command itself: printed as ``regulator: <message>``, exit 1."""


class UsageError(Refused):
    """Bad usage found after parsing: printed with the usage line, exit 2."""
