"""Which of an agent's own tools need a person's consent: the definition's ``agents.yaml``.

The seed leaves "does this action need consent?" to the model. For agents with a pre-tool hook
(Claude Code's ``PreToolUse``) the definition decides instead, from the tool's name and
arguments: a read-only tool is allowed at once, a tool with a declared effect becomes a consent
question, anything else is left to the agent's own permission prompt. A Bash command line is
parsed (:mod:`regulator.policy.shell`) and is read-only, allowed like a read-only tool, when
every command in it is in the consent rule's ``readOnlyCommands``
(:mod:`regulator.policy.read_only`) and no later rule claims it. Read from
``<definition>/agents.yaml``, else the shipped ``policies/agents.yaml``.

Before the definition is consulted, two checks it cannot switch off
(:mod:`regulator.policy.agent_guard`): a write to what governs the agent, and a person's act run
by it, each a consent question flagged as such.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import msgspec

from regulator.policy import Definition
from regulator.policy.agent_guard import (
    WRITING_TOOLS,
    GuardedPlaces,
    Hit,
    bash_hit,
    file_tool_hit,
    person_act,
)
from regulator.policy.loader import read_definition_data, refused, shipped_policies_dir
from regulator.policy.read_only import (
    CommandSpec,
    check_command_name,
    command_reads_only,
    naming,
    reads_only,
)

if TYPE_CHECKING:
    from regulator.policy.shell import Command, Script

Decision = Literal["allow", "deny", "ask"]

#: The longest a definition's pattern may take on one tool name: a pattern that backtracks
#: catastrophically must not hold the hook (Claude Code waits on it before every call).
PATTERN_TIMEOUT_S = 0.1
#: The tool whose calls are shell command lines, parsed.
BASH = "Bash"


#: A pattern that is only tool names joined by ``|`` (``Write|Edit``), as most are: it compiles
#: in any engine and matches a name whole exactly when the name is one of its alternatives, so
#: it is decided without loading the regex engine (some 10 ms of the hook's start). Anything
#: else, a single ``.`` or ``(`` included, goes to the engine.
_NAMES = re.compile(r"[A-Za-z0-9_]+(?:\|[A-Za-z0-9_]+)*")


def _names(pattern: str) -> frozenset[str] | None:
    """The names a pattern of names alone matches, or None for any other pattern."""
    return frozenset(pattern.split("|")) if _NAMES.fullmatch(pattern) else None


def check_pattern(pattern: str) -> str:
    """A tool pattern, checked by the engine that matches it (and only it)."""
    if _names(pattern) is not None:
        return pattern
    import regex

    try:
        regex.compile(pattern)
    except regex.error as exc:
        raise ValueError(f"not a regular expression: {exc}") from None
    return pattern


#: Why a consent rule's ``except`` is refused.
EXCEPT_GONE = (
    "regular expressions on the command line are no longer read (a pattern cannot "
    "tell a command that only reads): list those commands under readOnlyCommands "
    "instead, as the shipped policies/agents.yaml does (docs/agents.md)"
)

# The structs below decide what ``agents.yaml`` may hold: closed (an unknown field, ``except``
# among them, is refused), strict (no coercion), camelCase in the file. A file they refuse is
# described problem by problem, each with its line and field, as every definition file.


class ConsentRule(msgspec.Struct, rename="camel", forbid_unknown_fields=True, frozen=True):
    tool: str  # a regular expression on the tool's name, matched whole
    effect: Annotated[str, msgspec.Meta(min_length=1)]  # what the person is told the call does
    # Bash: the commands that only read, with their flags; a line of only those is not asked.
    read_only_commands: dict[str, CommandSpec] = msgspec.field(default_factory=dict)
    # Only calls whose file_path lies outside the repository (Write, Edit).
    outside_repository: bool = False

    def __post_init__(self) -> None:
        with naming("tool"):
            check_pattern(self.tool)
        with naming("readOnlyCommands"):
            for name in self.read_only_commands:
                check_command_name(name)


class AgentRules(msgspec.Struct, rename="camel", forbid_unknown_fields=True, frozen=True):
    read_only: list[str] = msgspec.field(default_factory=list)
    consent: list[ConsentRule] = msgspec.field(default_factory=list)
    nobody_present: Decision = "ask"


class AgentEffects(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    name: Annotated[str, msgspec.Meta(min_length=1)]
    version: Annotated[int, msgspec.Meta(ge=1)]
    agents: dict[str, AgentRules]


def agent_rules(data: object) -> AgentRules:
    """One agent's rules from their file's shape (camelCase), checked as the file is."""
    return msgspec.convert(data, AgentRules, strict=True)


@dataclass(frozen=True)
class Verdict:
    """What a tool call is: read-only, in need of consent (with the action to ask about), or
    neither (``None`` effect and not read-only). ``governs`` (it changes what governs the
    agent) and ``person_act`` (it runs a person's act) are built in, not the definition's:
    such a call is never allowed unasked, whatever ``nobodyPresent`` says."""

    read_only: bool
    effect: str | None = None
    action: str | None = None
    governs: bool = False
    person_act: bool = False


#: The names a definition's agents file may have, the first found read.
AGENTS_NAMES = ("agents.yaml", "agents.yml", "agents.json")


def effects_path(definition: Definition) -> Path:
    if definition.root is not None:
        for name in AGENTS_NAMES:
            candidate = definition.root / name
            if candidate.is_file():
                return candidate
    return shipped_policies_dir() / "agents.yaml"


def load_agent_effects(definition: Definition) -> AgentEffects:
    return load_agent_effects_file(effects_path(definition))


def load_agent_effects_file(path: Path) -> AgentEffects:
    """``agents.yaml`` (or ``.json``) at ``path``, decoded and checked; refused in a
    PolicyError that names every problem with its line and field, as every definition file."""
    text, data = read_definition_data("agents", path)
    try:
        return msgspec.convert(data, AgentEffects, strict=True)
    except msgspec.ValidationError:
        pass
    from regulator.protocol.entry import every_refusal

    raise refused(
        path,
        text,
        [
            # A field a file written for an older regulator may still have: say what replaced it.
            (loc, EXCEPT_GONE if _consent_except(loc) else why)
            for loc, why in every_refusal(AgentEffects, data)
        ],
    )


def _consent_except(loc: tuple[int | str, ...]) -> bool:
    """Whether ``loc`` is a consent rule's ``except`` (``agents.<agent>.consent[i].except``)."""
    return len(loc) == 5 and loc[2] == "consent" and isinstance(loc[3], int) and loc[4] == "except"


def _outside(path: str, repository: Path) -> bool:
    target = (repository / path).resolve() if not Path(path).is_absolute() else Path(path)
    try:
        target.resolve().relative_to(repository.resolve())
    except ValueError:
        return True
    return False


def describe_call(tool: str, tool_input: dict[str, Any]) -> str:
    """The action a yes would authorize, concretely: the command, the file, the address."""
    for key in ("command", "file_path", "notebook_path", "url"):
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return f"{tool}: {value}"
    return tool


def tool_matches(pattern: str, tool: str) -> bool | None:
    """Whether the definition's ``pattern`` matches the whole tool name; None when it ran out
    of time (the caller asks: a slow pattern must not let a call through)."""
    names = _names(pattern)
    if names is not None:
        return tool in names
    import regex

    try:
        return regex.fullmatch(pattern, tool, timeout=PATTERN_TIMEOUT_S) is not None
    except TimeoutError:
        return None


def classify(
    rules: AgentRules,
    tool: str,
    tool_input: dict[str, Any],
    repository: Path,
    *,
    cwd: Path | None = None,
    guard: Callable[[], GuardedPlaces] | None = None,
) -> Verdict:
    """The verdict on one call. ``guard`` gives the places that govern the agent (computed
    only for a call that may write: a file tool, a Bash command); ``cwd`` is where the agent
    runs (default: the repository)."""
    cwd = repository if cwd is None else cwd
    action = describe_call(tool, tool_input)
    command = tool_input.get("command")
    script = _parse(command) if tool == BASH and isinstance(command, str) else None
    listed = _read_only_commands(rules, tool)

    def reads(simple: Command) -> bool:
        return command_reads_only(simple, listed)

    # Built in first: neither readOnly nor a consent rule's exceptions can let these through.
    if script is not None:
        act = person_act(script, reads)
        if act is not None:
            effect = f"acts as a person: {act}"
            return Verdict(read_only=False, effect=effect, action=action, person_act=True)
    hit: Hit | str | None = None
    if guard is not None and tool in WRITING_TOOLS:
        hit = file_tool_hit(guard(), tool, tool_input, cwd)
    elif guard is not None and script is not None and not reads_only(script, listed):
        hit = bash_hit(guard(), script, reads, cwd)
    if hit is not None:
        if isinstance(hit, Hit):
            effect = f"changes what governs the agent: {hit.shown} ({hit.place.label})"
        else:
            effect = f"may change what governs the agent: {hit}"
        return Verdict(read_only=False, effect=effect, action=action, governs=True)
    if tool in rules.read_only:
        return Verdict(read_only=True)
    # A Bash line the parse and the list say only reads is allowed like a read-only tool, so
    # that an agent with nobody in the room can look (find, git log): left to the agent's own
    # prompt, it would be refused headless wherever the agent's list is shorter than ours
    # (Claude Code 2.1.328 refuses `git --no-pager log` and `uniq` in `-p`).
    read_by_list = False
    for rule in rules.consent:
        matched = tool_matches(rule.tool, tool)
        if matched is False:
            continue
        if matched:
            listed_here = rule.read_only_commands
            if listed_here and script is not None and reads_only(script, listed_here):
                read_by_list = True
                continue
            if rule.outside_repository:
                path = tool_input.get("file_path") or tool_input.get("notebook_path")
                if not isinstance(path, str) or not _outside(path, repository):
                    continue
        return Verdict(read_only=False, effect=rule.effect, action=action)
    return Verdict(read_only=read_by_list)


def _parse(command: str) -> Script:
    # The parser (and its grammar) loads only here: a Read or a Grep never pays for it.
    from regulator.policy.shell import parse

    return parse(command)


def _read_only_commands(rules: AgentRules, tool: str) -> dict[str, CommandSpec]:
    """The read-only commands of the first consent rule for ``tool`` (none when a pattern
    runs out of time: then nothing is read-only)."""
    for rule in rules.consent:
        matched = tool_matches(rule.tool, tool)
        if matched is None:
            return {}
        if matched:
            return rule.read_only_commands
    return {}
