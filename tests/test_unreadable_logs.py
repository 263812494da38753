"""A log or record under ``.regulator/`` that is not a regular file is refused by every reader,
naming it, never read as empty (a FIFO signals log made `obligations` say "no obligations")."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .conftest import cli
from .test_unit_show import a_unit_with_observations


def refused_naming(result: object, path: Path) -> None:
    """Exit 4 (corrupt state), nothing on stdout, and one line on stderr naming ``path``."""
    assert getattr(result, "returncode", None) == 4, result
    stderr: str = getattr(result, "stderr", "")
    assert getattr(result, "stdout", None) == ""
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"regulator: {path}: "), stderr
    assert "Traceback" not in stderr


@pytest.fixture
def fifo_signals(instance: Path) -> Path:
    signals = instance / ".regulator" / "signals.ndjson"
    if signals.exists():
        signals.unlink()
    os.mkfifo(signals)
    return signals


@pytest.mark.parametrize(
    "argv",
    [
        ["obligations"],
        ["obligations", "--all", "--json"],
        ["status"],
        ["status", "--json"],
        ["obligation", "show", "3f2a"],
        ["attention"],
    ],
)
def test_a_fifo_signals_log_is_refused_by_every_reader_naming_it(
    instance: Path, fifo_signals: Path, argv: list[str]
) -> None:
    # cli's timeout (a SIGALRM) stands for "never blocks on the FIFO".
    refused_naming(cli(*argv, cwd=instance), fifo_signals)


@pytest.mark.parametrize("what", ["fifo", "directory", "symlink"])
def test_obligations_refuses_a_signals_log_that_is_not_a_regular_file(
    instance: Path, tmp_path: Path, what: str
) -> None:
    signals = instance / ".regulator" / "signals.ndjson"
    if signals.exists():
        signals.unlink()
    if what == "fifo":
        os.mkfifo(signals)
    elif what == "directory":
        signals.mkdir()
    else:
        (tmp_path / "elsewhere.ndjson").write_text("")
        signals.symlink_to(tmp_path / "elsewhere.ndjson")
    refused_naming(cli("obligations", cwd=instance), signals)


def test_doctor_names_a_fifo_signals_log_and_exits_1(instance: Path, fifo_signals: Path) -> None:
    doctor = cli("doctor", cwd=instance)
    assert doctor.returncode == 1
    assert f"{fifo_signals}: is a FIFO, not a regular file" in doctor.stdout


@pytest.mark.parametrize(
    ("where", "argv"),
    [
        ("units/u1/attempts.ndjson", ["unit", "show", "u1"]),
        ("units/u1/attempts.ndjson", ["status"]),
        ("units/u1/observations.ndjson", ["unit", "show", "u1"]),
        ("units/u1/unit.json", ["status", "--json"]),
        ("memory.ndjson", ["memory"]),
        ("effects.ndjson", ["effects"]),
        ("instance.json", ["status"]),
    ],
)
def test_any_log_or_record_that_is_a_fifo_is_refused_by_its_reader(
    instance: Path, where: str, argv: list[str]
) -> None:
    a_unit_with_observations(instance)
    path = instance / ".regulator" / where
    if path.exists():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    refused_naming(cli(*argv, cwd=instance), path)


def test_status_shows_a_misplaced_entry_it_does_not_read_and_exits_1(instance: Path) -> None:
    # A FIFO where a lease belongs: no reader opens it (listings skip it), so status names it
    # among its problems, then refuses.
    leases = instance / ".regulator" / "leases"
    leases.mkdir(exist_ok=True)
    os.mkfifo(leases / "u1.json")
    status = cli("status", cwd=instance)
    assert status.returncode == 4  # corrupt state
    assert ".regulator/leases/u1.json: is a FIFO" in status.stdout
    assert status.stderr.splitlines() == [
        "regulator: .regulator/leases/u1.json: is a FIFO, not a regular file"
    ]


def test_the_rooms_problem_bar_names_a_fifo_signals_log_and_the_room_goes_on(
    instance: Path, fifo_signals: Path
) -> None:
    from tui.model import InstanceModel

    model = InstanceModel(instance)
    model.refresh()  # on a worker thread in the room: it must neither raise nor block
    assert model.loaded and model.problem_count >= 1
    assert f"{fifo_signals}: is a FIFO, not a regular file" in model.problems
    # Once it is a log again, the next fold reads it and the problem goes.
    fifo_signals.unlink()
    fifo_signals.write_text("")
    model.refresh()
    assert not any("FIFO" in p for p in model.problems)
