"""The in-process `cli` the suite runs most commands with gives what the real process gives,
and leaves nothing of a command behind in the test process."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from .conftest import cli, run_cli


@pytest.mark.parametrize(
    "argv",
    [
        ["obligations", "--all", "--json"],  # exit 0, JSON written through sys.stdout.buffer
        ["obligation", "show", "nope"],  # exit 1: a refusal, one line on stderr
        ["obligations", "--bogus"],  # exit 2: argparse's usage and message
        ["obligation", "ack", "nope"],  # exit 2: --by is required (a UsageError)
        ["--version"],  # SystemExit(0) from argparse
    ],
)
def test_in_process_gives_what_the_process_gives(instance: Path, argv: list[str]) -> None:
    real = run_cli(*argv, cwd=instance, env={"REGULATOR_PERSON": ""})
    here = cli(*argv, cwd=instance)
    assert (here.returncode, here.stdout, here.stderr) == (
        real.returncode,
        real.stdout,
        real.stderr,
    )


def test_a_command_outside_an_instance_is_refused_from_its_own_cwd(tmp_path: Path) -> None:
    real = run_cli("status", cwd=tmp_path)
    here = cli("status", cwd=tmp_path)
    assert here.returncode == real.returncode == 1
    assert here.stderr == real.stderr and str(tmp_path) in here.stderr


def test_nothing_of_a_command_stays_behind(instance: Path, tmp_path: Path) -> None:
    cwd, environ = Path.cwd(), dict(os.environ)
    handlers = [signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM)]
    assert cli("doctor", cwd=instance).returncode == 0
    assert cli("status", cwd=tmp_path).returncode == 1
    assert Path.cwd() == cwd and dict(os.environ) == environ
    assert [signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM)] == (
        handlers
    )
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_command_that_blocks_is_stopped_at_its_timeout(
    instance: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("regulator.cli.main._run", lambda handler, args: time.sleep(60))
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        cli("status", cwd=instance, timeout=0.5)
    assert time.monotonic() - started < 10
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
