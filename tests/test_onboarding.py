"""A new user's first minutes: `init --by NAME` makes NAME someone who may answer, and
$REGULATOR_PERSON stands in for --by."""

from __future__ import annotations

from pathlib import Path

import yaml

from regulator.rules.authority import process_os_user
from regulator.rules.ledger import Ledger
from regulator.store import Layout

from .conftest import run_cli


def test_init_by_carol_makes_carol_the_person_of_a_fresh_repository(repo: Path) -> None:
    done = run_cli("init", "--by", "carol", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert "carol may answer" in done.stdout
    policy = yaml.safe_load((repo / "regulator" / "policies" / "interaction.yaml").read_text())
    carol = policy["people"][-1]  # the shipped policy's people, and carol
    assert carol["name"] == "carol" and carol["actAsS5"] is True
    assert carol["osUsers"] == [process_os_user()]
    assert run_cli("doctor", cwd=repo).returncode == 0


def test_carol_answers_with_regulator_person_and_no_by(repo: Path) -> None:
    assert run_cli("init", "--by", "carol", cwd=repo).returncode == 0
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


def test_init_by_never_overwrites_a_policy_the_repository_has(repo: Path) -> None:
    policies = repo / "regulator" / "policies"
    policies.mkdir(parents=True)
    mine = (Path(__file__).parent.parent / "policies" / "interaction.yaml").read_text()
    (policies / "interaction.yaml").write_text(mine)
    assert run_cli("init", "--by", "carol", cwd=repo).returncode == 0
    assert (policies / "interaction.yaml").read_text() == mine


def test_init_by_someone_the_policy_lists_writes_no_policy(repo: Path) -> None:
    assert run_cli("init", "--by", "alice", cwd=repo).returncode == 0
    assert not (repo / "regulator").exists()
