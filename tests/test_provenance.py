"""Provenance records who actually ran a command: the uid and the password database's name for
it, never $LOGNAME or $USER, and the definition the command ran under."""

from __future__ import annotations

import json
import os
import pwd
import shutil
from pathlib import Path
from typing import Any

from regulator.protocol.ours import Provenance
from regulator.rules.authority import process_os_user
from regulator.rules.ledger import Actor, Ledger
from regulator.store import Layout

from .conftest import cli, run_cli

SPOOFED = {"LOGNAME": "carol", "USER": "carol", "LNAME": "carol", "USERNAME": "carol"}
SHIPPED_INTERACTION = (Path(__file__).parent.parent / "policies" / "interaction.yaml").read_text()


def real_user() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in (root / ".regulator").rglob("*") if p.is_file()}


def open_one(root: Path) -> str:
    return (
        Ledger(Layout(root))
        .open_obligation(
            subject="a finding",
            unit="u1",
            concern="audit-finding",
            sources=["m1"],
            severity="blocking",
            consumer="human",
            blocks=True,
        )
        .id
    )


def last_provenance(root: Path) -> dict[str, Any]:
    lines = (root / ".regulator" / "provenance.ndjson").read_text().splitlines()
    record: dict[str, Any] = json.loads(lines[-1])
    return record


def definition_with(directory: Path, people_line: str) -> Path:
    (directory / "policies").mkdir(parents=True, exist_ok=True)
    text = SHIPPED_INTERACTION.replace(
        "  - { name: bob, resolveUpTo: blocking, acceptRisk: false, actAsS5: false }",
        "  - { name: bob, resolveUpTo: blocking, acceptRisk: false, actAsS5: false }\n"
        f"  - {people_line}",
    )
    (directory / "policies" / "interaction.yaml").write_text(text)
    return directory


def test_logname_and_user_set_to_someone_else_do_not_change_the_recorded_os_user(
    instance: Path,
) -> None:
    oid = open_one(instance)
    done = run_cli("obligation", "ack", oid, "--by", "bob", cwd=instance, env=SPOOFED)
    assert done.returncode == 0, done.stderr
    record = last_provenance(instance)
    assert record["osUser"] == real_user() != "carol"
    assert record["uid"] == os.getuid()


def test_provenance_records_the_shipped_definition_when_the_instance_has_none(
    instance: Path,
) -> None:
    # As an instance made under a --definition elsewhere has: init wrote it no policy.
    shutil.rmtree(instance / "regulator")
    oid = open_one(instance)
    assert cli("obligation", "ack", oid, "--by", "bob", cwd=instance).returncode == 0
    assert last_provenance(instance)["definition"] == "shipped"


def test_provenance_records_the_definition_a_command_ran_under(
    instance: Path, tmp_path: Path
) -> None:
    own = definition_with(instance / "regulator", "{ name: dana, resolveUpTo: info, "
                          "acceptRisk: false, actAsS5: false }")  # fmt: skip
    oid = open_one(instance)
    assert cli("obligation", "ack", oid, "--by", "bob", cwd=instance).returncode == 0
    assert last_provenance(instance)["definition"] == str(own.resolve())
    # The same people (a second definition may not bring others), other policies.
    brought = definition_with(tmp_path / "elsewhere", "{ name: dana, resolveUpTo: info, "
                              "acceptRisk: false, actAsS5: false }")  # fmt: skip
    done = cli(
        "obligation", "resolve", oid, "--by", "alice", "--disposition", "fixed",
        "--rationale", "r", "--definition", str(brought), cwd=instance,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    record = last_provenance(instance)
    assert record["definition"] == str(brought.resolve())
    assert record["osUser"] == real_user() and record["uid"] == os.getuid()


def test_an_os_users_check_is_not_passed_by_setting_logname(instance: Path) -> None:
    """erin may be named only by OS user carol; claiming to be carol in the environment is
    not being carol."""
    definition_with(
        instance / "regulator",
        "{ name: erin, resolveUpTo: critical, acceptRisk: true, actAsS5: true, osUsers: [carol] }",
    )
    oid = open_one(instance)
    before = snapshot(instance)
    for args in (
        ["obligation", "ack", oid, "--by", "erin"],
        [
            "obligation",
            "resolve",
            oid,
            "--by",
            "erin",
            "--disposition",
            "fixed",
            "--rationale",
            "r",
        ],
    ):
        result = run_cli(*args, cwd=instance, env=SPOOFED)
        assert result.returncode == 1
        assert result.stderr == (
            "regulator: erin may be named only by the OS user(s) carol (interaction v1); "
            f'this is OS user "{real_user()}"\n'
        )
        assert snapshot(instance) == before


def test_the_process_os_user_ignores_the_environment(monkeypatch: Any) -> None:
    for name, value in SPOOFED.items():
        monkeypatch.setenv(name, value)
    assert process_os_user() == real_user()
    actor = Actor(via="cli")
    assert actor.os_user == real_user() and actor.uid == os.getuid()


def test_a_provenance_line_written_before_uid_and_definition_were_recorded_still_reads() -> None:
    old = {
        "eventId": "e1",
        "via": "cli",
        "osUser": "alice",
        "host": "h",
        "pid": 1,
        "at": "2026-12-01T10:00:00.000Z",
    }
    record = Provenance.from_json_dict(old)
    assert record.uid is None and record.definition is None
    assert record.to_json_dict() == old
