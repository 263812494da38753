"""Isolation and reintegration: one git worktree and branch per unit
(docs/design.md#leases-and-worktrees).

``start_unit`` claims the unit's lease, then creates branch ``unit/<id>`` from the base and
checks it out under ``.regulator/worktrees/<id>``; ``finish_unit`` merges the branch back into
the base checkout with ``--no-ff`` and, on success, removes the worktree, the branch and the
lease. A conflict is never resolved here: the merge is aborted, the base is left exactly as it
was, and the conflicting files come back as data, for the caller to append as a blocking
coordination signal (:func:`conflict_signal`). S2 detects; S3 decides.

The instance's own state never travels through git: a checkpoint never stages ``.regulator/``,
and a branch that carries anything under ``.regulator/`` is refused before the merge, so the
base checkout's state files can never be overwritten by a merge.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from regulator.host import gitops
from regulator.host.gitops import GitError, git
from regulator.host.leases import DEFAULT_LEASE_TTL_MS, LeaseStore
from regulator.protocol.clock import Clock, now_iso, system_clock
from regulator.protocol.errors import HostFailure
from regulator.protocol.evidence import EvidenceRef
from regulator.protocol.execution import Lease
from regulator.protocol.messages import CoordinationSignal
from regulator.store import Layout, ensure_dir

STATE_PREFIX = ".regulator/"
# Never staged, whatever the worktree holds (a session's trace lands in its own .regulator/).
_NOT_STATE = f":(exclude){STATE_PREFIX}"


class WorktreeError(HostFailure):
    """A worktree operation that could not be done; the message says what git said."""


def unit_branch(unit_id: str) -> str:
    return f"unit/{unit_id}"


def head_of(path: Path) -> str:
    """The exact commit checked out at ``path``: what evidence binds to."""
    revision = gitops.head(path)
    if revision is None:
        raise WorktreeError(f"{path}: no commit checked out (not a git checkout?)")
    return revision


def is_dirty(path: Path) -> bool:
    """Tracked changes or untracked files, ignoring the instance's own ``.regulator/``."""
    return not gitops.is_clean(path)


def current_branch(path: Path) -> str | None:
    """The branch checked out at ``path``; ``None`` on a detached HEAD."""
    result = git(path, "symbolic-ref", "--quiet", "--short", "HEAD", check=False)
    if result.returncode != 0:
        return None
    return result.stdout.strip() or None


def _git(cwd: Path, *args: str) -> str:
    try:
        return git(cwd, *args).stdout
    except GitError as error:
        raise WorktreeError(str(error)) from None


def checkpoint(path: Path, message: str) -> str | None:
    """Commit everything in the worktree at ``path`` except ``.regulator/``.

    The new commit's sha, or ``None`` when there was nothing to commit.
    """
    _git(path, "add", "--all", "--", ".", _NOT_STATE)
    staged = git(path, "diff", "--cached", "--quiet", check=False)
    if staged.returncode == 0:
        return None
    _git(path, *gitops.identity_args(path), "commit", "--quiet", "-m", message)
    return head_of(path)


# --- starting and resuming ---------------------------------------------------------------------


@dataclass(frozen=True)
class StartedUnit:
    unit_id: str
    branch: str
    path: Path
    # The base the branch was made from (start) or the base checkout's branch now (resume).
    base: str
    lease: Lease


def _base_checkout(layout: Layout) -> Path:
    root = layout.root
    top = gitops.toplevel(root)
    if top is None or top.resolve() != root.resolve():
        raise WorktreeError(f"{root}: not the root of a git checkout")
    dirs = _git(root, "rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir")
    git_dir, common_dir = (Path(line) for line in dirs.splitlines()[:2])
    if git_dir.resolve() != common_dir.resolve():
        # Units are started and merged from the checkout that owns .git, never from a unit's.
        raise WorktreeError(f"{root}: a linked worktree, not the base checkout")
    return root


def _branch_or_head(root: Path) -> str:
    return current_branch(root) or head_of(root)


def start_unit(
    layout: Layout,
    unit_id: str,
    base_branch: str | None = None,
    *,
    owner: str | None = None,
    ttl_ms: int = DEFAULT_LEASE_TTL_MS,
    clock: Clock = system_clock,
) -> StartedUnit:
    """Claim the unit's lease, then ``git worktree add -b unit/<id> <worktree> <base>``.

    The base is ``base_branch``, or the base checkout's current branch (its commit when
    detached). A unit whose own lease is live is refused (a start is a claim, not a renewal);
    if git fails, the lease is released again and nothing is left behind.
    """
    root = _base_checkout(layout)
    worktree = layout.worktree(unit_id)
    branch = unit_branch(unit_id)
    base = base_branch or _branch_or_head(root)
    leases = LeaseStore(layout, clock)
    # Refused under the lease lock: two starts of one unit cannot both get past here, so the
    # release below only ever drops the lease this call made.
    lease = leases.acquire(
        unit_id, resource=str(worktree), branch=branch, owner=owner, ttl_ms=ttl_ms, renew=False
    )
    try:
        ensure_dir(layout.worktrees_dir)
        _git(root, "worktree", "add", "--quiet", "-b", branch, str(worktree), base)
    except BaseException:
        leases.release(unit_id)
        raise
    return StartedUnit(unit_id, branch, worktree, base, lease)


def resume_unit(
    layout: Layout,
    unit_id: str,
    *,
    owner: str | None = None,
    ttl_ms: int = DEFAULT_LEASE_TTL_MS,
    clock: Clock = system_clock,
) -> StartedUnit:
    """Take a unit up again for a further attempt: its worktree must exist; nothing is reset."""
    root = _base_checkout(layout)
    worktree = layout.worktree(unit_id)
    if not worktree.is_dir():
        raise WorktreeError(f'unit "{unit_id}" has no worktree to resume at {worktree}')
    branch = unit_branch(unit_id)
    lease = LeaseStore(layout, clock).acquire(
        unit_id, resource=str(worktree), branch=branch, owner=owner, ttl_ms=ttl_ms
    )
    return StartedUnit(unit_id, branch, worktree, _branch_or_head(root), lease)


# --- reintegration -------------------------------------------------------------------------


@dataclass(frozen=True)
class Merged:
    """The branch is in the base. Clean-up is best effort and says what it managed."""

    sha: str
    branch: str
    base: str
    worktree_removed: bool
    branch_deleted: bool
    released: bool
    merged: Literal[True] = True


RefusalReason = Literal["wrong-branch", "dirty-base", "regulator-state"]


@dataclass(frozen=True)
class BaseNotReady:
    """Nothing was merged and nothing changed: the base was not in a state to merge into."""

    reason: RefusalReason
    detail: str
    merged: Literal[False] = False

    @property
    def blocked_reason(self) -> str:
        """The unit's block reason, which the recovery router classifies."""
        return f"reintegration: {self.reason}"


@dataclass(frozen=True)
class Conflicted:
    """The merge conflicted and was aborted; the worktree, branch and lease are kept."""

    branch: str
    base: str
    files: list[str] = field(default_factory=list)
    merged: Literal[False] = False
    reason: Literal["conflict"] = "conflict"

    @property
    def blocked_reason(self) -> str:
        return "reintegration: conflict"

    @property
    def detail(self) -> str:
        return f"{self.branch} conflicts with {self.base} in {', '.join(self.files) or '?'}"


ReintegrationResult = Merged | BaseNotReady | Conflicted


def _state_paths(root: Path, base: str, branch: str) -> list[str]:
    # What the branch changed since it left the base (three dots: from the merge base).
    out = _git(root, "diff", "--name-only", "-z", f"{base}...{branch}", "--", STATE_PREFIX)
    return [name for name in out.split("\0") if name]


def finish_unit(
    layout: Layout,
    unit_id: str,
    base_branch: str | None = None,
    *,
    clock: Clock = system_clock,
) -> ReintegrationResult:
    """Merge ``unit/<id>`` into the base checkout: ``git merge --no-ff``.

    ``base_branch`` is the branch the base checkout must be on (by default whatever it is
    on); a detached or other branch is ``wrong-branch``, uncommitted changes outside
    ``.regulator/`` are ``dirty-base``, a branch that touches ``.regulator/`` is
    ``regulator-state``. On a conflict the merge is aborted and the files are returned. On
    success the worktree and the branch are removed and the lease released.
    """
    root = _base_checkout(layout)
    branch = unit_branch(unit_id)
    current = current_branch(root)
    if current is None or (base_branch is not None and current != base_branch):
        on = current or "a detached HEAD"
        wanted = base_branch or "a branch"
        return BaseNotReady("wrong-branch", f"the base checkout is on {on}, not {wanted}")
    base = current
    if is_dirty(root):
        changed = ", ".join(line[3:] for line in gitops.status_lines(root)[:5])
        return BaseNotReady("dirty-base", f"{base} has uncommitted changes: {changed}")
    state = _state_paths(root, base, branch)
    if state:
        return BaseNotReady(
            "regulator-state",
            f"{branch} changes instance state under {STATE_PREFIX}: {', '.join(state[:5])}",
        )
    merge = git(
        root,
        *gitops.identity_args(root),
        "merge",
        "--no-ff",
        "--no-edit",
        "-m",
        f"Reintegrate {branch}",
        branch,
        check=False,
    )
    if merge.returncode != 0:
        out = _git(root, "diff", "--name-only", "-z", "--diff-filter=U")
        files = [name for name in out.split("\0") if name]
        _abort_merge(root)
        if not files:
            detail = (merge.stderr or merge.stdout).strip().splitlines()
            raise WorktreeError(
                f"git merge {branch}: {detail[-1] if detail else 'failed'} (merge aborted)"
            )
        return Conflicted(branch, base, files)
    sha = head_of(root)
    removed, deleted = _remove(root, layout.worktree(unit_id), branch)
    released = LeaseStore(layout, clock).release(unit_id)
    return Merged(sha, branch, base, removed, deleted, released)


def _abort_merge(root: Path) -> None:
    # Only when a merge is in progress: a merge git refused outright left nothing to abort.
    if git(root, "rev-parse", "-q", "--verify", "MERGE_HEAD", check=False).returncode == 0:
        _git(root, "merge", "--abort")


def _remove(root: Path, worktree: Path, branch: str) -> tuple[bool, bool]:
    removed = git(root, "worktree", "remove", "--force", str(worktree), check=False)
    # A worktree deleted by hand is still registered: prune forgets it.
    git(root, "worktree", "prune", check=False)
    deleted = git(root, "branch", "-D", branch, check=False)
    return removed.returncode == 0 or not worktree.exists(), deleted.returncode == 0


def conflict_signal(
    unit_id: str,
    branch: str,
    base: str,
    files: Sequence[str],
    clock: Clock = system_clock,
) -> CoordinationSignal:
    """The blocking coordination signal a conflicted reintegration is: S2 to S3."""
    listed = ", ".join(files) if files else "files git did not name"
    return CoordinationSignal(
        id=str(uuid.uuid4()),
        timestamp=now_iso(clock),
        source="S2",
        channel="signal",
        destination="S3",
        subject=branch,
        unit=unit_id,
        severity="blocking",
        coordination="conflict",
        observation=(
            f"reintegrating {branch} into {base} conflicts in {listed}; the merge was aborted "
            "and nothing was resolved"
        ),
        evidence=[EvidenceRef(class_="file", ref=name) for name in files],
        resource=base,
    )


# --- abandoning ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Abandoned:
    worktree_removed: bool
    branch_deleted: bool
    released: bool


def abandon_unit(layout: Layout, unit_id: str, *, clock: Clock = system_clock) -> Abandoned:
    """S3's abort: remove the worktree and the branch (best effort), release the lease.

    The unit's records stay; only its claim on the repository goes.
    """
    root = layout.root
    worktree = layout.worktree(unit_id)
    removed, deleted = False, False
    if gitops.toplevel(root) is not None:
        removed, deleted = _remove(root, worktree, unit_branch(unit_id))
    released = LeaseStore(layout, clock).release(unit_id)
    return Abandoned(removed, deleted, released)
