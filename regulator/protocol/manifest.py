"""The instance manifest: ``.regulator/instance.json`` (docs/design.md#the-instance-manifest),
written by init."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from regulator.protocol.base import Record
from regulator.protocol.evidence import NonEmptyStr


def _prefix_problem(prefix: str) -> str | None:
    # A declared prefix is joined to the repository root and compared against paths a unit
    # writes: it must stay inside the repository and match by whole directories.
    if not prefix.endswith("/"):
        return f"{prefix!r} must end with '/'"
    if prefix.startswith("/"):
        return f"{prefix!r} must be relative (no leading '/')"
    if "\\" in prefix:
        return f"{prefix!r} must not contain a backslash"
    if ".." in prefix.split("/"):
        return f"{prefix!r} must not contain '..'"
    return None


class ManifestDefinition(Record):
    """What "the definition" meant the day the instance was initialized."""

    # Absolute path of the definition.
    root: NonEmptyStr
    # Always ``regulator`` as init writes it; the original's schema only asks for non-empty.
    name: NonEmptyStr
    # Number of registry records at init.
    registry: Annotated[int, msgspec.Meta(ge=0)]
    # Git HEAD of the definition repository, or ``unknown``.
    harness_revision: NonEmptyStr
    # The host version the definition pins, or ``none``.
    pi: NonEmptyStr


class InstanceManifest(Record):
    version: Literal[1]
    definition: ManifestDefinition
    # Declared by a person at init, not discovered (each checked by ``__post_init__``).
    writable_paths: list[str] | None = None
    protected_paths: list[str] | None = None
    initialized_at: NonEmptyStr
    # ``--by``, default ``user@host``; asserted, not checked against any policy.
    initialized_by: NonEmptyStr

    def __post_init__(self) -> None:
        for name, prefixes in (
            ("writablePaths", self.writable_paths),
            ("protectedPaths", self.protected_paths),
        ):
            for n, prefix in enumerate(prefixes or ()):
                problem = _prefix_problem(prefix)
                if problem is not None:
                    # msgspec reports a post-init error without a path: the message names it.
                    raise ValueError(f"{name}[{n}]: {problem}")
