"""What a command imports when it runs: ``--help`` and every non-room command stay fast and
headless, the hook stays light. That no module of the core imports Textual at all is
import-linter's contract (pyproject.toml, run by `.ci/run`); these check what is loaded at run
time, which a static contract cannot: a lazy import is an import to it, but costs nothing until
its command runs."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

PROBE = """
import sys
from regulator.cli.main import main
try:
    main({args!r})
except SystemExit:
    pass
bad = sorted(m for m in sys.modules if m == "textual" or m.startswith("textual."))
print("TEXTUAL" if bad else "CLEAN")
"""


def _probe(source: str, cwd: Path) -> list[str]:
    """What a fresh interpreter running ``source`` in ``cwd`` prints, line by line."""
    done = subprocess.run(
        [sys.executable, "-c", source], capture_output=True, text=True, cwd=cwd, check=True
    )
    return done.stdout.strip().splitlines()


def _imports_textual(args: list[str], cwd: Path) -> str:
    return _probe(PROBE.format(args=args), cwd)[-1]


def test_regulator_help_imports_no_textual(tmp_path: Path) -> None:
    assert _imports_textual(["--help"], tmp_path) == "CLEAN"


def test_init_doctor_and_status_import_no_textual(instance: Path) -> None:
    for args in (["doctor"], ["status", "--json"], ["status"]):
        assert _imports_textual(args, instance) == "CLEAN", args


RECORDS = """
import sys
import regulator.cli.main, regulator.rules.regulatory_log, regulator.protocol.audit
import regulator.protocol.memory, regulator.protocol.entry as entry
try:
    entry.validate_entry({"type": "obligation-resolved", "id": "o-1"})
except ValueError as error:
    print(error)
print(sorted(m for m in sys.modules if m == "pydantic" or m.startswith("pydantic.")))
"""


def test_reading_and_refusing_a_record_imports_no_pydantic(tmp_path: Path) -> None:
    # The records are msgspec structs: pydantic (~50 ms of a start) is for definition files.
    refusal, imported = _probe(RECORDS, tmp_path)
    assert refusal == "obligation-resolved: at: required, and missing"
    assert imported == "[]"


HOOK = """
import io, json, sys
from regulator.cli.main import main
sys.stdin = io.TextIOWrapper(io.BytesIO(json.dumps({payload!r}).encode()))
try:
    main(["hook", "claude-code"])
except SystemExit:
    pass
heavy = ("regulator.rules.regulatory_log", "regulator.host.session_units", "regulator.host.tools")
print(json.dumps(sorted(m for m in heavy if m in sys.modules)))
"""


def _hook(payload: dict[str, object], cwd: Path) -> tuple[dict[str, object], list[str]]:
    reply, imported = _probe(HOOK.format(payload=payload), cwd)[-2:]
    return json.loads(reply), json.loads(imported)


def test_a_hook_for_a_reading_tool_answers_without_the_session_machinery(instance: Path) -> None:
    # Claude Code waits on the hook before every tool call it matches: the common answers
    # (a tool that only reads, nobody in the room) must not import units, tools or the log.
    call = {"hook_event_name": "PreToolUse", "session_id": "s1", "cwd": str(instance)}
    reply, imported = _hook({**call, "tool_name": "Read", "tool_input": {}}, instance)
    assert reply["hookSpecificOutput"]["permissionDecision"] == "allow"  # type: ignore[index]
    assert imported == []
    effect = {"command": "git push origin main"}
    reply, imported = _hook({**call, "tool_name": "Bash", "tool_input": effect}, instance)
    assert reply["hookSpecificOutput"]["permissionDecision"] == "ask"  # type: ignore[index]
    assert "nobody is in the control room" in str(reply)
    assert imported == []


NO_PYDANTIC = HOOK.replace(
    'heavy = ("regulator.rules.regulatory_log", "regulator.host.session_units", '
    '"regulator.host.tools")',
    'heavy = ("pydantic", "regulator.protocol.policies", "regex", "secrets", "subprocess")',
)
assert NO_PYDANTIC != HOOK


def test_the_hook_reads_agents_yaml_without_pydantic(instance: Path) -> None:
    # agents.yaml is decoded into msgspec structs on every call: importing pydantic and
    # building its models would cost the hook more than the rest of its start. The shipped
    # patterns are names alone (no regex engine), and a reply starts no process.
    call = {"hook_event_name": "PreToolUse", "session_id": "s1", "cwd": str(instance)}
    for tool, tool_input in (("Read", {"file_path": "README.md"}), ("Bash", {"command": "ls"})):
        payload = {**call, "tool_name": tool, "tool_input": tool_input}
        reply, imported = _probe(NO_PYDANTIC.format(payload=payload), instance)[-2:]
        assert json.loads(reply)["hookSpecificOutput"]["permissionDecision"] == "allow"
        assert json.loads(imported) == []


PARSER = HOOK.replace(
    'heavy = ("regulator.rules.regulatory_log", "regulator.host.session_units", '
    '"regulator.host.tools")',
    'heavy = ("tree_sitter", "tree_sitter_bash", "regulator.host.guarded_places")',
)
assert PARSER != HOOK


def test_the_shell_parser_loads_for_a_bash_command_not_for_a_read(instance: Path) -> None:
    # Parsing a command line costs the parser's load (some 30 ms): only a Bash call pays it,
    # and only a call that may write asks git where its hooks are.
    call = {"hook_event_name": "PreToolUse", "session_id": "s1", "cwd": str(instance)}

    def imported(tool: str, tool_input: dict[str, str]) -> list[str]:
        payload = {**call, "tool_name": tool, "tool_input": tool_input}
        modules: list[str] = json.loads(_probe(PARSER.format(payload=payload), instance)[-1])
        return modules

    assert imported("Read", {"file_path": "README.md"}) == []
    assert imported("Bash", {"command": "ls -la"}) == ["tree_sitter", "tree_sitter_bash"]
    assert imported("Bash", {"command": "rm -rf build"}) == [
        "regulator.host.guarded_places",
        "tree_sitter",
        "tree_sitter_bash",
    ]


LISTING = """
import sys
from regulator.cli.main import main
try:
    main({args!r})
except SystemExit:
    pass
print(sorted(m for m in sys.modules if m in ("pydantic", "yaml", "regulator.protocol.policies")))
"""


def test_listing_obligations_reads_no_policy(instance: Path) -> None:
    # `obligations` only reads the log: the policies' pydantic models (~100 ms of a start)
    # come with a command that reads a policy, not with the authority check's module.
    for args in (["obligations", "--json"], ["obligations", "--all"]):
        assert _probe(LISTING.format(args=args), instance)[-1] == "[]", args


SESSION_HOOK = """
import io, json, sys
from regulator.cli.entry import main
for payload in {payloads!r}:
    sys.stdin = io.TextIOWrapper(io.BytesIO(json.dumps(payload).encode()))
    main(["hook", "claude-code"])
print(json.dumps(sorted(m for m in ("argparse", "yaml", "pydantic") if m in sys.modules)))
"""


def test_in_a_session_the_hook_answers_from_its_snapshot_without_yaml_or_argparse(
    instance: Path,
) -> None:
    # The command line `agent install` writes is dispatched without argparse, and a session's
    # snapshot keeps agents.yaml as checked JSON: a call that only reads imports neither PyYAML
    # nor argparse (together about a third of the hook's start).
    call = {"session_id": "s1", "cwd": str(instance)}

    def run(payloads: Sequence[Mapping[str, object]]) -> list[str]:
        return _probe(SESSION_HOOK.format(payloads=payloads), instance)

    assert "session-claude-s1" in run([{**call, "hook_event_name": "SessionStart"}])[0]
    snapshot = instance / ".regulator" / "sessions" / "session-claude-s1" / "a1.definition"
    assert (snapshot / "agents.json").is_file() and not (snapshot / "agents.yaml").exists()
    reads = [
        {**call, "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": tool_input}
        for tool, tool_input in (("Read", {"file_path": "README.md"}), ("Bash", {"command": "ls"}))
    ]
    *replies, imported = run(reads)
    assert [json.loads(r)["hookSpecificOutput"]["permissionDecision"] for r in replies] == [
        "allow",
        "allow",
    ]
    assert json.loads(imported) == []
