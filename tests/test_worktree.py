"""Worktrees on real git repositories: start, resume, reintegration and its refusals, abandon."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from regulator.host.leases import LeaseHeld, LeaseStore
from regulator.host.worktree import (
    BaseNotReady,
    Conflicted,
    Merged,
    WorktreeError,
    abandon_unit,
    checkpoint,
    conflict_signal,
    current_branch,
    finish_unit,
    head_of,
    is_dirty,
    resume_unit,
    start_unit,
)
from regulator.protocol.entry import parse_signal_line, record_to_json_line
from regulator.store import Layout
from tests.conftest import git


class FakeClock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, minutes: float) -> None:
        self.now += timedelta(minutes=minutes)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def layout(repo: Path) -> Layout:
    # No .gitignore entry on purpose: .regulator/ shows as untracked, and must still not count.
    (repo / ".regulator").mkdir()
    return Layout(repo, env={})


def commit_file(cwd: Path, name: str, text: str, message: str) -> None:
    (cwd / name).write_text(text)
    git(cwd, "add", name)
    git(cwd, "commit", "--quiet", "-m", message)


def parents(cwd: Path, rev: str = "HEAD") -> list[str]:
    return git(cwd, "rev-list", "--parents", "-n", "1", rev).split()[1:]


def branches(cwd: Path) -> list[str]:
    return git(cwd, "branch", "--format=%(refname:short)").split()


def test_start_checks_out_unit_branch_in_the_worktree_under_a_lease(
    layout: Layout, repo: Path, clock: FakeClock
) -> None:
    started = start_unit(layout, "u1", owner="alice@host", clock=clock)
    worktree = repo / ".regulator" / "worktrees" / "u1"
    assert started.path == worktree and worktree.is_dir()
    assert (started.branch, started.base) == ("unit/u1", "main")
    assert current_branch(worktree) == "unit/u1"
    assert head_of(worktree) == head_of(repo)
    lease = LeaseStore(layout, clock).lease("u1")
    assert lease == started.lease
    assert lease is not None and (lease.resource, lease.branch) == (str(worktree), "unit/u1")
    assert not is_dirty(repo)  # the worktree lives under .regulator/, which never counts


def test_a_unit_whose_lease_is_live_cannot_be_started_again(
    layout: Layout, repo: Path, clock: FakeClock
) -> None:
    start_unit(layout, "u1", clock=clock)
    with pytest.raises(LeaseHeld):
        start_unit(layout, "u1", clock=clock)


def test_a_failed_worktree_add_releases_the_lease(layout: Layout, clock: FakeClock) -> None:
    with pytest.raises(WorktreeError, match="no-such-branch"):
        start_unit(layout, "u1", base_branch="no-such-branch", clock=clock)
    assert LeaseStore(layout, clock).lease("u1") is None
    assert not layout.worktree("u1").exists()


def test_resume_needs_the_worktree_and_renews_the_lease(
    layout: Layout, repo: Path, clock: FakeClock
) -> None:
    with pytest.raises(WorktreeError, match='unit "u1" has no worktree to resume'):
        resume_unit(layout, "u1", clock=clock)
    started = start_unit(layout, "u1", clock=clock)
    commit_file(started.path, "work.txt", "half done\n", "attempt 1")
    clock.advance(30)  # the lease expired while the unit was blocked
    resumed = resume_unit(layout, "u1", clock=clock)
    assert LeaseStore(layout, clock).is_live(resumed.lease)
    assert (started.path / "work.txt").read_text() == "half done\n"  # nothing was reset


def test_finish_merges_the_unit_branch_with_no_ff_and_cleans_up(
    layout: Layout, repo: Path, clock: FakeClock
) -> None:
    started = start_unit(layout, "u1", clock=clock)
    before = head_of(repo)
    commit_file(started.path, "greet.py", "def greet(): ...\n", "add greet")
    result = finish_unit(layout, "u1", "main", clock=clock)
    assert isinstance(result, Merged)
    assert result.sha == head_of(repo)
    assert git(repo, "log", "-1", "--format=%s").strip() == "Reintegrate unit/u1"
    assert len(parents(repo)) == 2 and parents(repo)[0] == before  # a merge commit, not a ff
    assert (repo / "greet.py").read_text() == "def greet(): ...\n"
    assert (result.worktree_removed, result.branch_deleted, result.released) == (True, True, True)
    assert not started.path.exists()
    assert "unit/u1" not in branches(repo)
    assert LeaseStore(layout, clock).lease("u1") is None


def test_a_conflict_with_the_base_aborts_the_merge_and_keeps_worktree_and_lease(
    layout: Layout, repo: Path, clock: FakeClock
) -> None:
    started = start_unit(layout, "u1", clock=clock)
    commit_file(started.path, "README.md", "# the unit's title\n", "unit edits the readme")
    commit_file(repo, "README.md", "# the base's title\n", "base edits the readme")
    before = head_of(repo)
    result = finish_unit(layout, "u1", clock=clock)
    assert isinstance(result, Conflicted)
    assert result.files == ["README.md"]
    assert (result.branch, result.base) == ("unit/u1", "main")
    assert result.blocked_reason == "reintegration: conflict"
    # The base is exactly as it was: same commit, no merge in progress, no conflict markers.
    assert head_of(repo) == before and not is_dirty(repo)
    assert not (repo / ".git" / "MERGE_HEAD").exists()
    assert (repo / "README.md").read_text() == "# the base's title\n"
    assert started.path.is_dir() and "unit/u1" in branches(repo)
    assert LeaseStore(layout, clock).lease("u1") is not None

    signal = conflict_signal("u1", result.branch, result.base, result.files, clock)
    assert (signal.severity, signal.coordination, signal.source) == ("blocking", "conflict", "S2")
    assert (signal.subject, signal.unit, signal.resource) == ("unit/u1", "u1", "main")
    assert [(e.class_, e.ref) for e in signal.evidence] == [("file", "README.md")]
    assert "README.md" in signal.observation
    assert parse_signal_line(record_to_json_line(signal)) == signal


def test_a_dirty_base_is_refused_and_nothing_is_merged(
    layout: Layout, repo: Path, clock: FakeClock
) -> None:
    started = start_unit(layout, "u1", clock=clock)
    commit_file(started.path, "greet.py", "x\n", "add greet")
    (repo / "README.md").write_text("an edit nobody committed\n")
    before = head_of(repo)
    result = finish_unit(layout, "u1", clock=clock)
    assert isinstance(result, BaseNotReady) and result.reason == "dirty-base"
    assert result.blocked_reason == "reintegration: dirty-base"
    assert "README.md" in result.detail
    assert head_of(repo) == before and not (repo / "greet.py").exists()
    assert LeaseStore(layout, clock).lease("u1") is not None


def test_the_base_on_another_branch_is_refused(
    layout: Layout, repo: Path, clock: FakeClock
) -> None:
    start_unit(layout, "u1", clock=clock)
    git(repo, "checkout", "--quiet", "-b", "elsewhere")
    result = finish_unit(layout, "u1", "main", clock=clock)
    assert isinstance(result, BaseNotReady) and result.reason == "wrong-branch"
    assert result.blocked_reason.startswith("reintegration: wrong-branch")
    git(repo, "checkout", "--quiet", "--detach")
    detached = finish_unit(layout, "u1", clock=clock)
    assert isinstance(detached, BaseNotReady) and detached.reason == "wrong-branch"


def test_instance_state_is_never_committed_nor_merged(
    layout: Layout, repo: Path, clock: FakeClock
) -> None:
    started = start_unit(layout, "u1", clock=clock)
    (started.path / ".regulator").mkdir()
    (started.path / ".regulator" / "trace.ndjson").write_text("{}\n")
    (started.path / "greet.py").write_text("x\n")
    sha = checkpoint(started.path, "checkpoint")
    assert sha is not None
    assert git(started.path, "show", "--name-only", "--format=", "HEAD").split() == ["greet.py"]
    assert checkpoint(started.path, "nothing new") is None
    # A branch that forces state into git is refused before any merge.
    (layout.state / "signals.ndjson").write_text("the base's own log\n")
    git(started.path, "add", "--force", ".regulator/trace.ndjson")
    git(started.path, "commit", "--quiet", "-m", "smuggle state")
    (started.path / ".regulator" / "signals.ndjson").write_text("forged\n")
    git(started.path, "add", "--force", ".regulator/signals.ndjson")
    git(started.path, "commit", "--quiet", "-m", "forge the log")
    before = head_of(repo)
    result = finish_unit(layout, "u1", clock=clock)
    assert isinstance(result, BaseNotReady) and result.reason == "regulator-state"
    assert ".regulator/signals.ndjson" in result.detail
    assert head_of(repo) == before
    assert (layout.state / "signals.ndjson").read_text() == "the base's own log\n"


def test_abandon_removes_worktree_branch_and_lease_best_effort(
    layout: Layout, repo: Path, clock: FakeClock
) -> None:
    started = start_unit(layout, "u1", clock=clock)
    commit_file(started.path, "wip.txt", "wip\n", "wip")
    (started.path / "uncommitted.txt").write_text("lost on purpose\n")
    result = abandon_unit(layout, "u1", clock=clock)
    assert (result.worktree_removed, result.branch_deleted, result.released) == (True, True, True)
    assert not started.path.exists() and "unit/u1" not in branches(repo)
    assert LeaseStore(layout, clock).lease("u1") is None
    again = abandon_unit(layout, "u1", clock=clock)
    assert (again.branch_deleted, again.released) == (False, False)
    # The unit can be started afresh afterwards.
    start_unit(layout, "u1", clock=clock)


def test_is_dirty_ignores_only_the_instance_state(layout: Layout, repo: Path) -> None:
    (layout.state / "signals.ndjson").write_text("{}\n")
    assert not is_dirty(repo)
    (repo / "notes.txt").write_text("untracked\n")
    assert is_dirty(repo)


def test_on_an_initialized_instance_a_unit_goes_from_start_to_merged(instance: Path) -> None:
    layout = Layout(instance, env={})
    started = start_unit(layout, "feature-1")
    commit_file(started.path, "feature.txt", "done\n", "the feature")
    result = finish_unit(layout, "feature-1")
    assert isinstance(result, Merged) and result.released
    assert (instance / "feature.txt").exists()
    assert not is_dirty(instance)
