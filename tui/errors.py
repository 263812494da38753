"""How the room shows an error of regulator: the one table from an error's root to the severity
of its notification (a toast, and its line in the notifications log).

A refusal is a warning: the person may ask differently, nothing is wrong with the instance.
Corrupt state and a host failure are errors: a file needs mending, or the machine did not do it.
"""

from __future__ import annotations

from typing import Literal

from regulator.protocol.errors import ErrorKind, RegulatorError, kind_of

Severity = Literal["information", "warning", "error"]

SEVERITY: dict[ErrorKind, Severity] = {
    "refused": "warning",
    "corruptState": "error",
    "hostFailure": "error",
}


def severity_of(error: RegulatorError) -> Severity:
    """The severity the room shows ``error`` with."""
    return SEVERITY[kind_of(error)]
