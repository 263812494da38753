"""Which Bash command lines only read: decided on a parse, by the listed commands and flags.

A line that only reads is allowed, like a read-only tool, so that an agent with nobody in the
room can look; every other line is a consent question ("runs a shell command"). The
reproductions of issue 20 passed the regular expression `agents.yaml` used to hold; they must be
asked now.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import regex
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from regulator.policy import load_definition
from regulator.policy.agent_effects import (
    AgentRules,
    agent_rules,
    check_pattern,
    classify,
    load_agent_effects,
    load_agent_effects_file,
    tool_matches,
)
from regulator.policy.loader import PolicyError, shipped_policies_dir
from regulator.policy.shell import MAX_BYTES, parse

RULES = load_agent_effects(load_definition(None)).agents["claude-code"]


def asked(command: str, rules: AgentRules = RULES) -> bool:
    """Whether the line is a consent question under ``rules`` (False: it only reads, and is
    allowed as a read-only tool is)."""
    verdict = classify(rules, "Bash", {"command": command}, Path("/nonexistent/repo"))
    # Under a rule for Bash, a line is one or the other: never both, never neither.
    assert verdict.read_only == (verdict.effect is None), verdict
    return verdict.effect is not None


# The reproductions of issue 20: each went through the shipped regular expression.
@pytest.mark.parametrize(
    "command",
    [
        "echo ok\nrm -rf src",
        "git diff --output=src/a.py",
        "git log --output=x",
        "git branch -D main",
    ],
)
def test_the_issues_commands_that_write_or_delete_are_asked(command: str) -> None:
    assert asked(command)


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "pwd",
        "git status --short",
        "git diff --stat HEAD~1",
        "git log --oneline -5",
        "git log -n 5 --format=%H",
        "git --no-pager diff --cached",
        "git branch",
        "git branch -a -vv",
        "git show HEAD:README.md",
        "git stash list",
        "cat README.md | head -n 20",
        "head -n5 notes.txt",
        'grep -rn "def main" src/',
        "grep --include=*.py -r TODO .",
        "rg -n --glob '*.py' TODO",
        "find . -name '*.py' -type f",
        "cd src && ls -la && git status",
        "(ls; pwd) || { echo none; }",
        "ls 2>/dev/null | wc -l",
        "ls >/dev/null 2>&1",
        "wc -l < notes.txt",
        "cat <<'EOF'\nanything $(at all)\nEOF",
        "ls src/*.py",
        'ls -- "$dir"',
        "echo $HOME *",
        "uniq notes.txt",
        "ls -la # a comment",
        "ls \\\n  -la",
    ],
)
def test_lines_of_listed_commands_and_flags_only_read(command: str) -> None:
    assert not asked(command)


@pytest.mark.parametrize(
    "command",
    [
        # what does not parse, or is missing a part
        "ls |",
        "ls &&",
        "ls )",
        "cat <<A <<B\na\nA\nb\nB",
        # output written anywhere but /dev/null
        "ls > out.txt",
        "ls >> out.txt",
        "ls &> out.txt",
        "ls >&out.txt",
        "ls 3<>out.txt",
        "cat < /dev/tcp/example.com/80",
        # what runs code or sets something
        "echo $(rm -rf src)",
        "echo `rm -rf src`",
        'echo "$(rm -rf src)"',
        "cat <(rm -rf src)",
        "cat <<EOF\n$(rm -rf src)\nEOF",
        "X=1 ls",
        "LD_PRELOAD=/tmp/evil.so ls",
        "export X=1; ls",
        "echo $((x))",
        "echo ${x:-y}",
        "if true; then ls; fi",
        "for f in a b; do cat $f; done",
        "while true; do ls; done",
        "case x in x) ls;; esac",
        "f() { ls; }; f",
        "[[ -f x ]] && ls",
        # a command not listed, anywhere in the line
        "(ls; rm x)",
        "ls | xargs rm",
        "ls && rm x",
        "ls; rm x",
        "ls & rm x",
        "sed -n 1p x",
        "awk '{print}' x",
        "env ls",
        "tee x",
        "less x",
        "/bin/ls",
        "./ls",
        # a word that could expand to an option, before --
        'ls "$x"',
        "ls $x",
        "ls *",
        "ls {a,b}",
        "ls ~/x$y",
        # flags not listed, combined or not
        "ls -lz",
        "git diff --outp=x",
        "git -c core.pager=evil log",
        "git -C /tmp log",
        "rg --pre cat x",
        "find . -delete",
        "find . -exec rm {} ;",
        "find . -fprint x",
        "find -- . -delete",
        "sort -o out in",
        "sort --output=out in",
        "tree -o out",
        "date -s 2020-01-01",
        "git stash drop",
        "git log -pX",
        # operands a command does not take
        "git branch foo",
        "hostname evil",
        "uniq in out",
        "date 010100002020",
        "git tag v1",
        "git",
        "git nosuchcommand",
    ],
)
def test_anything_the_parse_or_the_list_does_not_cover_is_asked(command: str) -> None:
    assert asked(command)


# -- what an agent needs to look, with nobody in the room -----------------------------------


@pytest.mark.parametrize(
    "command",
    [
        # file search: find with its reading primaries
        "find . -name '*.py'",
        "find src -type f -newer setup.py -print0",
        "find . -path ./.git -prune -o -type f -print",
        "find . -newermt 2026-01-01 -type f -maxdepth 3",
        "find -L . -daystart -mtime -1 -printf '%p %s\\n'",
        "find . \\( -name '*.py' -o -name '*.pyi' \\) -not -empty",
        # git's reads
        "git log --oneline",
        "git log -p -1 -- notes.txt",
        "git show HEAD --stat",
        "git show HEAD:README.md",
        "git diff HEAD~1 --stat",
        "git diff --cached --name-only",
        "git grep -n pelican",
        "git ls-files",
        "git ls-files --others --exclude-standard",
        "git rev-parse HEAD",
        "git rev-parse --abbrev-ref HEAD",
        "git blame -L 1,5 notes.txt",
        "git status --short",
        "git branch --list",
        "git tag --list",
        "git remote -v",
        "git config --get user.name",
        "git config --global --get user.email",
        "git config --get-regexp user",
        "git config --list --show-origin",
        "git config -l",
        "git worktree list --porcelain",
        "git show-ref --heads",
        "git for-each-ref --format='%(refname)' refs/heads",
        # one word of quoted and plain parts, as bash and the parser both read it
        "git log --format='%h %an %s' -n 3",
        'git log --author="Carol Example"',
        'ls --color="auto"',
    ],
)
def test_file_search_and_git_reads_are_allowed_as_reads(command: str) -> None:
    assert not asked(command)


@pytest.mark.parametrize(
    "command",
    [
        # find: each primary that writes, deletes or runs a program
        "find . -exec cat {} ;",
        "find . -execdir cat {} +",
        "find . -ok rm {} ;",
        "find . -okdir rm {} ;",
        "find . -name x -delete",
        "find . -fprint out",
        "find . -fprint0 out",
        "find . -fprintf out %p",
        "find . -fls out",
        "find -D exec .",
        "find . -files0-from list",
        # git config: anything but its reading modes
        "git config user.name mallory",
        "git config --global user.name mallory",
        "git config --unset user.name",
        "git config --unset-all user.name",
        "git config --add core.pager evil",
        "git config --replace-all core.pager evil",
        "git config --rename-section user person",
        "git config --remove-section user",
        "git config -e",
        "git config --edit",
        "git config --file other --get a.b",
        "git config --get user.name mallory",  # an operand after the name read is refused
        "git config get user.name",  # git 2.46's form; before it, a name and a value
        "git config core.hooksPath .",
        # git worktree: only list
        "git worktree add ../elsewhere",
        "git worktree remove ../elsewhere",
        "git worktree prune",
        "git worktree lock ../elsewhere",
        "git worktree move a b",
        "git worktree repair",
        "git worktree",
        # git's reads with a flag that writes or runs a program
        "git log --output=x",
        "git log --ext-diff -p",
        "git log --textconv -p",
        "git log --show-signature",
        "git show --output=x HEAD",
        "git diff --output=x",
        "git diff --ext-diff",
        "git diff --textconv",
        "git grep -O pelican",
        "git grep --open-files-in-pager=vi pelican",
        "git blame --output=x notes.txt",
        "git -c core.pager=evil log",
        "git --git-dir=/tmp/other log",
        "git --exec-path=/tmp/bin log",
        "git branch --list foo",
        "git branch -D main",
        "git tag -d v1",
        "git tag --list v1",
        "git remote add evil https://example.com/x",
        "git remote set-url origin https://example.com/x",
        "git show-ref --exclude-existing",
        "git rev-parse --parseopt",
    ],
)
def test_the_dangerous_neighbours_of_the_reads_are_asked(command: str) -> None:
    assert asked(command)


@pytest.mark.parametrize(
    "command",
    [
        # In a directory holding files named `*` and `-delete` (the agent may write both), bash
        # expands the first line to `find . -name * -delete`: it deletes the whole tree.
        "find . -name *",
        "find . -name a*",
        "find . -newer [ab]",
        "grep -e * notes.txt",
        "sort -t * notes.txt",
        "head -n $n notes.txt",
        "find . -name {x,-delete}",  # bash: find . -name x -delete
        "find . -name x{,' -delete'}",
    ],
)
def test_a_flags_value_that_could_become_several_words_is_asked(command: str) -> None:
    assert asked(command)


@pytest.mark.parametrize(
    "command",
    [
        # bash joins these into `-ro/tmp/x` (sort -r -o /tmp/x); a parser may see two words
        "sort '-r'\\o/tmp/x",
        "sort -r\\\no/tmp/x",
        # bash passes --output=x to git; the parser keeps it with the redirection
        "git diff >/dev/null --output=x",
        "git diff <<EOF --output=x\nEOF",
        # bash does not end the here-document where the parser does
        "cat <<EOF\nEOF \nrm -rf src\nEOF",
        "cat <<EOF\n\\\nEOF\nrm -rf src\nEOF",  # bash ends it at the joined line: rm runs
        # a carriage return is a separator to the parser, part of a word to bash
        "ls\r -la",
    ],
)
def test_where_bash_and_the_parser_could_disagree_the_line_is_asked(command: str) -> None:
    assert asked(command)


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        # The parser ends the document at the last EOF (rm hidden in it); bash at the first.
        ("cat <<EOF\n$(echo\nEOF\n)\nrm -rf src\nEOF\n", "a here-document bash could end"),
        # The parser takes `\<newline>EOF` as a word of the command line; bash, as the body's
        # first line, which ends the document: rm runs.
        ("cat <<EOF\n\\\nEOF\nrm -rf src\nEOF\n", "a here-document with more than its marker"),
    ],
)
def test_a_here_document_is_read_only_where_bash_ends_it_as_the_parser_does(
    command: str, problem: str
) -> None:
    assert any(p.startswith(problem) for p in parse(command).problems)
    assert asked(command)


@pytest.mark.parametrize(
    "command",
    [
        "ls" + " " * 3000 + ";",
        "ls" + " " * 6000 + ";",
        "ls " + "a " * 50_000,
        "(" * 50_000 + "ls" + ")" * 50_000,
        "ls" + " " * 100_000 + ";",
    ],
    ids=["3000-spaces", "6000-spaces", "100k-words", "100k-parens", "100k-spaces"],
)
def test_a_pathological_line_is_decided_well_under_a_second(command: str) -> None:
    # The regular expression took 43 s on the first and over 120 s on the second.
    started = time.process_time()  # CPU time: the suite's other workers share the CPUs
    asked(command)
    assert time.process_time() - started < 1.0


def test_a_line_longer_than_the_parsers_limit_is_asked_unread() -> None:
    script = parse("ls " + "a" * MAX_BYTES)
    assert script.unread is not None and not script.commands
    assert asked("ls " + "a" * MAX_BYTES)


def test_a_dense_line_just_under_the_limit_is_decided_in_a_second() -> None:
    # CPU time, not the clock: the suite's workers share the CPUs, and a wall-clock bound
    # failed at 1.03 s beside them where the decision itself takes 0.28 s.
    started = time.process_time()
    assert asked("ls " + "$(a) " * ((MAX_BYTES - 10) // 5))
    assert time.process_time() - started < 1.0


# -- agents.yaml ---------------------------------------------------------------------------


def _definition_with(tmp_path: Path, edit: Any) -> Path:
    data = yaml.safe_load((shipped_policies_dir() / "agents.yaml").read_text())
    edit(data["agents"]["claude-code"])
    path = tmp_path / "agents.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _problems(path: Path) -> list[str]:
    with pytest.raises(PolicyError) as caught:
        load_agent_effects_file(path)
    return caught.value.problems


def test_a_file_that_still_has_except_is_refused_in_one_line_naming_what_replaces_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "agents.yaml"
    path.write_text(
        "name: agent-effects\nversion: 1\nagents:\n  claude-code:\n    consent:\n"
        "      - tool: Bash\n        effect: runs a shell command\n"
        "        except:\n          - '^ls$'\n"
    )
    (problem,) = _problems(path)
    assert problem.startswith("agents.yaml:9: agents.claude-code.consent[0].except: ")
    assert "readOnlyCommands" in problem and "\n" not in problem


@pytest.mark.parametrize(
    ("entry", "field", "says"),
    [
        ({"flags": ["l"]}, "ls.flags", "'l' is not a flag"),
        ({"flags": ["--output=x"]}, "ls.flags", "is not a flag"),
        ({"flagsWithValue": ["--lines="]}, "ls.flagsWithValue", "takes a value"),
        ({"flags": ["-name"]}, "ls", "combinedFlags: false"),
        ({"anyWords": True, "flags": ["-l"]}, "ls", "anyWords takes every word"),
        ({"maxOperands": -1}, "ls.maxOperands", "expected `int` >= 0 (got -1)"),
        ({"subcommands": {"a b": {}}}, "ls.subcommands", "not a command name"),
        ({"flag": ["-l"]}, "ls.flag", "not a field"),
        # Only a consent rule's own `except` is the old field, told what replaced it.
        ({"except": ["-l"]}, "ls.except", "not a field of this record"),
    ],
)
def test_a_bad_read_only_entry_is_refused_naming_its_field(
    tmp_path: Path, entry: dict[str, Any], field: str, says: str
) -> None:
    def edit(rules: dict[str, Any]) -> None:
        rules["consent"][0]["readOnlyCommands"] = {"ls": entry}

    (problem,) = _problems(_definition_with(tmp_path, edit))
    assert f"agents.claude-code.consent[0].readOnlyCommands.{field}: " in problem
    assert says in problem


def test_a_value_of_another_type_is_refused_not_coerced(tmp_path: Path) -> None:
    # Strict: "yes" is not read as true.
    def edit(rules: dict[str, Any]) -> None:
        rules["consent"][0]["outsideRepository"] = "yes"

    (problem,) = _problems(_definition_with(tmp_path, edit))
    assert problem.endswith(
        "agents.claude-code.consent[0].outsideRepository: expected `bool`, got `str`"
    )


def test_a_command_name_that_is_a_path_is_refused(tmp_path: Path) -> None:
    def edit(rules: dict[str, Any]) -> None:
        rules["consent"][0]["readOnlyCommands"] = {"/bin/ls": {}}

    (problem,) = _problems(_definition_with(tmp_path, edit))
    assert "readOnlyCommands: '/bin/ls' is not a command name" in problem


def test_a_tool_pattern_that_runs_out_of_time_asks() -> None:
    # Backtracks exponentially: without a time limit this match runs for hours.
    rules = agent_rules(
        {"consent": [{"tool": "(a|aa)*$", "effect": "slow pattern"}], "nobodyPresent": "allow"}
    )
    started = time.perf_counter()
    verdict = classify(rules, "a" * 40 + "b", {}, Path("/nonexistent/repo"))
    assert time.perf_counter() - started < 2.0
    assert verdict.effect == "slow pattern"  # fails closed: the call is asked


def test_a_tool_pattern_is_checked_by_the_engine_that_matches_it(tmp_path: Path) -> None:
    def edit(rules: dict[str, Any]) -> None:
        rules["consent"][0]["tool"] = "Bash("

    (problem,) = _problems(_definition_with(tmp_path, edit))
    assert "agents.claude-code.consent[0].tool: not a regular expression" in problem


_NAME = st.text(alphabet="AaBb_1.|()*?+[]^$\\-", min_size=0, max_size=6)


@settings(max_examples=600, deadline=None)
@given(pattern=_NAME, tool=_NAME)
def test_a_pattern_of_names_is_decided_as_the_regex_engine_decides_it(
    pattern: str, tool: str
) -> None:
    # Names joined by `|` are matched without the engine: the answer must be the engine's, and
    # a pattern the engine refuses must still be refused.
    try:
        regex.compile(pattern)
        valid = True
    except regex.error:
        valid = False
    try:
        check_pattern(pattern)
        checked = True
    except ValueError:
        checked = False
    assert checked == valid, pattern
    if valid:
        expected = regex.fullmatch(pattern, tool) is not None
        assert tool_matches(pattern, tool) == expected, (pattern, tool)


@pytest.mark.parametrize(
    ("pattern", "tool", "matched"),
    [
        ("Write|Edit", "Edit", True),
        ("Write|Edit", "WriteEdit", False),
        ("Write|Edit", "Write|Edit", False),
        ("Bash", "bash", False),
        ("Bash", "Bash ", False),
        ("Bash", "Bash\n", False),
        ("mcp__x", "mcp__x", True),
    ],
)
def test_a_pattern_of_names_matches_a_whole_name_only(
    pattern: str, tool: str, matched: bool
) -> None:
    assert tool_matches(pattern, tool) is matched
    assert (regex.fullmatch(pattern, tool) is not None) is matched


def test_the_definitions_list_decides_what_only_reads(tmp_path: Path) -> None:
    def edit(rules: dict[str, Any]) -> None:
        rules["consent"][0]["readOnlyCommands"] = {"make": {"subcommands": {"lint": {}}}}

    rules = load_agent_effects_file(_definition_with(tmp_path, edit))
    mine = rules.agents["claude-code"]
    assert not asked("make lint", mine)
    assert asked("make install", mine)
    assert asked("ls", mine)  # no longer listed
