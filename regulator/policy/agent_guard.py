"""What no definition may loosen: a write to what governs the agent, and a person's act run by it.

The supervised agent runs as the person's OS user and may be prompt-injected; so it must not
rewrite what decides its gate, nor act as the person. Two checks are built in, in code, which
``agents.yaml`` cannot switch off:

- **What governs the agent** (:class:`GuardedPlaces`, computed for an instance by
  :mod:`regulator.host.guarded_places`): regulator's definition and code, the instance's state
  (but for the unit's own worktree), the agents' configuration, git's hooks and configuration. A
  write there by a file tool (Write, Edit, MultiEdit, NotebookEdit), or a Bash command that is
  not read-only and names such a place, needs a person's consent.
- **A person's act**: a Bash command that runs ``regulator answer``, ``obligation ack|resolve|
  escalate``, ``identity accept|reject``, ``unit replan|remediate|accept`` or ``memory
  retract``.

A file tool's path is exact (symlinks and ``..`` resolved). A Bash command is judged on the words
it holds, which is a best effort: a word naming a guarded place (or a directory inside the
repository or the home directory that holds one), after ``=`` (``--output=…``), inside a quoted
script (``bash -c '…'``), a here-document, or relative to a ``cd`` in the line. What runs
without naming its target (a variable set earlier, a script, a program that writes on its own)
is not seen: every Bash command that is not read-only is asked anyway unless the definition says
``nobodyPresent: allow``.
"""

from __future__ import annotations

import itertools
import os
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from regulator.policy.shell import Command, Script, Word

    #: Whether one simple command only reads (the definition's list decides).
    ReadsOnly = Callable[[Command], bool]

#: The tools that write the file their input names.
WRITING_TOOLS: dict[str, str] = {
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}

#: A person's acts, by command, with the subcommands that are acts (None: the command itself).
PERSON_ACTS: dict[str, frozenset[str] | None] = {
    "answer": None,
    "obligation": frozenset({"ack", "resolve", "escalate"}),
    "identity": frozenset({"accept", "reject"}),
    "unit": frozenset({"replan", "remediate", "accept"}),
    "memory": frozenset({"retract"}),
}
_GLOBAL_OPTIONS_WITH_VALUE = frozenset({"--instance", "--definition"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh"})
_TOKEN_SPLIT = re.compile(r"[\s'\"`();|&<>,=]+")
#: The most words a Bash line is checked for guarded places; a line with more is taken to name
#: one (each word may cost a few system calls to resolve its symlinks).
MAX_WORDS = 1000
#: The most directories (`cd`s in the line) a word of it is taken relative to.
MAX_DIRECTORIES = 32
#: How deep a script inside a script (`bash -c '…'`) is read.
MAX_DEPTH = 4


class Place(NamedTuple):
    """A guarded place: ``path`` and everything under it; with ``stem``, also ``path.*`` (and
    everything under those); minus ``except_under``, when given."""

    path: Path
    label: str  # what it is, for the person: "regulator's definition", "git's configuration"
    stem: bool = False
    except_under: Path | None = None


class Hit(NamedTuple):
    """A guarded place, and the path that reaches it as the person reads it."""

    place: Place
    shown: str


def _key(path: str) -> tuple[str, ...]:
    """A path's components as compared: Unicode-normalized and case-folded (a case-insensitive
    file system must not make `.CLAUDE` another place than `.claude`)."""
    text = unicodedata.normalize("NFC", path).casefold()
    return tuple(part for part in text.split("/") if part)


def _forms(path: str) -> set[tuple[str, ...]]:
    """A path both as written (`..` taken lexically) and with every symlink resolved."""
    forms = {_key(os.path.normpath(path))}
    try:
        forms.add(_key(os.path.realpath(path)))
    except (OSError, ValueError):
        pass
    return forms


@dataclass
class GuardedPlaces:
    """The places what governs the agent lives in, for one instance and one call."""

    places: Sequence[Place]
    repository: Path
    home: Path | None = None
    #: Directories inside which a directory holding a guarded place counts as naming it
    #: (`rm -rf regulator`), the directories themselves excepted (`git add .` names no place).
    bases: Sequence[Path] = ()
    _keys: list[tuple[set[tuple[str, ...]], Place, set[tuple[str, ...]]]] = field(
        default_factory=list, init=False, repr=False
    )
    _bases: list[set[tuple[str, ...]]] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        for place in self.places:
            unguarded = _forms(str(place.except_under)) if place.except_under else set()
            self._keys.append((_forms(str(place.path)), place, unguarded))
        self._bases = [_forms(str(b)) for b in self.bases]

    def shown(self, path: str) -> str:
        """``path`` as the person reads it: relative to the repository when inside it."""
        normal = os.path.normpath(path)
        try:
            return str(Path(normal).relative_to(self.repository))
        except ValueError:
            if self.home is not None:
                try:
                    return f"~/{Path(normal).relative_to(self.home)}"
                except ValueError:
                    pass
            return normal

    # -- a path -------------------------------------------------------------------------

    def place_of(self, path: str, *, holders: bool = False) -> Place | None:
        """The guarded place an absolute ``path`` lies in (or, with ``holders``, a directory
        strictly inside a base that holds one); None when it is none of them."""
        for form in _forms(path):
            found = self._match(form, holders=holders)
            if found is not None:
                return found
        return None

    def _match(self, candidate: tuple[str, ...], *, holders: bool) -> Place | None:
        for place_forms, place, unguarded in self._keys:
            if any(_within(candidate, u, stem=False) for u in unguarded):
                continue
            for form in place_forms:
                if _within(candidate, form, stem=place.stem):
                    return place
                if holders and _holds(candidate, form) and self._inside_a_base(candidate):
                    return place
        return None

    def _inside_a_base(self, candidate: tuple[str, ...]) -> bool:
        return any(
            len(candidate) > len(base) and candidate[: len(base)] == base
            for forms in self._bases
            for base in forms
        )

    # -- a pattern (a word with a glob or an expansion in it) -----------------------------

    def place_of_pattern(self, pattern: str, *, holders: bool = False) -> Place | None:
        """The guarded place some path matching the absolute ``pattern`` could lie in (or,
        with ``holders``, a directory strictly inside a base that holds one). In the pattern,
        ``*?[`` are bash's globs and :data:`UNKNOWN` stands for an expansion's value."""
        parts = _key(os.path.normpath(pattern))
        fixed = tuple(itertools.takewhile(lambda p: not _GLOB_OR_UNKNOWN & set(p), parts))
        for place_forms, place, unguarded in self._keys:
            if any(_within(fixed, u, stem=False) for u in unguarded):
                continue
            for form in place_forms:
                if _pattern_reaches(parts, form, stem=place.stem):
                    return place
                if holders and _pattern_holds(parts, form) and self._inside_a_base(parts):
                    return place
        return None


def _within(candidate: tuple[str, ...], place: tuple[str, ...], *, stem: bool) -> bool:
    depth = len(place)
    if len(candidate) < depth or candidate[: depth - 1] != place[:-1]:
        return False
    name = candidate[depth - 1]
    return name == place[-1] or (stem and name.startswith(place[-1] + "."))


def _holds(candidate: tuple[str, ...], place: tuple[str, ...]) -> bool:
    return len(candidate) < len(place) and place[: len(candidate)] == candidate


def _pattern_reaches(parts: tuple[str, ...], place: tuple[str, ...], *, stem: bool) -> bool:
    """Whether a path matching ``parts`` could be the place or lie under it."""
    if len(parts) < len(place):
        return False
    last = len(place) - 1
    return all(
        _component(place[i], parts[i], guarded=i == last, stem=stem and i == last)
        for i in range(len(place))
    )


def _pattern_holds(parts: tuple[str, ...], place: tuple[str, ...]) -> bool:
    """Whether a directory matching ``parts`` could hold the place (`rm -rf *`)."""
    if len(parts) >= len(place):
        return False
    last = len(parts) - 1
    return all(_component(place[i], parts[i], guarded=i == last) for i in range(len(parts)))


def _component(name: str, pattern: str, *, guarded: bool, stem: bool = False) -> bool:
    """Whether one component of a pattern could be ``name``. An expansion alone (`$x`) is not
    taken to name the guarded component itself: it could be anything, and a command writing
    to `$dest/file` is not, for that alone, writing where the agent is governed."""
    if pattern == name:
        return True
    if guarded and pattern.strip(UNKNOWN) == "":
        return False
    # bash's globs skip names that begin with a dot (no dotglob); an expansion's value does not.
    if name.startswith(".") and pattern[:1] in ("*", "?", "["):
        return False
    glob = pattern.replace(UNKNOWN, "*")
    if fnmatchcase(name, glob):
        return True
    return stem and any(fnmatchcase(name + ending, glob) for ending in _STEM_ENDINGS)


#: What an expansion's unknown value is written as in a pattern (no path holds it).
UNKNOWN = "\ufffe"
_STEM_ENDINGS = (".yaml", ".yml", ".json", ".x")
_GLOB_OR_UNKNOWN = frozenset("*?[" + UNKNOWN)


# -- the tools ------------------------------------------------------------------------------


def file_tool_hit(
    guard: GuardedPlaces, tool: str, tool_input: dict[str, object], cwd: Path
) -> Hit | str | None:
    """For a writing tool: the guarded place its path lies in, None when it is elsewhere, or a
    reason when the path cannot be placed (missing, not text)."""
    path = tool_input.get(WRITING_TOOLS[tool])
    if not isinstance(path, str) or not path or "\0" in path:
        return "a path regulator cannot place"
    # Claude Code passes absolute paths; a relative one is taken from both places it could be.
    return _literal_hit(guard, path, [cwd, guard.repository], holders=False)


def _expand_user(path: str, home: Path | None) -> str:
    if home is not None and (path == "~" or path.startswith("~/")):
        return str(home) + path[1:]
    return path


def bash_hit(
    guard: GuardedPlaces, script: Script, reads_only: ReadsOnly, cwd: Path, *, depth: int = 0
) -> Hit | str | None:
    """The guarded place a Bash line names in what it does not only read; a reason when the
    line is beyond reading (too long, too many words); None."""
    if script.unread is not None:
        return script.unread
    directories = list(dict.fromkeys([cwd, *_cd_targets(script, cwd, guard.home)]))
    if len(directories) > MAX_DIRECTORIES:
        return f"more than {MAX_DIRECTORIES} directories for regulator to follow"
    for checked, (word, holders) in enumerate(_written_words(script, reads_only)):
        if checked >= MAX_WORDS:
            return f"more than {MAX_WORDS} words for regulator to read"
        found = _word_hit(guard, word, directories, holders=holders)
        if found is not None:
            return found
    for text in _scripts(script, reads_only):
        for token in _tokens(text):
            found = _literal_hit(guard, token, directories, holders=False)
            if found is not None:
                return found
        if depth < MAX_DEPTH:
            from regulator.policy.shell import parse

            inner = bash_hit(guard, parse(text), reads_only, cwd, depth=depth + 1)
            if inner is not None:
                return inner
    for command in script.commands:
        if _is_git_config(command) and not reads_only(command):
            config = guard.repository / ".git" / "config"
            return Hit(Place(config, "git's configuration"), "git config")
    return None


def _written_words(script: Script, reads_only: ReadsOnly) -> Iterator[tuple[Word, bool]]:
    """Each word a line may write through, and whether a directory it names counts when it
    holds a guarded place."""
    for command in script.commands:
        if not reads_only(command):
            # The program a command runs, and a file `source` reads, are run, not written.
            skip = 1 if command.name is not None and command.name.value in ("source", ".") else 0
            for word in (*command.args[skip:], *command.assignments):
                yield word, True
    for redirect in script.redirects:
        if redirect.target is not None and redirect.operator not in ("<", "<<<", "<&"):
            yield redirect.target, True
    for word in script.loose:
        yield word, True


def _scripts(script: Script, reads_only: ReadsOnly) -> Iterator[str]:
    """Text a command of the line runs as a script: `sh -c TEXT`, `eval …`, here-documents."""
    for command in script.commands:
        if reads_only(command) or command.name is None:
            continue
        name = Path(command.name.value or "").name
        values = [w.value for w in command.args]
        if name in _SHELLS:
            for index, value in enumerate(values[:-1]):
                text = values[index + 1]
                if value is not None and _SHELL_C.fullmatch(value) and text is not None:
                    yield text
        elif name == "eval":
            yield " ".join(v for v in values if v is not None)
    yield from script.documents


_SHELL_C = re.compile(r"-[A-Za-z]*c[A-Za-z]*")


def _cd_targets(script: Script, cwd: Path, home: Path | None) -> Iterator[Path]:
    for command in script.commands:
        if command.name is not None and command.name.value in ("cd", "pushd"):
            for word in command.args:
                value = word.value
                if value is not None and not value.startswith("-"):
                    yield Path(cwd, _expand_user(value, home))


def _is_git_config(command: Command) -> bool:
    if command.name is None or Path(command.name.value or "").name != "git":
        return False
    return any(w.value == "config" for w in command.args)


def _word_hit(
    guard: GuardedPlaces, word: Word, directories: Sequence[Path], *, holders: bool
) -> Hit | None:
    """The guarded place a word names: the whole word, what follows each `=`, an option's
    attached value (`-o.git/config`), each token of a word that holds a script; a word with an
    expansion or a glob, as the pattern of the paths it could be."""
    value = word.value
    if value is not None:
        candidates = [value]
        candidates += [value[i + 1 :] for i, ch in enumerate(value) if ch == "="]
        if value.startswith("-") and not value.startswith("--") and len(value) > 2:
            candidates.append(value[2:])
        for candidate in candidates:  # (a quoted `~` is taken as home too: over, never under)
            found = _literal_hit(guard, candidate, directories, holders=holders)
            if found is not None:
                return found
        if any(ch.isspace() for ch in value):  # a script in one word: `python -c "…"`
            for token in _tokens(value):
                found = _literal_hit(guard, token, directories, holders=False)
                if found is not None:
                    return found
        return None
    pattern = _pattern(word, guard.home, directories[0])
    if pattern is None:
        return None
    for directory in directories:
        full = str(Path(directory, pattern))
        place = guard.place_of_pattern(full, holders=holders)
        if place is not None:
            return Hit(place, guard.shown(full))
    return None


def _literal_hit(
    guard: GuardedPlaces, text: str, directories: Sequence[Path], *, holders: bool
) -> Hit | None:
    if not text or "\0" in text:
        return None
    text = _expand_user(text, guard.home)
    for directory in directories:  # an absolute text ignores the directory
        full = str(Path(directory, text))
        place = guard.place_of(full, holders=holders)
        if place is not None:
            return Hit(place, guard.shown(full))
    return None


def _pattern(word: Word, home: Path | None, cwd: Path) -> str | None:
    """The word as a glob over paths: an expansion regulator cannot know is `*`; $HOME and
    $PWD are known. None when nothing of it is literal (it could be anything)."""
    out: list[str] = []
    literal = False
    for index, part in enumerate(word.parts):
        if part.kind == "text":
            text = part.text
            if index == 0 and word.tilde:
                if home is None or not (text == "~" or text.startswith("~/")):
                    return None  # ~user: another home, unknown here
                text = str(home) + text[1:]
            out.append(text)
            literal = literal or bool(text)
        elif part.kind == "glob":
            out.append(part.text if part.text in "*?[]" else "*")  # a brace: any of its words
        elif part.kind == "var" and part.text == "HOME" and home is not None:
            out.append(str(home))
            literal = True
        elif part.kind == "var" and part.text == "PWD":
            out.append(str(cwd))
            literal = True
        else:
            out.append(UNKNOWN)
    return "".join(out) if literal or any(p.kind == "glob" for p in word.parts) else None


def _tokens(text: str) -> Iterable[str]:
    return (t for t in _TOKEN_SPLIT.split(text) if t)


# -- a person's acts ------------------------------------------------------------------------


def person_act(script: Script, reads_only: ReadsOnly, *, depth: int = 0) -> str | None:
    """``regulator answer`` (or another person's act) when a command of the line runs one."""
    for command in script.commands:
        if reads_only(command):
            continue
        act = command_act(command)
        if act is not None:
            return act
    if depth < MAX_DEPTH:
        from regulator.policy.shell import parse

        for text in _scripts(script, reads_only):
            act = person_act(parse(text), reads_only, depth=depth + 1)
            if act is not None:
                return act
    return None


def command_act(command: Command) -> str | None:
    """The person's act a simple command runs: `regulator …`, `/path/to/regulator …`,
    `python -m regulator …`, behind any wrapper (`env`, `timeout 5`, `uv run`)."""
    words = command.words
    for index, word in enumerate(words):
        value = word.value
        if value is None:
            continue
        rest: Sequence[Word] | None = None
        if value == "regulator" or value.endswith("/regulator"):
            rest = words[index + 1 :]
        elif value.startswith("-mregulator"):
            rest = words[index + 1 :] if _is_module(value[2:]) else None
        elif value == "-m" and index + 1 < len(words):
            module = words[index + 1].value
            rest = words[index + 2 :] if module is not None and _is_module(module) else None
        if rest is not None:
            act = _act(rest)
            if act is not None:
                return act
    return None


def _is_module(name: str) -> bool:
    return name == "regulator" or name.startswith("regulator.")


def _act(words: Sequence[Word]) -> str | None:
    positional: list[str | None] = []
    index = 0
    while index < len(words) and len(positional) < 2:
        value = words[index].value
        index += 1
        if value in _GLOBAL_OPTIONS_WITH_VALUE:
            index += 1
        elif value is None or not value.startswith("-"):
            positional.append(value)
    if not positional:
        return None
    first = positional[0]
    if first is None:
        return "regulator, with a command regulator cannot read"
    if first not in PERSON_ACTS:
        return None
    acts = PERSON_ACTS[first]
    if acts is None:
        return f"regulator {first}"
    second = positional[1] if len(positional) > 1 else None
    if len(positional) > 1 and second is None:
        return f"regulator {first}, with a subcommand regulator cannot read"
    return f"regulator {first} {second}" if second in acts else None
