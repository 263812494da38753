"""The S5 decision on a policy proposal: ``identity accept`` and ``identity reject``.

This is the only writer of ``regulator/identity/`` (INV-002 in the original): a person with
``actAsS5`` writes the proposed file, commits it on the base branch citing the obligation, and
the obligation is resolved as accepted. Every check, authority included, runs before the file
is touched; if anything fails after that, the file is restored and no commit is left on the
branch, so a refused or failed decision leaves the repository as it was.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from regulator.host import gitops
from regulator.protocol.errors import Refused
from regulator.protocol.obligations import ObligationState
from regulator.protocol.policies import InteractionPolicy
from regulator.rules.dispositions import decide_proposal
from regulator.rules.ledger import Actor, Ledger, Transaction

IDENTITY_FILES: tuple[str, ...] = ("IDENTITY.md", "INVARIANTS.md", "GLOSSARY.md", "BOUNDARIES.md")
IDENTITY_DIR = "regulator/identity"


#: The most of the identity files a session's prompt carries.
PROMPT_IDENTITY_CHARS = 12000


def identity_text(root: Path) -> str | None:
    """The repository's identity files (``regulator/identity/*.md``, by name) joined for a prompt.

    Only regular files are read, each opened non-blocking: a FIFO or device planted under a
    ``.md`` name is skipped, never waited on. ``None`` when there is nothing to read.
    """
    directory = root / IDENTITY_DIR
    if not directory.is_dir():
        return None
    parts: list[str] = []
    for path in sorted(directory.glob("*.md")):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            with os.fdopen(os.dup(fd), "rb") as file:
                data = file.read(PROMPT_IDENTITY_CHARS * 4 + 4)
        except OSError:
            continue
        finally:
            os.close(fd)
        parts.append(data.decode("utf-8", errors="replace"))
    return "\n".join(parts)[:PROMPT_IDENTITY_CHARS] or None


class IdentityRefusal(Refused):
    """The decision is refused; the repository and the instance are unchanged."""


class IdentityUsageError(IdentityRefusal):
    """An argument that is not one of the allowed values (the CLI's exit 2)."""


@dataclass(frozen=True)
class Accepted:
    obligation: ObligationState
    path: str  # relative to the base checkout, e.g. regulator/identity/INVARIANTS.md
    sha: str
    branch: str


class _DryRunLedger(Ledger):
    """Runs an act's checks against the log as it stands and appends nothing.

    ``decide_proposal`` is the one place that says who may decide a proposal and with which
    words; running it dry first lets every one of its refusals come before the file is written.
    """

    @contextmanager
    def transaction(self, actor: Actor | None = None) -> Iterator[Transaction]:
        self.log.refresh()
        yield Transaction(self)


def _check_rationale(rationale: str) -> None:
    if not rationale.strip():
        raise IdentityRefusal("an S5 decision needs a rationale")


def reject_proposal(
    ledger: Ledger,
    policy: InteractionPolicy,
    ref: str,
    by: str,
    actor: Actor,
    *,
    rationale: str,
) -> ObligationState:
    """Decline a proposal owed to S5: the obligation is resolved as rejected, identity unchanged."""
    _check_rationale(rationale)
    return decide_proposal(ledger, policy, ref, by, actor, accept=False, rationale=rationale)


def accept_proposal(
    ledger: Ledger,
    policy: InteractionPolicy,
    ref: str,
    by: str,
    actor: Actor,
    *,
    file: str,
    source: Path,
    rationale: str,
) -> Accepted:
    """Write ``source`` as ``regulator/identity/<file>``, commit it, resolve as accepted."""
    if file not in IDENTITY_FILES:
        raise IdentityUsageError(f"--file must be one of {', '.join(IDENTITY_FILES)}")
    _check_rationale(rationale)
    # The proposal, its consumer and the person's authority, exactly as the real decision
    # will check them, but before anything is written.
    state = decide_proposal(
        _DryRunLedger(ledger.layout, log=ledger.log, clock=ledger.clock),
        policy,
        ref,
        by,
        actor,
        accept=True,
        rationale=rationale,
    )
    root = ledger.layout.root
    target = f"{IDENTITY_DIR}/{file}"
    path = root / IDENTITY_DIR / file
    content = _read_source(source)
    old_head, branch = _check_base(root)
    _check_target(root, path, target, content)

    old = path.read_bytes() if path.exists() else None
    created_dir = not path.parent.exists()
    committed = False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_file(path, content)
        gitops.git(root, "add", "--", target)
        message = (
            f"S5: accept proposal {state.id[:8]} into {target}\n\n"
            f"Decided by {by} under S5 authority. Obligation {state.id}.\n{rationale}\n"
        )
        gitops.git(
            root,
            *gitops.identity_args(root),
            "-c",
            "commit.gpgsign=false",
            "commit",
            "--quiet",
            "-m",
            message,
            "--",
            target,
        )
        committed = True
        sha = gitops.head(root)
        if sha is None:
            raise IdentityRefusal("git commit left no HEAD")
        resolved = decide_proposal(
            ledger,
            policy,
            state.id,
            by,
            actor,
            accept=True,
            rationale=(
                f"{rationale}. {target} changed in {sha[:7]} on {branch} under S5 authority."
            ),
        )
    except BaseException as exc:
        _restore(root, path, target, old, created_dir, old_head if committed else None)
        if isinstance(exc, gitops.GitError):
            raise IdentityRefusal(f"{exc}; {target} restored, nothing committed") from None
        raise
    return Accepted(resolved, target, sha, branch)


def _read_source(source: Path) -> bytes:
    try:
        content = source.read_bytes()
    except OSError as exc:
        raise IdentityRefusal(f"--from {source}: cannot read: {exc.strerror or exc}") from None
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        raise IdentityRefusal(f"--from {source}: not UTF-8 text") from None
    if not text.strip():
        raise IdentityRefusal(f"--from {source}: is empty; an identity file is never blank")
    return content


def _check_base(root: Path) -> tuple[str, str]:
    """The base checkout's HEAD and branch; refused unless it is clean and on a branch."""
    try:
        clean = gitops.is_clean(root)
    except gitops.GitError as exc:
        raise IdentityRefusal(str(exc)) from None
    if not clean:
        raise IdentityRefusal(
            "the base checkout has uncommitted changes; an identity decision is committed on "
            "its own"
        )
    head = gitops.head(root)
    if head is None:
        raise IdentityRefusal("the base checkout has no commit yet; commit something first")
    branch = gitops.git(root, "symbolic-ref", "--quiet", "--short", "HEAD", check=False)
    if branch.returncode != 0 or not branch.stdout.strip():
        raise IdentityRefusal(
            "the base checkout is on a detached HEAD; an identity decision is committed on a branch"
        )
    return head, branch.stdout.strip()


def _check_target(root: Path, path: Path, target: str, content: bytes) -> None:
    # A symlink would let the write land outside the identity directory (or the repository).
    for candidate in (root / "regulator", path.parent, path):
        if candidate.is_symlink():
            raise IdentityRefusal(f"{candidate.relative_to(root)}: is a symlink; refusing to write")
    if path.exists() and not path.is_file():
        raise IdentityRefusal(f"{target}: is not a file")
    if path.is_file() and path.read_bytes() == content:
        raise IdentityRefusal(f"{target} already holds that text; there is nothing to commit")


def _write_file(path: Path, content: bytes) -> None:
    """Replace ``path``: a temp file beside it, fsync, rename (a reader never sees half)."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        if path.is_file():
            os.fchmod(fd, path.stat().st_mode & 0o7777)  # keep the mode the file had
        view = memoryview(content)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        temp.replace(path)
    except BaseException:
        with suppress(OSError):
            temp.unlink()
        raise


def _restore(
    root: Path,
    path: Path,
    target: str,
    old: bytes | None,
    created_dir: bool,
    old_head: str | None,
) -> None:
    """Undo a decision that failed half-way: no commit on the branch, the file as it was."""
    if old_head is not None:
        with suppress(gitops.GitError, OSError):
            # Moves the branch back; the index is fixed up below, the work tree by hand.
            gitops.git(root, "reset", "--quiet", "--soft", old_head)
    with suppress(gitops.GitError, OSError):
        gitops.git(root, "reset", "--quiet", "--", target)
    with suppress(OSError):
        if old is None:
            path.unlink(missing_ok=True)
            if created_dir:
                path.parent.rmdir()
        else:
            _write_file(path, old)
