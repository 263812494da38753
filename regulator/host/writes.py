"""What a unit's work changed in its worktree, for the closeout's write check.

Every path the unit's branch changes since it left the base — what reintegration would merge,
over all its attempts and whatever tool made the change (an agent's Write or Edit, a shell
command, a script) — and every path left changed, staged or untracked in the worktree. A
deletion and both sides of a rename count. Not counted: what git ignores (never merged; the
closeout's tests run in a clean checkout of the commit), and the worktree's own ``.regulator/``
while uncommitted (a session's trace; a branch that commits anything there is refused at
reintegration anyway). Which paths are allowed is :mod:`regulator.rules.writes`.
"""

from __future__ import annotations

from pathlib import Path

from regulator.host import gitops
from regulator.host.worktree import STATE_PREFIX, current_branch, head_of


def changed_paths(root: Path, worktree: Path) -> list[str]:
    """The paths the unit at ``worktree`` changed, sorted; ``root`` is the base checkout.

    Raises :class:`gitops.GitError` when git cannot say (the caller fails closed).
    """
    # The base is what finish_unit merges into: the base checkout's branch (its commit when
    # detached). Three dots: from where the branch left it, so the base's own progress is not
    # counted as the unit's.
    base = current_branch(root) or head_of(root)
    committed = gitops.git_names(
        worktree, "diff", "--name-only", "--no-renames", "-z", f"{base}...HEAD", "--"
    )
    left = gitops.git_names(
        worktree, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"
    )
    uncommitted: list[str] = []
    for entry in left:
        path = entry[3:]
        if not path.startswith(STATE_PREFIX):
            uncommitted.append(path)
    return sorted(set(committed) | set(uncommitted))
