"""Symlinks, FIFOs and directories where the instance's or the definition's files belong.

Each is refused in one ``regulator: …`` line naming the path, or named by ``doctor`` (and
``status``) as a problem: never a traceback, never a hang, never a silent fallback (a unit that
disappears, the shipped policy and its people in place of the repository's).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from regulator.host.instance import read_canaries
from regulator.policy import load_definition
from regulator.rules.execution import ExecutionStore
from regulator.store import Layout, StoreError

from .conftest import cli as in_process
from .conftest import git

# A FIFO that blocked a command would hang it for ever: far less than that is a failure.
HANG = 60

UNIT_JSON = (
    '{"unitId": "u1", "unitType": "code", "workload": {"name": "w", "version": 1}, '
    '"contract": {"id": "c1", "version": 1}, "status": "contracted", "attempts": 0, '
    '"createdAt": "2026-12-01T10:00:00.000Z", "updatedAt": "2026-12-01T10:00:00.000Z"}\n'
)
LEASE_JSON = (
    '{"unitId": "u1", "owner": "alice@host", "resource": "/tmp/wt", "branch": "unit/u1", '
    '"acquiredAt": 1, "heartbeatAt": 1, "expiresAt": 2}\n'
)


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``regulator ARGS`` (in process) that must finish well before a blocked open would."""
    return in_process(*args, cwd=cwd, timeout=HANG)


def no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    for line in result.stderr.splitlines():
        assert line.startswith(("regulator: ", "usage: ")), result.stderr


def plant(path: Path, how: str, elsewhere: Path) -> None:
    """Put a symlink (to a file, a directory, nothing), a FIFO or a directory at ``path``."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    if how == "fifo":
        os.mkfifo(path)
    elif how == "directory":
        path.mkdir()
    elif how == "dangling symlink":
        path.symlink_to(elsewhere / "nothing-here")
    elif how == "symlink to a directory":
        elsewhere.mkdir(exist_ok=True)
        path.symlink_to(elsewhere)
    elif how == "symlink to a file":
        elsewhere.mkdir(exist_ok=True)
        (elsewhere / "file").write_text("{}\n")
        path.symlink_to(elsewhere / "file")
    else:  # pragma: no cover
        raise AssertionError(how)


@pytest.fixture
def with_unit(instance: Path) -> Path:
    """The fresh instance with one unit record and its lease."""
    state = instance / ".regulator"
    (state / "units" / "u1").mkdir(parents=True)
    (state / "units" / "u1" / "unit.json").write_text(UNIT_JSON)
    (state / "leases").mkdir()
    (state / "leases" / "u1.json").write_text(LEASE_JSON)
    assert cli("doctor", cwd=instance).returncode == 0
    return instance


# --- .regulator/ ---------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["symlink to a directory", "dangling symlink", "fifo"])
def test_a_leases_directory_that_is_not_a_directory_is_refused_in_one_line_and_named_by_doctor(
    with_unit: Path, tmp_path: Path, how: str
) -> None:
    plant(with_unit / ".regulator" / "leases", how, tmp_path / "elsewhere")
    refused = cli("unit", "status", cwd=with_unit)
    assert refused.returncode == 4  # corrupt state
    no_traceback(refused)
    assert ".regulator/leases: is a" in refused.stderr
    doctor = cli("doctor", cwd=with_unit)
    assert doctor.returncode == 1
    assert ".regulator/leases: is a" in doctor.stdout
    status = cli("status", cwd=with_unit)
    no_traceback(status)
    assert ".regulator/leases: is a" in status.stdout


def test_a_symlinked_unit_directory_is_named_by_status_and_doctor_not_silently_dropped(
    with_unit: Path, tmp_path: Path
) -> None:
    units = with_unit / ".regulator" / "units"
    (units / "u2").symlink_to(units / "u1")
    doctor = cli("doctor", cwd=with_unit)
    assert doctor.returncode == 1
    assert ".regulator/units/u2: is a symlink; refusing to follow it" in doctor.stdout
    status = cli("status", "--json", cwd=with_unit)
    no_traceback(status)
    assert any(".regulator/units/u2: is a symlink" in p for p in _problems(status.stdout))
    shown = cli("unit", "show", "u2", cwd=with_unit)
    assert shown.returncode == 4  # corrupt state
    no_traceback(shown)
    assert "units/u2: is a symlink" in shown.stderr


def _outcome(read: object) -> object:
    try:
        got = read() if callable(read) else read
    except Exception as exc:
        return (type(exc), str(exc))
    return (type(got), str(got)) if isinstance(got, Exception) else got


@pytest.mark.parametrize(
    "how",
    [
        "unit directory a symlink",
        "symlink to a file",
        "dangling symlink",
        "fifo",
        "directory",
        "missing",
        "not JSON",
    ],
)
def test_reading_every_unit_at_once_refuses_what_reading_one_refuses(
    with_unit: Path, tmp_path: Path, how: str
) -> None:
    """The room reads all units through one open directory; a link it followed there, or a
    FIFO it waited on, would be a unit that reading it alone refuses."""
    layout = Layout(with_unit)
    units = layout.units_dir
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    valid = UNIT_JSON.replace('"u1"', '"u2"')
    (units / "u2").mkdir()
    target = units / "u2" / "unit.json"
    if how == "unit directory a symlink":
        (elsewhere / "unit.json").write_text(valid)
        (units / "u2").rmdir()
        (units / "u2").symlink_to(elsewhere)
    elif how == "symlink to a file":  # a whole valid unit behind the link
        (elsewhere / "unit.json").write_text(valid)
        target.symlink_to(elsewhere / "unit.json")
    elif how == "not JSON":
        target.write_text('{"unitId": ')
    elif how != "missing":
        plant(target, how, elsewhere)
    store = ExecutionStore(layout)
    each = dict(store.each_unit(["u1", "u2", "u3"]))
    assert set(each) == {"u1", "u2", "u3"}
    assert each["u1"] == store.unit("u1")
    for unit_id in ("u2", "u3"):
        assert isinstance(each[unit_id], Exception), each[unit_id]
        assert _outcome(each[unit_id]) == _outcome(lambda u=unit_id: store.unit(u))


INSTANCE_FILES = [
    "signals.ndjson",
    "instance.json",
    "canaries",
    "outbox.cursor",
    "units/u1/unit.json",
    "units/u1/attempts.ndjson",
    "leases/u1.json",
]


@pytest.mark.parametrize("where", INSTANCE_FILES)
def test_a_fifo_in_place_of_an_instance_file_never_hangs_a_command_and_doctor_names_it(
    with_unit: Path, where: str
) -> None:
    plant(with_unit / ".regulator" / where, "fifo", with_unit)
    for command in (["status"], ["unit", "status"]):
        no_traceback(cli(*command, cwd=with_unit))  # and, by the timeout, no hang
    doctor = cli("doctor", cwd=with_unit)
    assert doctor.returncode == 1, doctor.stdout
    assert f".regulator/{where}: is a FIFO, not a regular file" in doctor.stdout


@pytest.mark.slow
@pytest.mark.parametrize("where", INSTANCE_FILES)
@pytest.mark.parametrize("how", ["fifo", "directory", "symlink to a file", "dangling symlink"])
def test_a_fifo_directory_or_symlink_in_place_of_an_instance_file_is_never_a_traceback(
    with_unit: Path, tmp_path: Path, where: str, how: str
) -> None:
    plant(with_unit / ".regulator" / where, how, tmp_path / "elsewhere")
    for command in (["status"], ["unit", "show", "u1"]):
        no_traceback(cli(*command, cwd=with_unit))  # and, by the timeout, no hang
    doctor = cli("doctor", cwd=with_unit)
    assert doctor.returncode == 1, doctor.stdout
    assert f".regulator/{where}: is a" in doctor.stdout


def test_the_canaries_as_a_fifo_are_refused_at_once_not_read_as_no_secrets(instance: Path) -> None:
    layout = Layout(instance)
    layout.canaries.unlink()
    os.mkfifo(layout.canaries)
    outcome: list[BaseException | list[str]] = []

    def read() -> None:
        try:
            outcome.append(read_canaries(layout))
        except BaseException as exc:  # the refusal expected
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(HANG)
    assert not reader.is_alive(), "reading the canaries blocked on a FIFO"
    (result,) = outcome
    assert isinstance(result, StoreError) and "canaries: is a FIFO" in str(result)


# --- the definition ------------------------------------------------------------------------


@pytest.fixture
def own_definition(repo: Path) -> Path:
    """An instance whose repository has its own interaction policy, with its own people."""
    policies = repo / "regulator" / "policies"
    policies.mkdir(parents=True)
    shipped = load_definition(None).source("interaction").read_text(encoding="utf-8")
    (policies / "interaction.yaml").write_text(shipped.replace("{ name: alice,", "{ name: dana,"))
    git(repo, "add", "regulator")
    git(repo, "commit", "--quiet", "-m", "our own people")
    result = cli("init", "--by", "dana", cwd=repo)
    assert result.returncode == 0, result.stderr
    return repo


@pytest.mark.parametrize("how", ["fifo", "directory", "dangling symlink", "symlink to a directory"])
def test_a_policy_file_that_is_not_a_file_is_refused_not_replaced_by_the_shipped_policy(
    own_definition: Path, tmp_path: Path, how: str
) -> None:
    policy = own_definition / "regulator" / "policies" / "interaction.yaml"
    plant(policy, how, tmp_path / "elsewhere")
    for command in (["status"], ["answer", "abc", "--by", "alice", "--answer", "yes"]):
        refused = cli(*command, cwd=own_definition)
        assert refused.returncode == 4  # corrupt state, refused.stdout
        no_traceback(refused)
        assert "regulator/policies/interaction.yaml: is a" in refused.stderr
    doctor = cli("doctor", cwd=own_definition)
    assert doctor.returncode == 1
    assert "PROBLEM policy interaction regulator/policies/interaction.yaml is refused" in (
        doctor.stdout
    )


@pytest.mark.parametrize("how", ["fifo", "dangling symlink"])
def test_a_policies_directory_that_is_not_a_directory_is_refused_not_passed_over(
    own_definition: Path, tmp_path: Path, how: str
) -> None:
    plant(own_definition / "regulator" / "policies", how, tmp_path / "elsewhere")
    for command in (["status"], ["doctor"], ["signals", "route"]):
        refused = cli(*command, cwd=own_definition)
        assert refused.returncode == 4  # corrupt state
        no_traceback(refused)
        assert "regulator/policies: is a" in refused.stderr


def test_a_workload_that_is_a_fifo_is_refused_by_doctor(own_definition: Path) -> None:
    os.mkfifo(own_definition / "regulator" / "workload.yaml")
    doctor = cli("doctor", cwd=own_definition)
    assert doctor.returncode == 1
    assert "regulator/workload.yaml: is a FIFO, not a regular file" in doctor.stdout


def test_a_policy_that_is_a_symlink_to_a_file_is_used_and_doctor_says_where_it_points(
    own_definition: Path, tmp_path: Path
) -> None:
    policy = own_definition / "regulator" / "policies" / "interaction.yaml"
    real = tmp_path / "shared-interaction.yaml"
    real.write_bytes(policy.read_bytes())
    policy.unlink()
    policy.symlink_to(real)
    doctor = cli("doctor", cwd=own_definition)
    assert doctor.returncode == 0, doctor.stdout
    assert f"interaction.yaml is a symlink to {real.resolve()}" in doctor.stdout


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_an_unreadable_policy_is_refused_naming_it(own_definition: Path) -> None:
    policy = own_definition / "regulator" / "policies" / "interaction.yaml"
    policy.chmod(0)
    refused = cli("status", cwd=own_definition)
    assert refused.returncode == 1
    assert "interaction.yaml: cannot read" in refused.stderr


@pytest.mark.parametrize("how", ["fifo", "directory"])
def test_init_refuses_an_env_file_it_cannot_read_for_canaries_and_writes_nothing(
    repo: Path, tmp_path: Path, how: str
) -> None:
    plant(repo / ".env", how, tmp_path / "elsewhere")
    refused = cli("init", "--by", "alice", cwd=repo)
    assert refused.returncode == 1
    no_traceback(refused)
    assert ".env: is not a regular file" in refused.stderr
    assert not (repo / ".regulator").exists()


def _problems(status_json: str) -> list[str]:
    import json

    problems: list[str] = json.loads(status_json)["instance"]["problems"]
    return problems
