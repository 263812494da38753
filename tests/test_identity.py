"""The S5 decision path: ``identity accept`` / ``identity reject`` on a policy proposal."""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from typing import Any

import pytest

import regulator.host.identity as identity
from regulator.host.identity import IdentityRefusal, accept_proposal
from regulator.policy import load_definition
from regulator.rules.dispositions import decide_proposal
from regulator.rules.ledger import Actor, Ledger
from regulator.rules.regulatory_log import RegulatoryLog
from regulator.store import Layout

from .conftest import cli, git, run_cli

POLICY = load_definition(None).interaction
OLD_INVARIANTS = "# Invariants\n\nINV-001: the base stays green.\n"
NEW_INVARIANTS = "# Invariants\n\nINV-001: the base stays green.\nINV-002: S5 decides identity.\n"


@pytest.fixture
def base(instance: Path) -> Path:
    """An instance whose identity already holds an INVARIANTS.md, committed."""
    ident = instance / "regulator" / "identity"
    ident.mkdir(parents=True)
    (ident / "INVARIANTS.md").write_text(OLD_INVARIANTS)
    git(instance, "add", "regulator")
    git(instance, "commit", "-q", "-m", "identity seed")
    return instance


@pytest.fixture
def proposal_file(tmp_path: Path) -> Path:
    # Outside the repository: the base checkout must stay clean.
    path = tmp_path / "proposed-invariants.md"
    path.write_text(NEW_INVARIANTS)
    return path


def open_obligation(
    root: Path, concern: str = "policy-proposal", consumer: str = "S5", severity: str = "blocking"
) -> str:
    with Ledger(Layout(root)).transaction() as txn:
        state = txn.open(
            subject="add INV-002",
            concern=concern,
            sources=["m-proposal"],
            severity=severity,
            consumer=consumer,
            blocks=False,
        )
    return state.id


def snapshot(root: Path) -> dict[str, bytes]:
    files = {str(p): p.read_bytes() for p in (root / ".regulator").rglob("*") if p.is_file()}
    files["invariants"] = (root / "regulator" / "identity" / "INVARIANTS.md").read_bytes()
    return files


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def state_of(root: Path, oid: str) -> Any:
    log = RegulatoryLog(Layout(root))
    log.refresh()
    return log.obligations[oid]


def test_identity_accept_by_alice_commits_the_file_and_resolves_the_obligation_as_accepted(
    base: Path, proposal_file: Path
) -> None:
    oid = open_obligation(base)
    before = head(base)
    result = run_cli(
        "identity",
        "accept",
        oid[:8],
        "--by",
        "alice",
        "--file",
        "INVARIANTS.md",
        "--from",
        str(proposal_file),
        "--rationale",
        "agreed at review",
        cwd=base,
    )
    assert result.returncode == 0, result.stderr
    match = re.fullmatch(
        rf"proposal {oid[:8]} accepted by alice \(S5\): regulator/identity/INVARIANTS.md "
        r"committed as ([0-9a-f]{7}) on main; the obligation is resolved as accepted\n",
        result.stdout,
    )
    assert match, result.stdout
    sha = head(base)
    assert sha.startswith(match.group(1))
    assert git(base, "rev-parse", "HEAD~1").strip() == before
    assert (base / "regulator" / "identity" / "INVARIANTS.md").read_text() == NEW_INVARIANTS
    assert git(base, "status", "--porcelain") == ""
    assert git(base, "show", "--name-only", "--format=", "HEAD").split() == [
        "regulator/identity/INVARIANTS.md"
    ]
    message = git(base, "log", "-1", "--format=%B")
    assert f"proposal {oid[:8]}" in message and oid in message and "alice" in message
    state = state_of(base, oid)
    assert (state.status, state.disposition, state.closed_by) == ("resolved", "accepted", "alice")
    assert state.rationale == (
        f"agreed at review. regulator/identity/INVARIANTS.md changed in {sha[:7]} on main "
        "under S5 authority."
    )
    provenance = (base / ".regulator" / "provenance.ndjson").read_text().splitlines()
    assert json.loads(provenance[-1])["eventId"] == state.history[-1].id


def test_identity_accept_by_bob_is_refused_and_changes_nothing(
    base: Path, proposal_file: Path
) -> None:
    oid = open_obligation(base)
    before, commit = snapshot(base), head(base)
    target = base / "regulator" / "identity" / "INVARIANTS.md"
    # Inode and mtime too: the file is never touched, not merely written back.
    untouched = (target.stat().st_ino, target.stat().st_mtime_ns)
    result = cli(
        "identity",
        "accept",
        oid,
        "--by",
        "bob",
        "--file",
        "INVARIANTS.md",
        "--from",
        str(proposal_file),
        "--rationale",
        "agreed",
        cwd=base,
    )
    assert result.returncode == 1
    assert result.stderr == "regulator: bob may not act as S5 (interaction v1)\n"
    assert snapshot(base) == before
    assert (target.stat().st_ino, target.stat().st_mtime_ns) == untouched
    assert head(base) == commit
    assert git(base, "status", "--porcelain") == ""


def test_identity_accept_on_a_non_proposal_is_refused(base: Path, proposal_file: Path) -> None:
    oid = open_obligation(base, concern="audit-finding", consumer="S3")
    before, commit = snapshot(base), head(base)
    result = cli(
        "identity",
        "accept",
        oid,
        "--by",
        "alice",
        "--file",
        "INVARIANTS.md",
        "--from",
        str(proposal_file),
        "--rationale",
        "r",
        cwd=base,
    )
    assert result.returncode == 1
    assert result.stderr == (
        f"regulator: obligation {oid[:8]} is audit-finding owed to S3; "
        "`identity accept|reject` decides proposals owed to S5\n"
    )
    assert (snapshot(base), head(base)) == (before, commit)


def test_identity_accept_with_a_file_outside_the_four_is_a_usage_error(
    base: Path, proposal_file: Path
) -> None:
    oid = open_obligation(base)
    before = snapshot(base)
    result = cli(
        "identity",
        "accept",
        oid,
        "--by",
        "alice",
        "--file",
        "README.md",
        "--from",
        str(proposal_file),
        "--rationale",
        "r",
        cwd=base,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("usage: regulator identity accept")
    assert result.stderr.endswith(
        "regulator: --file must be one of IDENTITY.md, INVARIANTS.md, GLOSSARY.md, BOUNDARIES.md\n"
    )
    assert snapshot(base) == before


def test_identity_accept_refuses_a_dirty_base_checkout(base: Path, proposal_file: Path) -> None:
    oid = open_obligation(base)
    (base / "scratch.txt").write_text("uncommitted\n")
    before, commit = snapshot(base), head(base)
    result = cli(
        "identity",
        "accept",
        oid,
        "--by",
        "alice",
        "--file",
        "INVARIANTS.md",
        "--from",
        str(proposal_file),
        "--rationale",
        "r",
        cwd=base,
    )
    assert result.returncode == 1
    assert result.stderr == (
        "regulator: the base checkout has uncommitted changes; an identity decision is "
        "committed on its own\n"
    )
    assert (snapshot(base), head(base)) == (before, commit)


def test_identity_reject_resolves_as_rejected_and_leaves_identity_unchanged(base: Path) -> None:
    oid = open_obligation(base)
    commit = head(base)
    result = cli(
        "identity", "reject", oid, "--by", "alice", "--rationale", "out of scope", cwd=base
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        f"proposal {oid[:8]} rejected by alice (S5): out of scope; identity unchanged\n"
    )
    state = state_of(base, oid)
    assert (state.status, state.disposition, state.rationale) == (
        "resolved",
        "rejected",
        "out of scope",
    )
    assert head(base) == commit
    again = cli("identity", "reject", oid, "--by", "alice", "--rationale", "x", cwd=base)
    assert again.returncode == 1 and "terminal records do not reopen" in again.stderr


def test_a_new_identity_file_is_created_and_committed(base: Path, tmp_path: Path) -> None:
    source = tmp_path / "glossary.md"
    source.write_text("# Glossary\n\nunit: one piece of work.\n")
    oid = open_obligation(base)
    ledger = Ledger(Layout(base))
    done = accept_proposal(
        ledger,
        POLICY,
        oid,
        "alice",
        Actor("cli", "tester"),
        file="GLOSSARY.md",
        source=source,
        rationale="a shared vocabulary",
    )
    assert done.path == "regulator/identity/GLOSSARY.md"
    assert git(base, "ls-files", "regulator/identity").split() == [
        "regulator/identity/GLOSSARY.md",
        "regulator/identity/INVARIANTS.md",
    ]


def test_a_failure_after_the_commit_restores_the_file_and_leaves_no_commit(
    base: Path, proposal_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    oid = open_obligation(base)
    before, commit = snapshot(base), head(base)
    real = decide_proposal
    calls: list[bool] = []

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls.append(True)
        if len(calls) == 2:  # the real decision, after the file was written and committed
            raise IdentityRefusal("someone else decided first")
        return real(*args, **kwargs)

    monkeypatch.setattr(identity, "decide_proposal", flaky)
    with pytest.raises(IdentityRefusal, match="someone else decided first"):
        accept_proposal(
            Ledger(Layout(base)),
            POLICY,
            oid,
            "alice",
            Actor("cli", "tester"),
            file="INVARIANTS.md",
            source=proposal_file,
            rationale="agreed",
        )
    assert len(calls) == 2
    assert (snapshot(base), head(base)) == (before, commit)
    assert git(base, "status", "--porcelain") == ""


def test_accepting_the_text_the_file_already_holds_is_refused(base: Path, tmp_path: Path) -> None:
    same = tmp_path / "same.md"
    same.write_text(OLD_INVARIANTS)
    oid = open_obligation(base)
    with pytest.raises(IdentityRefusal, match="already holds that text"):
        accept_proposal(
            Ledger(Layout(base)),
            POLICY,
            oid,
            "alice",
            Actor("cli", "tester"),
            file="INVARIANTS.md",
            source=same,
            rationale="r",
        )
    assert state_of(base, oid).status == "open"


def test_a_fifo_among_the_identity_files_is_skipped_not_waited_on(tmp_path: Path) -> None:
    from regulator.host.identity import IDENTITY_DIR, identity_text

    directory = tmp_path / IDENTITY_DIR
    directory.mkdir(parents=True)
    (directory / "A.md").write_text("who we are")
    os.mkfifo(directory / "B.md")  # nobody ever writes it: a blocking read would hang
    (directory / "C.md").write_text("what we never do")
    read: list[str | None] = []
    reader = threading.Thread(target=lambda: read.append(identity_text(tmp_path)), daemon=True)
    reader.start()
    reader.join(timeout=30)
    assert read == ["who we are\nwhat we never do"], "the FIFO was waited on or read"
    assert identity_text(tmp_path / "elsewhere") is None
