"""Which Bash command lines only read: ``readOnlyCommands`` of ``agents.yaml``, and the check.

A line only reads when its parse (:mod:`regulator.policy.shell`) found nothing uncertain, each
redirection reads or writes to ``/dev/null`` (or duplicates a descriptor), and every simple command
in it is a listed command, named by a plain word, with nothing assigned before it, and only
the words its entry allows:

- a word that begins with ``-`` (before ``--``) is a listed flag: ``-l``; ``-la`` when both ``-l``
  and ``-a`` are listed (unless the entry says ``combinedFlags: false``); ``--name`` exactly;
  ``--name=value`` when ``--name=`` is listed. A flag in ``flagsWithValue`` takes the next word
  as its value (or ``-n5``, ``--lines=5``);
- a word whose start an expansion or a glob decides (``$x``, ``"$x"``, ``*.py``, ``{a,b}``) may
  expand to an option such as ``--output=…``, and is allowed only after ``--``;
- any other word is an operand; ``maxOperands`` bounds them (``git branch`` lists branches
  only without one). An entry with ``subcommands`` takes the first operand as its subcommand,
  which must be listed, and reads the rest with the subcommand's entry;
- ``anyWords: true`` takes every word (``echo``: no word can make it write).

Anything the parse or the list does not cover is not read-only. The check never runs what it
reads; it is pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, Protocol

import msgspec

if TYPE_CHECKING:
    from regulator.policy.shell import Command, Redirect, Script, Word

# A command's or subcommand's name: a plain word, no path, no quoting, no expansion.
COMMAND_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._+-]*")
_SHORT = re.compile(r"-[A-Za-z0-9?@]")
_LONG = re.compile(r"--[A-Za-z0-9][A-Za-z0-9._-]*=?")
_SINGLE_DASH_LONG = re.compile(r"-[A-Za-z][A-Za-z0-9._-]+")
_DESCRIPTOR = re.compile(r"[0-9]+-?")


class CommandSpec(msgspec.Struct, rename="camel", forbid_unknown_fields=True, frozen=True):
    """What one read-only command may be given (see the module's docstring).

    A msgspec struct, decoded on every call the hook answers; each of its own checks names the
    field it concerns, so a refused entry is described field by field
    (``regulator.protocol.entry.every_refusal``)."""

    flags: list[str] = msgspec.field(default_factory=list)
    flags_with_value: list[str] = msgspec.field(default_factory=list)
    max_operands: Annotated[int, msgspec.Meta(ge=0)] | None = None
    any_words: bool = False
    combined_flags: bool = True
    end_of_options: bool = True
    subcommands: dict[str, CommandSpec] = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        with naming("flags"):
            check_flags(self.flags)
        with naming("flagsWithValue"):
            check_flags_with_value(self.flags_with_value)
        with naming("subcommands"):
            for name in self.subcommands:
                check_command_name(name)
        check_consistent(self)


@contextmanager
def naming(field: str) -> Iterator[None]:
    """A check's ``ValueError`` begins with the field it concerns, as a struct's own check
    says where it failed (its path, in msgspec's refusal, is the struct's)."""
    try:
        yield
    except ValueError as exc:
        raise ValueError(f"{field}: {exc}") from None


class _SpecFields(Protocol):
    @property
    def flags(self) -> list[str]: ...
    @property
    def flags_with_value(self) -> list[str]: ...
    @property
    def max_operands(self) -> int | None: ...
    @property
    def any_words(self) -> bool: ...
    @property
    def combined_flags(self) -> bool: ...
    @property
    def subcommands(self) -> Mapping[str, Any]: ...


def check_flags(value: list[str]) -> list[str]:
    for flag in value:
        if not (_SHORT.fullmatch(flag) or _LONG.fullmatch(flag) or _single(flag)):
            raise ValueError(f"{flag!r} is not a flag: -x, --name, --name= or -name")
    return value


def check_flags_with_value(value: list[str]) -> list[str]:
    for flag in value:
        if flag.endswith("=") or not (
            _SHORT.fullmatch(flag) or _LONG.fullmatch(flag) or _single(flag)
        ):
            raise ValueError(f"{flag!r} is not a flag that takes a value: -x, --name or -name")
    return value


def check_consistent(spec: _SpecFields) -> None:
    """The checks across an entry's fields."""
    if spec.any_words and (
        spec.flags or spec.flags_with_value or spec.subcommands or spec.max_operands is not None
    ):
        raise ValueError(
            "anyWords takes every word: flags, flagsWithValue, maxOperands and subcommands "
            "would never be read"
        )
    if spec.combined_flags:
        long_ones = [f for f in [*spec.flags, *spec.flags_with_value] if _single(f)]
        if long_ones:
            raise ValueError(
                f"{long_ones[0]!r} is one dash and several letters, which reads as combined "
                "flags: say combinedFlags: false (as for find)"
            )


def _single(flag: str) -> bool:
    return bool(_SINGLE_DASH_LONG.fullmatch(flag))


def check_command_name(name: str) -> str:
    if not COMMAND_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a command name: a plain word such as ls or git")
    return name


def reads_only(script: Script, commands: Mapping[str, CommandSpec]) -> bool:
    """Whether the parsed line only reads, by the list ``commands``."""
    if script.problems:
        return False
    if not all(redirect_reads(r) for r in script.redirects):
        return False
    return all(command_reads_only(c, commands) for c in script.commands)


def redirect_reads(redirect: Redirect) -> bool:
    """Input, a here-document, a descriptor duplicated or closed, or output to /dev/null."""
    operator = redirect.operator
    target = redirect.target.value if redirect.target is not None else None
    if operator in ("<<", "<<<", ">&-", "<&-"):
        return True
    if operator in (">&", "<&") and target is not None and _DESCRIPTOR.fullmatch(target):
        return True
    # bash itself opens /dev/tcp/HOST/PORT and /dev/udp/…: a connection, not a file.
    if target is None or target.startswith(("/dev/tcp/", "/dev/udp/")):
        return False
    if operator == "<":
        return True
    return operator in (">", ">>", ">|", "&>", "&>>", ">&") and target == "/dev/null"


def command_reads_only(command: Command, commands: Mapping[str, CommandSpec]) -> bool:
    if command.assignments or command.name is None:
        return False
    name = command.name.value
    if name is None or not COMMAND_NAME.fullmatch(name):
        return False  # a path (/bin/ls, ./ls) may be any program: only listed names are read
    spec = commands.get(name)
    return spec is not None and words_allowed(spec, command.args)


def words_allowed(spec: CommandSpec, words: Sequence[Word]) -> bool:
    """Whether ``words`` (a command's arguments) are what ``spec`` allows."""
    if spec.any_words:
        return True
    operands = 0
    options_ended = False
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        value = word.value
        if not options_ended:
            if value is None and not word.plain_start:
                if not _listed_option_with_pattern(spec, word):
                    return False  # could expand to an option
                continue
            if value is not None and value.startswith("-") and value != "-":
                if value == "--" and spec.end_of_options:
                    options_ended = True
                    continue
                takes = flag_takes_value(spec, value)
                if takes is None:
                    return False
                if takes:
                    # The next word is the flag's value, whatever it says, as long as it stays
                    # one word: a split expansion or a glob could make it several, and the
                    # second would be read as an option (`find . -name *` in a directory
                    # holding files named `*` and `-delete` runs `find . -name * -delete`).
                    if index >= len(words) or words[index].many:
                        return False
                    index += 1
                continue
        if spec.subcommands:
            sub = spec.subcommands.get(value) if value is not None else None
            return sub is not None and words_allowed(sub, words[index:])
        operands += 1
        if spec.max_operands is not None and (word.many or operands > spec.max_operands):
            return False
    return not spec.subcommands  # a command with subcommands does nothing read-only alone


def _listed_option_with_pattern(spec: CommandSpec, word: Word) -> bool:
    """``--include=*.py``, ``--glob="$g"``: a listed ``--name=`` whose value alone is a glob or
    a quoted expansion; whatever it expands to still begins with ``--name=``."""
    lead = word.lead
    if not lead.startswith("--") or "=" not in lead or word.splits:
        return False
    return flag_takes_value(spec, lead[: lead.index("=") + 1]) is False


def flag_takes_value(spec: CommandSpec, word: str) -> bool | None:
    """Whether the flag ``word`` takes the next word as its value; None when it is not allowed."""
    if word in spec.flags:
        return False
    if word in spec.flags_with_value:
        return True
    if word.startswith("--"):
        name, equals, _ = word.partition("=")
        if equals and (f"{name}=" in spec.flags or name in spec.flags_with_value):
            return False
        return None
    if not spec.combined_flags:
        return None
    letters = word[1:]
    for position, letter in enumerate(letters):
        flag = f"-{letter}"
        if flag in spec.flags:
            continue
        if flag in spec.flags_with_value:
            return position + 1 == len(letters)  # `-n5`: the rest is its value; `-n`: the next
        return None
    return False
