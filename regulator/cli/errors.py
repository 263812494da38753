"""The CLI's own errors, and the one table from an error's root to the command's exit status.

Both errors are refusals: what was typed is not something the command can do. Every other error
of regulator reaches the dispatcher as one of the three roots of ``regulator.protocol.errors``,
and exits with the status ``EXIT_STATUS`` gives its root, so a script can tell "no" from "mend a
file" from "try again later" without reading the message.
"""

from __future__ import annotations

from regulator.protocol.errors import ErrorKind, Refused, RegulatorError, kind_of

#: Exit 1: refused (a person or an agent may not, or asked wrongly: ask differently). Exit 4:
#: corrupt state (a record, log or definition file does not read: mend the file named). Exit 5:
#: a host failure (git, a process, a lease, the file system: try again later or elsewhere).
#: 2 is bad usage and 3 ``regulator ask``'s "nobody answered", so neither is used here.
EXIT_STATUS: dict[ErrorKind, int] = {"refused": 1, "corruptState": 4, "hostFailure": 5}
USAGE_STATUS = 2


def exit_status(error: RegulatorError) -> int:
    """The exit status of a command that ends with ``error``."""
    return USAGE_STATUS if isinstance(error, UsageError) else EXIT_STATUS[kind_of(error)]


class CliError(Refused):
    """A refusal found by a command itself: printed as ``regulator: <message>``, exit 1."""


class UsageError(Refused):
    """Bad usage found after parsing: printed with the usage line, exit 2."""
