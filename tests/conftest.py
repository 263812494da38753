"""Fixtures shared by the suite: throwaway git repositories and instances."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# Tests commit in throwaway repositories; give git a committer whatever the machine has.
os.environ.setdefault("GIT_AUTHOR_NAME", "regulator-tests")
os.environ.setdefault("GIT_AUTHOR_EMAIL", "tests@regulator.invalid")
os.environ.setdefault("GIT_COMMITTER_NAME", "regulator-tests")
os.environ.setdefault("GIT_COMMITTER_EMAIL", "tests@regulator.invalid")


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one commit."""
    root = tmp_path / "project"
    root.mkdir()
    git(root, "init", "--quiet", "--initial-branch=main")
    (root / "README.md").write_text("# a project\n")
    git(root, "add", "README.md")
    git(root, "commit", "--quiet", "-m", "initial")
    return root


def run_cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``regulator ARGS`` as a separate process, the way a person runs it."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "regulator", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=120,
    )


def with_example_people(root: Path) -> Path:
    """Commit the shipped example people, alice and bob (neither pinned to an OS user), as the
    repository's own interaction policy: the people the tests answer as. `init` names only the
    person who runs it; a repository that has a policy keeps it."""
    from regulator.policy import shipped_policies_dir

    policies = root / "regulator" / "policies"
    policies.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shipped_policies_dir() / "interaction.yaml", policies / "interaction.yaml")
    git(root, "add", "--", "regulator/policies/interaction.yaml")
    git(root, "commit", "--quiet", "-m", "the example people, alice and bob")
    return root


@pytest.fixture
def instance(repo: Path) -> Iterator[Path]:
    """An initialized instance on the shipped policies, with alice and bob as its people."""
    with_example_people(repo)
    result = run_cli("init", "--by", "alice", cwd=repo)
    assert result.returncode == 0, result.stderr
    yield repo
