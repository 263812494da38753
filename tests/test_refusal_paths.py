"""Every refusal reaches a person as ``regulator: <message>``: never a traceback.

Each exception regulator defines descends from exactly one of three roots (a refusal, corrupt
state, a host failure), and the CLI, the control room and the MCP server each map them in one
place: a refusal exits 1, corrupt state 4, a host failure 5, and the MCP result names its root.
The walk below runs every command the parser knows (so a new command is walked too) at least
once down a refusal path, as a separate process, the way a person meets it.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import pkgutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

import regulator
from regulator.cli.main import build_parser
from regulator.protocol.errors import CorruptState, HostFailure, Refused, RegulatorError
from regulator.store.errors import StoreError

from .conftest import git, run_cli

ROOTS = (Refused, CorruptState, HostFailure)
# The store's grouping (``except StoreError``: whatever the store said), never raised itself.
GROUPINGS = (StoreError,)
# The exit status of each root (regulator.cli.errors.EXIT_STATUS).
REFUSED, CORRUPT, HOST = 1, 4, 5


def regulator_exceptions() -> list[type[BaseException]]:
    """Every exception class a module of ``regulator`` defines."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(regulator.__path__, "regulator."):
        if info.name.endswith("__main__"):
            continue  # running it is running the CLI
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
            ):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return list(found.values())


def test_every_exception_regulator_defines_descends_from_exactly_one_of_the_three_roots() -> None:
    assert set(RegulatorError.__subclasses__()) == {*ROOTS, *GROUPINGS}
    classes = regulator_exceptions()
    assert len(classes) > 30  # the walk found the package's exceptions, not nothing
    wrong = {
        f"{cls.__module__}.{cls.__qualname__}": [r.__name__ for r in ROOTS if issubclass(cls, r)]
        for cls in classes
        if cls not in (RegulatorError, *ROOTS, *GROUPINGS)
        and sum(issubclass(cls, root) for root in ROOTS) != 1
    }
    assert wrong == {}
    with pytest.raises(TypeError):
        StoreError("the grouping itself")


# --------------------------------------------------------------------------------------------
# The walk


def commands() -> dict[tuple[str, ...], argparse.ArgumentParser]:
    """Every command the parser dispatches, by its words (``("unit", "show")``)."""
    found: dict[tuple[str, ...], argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> None:
        if parser.get_default("_handler") is not None:
            found[words] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, (*words, name))

    walk(build_parser(), ())
    return found


def takes_instance(parser: argparse.ArgumentParser) -> bool:
    return any("--instance" in action.option_strings for action in parser._actions)


# Options whose values are checked while parsing (a type, not choices): a value that passes.
VALID = {"--disposition": "fixed", "--to": "S3", "--file": "IDENTITY.md"}


def required_arguments(parser: argparse.ArgumentParser) -> list[str]:
    """Values for what the parser requires: one that parses, so the command itself runs."""
    argv: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        value = str(next(iter(action.choices))) if action.choices else "x"
        value = next((VALID[o] for o in action.option_strings if o in VALID), value)
        if not action.option_strings and action.nargs not in ("?", "*"):
            argv.append(value)
        elif action.option_strings and action.required:
            argv += [action.option_strings[0], value]
    return argv


def env_for(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGULATOR_")}
    env["REGULATOR_PERSON"] = "alice"
    return {**env, **extra}


@dataclass
class Case:
    argv: list[str]
    exit: int = 1
    names: str | tuple[str, ...] = ""  # what the message names (a path, an id, an argument)
    cwd: Path | None = None
    env: dict[str, str] = field(default_factory=env_for)


def run(case: Case, default_cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "regulator", *case.argv],
        cwd=case.cwd or default_cwd,
        env=case.env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def problem(case: Case, result: subprocess.CompletedProcess[str]) -> str | None:
    """What is wrong with how ``case`` was refused, or None."""
    said = f"{case.argv}: exit {result.returncode}\n{result.stderr}{result.stdout}"
    if "Traceback" in result.stderr + result.stdout:
        return said
    if result.returncode != case.exit:
        return said
    lines = result.stderr.rstrip("\n").split("\n")
    if case.exit == 2:
        usage = lines[:-1]
        if not usage or not usage[0].startswith("usage: regulator"):
            return said
        if not all(line.startswith(" ") for line in usage[1:]):
            return said
    elif len(lines) != 1:
        return said
    last = lines[-1]
    if not last.startswith("regulator: ") or len(last) <= len("regulator: "):
        return said
    names = (case.names,) if isinstance(case.names, str) else case.names
    if not any(name in last for name in names):
        return f"{said}(the message should name one of {names!r})"
    return None


def walk(cases: Sequence[Case], cwd: Path) -> list[str]:
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda case: run(case, cwd), cases))
    return [p for case, result in zip(cases, results, strict=True) if (p := problem(case, result))]


# The few commands whose first refusal is not a missing instance.
def special(words: tuple[str, ...], nowhere: Path, existing: Path) -> Case | None:
    match words:
        case ("init",):
            return Case(["init", str(nowhere)], names=str(nowhere))
        case ("demo",):  # never over what is already there
            return Case(["demo", str(existing)], names=str(existing))
        case ("room",):
            return Case(["room", str(nowhere)], names=str(nowhere))
        case ("hook", *_):
            return None  # fails closed with exit 0: walked in its own test below
    return None


@pytest.mark.slow
def test_every_command_refuses_a_missing_instance_with_one_line_naming_it(
    tmp_path: Path,
) -> None:
    nowhere = tmp_path / "nowhere"
    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "a-file").write_text("mine\n")
    cases: list[Case] = []
    for words, parser in commands().items():
        if words[0] == "hook":
            continue
        case = special(words, nowhere, existing)
        if case is None:
            assert takes_instance(parser), f"{words}: add its first refusal to special()"
            given = required_arguments(parser)
            # The instance, or an argument checked before it (a contract file that is not there).
            case = Case([*words, *given, "--instance", str(nowhere)], names=(str(nowhere), *given))
        cases.append(case)
    assert walk(cases, tmp_path) == []


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One instance every refusal below is tried in; a refusal leaves it as it was."""
    root = tmp_path_factory.mktemp("refusals") / "project"
    root.mkdir()
    git(root, "init", "--quiet", "--initial-branch=main")
    (root / "README.md").write_text("# a project\n")
    git(root, "add", "README.md")
    git(root, "commit", "--quiet", "-m", "initial")
    result = run_cli("init", "--by", "alice", cwd=root, env=env_for())
    assert result.returncode == 0, result.stderr
    yield root


def state_of(root: Path) -> dict[str, bytes]:
    """Every byte of the project (an empty log a reader's lock made holds nothing written)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts and p.stat().st_size
    }


@pytest.mark.slow
def test_unknown_ids_bad_values_bad_files_and_a_bad_policy_are_refused_in_one_line(
    project: Path, tmp_path: Path
) -> None:
    bad_json = tmp_path / "contract.json"
    bad_json.write_text("{ not json\n")
    missing = tmp_path / "missing.json"
    bad_definition = tmp_path / "definition"
    (bad_definition / "policies").mkdir(parents=True)
    broken_policy = bad_definition / "policies" / "interaction.yaml"
    broken_policy.write_text("people: [alice\n")
    bad = ["--definition", str(bad_definition)]
    unknown = "no obligation"
    cases = [
        # unknown ids
        Case(["obligation", "show", "deadbeef"], names=unknown),
        Case(["obligation", "ack", "deadbeef"], names=unknown),
        Case(["obligation", "resolve", "deadbeef", "--disposition", "fixed", "--rationale", "r"]),
        Case(["obligation", "escalate", "deadbeef", "--to", "S3", "--rationale", "r"]),
        Case(["answer", "deadbeef", "--answer", "yes"], names=unknown),
        Case(["identity", "reject", "deadbeef", "--rationale", "r"], names=unknown),
        Case(["memory", "retract", "deadbeef", "--reason", "r"], names="deadbeef"),
        Case(["unit", "show", "nope"], names="nope"),
        Case(["unit", "route", "nope"], names="nope"),
        Case(["unit", "close", "nope"], names="nope"),
        Case(["unit", "evidence", "nope"], names="nope"),
        Case(["unit", "accept", "nope", "c1"], names="nope"),
        Case(["unit", "remediate", "nope", "--note", "n"], names="nope"),
        Case(["unit", "show", "../x"], names="invalid unit id"),
        Case(["session", "end", "nope"], names="nope"),
        # bad argument values: usage, exit 2
        Case(["obligation", "escalate", "deadbeef", "--to", "s3", "--rationale", "r"], exit=2),
        Case(["obligation", "resolve", "x", "--disposition", "bogus", "--rationale", "r"], exit=2),
        Case(["attention", "--since", "bogus"], exit=2, names="bogus"),
        Case(["watch", "--interval", "0"], exit=2, names="--interval"),
        Case(
            ["identity", "accept", "x", "--file", "NOPE.md", "--from", "f", "--rationale", "r"],
            exit=2,
            names="--file",
        ),
        Case(["ask", "--kind", "consent", "--subject", "s", "--question", "q", "--timeout", "-1"]),
        Case(["tool", "report_result", "--json", "{"], names="--json"),
        # files given that do not read
        Case(["unit", "drive", str(missing)], names=str(missing)),
        Case(["unit", "dispatch", str(bad_json)], names=str(bad_json)),
        Case(["unit", "replan", "nope", "--contract", str(missing)]),
        # a bad policy: corrupt state, named by its file, exit 4
        Case(["status", *bad], exit=CORRUPT, names=broken_policy.name),
        Case(["remind", *bad], exit=CORRUPT, names=broken_policy.name),
        Case(["obligation", "ack", "deadbeef", *bad], exit=CORRUPT, names=broken_policy.name),
        Case(["attention", *bad], exit=CORRUPT, names=broken_policy.name),
    ]
    before = state_of(project)
    assert walk(cases, project) == []
    assert state_of(project) == before


def test_a_record_that_does_not_read_is_named_in_one_line(project: Path) -> None:
    unit = project / ".regulator" / "units" / "torn"
    unit.mkdir(parents=True)
    (unit / "unit.json").write_text('{"unitId": "torn", ')
    try:
        result = run_cli("unit", "show", "torn", cwd=project, env=env_for())
    finally:
        (unit / "unit.json").unlink()
        unit.rmdir()
    case = Case(["unit", "show", "torn"], exit=CORRUPT, names="unit.json")
    assert problem(case, result) is None


def test_git_missing_from_the_host_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    empty = tmp_path / "no-tools"
    empty.mkdir()
    case = Case(["init", str(project)], exit=HOST, names="git", env=env_for(PATH=str(empty)))
    assert problem(case, run(case, tmp_path)) is None


def test_a_hook_fails_closed_on_a_bad_policy_with_one_line_and_no_traceback(
    project: Path, tmp_path: Path
) -> None:
    definition = tmp_path / "definition"
    definition.mkdir()
    (definition / "agents.yaml").write_text("agents: [claude-code\n")
    payload = '{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {}}'
    argv = ["hook", "claude-code", "--definition", str(definition)]
    result = subprocess.run(
        [sys.executable, "-m", "regulator", *argv],
        cwd=project,
        env=env_for(REGULATOR_INSTANCE=str(project)),
        input=payload,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0  # a hook always answers the agent
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.rstrip("\n").split("\n")
    assert len(lines) == 1 and lines[0].startswith("regulator: "), result.stderr
    assert "agents.yaml" in lines[0]
    assert '"ask"' in result.stdout  # fails closed: the person is asked


# --------------------------------------------------------------------------------------------
# The MCP server and the room


class _Breaking:
    """A session whose every tool call raises ``error``."""

    def __init__(self, error: BaseException) -> None:
        self.error = error
        self.grants: list[str] = []

    def tools(self) -> Any:
        return self

    def call(self, name: str, args: dict[str, Any], **kw: Any) -> Any:
        raise self.error


def call_over_mcp(error: BaseException) -> Any:
    from mcp import Client

    from regulator.host.mcp_server import build_server

    async def go() -> Any:
        async with Client(build_server(cast(Any, _Breaking(error)))) as client:
            return await client.call_tool("report_result", {})

    return anyio.run(go)


@pytest.mark.parametrize(
    "error",
    [
        Refused("report_result: not one of the tools this unit may call"),
        CorruptState("/x/.regulator/units/u1/unit.json: not JSON"),
        HostFailure("git is not installed (not found on PATH)"),
    ],
    ids=["refused", "corrupt state", "host failure"],
)
def test_the_mcp_server_answers_each_root_as_an_error_result_with_its_own_words(
    error: RegulatorError,
) -> None:
    result = call_over_mcp(error)
    assert result.is_error
    kind = {Refused: "refused", CorruptState: "corruptState", HostFailure: "hostFailure"}
    said = {Refused: "", CorruptState: "corrupt state: ", HostFailure: "host failure: "}
    assert result.structured_content == {kind[type(error)]: str(error)}
    assert [c.text for c in result.content] == [said[type(error)] + str(error)]


def test_the_mcp_server_answers_a_tool_that_breaks_as_an_error_result_not_a_crash() -> None:
    result = call_over_mcp(KeyError("boom"))
    assert result.is_error
    assert result.content[0].text == "report_result failed: KeyError: 'boom'"


@pytest.mark.room
async def test_the_room_shows_a_host_failure_as_the_dialogs_refusal_and_stays_open(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from regulator.rules import dispositions
    from regulator.rules.ledger import Ledger
    from regulator.store import Layout
    from tui.app import RoomApp
    from tui.dialogs.obligation import AcknowledgeDialog

    ledger = Ledger(Layout(project))
    opened = ledger.open_obligation(
        subject="owed to a human",
        unit="u1",
        concern="audit-finding",
        sources=["m1"],
        severity="blocking",
        consumer="human",
        blocks=True,
    )
    state = ledger.refresh().obligations[opened.id]

    def lease_held(*args: object, **kw: object) -> None:
        raise HostFailure('units/ is leased by unit "u1" (owner x) until later')

    monkeypatch.setattr(dispositions, "acknowledge", lease_held)
    app = RoomApp([project], person="alice", watch=False, presence=False)
    async with app.run_test(size=(160, 48)) as pilot:
        dialog = AcknowledgeDialog(app.models[0], state, "alice", app.actor)
        await app.push_screen(dialog)
        await pilot.pause()
        await pilot.click("#ack")
        await pilot.pause()
        refusal = str(dialog.query_one("#refusal").render())
        assert "is leased by unit" in refusal
        assert isinstance(app.screen, AcknowledgeDialog)
