"""A Bash command line, parsed as bash reads it: its simple commands, their words, redirections.

Whether an agent's Bash command only reads is decided on this parse (tree-sitter-bash), never by
matching the text. What the parse leaves uncertain becomes a *problem* of the script, so that a
caller refuses the line instead of guessing: a part that does not parse, anything but simple
commands joined by lists, pipelines, subshells and groups (a control structure, a function, an
assignment, a command or process substitution, arithmetic, a ``${…}`` with an operator), a line
continuation that joins two words, a control character, a here-document bash could end
elsewhere than the parser. Every simple command is still listed, those inside a substitution or
a control structure too, so a caller can tell what a line names even when it is not read-only.

The parser is loaded with this module (some 30 ms): import it only to classify a Bash command.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

_PARSER = Parser(Language(tree_sitter_bash.language()))

#: The longest command line parsed, in bytes; a longer one is a problem, not parsed. Parsing and
#: walking are linear, a few milliseconds a kilobyte: this bounds the hook's time on a hostile
#: line (a quarter of a second at most on a busy machine). No agent types 64 KiB of Bash.
MAX_BYTES = 64 * 1024

PartKind = Literal["text", "glob", "var", "unknown"]


class Part(NamedTuple):
    """A piece of a word: literal ``text``, an unquoted ``glob`` character (``*?[{}``), the value
    of a plain ``var`` (``$NAME``, ``${NAME}``: ``text`` is its name), or an ``unknown``
    expansion (``$1``, ``${x:-y}``, ``$(…)``, ``$'…'``)."""

    kind: PartKind
    text: str
    quoted: bool


class Word(NamedTuple):
    """One word as written; what bash makes of it follows from its parts."""

    parts: tuple[Part, ...]
    tilde: bool = False  # begins with an unquoted ``~``: a home directory

    @property
    def value(self) -> str | None:
        """The word bash passes, when no expansion or glob can change it."""
        if all(p.kind == "text" for p in self.parts):
            return "".join(p.text for p in self.parts)
        return None

    @property
    def lead(self) -> str:
        """The literal text before the first expansion or glob."""
        out = []
        for part in self.parts:
            if part.kind != "text":
                break
            out.append(part.text)
        return "".join(out)

    @property
    def splits(self) -> bool:
        """An unquoted expansion: its value is split into words that may begin with anything."""
        return any(p.kind in ("var", "unknown") and not p.quoted for p in self.parts)

    @property
    def many(self) -> bool:
        """It may become several words (or none): a split, a glob, a brace expansion."""
        return self.splits or any(p.kind == "glob" for p in self.parts)

    @property
    def plain_start(self) -> bool:
        """However it expands, every resulting word begins with its literal first character,
        which is not ``-``: it cannot become an option."""
        lead = self.lead
        return bool(lead) and not lead.startswith("-") and not self.splits


class Redirect(NamedTuple):
    operator: str  # '>', '>>', '>|', '&>', '&>>', '<', '<>', '>&', '<&', '>&-', '<&-', '<<', '<<<'
    target: Word | None  # None: a here-document, or closing a descriptor


class Command(NamedTuple):
    """A simple command: its name (None when it has none), its arguments in order, and the values
    of assignments written before it (``X=1 cmd``: their presence is a problem of the script)."""

    name: Word | None
    args: tuple[Word, ...]
    assignments: tuple[Word, ...] = ()

    @property
    def words(self) -> tuple[Word, ...]:
        return ((self.name,) if self.name is not None else ()) + self.args


@dataclass
class Script:
    commands: list[Command] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    # Words outside any simple command: assignment values, a for loop's list, a case's words.
    loose: list[Word] = field(default_factory=list)
    # Here-document bodies: data a command reads on its standard input (a script, for `sh`).
    documents: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # Why the text was not parsed at all (too long, not text): nothing of it is known.
    unread: str | None = None


# Node types a read-only line may contain; any other is a problem (named in it).
_PLAIN_TYPES = frozenset(
    {
        "program",
        "list",
        "pipeline",
        "subshell",
        "compound_statement",
        "redirected_statement",
        "negated_command",
        "command",
        "command_name",
        "word",
        "number",
        "string",
        "string_content",
        "raw_string",
        "concatenation",
        "simple_expansion",
        "expansion",
        "variable_name",
        "special_variable_name",
        "file_redirect",
        "file_descriptor",
        "heredoc_redirect",
        "heredoc_start",
        "heredoc_body",
        "heredoc_content",
        "heredoc_end",
        "herestring_redirect",
        "comment",
        "brace_expression",
        "ansi_c_string",
    }
)
# The unnamed tokens each of those may hold; any other is a problem.
_SEPARATORS = frozenset({";", "&"})
_REDIRECT_OPERATORS = frozenset({">", ">>", ">|", "&>", "&>>", "<", ">&", "<&", ">&-", "<&-"})
_TOKENS: dict[str, frozenset[str]] = {
    "program": _SEPARATORS,
    "list": frozenset({"&&", "||"}),
    "pipeline": frozenset({"|", "|&"}),
    "subshell": _SEPARATORS | {"(", ")"},
    "compound_statement": _SEPARATORS | {"{", "}"},
    "negated_command": frozenset({"!"}),
    "file_redirect": _REDIRECT_OPERATORS,
    "heredoc_redirect": frozenset({"<<", "<<-"}),
    "herestring_redirect": frozenset({"<<<"}),
    "string": frozenset({'"'}),
    "simple_expansion": frozenset({"$"}),
    "expansion": frozenset({"${", "}"}),
    "brace_expression": frozenset({"{", "..", "}"}),
}
_WORD_TYPES = frozenset(
    {
        "word",
        "number",
        "string",
        "raw_string",
        "concatenation",
        "simple_expansion",
        "expansion",
        "ansi_c_string",
        "translated_string",
        "brace_expression",
        "command_substitution",
        "process_substitution",
        "arithmetic_expansion",
    }
)
_OWNERS = frozenset({"command", "command_name", "file_redirect", "herestring_redirect"})
_GLOB = frozenset("*?[]{}")
_DOUBLE_QUOTE_ESCAPES = frozenset('$`"\\\n')
_SPECIAL = _GLOB | {"\\", "~"}


def parse(command: str) -> Script:
    """The script ``command`` is, with every problem that keeps it from being plainly read."""
    script = Script()
    try:
        source = command.encode("utf-8")
    except UnicodeEncodeError:
        script.unread = "a command that is not valid text"
    else:
        if len(source) > MAX_BYTES:
            script.unread = f"a command longer than {MAX_BYTES} bytes"
    if script.unread is not None:
        script.problems.append(script.unread)
        return script
    _check_characters(command, script)
    root = _PARSER.parse(source).root_node
    if root.has_error:
        script.problems.append("it does not parse as bash")
    _Walker(source, script).walk(root)
    script.problems = list(dict.fromkeys(script.problems))  # each kind once
    return script


def _check_characters(command: str, script: Script) -> None:
    # A carriage return or another control character may be a separator to the parser and part
    # of a word to bash, or the reverse.
    if any((ord(c) < 0x20 and c not in "\t\n") or c == "\x7f" for c in command):
        script.problems.append("it holds a control character")
    # A backslash-newline is removed by bash before it reads words, so `-r\<newline>o/x` is
    # one word to bash; the parser may see two. Refuse any that joins two non-blank characters.
    for index in _continuations(command):
        before = _skip_continuations(command, index - 1, -1)
        after = _skip_continuations(command, index + 2, +1)
        if before is None or after is None:
            continue
        if command[before] not in " \t\n" and command[after] not in " \t\n":
            script.problems.append("a line continuation joins two words")
            return


def _continuations(command: str) -> Iterator[int]:
    """The index of each backslash that escapes a newline (an odd run of backslashes)."""
    start = 0
    while (found := command.find("\\\n", start)) != -1:
        run = 0
        while found - run >= 0 and command[found - run] == "\\":
            run += 1
        if run % 2 == 1:
            yield found
        start = found + 2


def _skip_continuations(command: str, index: int, step: int) -> int | None:
    while 0 <= index < len(command):
        if step < 0 and command[index] == "\n" and index > 0 and command[index - 1] == "\\":
            index -= 2
            continue
        if step > 0 and command[index] == "\\" and command[index + 1 : index + 2] == "\n":
            index += 2
            continue
        return index
    return None


def _check_adjacent(children: list[Node], script: Script) -> None:
    # `'-r'\o/x` is one word to bash (`-ro/x`), two to the parser: refuse words it splits.
    previous: Node | None = None
    for child in children:
        if child.type in _WORD_TYPES:
            if previous is not None and previous.end_byte == child.start_byte:
                script.problems.append("a word the parser splits in two")
                return
            previous = child
        else:
            previous = None


def _describe(kind: str) -> str:
    names = {
        "ERROR": "a part that does not parse",
        "variable_assignment": "an assignment",
        "command_substitution": "a command substitution",
        "process_substitution": "a process substitution",
        "arithmetic_expansion": "an arithmetic expansion",
        "translated_string": 'a $"…" string',
        "declaration_command": "a declaration",
        "unset_command": "unset",
        "function_definition": "a function definition",
        "test_command": "a test",
        "heredoc_redirect": "a here-document",
    }
    return names.get(kind, f"a {kind.replace('_', ' ')}")


def _plain_expansion(node: Node) -> bool:
    kinds = [c.type for c in node.children]
    return kinds == ["${", "variable_name", "}"]


class _Walker:
    """One walk over a parse: the source's bytes are sliced here rather than through
    ``Node.text``, which costs a copy per call."""

    def __init__(self, source: bytes, script: Script) -> None:
        self.source = source
        self.script = script

    def text(self, node: Node) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def walk(self, root: Node) -> None:
        script = self.script
        # Iterative: a line of many nested parentheses must not exhaust Python's stack. The
        # parent's type travels with each node (Node.parent walks down from the root).
        stack: list[tuple[Node, bool, str]] = [(root, False, "")]
        while stack:
            node, owned, parent = stack.pop()
            kind = node.type
            if node.is_missing:
                script.problems.append(f"it lacks a {kind!r}")
            if not node.is_named:
                if parent in _PLAIN_TYPES and kind not in _TOKENS.get(parent, ()):
                    script.problems.append(f"{kind!r} in a {parent.replace('_', ' ')}")
                continue
            if kind not in _PLAIN_TYPES:
                script.problems.append(_describe(kind))
            if kind == "word" and node.child_count == 0:
                if not owned:
                    script.loose.append(self.word(node))
                continue
            children = node.children
            # The parts of a concatenation touch by definition, and bash joins them as the
            # parser does (`--format='%H %s'` is one word to both).
            if kind != "concatenation":
                _check_adjacent(children, script)
            if kind == "command":
                script.commands.append(self.command(node))
            elif kind in ("file_redirect", "herestring_redirect"):
                script.redirects.append(self.redirect(node))
            elif kind == "heredoc_redirect":
                self.heredoc(node)
            elif kind in _WORD_TYPES and not owned:
                script.loose.append(self.word(node))
            if kind == "expansion" and not _plain_expansion(node):
                script.problems.append("a ${…} expansion with an operator")
            # A command's words and a word's parts are read by their owner; what lies below
            # them (a command inside $(…)) is still walked, for its own sake.
            owner = kind in _OWNERS or kind in _WORD_TYPES
            stack.extend((child, owner, kind) for child in reversed(children))

    def command(self, node: Node) -> Command:
        name: Word | None = None
        args: list[Word] = []
        assignments: list[Word] = []
        # By type, not by field name: looking a child's field up walks the children before it.
        for child in node.children:
            if child.type == "command_name":
                inner = child.named_children
                name = self.word(inner[0]) if len(inner) == 1 else _UNKNOWN
            elif child.type == "variable_assignment":
                value = child.child_by_field_name("value")
                if value is not None:
                    assignments.append(self.word(value))
            elif child.type in _WORD_TYPES:
                args.append(self.word(child))
        return Command(name, tuple(args), tuple(assignments))

    def redirect(self, node: Node) -> Redirect:
        operator = next((c.type for c in node.children if not c.is_named), "")
        targets = [c for c in node.children if c.is_named and c.type != "file_descriptor"]
        if len(targets) > 1:
            # `cmd >/dev/null --output=x`: bash passes the words after the target to the
            # command; the parser keeps them with the redirection.
            self.script.problems.append("words after a redirection's target")
        return Redirect(operator, self.word(targets[0]) if targets else None)

    def heredoc(self, node: Node) -> None:
        """Record a here-document's body, and a problem unless bash would end it where the
        parser did: the marker last on its line, the body on the lines after it, ended by the
        first line that is exactly the delimiter."""
        script, source = self.script, self.source
        script.redirects.append(Redirect("<<", None))
        kinds = [c.type for c in node.children]
        start = next((c for c in node.children if c.type == "heredoc_start"), None)
        end = next((c for c in node.children if c.type == "heredoc_end"), None)
        body = next((c for c in node.children if c.type == "heredoc_body"), None)
        if start is None or end is None or any(k not in _HEREDOC_PARTS for k in kinds):
            script.problems.append("a here-document with more than its marker on its line")
            return
        line_end = source.find(b"\n", start.end_byte)
        body_start = body.start_byte if body is not None else end.start_byte
        rest_of_line = source[start.end_byte : line_end if line_end != -1 else len(source)]
        if line_end == -1 or rest_of_line.strip(b" \t") or body_start != line_end + 1:
            script.problems.append("a here-document with more than its marker on its line")
            return
        delimiter = "".join(ch for ch in self.text(start) if ch not in "'\"\\")
        text = source[body_start : end.start_byte].decode("utf-8", "replace")
        lines = text.split("\n")
        stop = source.find(b"\n", end.start_byte)
        ending = source[source.rfind(b"\n", 0, end.start_byte) + 1 : stop if stop != -1 else None]
        last = ending.decode("utf-8", "replace")
        if "<<-" in kinds:  # <<- strips leading tabs from every line, the delimiter's too
            lines = [line.lstrip("\t") for line in lines]
            last = last.lstrip("\t")
        if last != delimiter or delimiter in lines[:-1] or lines[-1] != "":
            script.problems.append("a here-document bash could end elsewhere")
            return
        script.documents.append(text)

    def word(self, node: Node) -> Word:
        """The word a node of the parse is, as parts."""
        if node.type == "word":
            text = self.text(node)
            if not _SPECIAL.intersection(text):  # most words: plain text, nothing to work out
                return Word((Part("text", text, False),))
        parts = list(self.parts(node, quoted=False))
        first = parts[0] if parts else None
        tilde = (
            first is not None
            and first.kind == "text"
            and not first.quoted
            and first.text.startswith("~")
        )
        return Word(tuple(_merge(parts)), tilde=tilde)

    def parts(self, node: Node, *, quoted: bool) -> Iterator[Part]:
        kind = node.type
        if kind in ("word", "number"):
            text = self.text(node)
            yield from [Part("text", text, True)] if quoted else _unquoted(text)
        elif kind == "raw_string":
            yield Part("text", self.text(node)[1:-1], True)
        elif kind == "string":
            yield from self.double_quoted(node)
        elif kind == "concatenation":
            yield from self.with_gaps(node, node.start_byte, node.end_byte, quoted=quoted)
        elif kind == "simple_expansion":
            inner = node.named_children
            if len(inner) == 1 and inner[0].type == "variable_name":
                yield Part("var", self.text(inner[0]), quoted)
            else:
                yield Part("unknown", "", quoted)
        elif kind == "expansion" and _plain_expansion(node):
            yield Part("var", self.text(node.named_children[0]), quoted)
        elif kind == "brace_expression":
            yield Part("glob", self.text(node), False)
        else:
            yield Part("unknown", "", quoted)

    def with_gaps(self, node: Node, start: int, stop: int, *, quoted: bool) -> Iterator[Part]:
        """A node's children, and any source text between them as unquoted text."""
        position = start
        for child in node.children:
            if child.start_byte < start or child.end_byte > stop:
                continue
            if child.start_byte > position:
                yield from _unquoted(self.source[position : child.start_byte].decode())
            yield from self.parts(child, quoted=quoted)
            position = child.end_byte
        if stop > position:
            yield from _unquoted(self.source[position:stop].decode("utf-8", "replace"))

    def double_quoted(self, node: Node) -> Iterator[Part]:
        position = node.start_byte + 1
        closing = node.end_byte - 1
        for child in node.children:
            if child.type == '"':
                continue
            if child.start_byte > position:
                gap = self.source[position : child.start_byte].decode("utf-8", "replace")
                yield Part("text", _unescape_double(gap), True)
            if child.type == "string_content":
                yield Part("text", _unescape_double(self.text(child)), True)
            else:
                yield from self.parts(child, quoted=True)
            position = child.end_byte
        if closing > position:
            gap = self.source[position:closing].decode("utf-8", "replace")
            yield Part("text", _unescape_double(gap), True)


_UNKNOWN = Word((Part("unknown", "", False),))
_HEREDOC_PARTS = frozenset({"<<", "<<-", "heredoc_start", "heredoc_body", "heredoc_end"})


def _merge(parts: list[Part]) -> Iterator[Part]:
    pending: Part | None = None
    for part in parts:
        if (
            pending is not None
            and pending.kind == part.kind == "text"
            and pending.quoted == part.quoted
        ):
            pending = Part("text", pending.text + part.text, part.quoted)
            continue
        if pending is not None:
            yield pending
        pending = part
    if pending is not None:
        yield pending


def _unquoted(text: str) -> Iterator[Part]:
    index = 0
    while index < len(text):
        ch = text[index]
        if ch == "\\":
            escaped = text[index + 1 : index + 2]
            if escaped and escaped != "\n":
                yield Part("text", escaped, True)
            index += 2
            continue
        yield Part("glob" if ch in _GLOB else "text", ch, False)
        index += 1


def _unescape_double(text: str) -> str:
    out = []
    index = 0
    while index < len(text):
        ch = text[index]
        if ch == "\\" and text[index + 1 : index + 2] in _DOUBLE_QUOTE_ESCAPES:
            escaped = text[index + 1]
            if escaped != "\n":
                out.append(escaped)
            index += 2
            continue
        out.append(ch)
        index += 1
    return "".join(out)
