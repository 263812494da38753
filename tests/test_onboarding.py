"""A new user's first minutes: `init` makes the person who ran it the instance's only person,
pinned to their OS user, and $REGULATOR_PERSON stands in for --by."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from regulator.host import instance as instance_module
from regulator.host.demo import contract
from regulator.host.instance import InitError, init_instance
from regulator.policy import load_definition, shipped_policies_dir
from regulator.rules.asking import ask
from regulator.rules.authority import process_os_user
from regulator.rules.ledger import Ledger
from regulator.store import Layout

from .conftest import cli, git, run_cli

POLICY = Path("regulator") / "policies" / "interaction.yaml"


def everything(root: Path) -> dict[str, bytes]:
    """Every file of the repository but .git, byte for byte."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def a_question(root: Path) -> str:
    asked = ask(
        Ledger(Layout(root)),
        load_definition(root).interaction,
        kind="consent",
        subject="push",
        question="May I push?",
        action="git push",
        unit="u1",
        attempt=1,
    )
    return asked.obligation.id


def test_init_by_carol_names_only_carol_pinned_to_the_os_user(repo: Path) -> None:
    done = cli("init", "--by", "carol", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert f"carol may answer and decide everything here, only as OS user {process_os_user()}" in (
        done.stdout
    )
    policy = load_definition(repo).interaction
    assert [p.to_json_dict() for p in policy.people] == [
        {
            "name": "carol",
            "resolveUpTo": "critical",
            "acceptRisk": True,
            "actAsS5": True,
            "osUsers": [process_os_user()],
        }
    ]
    # Everything else is the shipped policy's, and the file says how to add someone.
    shipped = load_definition(None).interaction
    assert policy.replace(people=[]) == shipped.replace(people=[])
    assert "To add someone, add a line" in (repo / POLICY).read_text()


def test_after_init_by_carol_the_example_people_are_refused(repo: Path) -> None:
    assert cli("init", "--by", "carol", cwd=repo).returncode == 0
    oid = a_question(repo)
    for who in ("alice", "bob"):
        refused = cli("answer", oid[:8], "--by", who, "--answer", "yes", cwd=repo)
        assert refused.returncode == 1
        assert f'"{who}" is not a person the interaction policy' in refused.stderr
    done = cli("answer", oid[:8], "--by", "carol", "--answer", "yes", cwd=repo)
    assert done.returncode == 0, done.stderr


def test_init_without_by_names_the_os_user(repo: Path) -> None:
    done = cli("init", cwd=repo)
    assert done.returncode == 0, done.stderr
    user = process_os_user()
    people = load_definition(repo).interaction.people
    assert [(p.name, p.os_users) for p in people] == [(user, [user])]


def test_init_commits_the_policy_it_writes_with_the_ignore_line(repo: Path) -> None:
    assert cli("init", "--by", "carol", cwd=repo).returncode == 0
    assert git(repo, "status", "--porcelain") == ""
    committed = git(repo, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(committed) == [".gitignore", str(POLICY)]


def test_a_unit_merges_right_after_init_by_carol(repo: Path, tmp_path: Path) -> None:
    assert cli("init", "--by", "carol", cwd=repo).returncode == 0
    work = tmp_path / "u1.contract.json"
    work.write_text(json.dumps(contract("u1", "write a note").to_json_dict()))
    script = tmp_path / "u1.yaml"
    steps = [
        {"edit": {"path": "note.txt", "content": "a note\n"}},
        {"commit": "a note"},
        {"report": {"summary": "wrote a note"}},
    ]
    script.write_text(
        yaml.safe_dump({"models": ["anthropic/claude-sonnet-4-5"], "attempts": [{"steps": steps}]})
    )
    driven = cli("unit", "drive", str(work), "--script", str(script), cwd=repo)
    assert driven.returncode == 0, driven.stdout + driven.stderr
    assert (repo / "note.txt").read_text() == "a note\n"
    assert git(repo, "log", "-1", "--format=%s").strip() == "Reintegrate unit/u1"


@pytest.mark.parametrize("name", ["", "yes please", "-x", "1000", "a\x1b[2Jb", "caro\u202el"])
def test_init_by_what_is_not_a_person_name_is_refused_and_writes_nothing(
    repo: Path, name: str
) -> None:
    before, head = everything(repo), git(repo, "rev-parse", "HEAD")
    refused = cli("init", f"--by={name}", cwd=repo)
    assert refused.returncode == 1
    assert "not a person name" in refused.stderr
    assert everything(repo) == before and git(repo, "rev-parse", "HEAD") == head
    assert not (repo / ".regulator").exists()


def test_an_os_user_that_is_not_a_person_name_needs_by(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No entry in the password database: the OS user is the uid's number.
    monkeypatch.setattr(instance_module, "os_user", lambda: "1000")
    with pytest.raises(InitError, match=r"the OS user '1000': not a person name .*--by NAME"):
        init_instance(repo)
    assert not (repo / "regulator").exists() and not (repo / ".regulator").exists()
    result = init_instance(repo, by="carol")
    assert [p.os_users for p in load_definition(repo).interaction.people] == [["1000"]]
    assert result.person == "carol"


def test_init_refuses_a_policy_git_would_ignore_and_writes_nothing(repo: Path) -> None:
    (repo / ".gitignore").write_text(".regulator/\nregulator/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore")
    before = everything(repo)
    refused = cli("init", "--by", "carol", cwd=repo)
    assert refused.returncode == 1
    assert "git ignores it" in refused.stderr
    assert everything(repo) == before and not (repo / ".regulator").exists()


def test_init_writes_the_policy_beside_a_definition_without_one(repo: Path) -> None:
    policies = repo / "regulator" / "policies"
    policies.mkdir(parents=True)
    (policies / "budget.yaml").write_text((shipped_policies_dir() / "budget.yaml").read_text())
    git(repo, "add", "regulator")
    git(repo, "commit", "-q", "-m", "a budget of our own")
    assert cli("init", "--by", "carol", cwd=repo).returncode == 0
    assert [p.name for p in load_definition(repo).interaction.people] == ["carol"]
    assert git(repo, "status", "--porcelain") == ""


def test_init_never_writes_over_a_policy_the_repository_has(repo: Path) -> None:
    policies = repo / "regulator" / "policies"
    policies.mkdir(parents=True)
    mine = (shipped_policies_dir() / "interaction.yaml").read_text()
    (policies / "interaction.yaml").write_text(mine)
    done = cli("init", "--by", "carol", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert (policies / "interaction.yaml").read_text() == mine
    assert "people:" not in done.stdout


def test_init_under_a_definition_elsewhere_writes_no_policy(repo: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "policies").mkdir(parents=True)
    done = cli("init", "--by", "carol", "--definition", str(elsewhere), cwd=repo)
    assert done.returncode == 0, done.stderr
    assert (
        not (repo / "regulator").exists()
        and not (elsewhere / "policies" / "interaction.yaml").exists()
    )


def test_doctor_says_who_anyone_on_the_machine_may_act_as(instance: Path) -> None:
    result = cli("doctor", cwd=instance)
    assert result.returncode == 0, result.stdout
    lines = result.stdout.splitlines()
    assert any(line.startswith("notice  people") for line in lines), result.stdout
    for who in ("alice", "bob"):
        assert (
            f"anyone on this machine may act as {who}: give {who} osUsers (docs/policies.md)"
            in result.stdout
        )
    report = json.loads(cli("doctor", "--json", cwd=instance).stdout)
    people = next(c for c in report["checks"] if c["name"] == "people")
    assert (people["level"], len(people["notices"])) == ("notice", 2)


def test_doctor_has_no_notice_for_the_person_init_wrote(repo: Path) -> None:
    assert cli("init", "--by", "carol", cwd=repo).returncode == 0
    report = json.loads(cli("doctor", "--json", cwd=repo).stdout)
    people = next(c for c in report["checks"] if c["name"] == "people")
    assert (people["level"], people["notices"]) == ("ok", [])


def test_carol_answers_with_regulator_person_and_no_by(repo: Path) -> None:
    assert cli("init", "--by", "carol", cwd=repo).returncode == 0
    oid = (
        Ledger(Layout(repo))
        .open_obligation(
            subject="owed to a person",
            unit="u1",
            concern="audit-finding",
            sources=["m1"],
            severity="blocking",
            consumer="human",
            blocks=True,
        )
        .id
    )
    done = run_cli("obligation", "ack", oid[:8], cwd=repo, env={"REGULATOR_PERSON": "carol"})
    assert done.returncode == 0, done.stderr


def test_without_by_or_regulator_person_the_command_says_what_is_missing(
    instance: Path,
) -> None:
    done = run_cli("obligation", "ack", "x", cwd=instance, env={"REGULATOR_PERSON": ""})
    assert done.returncode == 2
    assert "--by WHO is required (or set $REGULATOR_PERSON)" in done.stderr
