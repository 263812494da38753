"""``regulator init``, ``doctor`` and ``status`` run as a person runs them: separate processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .conftest import git, run_cli


def test_init_writes_the_manifest_the_canaries_and_a_committed_ignore_line(repo: Path) -> None:
    (repo / ".env").write_text('API_TOKEN="abcd1234efgh"\nSHORT_KEY=abc\nNAME=x\n')
    git(repo, "add", ".env")
    git(repo, "commit", "-q", "-m", "env")
    result = run_cli("init", "--by", "alice", cwd=repo)
    assert result.returncode == 0, result.stderr
    manifest = json.loads((repo / ".regulator" / "instance.json").read_text())
    assert manifest["version"] == 1
    assert manifest["initializedBy"] == "alice"
    assert manifest["definition"]["name"] == "regulator"
    assert manifest["initializedAt"].endswith("Z")
    assert (repo / ".regulator" / "canaries").read_text() == "abcd1234efgh\n"
    assert ".regulator/" in (repo / ".gitignore").read_text().splitlines()
    assert git(repo, "status", "--porcelain") == ""
    assert "regulator init" in git(repo, "log", "-1", "--format=%s")


def test_init_refuses_a_directory_outside_git_and_writes_nothing(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    result = run_cli("init", str(plain), cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("regulator: ") and "not in a git repository" in result.stderr
    assert list(plain.iterdir()) == []


def test_init_refuses_an_existing_instance_and_leaves_it_byte_for_byte(instance: Path) -> None:
    before = (instance / ".regulator" / "instance.json").read_bytes()
    result = run_cli("init", "--by", "bob", cwd=instance)
    assert result.returncode == 1
    assert "already exists" in result.stderr and "never re-initializes" in result.stderr
    assert (instance / ".regulator" / "instance.json").read_bytes() == before


def test_init_in_a_subdirectory_makes_the_repository_root_the_instance(repo: Path) -> None:
    (repo / "src").mkdir()
    result = run_cli("init", "src", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert (repo / ".regulator" / "instance.json").is_file()
    assert not (repo / "src" / ".regulator").exists()


def test_doctor_passes_without_a_notice_on_a_fresh_instance(repo: Path) -> None:
    assert run_cli("init", "--by", "carol", cwd=repo).returncode == 0
    result = run_cli("doctor", cwd=repo)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "0 problem(s)"
    report = json.loads(run_cli("doctor", "--json", cwd=repo).stdout)
    assert report["problems"] == 0
    assert {c["name"] for c in report["checks"]} >= {"manifest", "logs", "policy routing"}


def test_doctor_reports_every_bad_log_line_with_file_and_line(instance: Path) -> None:
    signals = instance / ".regulator" / "signals.ndjson"
    signals.write_text('{"type":"obligation-acknowledged"}\nnot json\n')
    result = run_cli("doctor", cwd=instance)
    assert result.returncode == 1
    assert ".regulator/signals.ndjson:1:" in result.stdout
    assert ".regulator/signals.ndjson:2: not JSON" in result.stdout


def test_doctor_and_status_find_the_instance_from_a_subdirectory(instance: Path) -> None:
    (instance / "deep" / "er").mkdir(parents=True)
    assert run_cli("doctor", cwd=instance / "deep" / "er").returncode == 0
    elsewhere = instance.parent
    result = run_cli("status", "--instance", str(instance), cwd=elsewhere)
    assert result.returncode == 0, result.stderr


def test_a_command_outside_any_instance_says_how_to_make_one(tmp_path: Path) -> None:
    result = run_cli("status", cwd=tmp_path)
    assert result.returncode == 1
    assert "no instance here or above" in result.stderr and "regulator init" in result.stderr


def test_status_json_is_json_only_and_lists_units_obligations_and_problems(instance: Path) -> None:
    signals = instance / ".regulator" / "signals.ndjson"
    message = {
        "id": "m1",
        "timestamp": "2026-12-01T00:00:00.000Z",
        "source": "S1",
        "subject": "deviation",
        "unit": "u1",
        "kind": "operational-signal",
        "channel": "signal",
        "destination": "S3",
        "severity": "blocking",
        "observation": "x",
        "evidence": [],
    }
    opened = {
        "type": "obligation-opened",
        "id": "e1",
        "at": "2026-12-01T00:00:01.000Z",
        "by": "S3",
        "obligation": {
            "id": "o1",
            "subject": "deviation",
            "unit": "u1",
            "concern": "operational-signal",
            "sources": ["m2"],
            "severity": "blocking",
            "consumer": "S3",
            "blocks": True,
            "openedAt": "2026-12-01T00:00:01.000Z",
            "openedBy": "S3",
        },
    }
    signals.write_text(json.dumps(message) + "\n" + json.dumps(opened) + "\n{broken\n")
    result = run_cli("status", "--json", cwd=instance)
    assert result.returncode == 0, result.stderr
    view = json.loads(result.stdout)
    inst = view["instance"]
    assert [m["id"] for m in inst["signals"]] == ["m1"]  # not cited by any routing event
    assert [o["id"] for o in inst["obligations"]] == ["o1"]
    assert inst["obligations"][0]["status"] == "open"
    assert any(p.startswith(".regulator/signals.ndjson:3:") for p in inst["problems"])
    text = run_cli("status", cwd=instance).stdout
    assert "obligations: 1 open of 1" in text and "unrouted messages: 1" in text


def test_bad_usage_exits_2_with_the_usage_line(instance: Path) -> None:
    result = run_cli("doctor", "--bogus", cwd=instance)
    assert result.returncode == 2
    assert "usage: regulator doctor" in result.stderr


def test_every_command_has_help_with_an_example() -> None:
    for command in ("init", "doctor", "status"):
        result = subprocess.run(
            [sys.executable, "-m", "regulator", command, "--help"], capture_output=True, text=True
        )
        assert result.returncode == 0
        assert "example:" in result.stdout
