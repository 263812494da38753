"""The base every record of ``.regulator/`` derives from: a ``msgspec.Struct``.

Records keep the original's camelCase names on disk (``rename="camel"``); Python code uses
snake_case attributes. Closed records (the original's ``additionalProperties: false``) refuse
unknown fields. An optional field left at its default (``None``) is left out when written, as
the original leaves out an absent optional, so a field that is always written has no default.
Reading a line is one checked decode (``regulator.protocol.entry``); no code is generated.

The line types of a log are tagged: the tag (``type``, or ``kind`` for a message) is no field
of the struct but its class's ``tag``, written first; ``record.type`` (``record.kind``) reads
it, as a class attribute the metaclass sets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Self, cast, dataclass_transform

import msgspec


class _RecordMeta(msgspec.StructMeta):
    """Every field keyword-only (a record is built by field names), and a tagged record's
    tag readable as ``record.<tag_field>``."""

    def __new__(
        mcls,
        name: str,
        bases: tuple[type, ...],
        namespace: dict[str, Any],
        **options: Any,
    ) -> _RecordMeta:
        options.setdefault("kw_only", True)
        cls = super().__new__(mcls, name, bases, namespace, **options)
        config = cls.__struct_config__
        if isinstance(config.tag, str) and isinstance(config.tag_field, str):
            setattr(cls, config.tag_field, config.tag)
        return cls


if TYPE_CHECKING:
    # For the type checker, what the metaclass does: every field keyword-only, every record
    # frozen unless it says otherwise. (msgspec's own ``Struct`` tells it neither: a checker
    # takes the first base that transforms a class, so the records' base must not name it.)
    @dataclass_transform(
        kw_only_default=True, frozen_default=True, field_specifiers=(msgspec.field,)
    )
    class _CheckedMeta(type):
        def __new__(
            mcls,
            name: str,
            bases: tuple[type, ...],
            namespace: dict[str, Any],
            **options: Any,
        ) -> _CheckedMeta: ...

    class _Base(metaclass=_CheckedMeta):
        __struct_fields__: ClassVar[tuple[str, ...]]
        __struct_config__: ClassVar[msgspec.structs.StructConfig]

else:

    class _Base(
        msgspec.Struct,
        metaclass=_RecordMeta,
        rename="camel",
        forbid_unknown_fields=True,
        frozen=True,
        omit_defaults=True,
    ):
        pass


class Record(_Base):
    """A closed record: camelCase on disk, unknown fields refused, frozen once built."""

    def to_json_dict(self) -> dict[str, Any]:
        """The record in its on-disk shape: camelCase keys, absent optionals left out."""
        data: dict[str, Any] = msgspec.to_builtins(self)
        return data

    @classmethod
    def from_json_dict(cls, data: Any) -> Self:
        """``data`` (parsed JSON, camelCase keys) as this record, checked as a line is:
        ``ValueError`` naming the field otherwise (see ``entry.validate_record``)."""
        from regulator.protocol.entry import validate_record

        return validate_record(cls, data)

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` (Python names). Their types are not checked again (a writer
        checks what it writes, ``entry.validate_record``); a struct's own ``__post_init__``
        runs."""
        return cast(Self, msgspec.structs.replace(cast(Any, self), **changes))


def field_names(model: type[Record]) -> tuple[str, ...]:
    """The Python names of a record's fields, in order."""
    return model.__struct_fields__


class TypedRecord(Record, tag_field="type"):
    """A line of a log told apart by its ``type``: the tag, written first."""

    type: ClassVar[str]
