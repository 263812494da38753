"""``doctor`` separates problems (exit 1) from notices (exit 0), in text and in ``--json``."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from regulator.policy import load_definition
from regulator.rules.ledger import Ledger
from regulator.rules.router import route_messages
from regulator.store import Layout

from .conftest import cli, run_cli
from .factory import append, message

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
# The instance's example people, alice and bob, have no osUsers: a notice each.
PEOPLE_NOTICES = 2


def _route_without_delivering(root: Path, *messages: dict[str, object]) -> None:
    # As the original leaves it until its next `remind`: owed to a person, not yet delivered.
    layout = Layout(root)
    append(layout.signals, *messages)
    route_messages(Ledger(layout, clock=lambda: NOW), load_definition(None).routing)


def test_an_obligation_owed_to_a_person_not_yet_delivered_is_a_notice_and_doctor_exits_0(
    instance: Path,
) -> None:
    _route_without_delivering(
        instance, message("algedonic-signal", "the build burns money", unit="u1")
    )
    result = cli("doctor", cwd=instance)
    assert result.returncode == 0, result.stdout
    lines = result.stdout.splitlines()
    assert any(line.startswith("notice  obligations") for line in lines), result.stdout
    assert any("is not delivered yet" in line for line in lines)
    assert lines[-1] == f"0 problem(s), {1 + PEOPLE_NOTICES} notice(s)"


def test_doctor_json_gives_each_checks_level_problems_and_notices_and_the_counts(
    instance: Path,
) -> None:
    _route_without_delivering(
        instance, message("algedonic-signal", "the build burns money", unit="u1")
    )
    result = cli("doctor", "--json", cwd=instance)
    assert result.returncode == 0
    report = json.loads(result.stdout)
    assert (report["problems"], report["notices"]) == (0, 1 + PEOPLE_NOTICES)
    checks = {c["name"]: c for c in report["checks"]}
    assert set(checks["obligations"]) == {"name", "level", "ok", "detail", "problems", "notices"}
    assert checks["obligations"]["level"] == "notice" and checks["obligations"]["ok"] is True
    assert checks["obligations"]["problems"] == []
    assert "not delivered yet" in checks["obligations"]["notices"][0]
    assert checks["python"]["level"] == "ok"


def test_once_delivered_the_notice_is_gone(instance: Path) -> None:
    _route_without_delivering(
        instance, message("algedonic-signal", "the build burns money", unit="u1")
    )
    assert run_cli("remind", cwd=instance).returncode == 0
    result = cli("doctor", cwd=instance)
    assert result.returncode == 0
    assert result.stdout.splitlines()[-1] == f"0 problem(s), {PEOPLE_NOTICES} notice(s)"
    assert "is not delivered yet" not in result.stdout


def test_a_veto_holding_every_unit_is_still_a_problem_beside_a_notice(instance: Path) -> None:
    _route_without_delivering(
        instance,
        message("audit-finding", "the base fails its tests"),  # no unit: holds every unit
        message("algedonic-signal", "the build burns money", unit="u1"),
    )
    result = cli("doctor", cwd=instance)
    assert result.returncode == 1
    assert "PROBLEM obligations" in result.stdout
    assert "holds every unit: the base fails its tests" in result.stdout
    assert "notice: " in result.stdout  # beside a problem, a notice says it is one
    assert result.stdout.splitlines()[-1] == f"1 problem(s), {1 + PEOPLE_NOTICES} notice(s)"
    report = json.loads(cli("doctor", "--json", cwd=instance).stdout)
    assert (report["problems"], report["notices"]) == (1, 1 + PEOPLE_NOTICES)
