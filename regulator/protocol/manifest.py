"""The instance manifest: ``.regulator/instance.json`` (upstream-core §1.1), written by init."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, field_validator

from regulator.protocol.base import Record
from regulator.protocol.evidence import NonEmptyStr


def _check_prefix(prefix: str) -> str:
    # A declared prefix is joined to the repository root and compared against paths a unit
    # writes: it must stay inside the repository and match by whole directories.
    if not prefix.endswith("/"):
        raise ValueError(f"{prefix!r} must end with '/'")
    if prefix.startswith("/"):
        raise ValueError(f"{prefix!r} must be relative (no leading '/')")
    if "\\" in prefix:
        raise ValueError(f"{prefix!r} must not contain a backslash")
    if ".." in prefix.split("/"):
        raise ValueError(f"{prefix!r} must not contain '..'")
    return prefix


PathPrefix = Annotated[str, AfterValidator(_check_prefix)]


class ManifestDefinition(Record):
    """What "the definition" meant the day the instance was initialized."""

    # Absolute path of the definition.
    root: NonEmptyStr
    # Always ``regulator`` as init writes it; the original's schema only asks for non-empty.
    name: NonEmptyStr
    # Number of registry records at init.
    registry: Annotated[int, Field(ge=0)]
    # Git HEAD of the definition repository, or ``unknown``.
    harness_revision: NonEmptyStr
    # The host version the definition pins, or ``none``.
    pi: NonEmptyStr


class InstanceManifest(Record):
    version: Literal[1] = 1
    definition: ManifestDefinition
    # Declared by a person at init, not discovered.
    writable_paths: list[PathPrefix] | None = None
    protected_paths: list[PathPrefix] | None = None
    initialized_at: NonEmptyStr
    # ``--by``, default ``user@host``; asserted, not checked against any policy.
    initialized_by: NonEmptyStr

    @field_validator("version", mode="before")
    @classmethod
    def _version_is_the_number_one(cls, value: Any) -> Any:
        # ``Literal[1]`` alone would take ``true`` (True == 1 in Python); the original would not.
        if isinstance(value, bool):
            raise ValueError("expected the number 1")
        return value
