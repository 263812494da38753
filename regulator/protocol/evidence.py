"""Evidence references (docs/design.md#the-regulatory-log) and the constrained strings the records
share."""

from __future__ import annotations

from typing import Annotated

import msgspec

from regulator.protocol.base import Record
from regulator.protocol.vocab import EvidenceClass

# The original's ``minLength: 1`` strings: ids, subjects, timestamps it writes itself.
NonEmptyStr = Annotated[str, msgspec.Meta(min_length=1)]


class EvidenceRef(Record):
    """A pointer to what supports a claim: a file, a command, a test run, …"""

    # ``class`` is a Python keyword: the attribute is ``class_``, the key on disk ``class``.
    class_: EvidenceClass = msgspec.field(name="class")
    ref: NonEmptyStr
    # The original leaves these two unconstrained: an empty string is a valid value.
    observation: str | None = None
    source_revision: str | None = None
