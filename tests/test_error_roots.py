"""Each error root means what a caller does next, and each caller maps it in one place: the
CLI's exit status (1 refused, 4 corrupt state, 5 a host failure), ``regulator tool``'s JSON, the
room's severity. A tool whose command is missing is the machine's failure, not a refusal.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import orjson
import pytest

from regulator.cli import agent_cmds, main
from regulator.cli.errors import EXIT_STATUS, CliError, UsageError, exit_status
from regulator.host.conventions import Conventions
from regulator.host.tools import ToolFailed, ToolRefused
from regulator.protocol.errors import CorruptState, HostFailure, Refused, RegulatorError
from regulator.store import (
    CorruptRecord,
    InvalidUnitId,
    NotUnderInstance,
    RecordExists,
    RecordNotFound,
    StoreIOError,
    SymlinkRefused,
    WrongFileKind,
)
from tui.errors import severity_of

from .test_session_attention import Clock, contracted_tools

ERRORS = [
    Refused("report_result: not one of the tools this unit may call"),
    CorruptState("/x/.regulator/units/u1/unit.json: not JSON"),
    HostFailure("git is not installed (not found on PATH)"),
]
IDS = ["refused", "corrupt state", "host failure"]


def test_the_three_roots_exit_with_three_different_statuses_none_of_them_usage_or_ask() -> None:
    statuses = [exit_status(error) for error in ERRORS]
    assert statuses == [1, 4, 5]
    assert set(EXIT_STATUS.values()).isdisjoint({0, 2, 3})  # success, usage, nobody answered
    assert exit_status(UsageError("--by WHO is required")) == 2
    assert exit_status(CliError("a refusal of the command's own")) == 1


@pytest.mark.parametrize("error", ERRORS, ids=IDS)
def test_the_cli_exits_with_the_roots_status_and_one_line(
    error: RegulatorError, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def breaks(handler: str, args: argparse.Namespace) -> int:
        raise error

    monkeypatch.setattr(main, "_run", breaks)
    status = main.main(["status", "--instance", "/nowhere"])
    assert status == {Refused: 1, CorruptState: 4, HostFailure: 5}[type(error)]
    assert capsys.readouterr().err == f"regulator: {error}\n"


class _Breaking:
    def __init__(self, error: RegulatorError) -> None:
        self.error = error

    def call(self, name: str, args: dict[str, Any], **kw: Any) -> Any:
        raise self.error


@pytest.mark.parametrize("error", ERRORS, ids=IDS)
def test_regulator_tool_names_the_root_in_its_json_and_its_exit_status(
    error: RegulatorError, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("REGULATOR_UNIT", "u1")
    monkeypatch.setattr(agent_cmds, "_session", lambda *a, **kw: object())
    monkeypatch.setattr(agent_cmds, "_tools", lambda session: _Breaking(error))
    args = argparse.Namespace(name="run_tests", json="{}", instance=None)
    status = agent_cmds.cmd_tool(args)
    said = orjson.loads(capsys.readouterr().out)
    kind = {Refused: "refused", CorruptState: "corruptState", HostFailure: "hostFailure"}
    assert said == {kind[type(error)]: str(error)}
    assert status == exit_status(error)


def test_the_room_warns_of_a_refusal_and_shows_corrupt_state_and_host_failure_as_errors() -> None:
    assert [severity_of(error) for error in ERRORS] == ["warning", "error", "error"]


@pytest.mark.parametrize(
    ("error", "root"),
    [
        (InvalidUnitId("../x"), Refused),
        (RecordExists(Path("/x/.regulator/units/u1/contract.v1.json")), Refused),
        (NotUnderInstance("/x/.regulator: no such directory", Path("/x/.regulator/a")), Refused),
        (SymlinkRefused(Path("/x/.regulator/leases")), CorruptState),
        (
            WrongFileKind("/x/.regulator/leases: is a FIFO", Path("/x/.regulator/leases")),
            CorruptState,
        ),
        (CorruptRecord("/x/.regulator/units/u1/unit.json: not JSON"), CorruptState),
        (RecordNotFound(Path("/x/.regulator/units/u1/unit.json")), CorruptState),
        (
            StoreIOError(Path("/x/.regulator/log"), "read", PermissionError(13, "denied")),
            HostFailure,
        ),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else value.__name__,
)
def test_each_store_error_is_the_root_its_docstring_names(
    error: RegulatorError, root: type[RegulatorError]
) -> None:
    assert isinstance(error, root)
    assert sum(isinstance(error, r) for r in (Refused, CorruptState, HostFailure)) == 1


def test_a_tool_command_that_is_missing_is_a_host_failure_and_is_observed(
    instance: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from regulator.host import tools as tools_module

    missing = ["regulator-no-such-test-runner", "-q"]
    monkeypatch.setattr(
        tools_module, "discover", lambda root: Conventions(missing, "a test's", [], [])
    )
    tools = contracted_tools(instance, Clock())
    with pytest.raises(ToolFailed) as failed:
        tools.call("run_tests", {})
    assert isinstance(failed.value, HostFailure) and not isinstance(failed.value, ToolRefused)
    assert "command not found: regulator-no-such-test-runner" in str(failed.value)
    observed = tools.store.observations(tools.unit_id)
    assert [o.tool_name for o in observed] == ["run_tests"]
