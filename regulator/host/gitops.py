"""The few git operations the core needs, run as subprocesses of the real `git`."""

from __future__ import annotations

import subprocess
from pathlib import Path

from regulator.protocol.errors import HostFailure


class GitError(HostFailure):
    pass


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        result = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, check=False
        )
    except FileNotFoundError:
        raise GitError("git is not installed (not found on PATH)") from None
    if check and result.returncode != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()
        raise GitError(f"git {' '.join(args)}: {detail[-1] if detail else 'failed'}")
    return result


def git_names(cwd: Path, *args: str) -> list[str]:
    """The NUL-separated names a ``-z`` command prints, as text: a name that is not UTF-8 keeps
    its odd bytes as ``\\xNN`` escapes (a name is data to match and show, never to open)."""
    try:
        result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    except FileNotFoundError:
        raise GitError("git is not installed (not found on PATH)") from None
    if result.returncode != 0:
        detail = result.stderr.decode("utf-8", "backslashreplace").strip().splitlines()
        raise GitError(f"git {' '.join(args)}: {detail[-1] if detail else 'failed'}")
    return [n.decode("utf-8", "backslashreplace") for n in result.stdout.split(b"\0") if n]


def toplevel(path: Path) -> Path | None:
    """The root of the repository holding ``path``, or None outside a repository."""
    result = git(path, "rev-parse", "--show-toplevel", check=False)
    return Path(result.stdout.strip()) if result.returncode == 0 else None


def head(path: Path) -> str | None:
    result = git(path, "rev-parse", "HEAD", check=False)
    return result.stdout.strip() if result.returncode == 0 else None


def status_lines(path: Path) -> list[str]:
    """Porcelain status lines, ignoring the instance's own state under ``.regulator/``."""
    out = git(path, "status", "--porcelain", "--untracked-files=all").stdout
    return [line for line in out.splitlines() if line and not line[3:].startswith(".regulator/")]


def is_clean(path: Path) -> bool:
    return not status_lines(path)


def identity_args(path: Path) -> list[str]:
    """``-c user.name=… -c user.email=…`` when the repository has no committer configured."""
    name = git(path, "config", "user.name", check=False).stdout.strip()
    email = git(path, "config", "user.email", check=False).stdout.strip()
    args: list[str] = []
    if not name:
        args += ["-c", "user.name=regulator"]
    if not email:
        args += ["-c", "user.email=regulator@localhost"]
    return args


def version() -> str | None:
    try:
        return git(Path.cwd(), "--version").stdout.strip()
    except GitError:
        return None
