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

# A person's act is refused inside an agent's session (regulator.host.person_acts), and the
# session's variables are how the environment says so. A suite started from a shell that has
# them (a developer's terminal inside Claude Code, a driven unit's session) would have every
# person's act of the tests refused: the tests are the person here, and the agents they play
# set these variables themselves where they need them. What was found is said in the header.
AGENT_MARKERS = (
    "REGULATOR_UNIT",
    "REGULATOR_ATTEMPT",
    "REGULATOR_SESSION",
    "CLAUDECODE",
    "CODEX_THREAD_ID",
    "CODEX_SESSION_ID",
)
_CLEARED = {name: os.environ.pop(name) for name in AGENT_MARKERS if name in os.environ}


def pytest_report_header() -> list[str]:
    """Where the suite runs, when that is inside an agent: an agent process among its ancestors
    cannot be cleared, so the tests that run a person's act are refused there, by design."""
    from regulator.host.agent_process import known_agent_ancestor

    from .agents.real_clients import report_lines

    lines = report_lines()  # which real agents run, or why their tests are skipped
    if _CLEARED:
        lines.append(f"regulator: cleared the agent session's variables {', '.join(_CLEARED)}")
    found = known_agent_ancestor()
    if found is not None:
        lines.append(
            f"regulator: this suite runs inside agent process {found[0]} ({found[1]}): every "
            "test that performs a person's act will be refused (docs/agents.md); run the "
            "suite from a terminal of your own"
        )
    return lines


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
