"""``--json`` on the commands that act: one object on stdout saying what was done; a refusal is
its stderr line and exit code, with nothing on stdout. The remote room reads these objects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from regulator.cli.main import main

from .conftest import git, run_cli
from .test_cli_obligations import ask_one, open_one, snapshot
from .test_identity import NEW_INVARIANTS, OLD_INVARIANTS, head
from .test_identity import open_obligation as open_proposal
from .test_identity import snapshot as identity_snapshot
from .test_memory import seed


def act(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> tuple[int, str, str]:
    """``regulator ARGS --instance ROOT`` in this process: (exit code, stdout, stderr)."""
    capsys.readouterr()
    code = main([*args, "--instance", str(root)])
    out, err = capsys.readouterr()
    return code, out, err


def done(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> dict[str, Any]:
    code, out, err = act(capsys, root, *args, "--json")
    assert code == 0, err
    value = json.loads(out)  # one object, nothing else on stdout
    assert isinstance(value, dict)
    return value


def test_ack_json_is_the_obligation_as_it_is_now(
    instance: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    oid = open_one(instance)
    got = done(capsys, instance, "obligation", "ack", oid[:8], "--by", "bob", "--note", "seen")
    assert got["act"] == "acknowledge"
    assert got["obligation"]["id"] == oid and got["obligation"]["status"] == "acknowledged"
    assert got["obligation"]["acknowledgedBy"] == ["bob"]
    assert got["obligation"]["history"][-1]["note"] == "seen"


def test_resolve_json_says_what_follows_for_the_unit(
    instance: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    oid = open_one(instance)
    got = done(
        capsys,
        instance,
        "obligation",
        "resolve",
        oid,
        "--by",
        "alice",
        "--disposition",
        "no-action",
        "--rationale",
        "fine",
    )
    assert got["act"] == "resolve"
    assert got["obligation"]["status"] == "resolved"
    assert got["obligation"]["disposition"] == "no-action"
    assert got["obligation"]["closedBy"] == "alice"
    assert got["next"] == "unit u1 may proceed if nothing else is owed on it"
    # Nothing held: nothing follows, said as null rather than left out.
    free = open_one(instance, unit=None)
    got = done(
        capsys,
        instance,
        "obligation",
        "resolve",
        free,
        "--by",
        "alice",
        "--disposition",
        "no-action",
        "--rationale",
        "fine",
    )
    assert got["next"] is None


def test_escalate_json_names_the_successor_and_the_person(
    instance: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    oid = open_one(instance)
    got = done(
        capsys,
        instance,
        "obligation",
        "escalate",
        oid,
        "--by",
        "alice",
        "--to",
        "human",
        "--person",
        "bob",
        "--rationale",
        "yours",
    )
    assert got["act"] == "escalate"
    assert got["obligation"]["id"] == oid and got["obligation"]["status"] == "escalated"
    successor = got["successor"]
    assert got["obligation"]["successor"] == successor["id"]
    assert successor["status"] == "open" and successor["consumer"] == "human"
    assert got["person"] == "bob"
    line = json.loads((instance / ".regulator" / "addressees.ndjson").read_text())
    assert line["obligationId"] == successor["id"] and line["person"] == "bob"
    got = done(
        capsys,
        instance,
        "obligation",
        "escalate",
        successor["id"],
        "--by",
        "alice",
        "--to",
        "S3",
        "--rationale",
        "back",
    )
    assert got["person"] is None and got["successor"]["consumer"] == "S3"


def test_answer_json_is_the_answer_its_disposition_and_the_next_step(
    instance: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    oid = ask_one(instance, "consent", action="push to production")
    got = done(
        capsys, instance, "answer", oid[:8], "--by", "alice", "--answer", "Yes", "--note", "ok"
    )
    assert got["act"] == "answer"
    assert got["kind"] == "consent" and got["disposition"] == "accepted"
    assert got["answer"] == "Yes — ok"  # as recorded: the word, then the note
    assert got["obligation"]["id"] == oid and got["obligation"]["status"] == "resolved"
    assert got["next"] == (
        "unit u1 may proceed if nothing else is owed on it, and the next attempt carries the answer"
    )


def _refusals(oid: str) -> list[list[str]]:
    return [
        ["answer", oid, "--by", "alice", "--answer", "ok"],
        ["obligation", "ack", oid, "--by", "alice"],
        [
            "obligation",
            "resolve",
            oid,
            "--by",
            "alice",
            "--disposition",
            "fixed",
            "--rationale",
            "again",
        ],
        ["obligation", "escalate", oid, "--by", "alice", "--to", "S3", "--rationale", "again"],
    ]


@pytest.mark.parametrize("which", range(4), ids=["answer", "ack", "resolve", "escalate"])
def test_a_refused_act_with_json_prints_nothing_on_stdout_and_writes_nothing(
    instance: Path, capsys: pytest.CaptureFixture[str], which: int
) -> None:
    oid = ask_one(instance, "clarification")
    assert done(capsys, instance, "answer", oid, "--by", "alice", "--answer", "done")
    before = snapshot(instance)
    # Every act on an obligation already closed is refused.
    code, out, err = act(capsys, instance, *_refusals(oid)[which], "--json")
    assert code == 1 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("regulator: ")
    assert snapshot(instance) == before


def test_bad_usage_with_json_prints_nothing_on_stdout(
    instance: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    oid = open_one(instance)
    code, out, err = act(
        capsys, instance, "obligation", "resolve", oid, "--by", "alice",
        "--disposition", "maybe", "--rationale", "x", "--json",
    )  # fmt: skip
    assert code == 2 and out == "" and "--disposition" in err


def test_act_json_from_a_shell_is_one_object(instance: Path) -> None:
    # One real process: what the remote room runs over ssh, stdout is exactly the object.
    oid = open_one(instance)
    result = run_cli("obligation", "ack", oid, "--by", "bob", "--json", cwd=instance)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["obligation"]["status"] == "acknowledged"
    assert result.stderr == ""


def test_memory_retract_json_is_the_retraction_and_a_refusal_prints_nothing(
    instance: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    current, _, retracted = seed(instance)
    got = done(
        capsys, instance, "memory", "retract", current[:8], "--by", "bob", "--reason", "moved"
    )
    assert got["act"] == "retract"
    assert got["retraction"]["memoryId"] == current and got["retraction"]["by"] == "bob"
    last = json.loads((instance / ".regulator" / "memory.ndjson").read_text().splitlines()[-1])
    assert got["retraction"] == last
    before = snapshot(instance)
    code, out, err = act(
        capsys, instance, "memory", "retract", retracted, "--by", "bob", "--reason", "x", "--json"
    )
    assert (code, out) == (1, "") and "already retracted" in err
    assert snapshot(instance) == before


def test_identity_accept_json_names_the_commit_and_reject_the_obligation(
    instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = instance  # with an identity file committed, as tests/test_identity.py's base
    (base / "regulator" / "identity").mkdir(parents=True)
    (base / "regulator" / "identity" / "INVARIANTS.md").write_text(OLD_INVARIANTS)
    git(base, "add", "regulator")
    git(base, "commit", "-q", "-m", "identity seed")
    proposal_file = tmp_path / "proposed.md"  # outside the repository: the checkout stays clean
    proposal_file.write_text(NEW_INVARIANTS)
    oid = open_proposal(base)
    got = done(
        capsys, base, "identity", "accept", oid[:8], "--by", "alice", "--file", "INVARIANTS.md",
        "--from", str(proposal_file), "--rationale", "agreed",
    )  # fmt: skip
    assert got["act"] == "accept-proposal"
    assert got["obligation"]["id"] == oid and got["obligation"]["disposition"] == "accepted"
    assert got["path"] == "regulator/identity/INVARIANTS.md"
    assert got["commit"] == head(base) and got["branch"]
    other = open_proposal(base)
    got = done(capsys, base, "identity", "reject", other, "--by", "alice", "--rationale", "no")
    assert got == {"act": "reject-proposal", "obligation": got["obligation"]}
    assert got["obligation"]["disposition"] == "rejected"
    before = identity_snapshot(base)
    code, out, err = act(
        capsys, base, "identity", "reject", other, "--by", "alice", "--rationale", "x", "--json"
    )
    assert (code, out) == (1, "") and "terminal records do not reopen" in err
    assert identity_snapshot(base) == before
