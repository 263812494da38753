"""Fixtures shared by the suite: throwaway git repositories and instances."""

from __future__ import annotations

import contextlib
import functools
import json
import locale
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """``room`` on every test that runs the control room: all of tests/test_room*.py, and any
    test that takes a snapshot; so ``-m "not slow and not room"`` is the fast inner loop."""
    for item in items:
        if item.path.name.startswith("test_room") or "snap_compare" in getattr(
            item, "fixturenames", ()
        ):
            item.add_marker(pytest.mark.room)


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


@functools.cache
def _child_streams() -> tuple[str, str, str]:
    """The encoding and error handlers a ``regulator`` process's stdout and stderr have here
    (they follow the locale and PYTHONIOENCODING): the in-process run writes the same way."""
    probe = "import sys; print(sys.stdout.encoding, sys.stdout.errors, sys.stderr.errors)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    encoding, out_errors, err_errors = done.stdout.split()
    return encoding, out_errors, err_errors


def cli(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``regulator ARGS`` run in this process by ``regulator.cli.main``: what `run_cli` gives
    (exit code, stdout, stderr, as text with its newlines translated), without a new
    interpreter's start and imports, about 0.3 s a call.

    Everything the process would have had of its own is its own here too, and put back after:
    the working directory, the environment, the SIGTERM/SIGINT/SIGHUP handlers, sys.stdin
    (empty, not a terminal), and file descriptors 1 and 2 (a temporary file each, so what a
    child process of the command writes is captured as it would be). An exception ``main``
    lets through is printed to stderr with exit code 1, as the interpreter would. A command
    still running after ``timeout`` seconds (a blocked open, a loop) is interrupted by SIGALRM
    and raises `subprocess.TimeoutExpired`, as `run_cli`'s would.

    A test of what the environment may set (an agent's variables, $REGULATOR_PERSON) or of the
    entry point itself uses `run_cli`: the real process, across its boundary.
    """
    from regulator.cli.main import main

    # Its cwd, streams and signals are the process's: another thread (a person answering from
    # "another terminal" while the test drives an agent) runs the real process, `run_cli`.
    assert threading.current_thread() is threading.main_thread(), "cli() off the main thread"
    encoding, out_errors, err_errors = _child_streams()
    handled = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGALRM)
    handlers = {sig: signal.getsignal(sig) for sig in handled}
    environ = dict(os.environ)
    here = Path.cwd()
    streams = (sys.stdin, sys.stdout, sys.stderr)
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(tempfile.TemporaryFile())
        err = stack.enter_context(tempfile.TemporaryFile())
        sys.stdout.flush()
        sys.stderr.flush()
        saved_fds = (os.dup(1), os.dup(2))
        try:
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            sys.stdin = stack.enter_context(open(os.devnull, encoding="utf-8"))
            sys.stdout = open(1, "w", encoding=encoding, errors=out_errors, closefd=False)  # noqa: SIM115
            sys.stderr = open(2, "w", 1, encoding=encoding, errors=err_errors, closefd=False)  # noqa: SIM115
            os.chdir(cwd)
            signal.signal(signal.SIGALRM, _too_long)
            signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                code = main(list(args))
            except SystemExit as exit_:
                code = _exit_status(exit_.code)
            except _TooLong:
                raise subprocess.TimeoutExpired(["regulator", *args], timeout) from None
            except BaseException:
                traceback.print_exc()
                code = 1
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            for stream in (sys.stdout, sys.stderr):
                if stream not in streams:
                    with contextlib.suppress(Exception):
                        stream.flush()
            sys.stdin, sys.stdout, sys.stderr = streams
            os.dup2(saved_fds[0], 1)
            os.dup2(saved_fds[1], 2)
            os.close(saved_fds[0])
            os.close(saved_fds[1])
            os.chdir(here)
            os.environ.clear()
            os.environ.update(environ)
            for sig, handler in handlers.items():
                signal.signal(sig, handler)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(
            ["regulator", *args], code, _as_text(out.read()), _as_text(err.read())
        )


class _TooLong(BaseException):
    """Raised by SIGALRM inside an in-process command that ran past its timeout."""


def _too_long(signum: int, frame: object) -> None:
    raise _TooLong


def _exit_status(code: object) -> int:
    """What ``sys.exit(code)`` makes the process's exit status (a message goes to stderr)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _as_text(data: bytes) -> str:
    """Bytes as ``subprocess.run(..., text=True)`` reads a child's output: the locale's
    encoding, newlines translated."""
    text = data.decode(locale.getpreferredencoding(False))
    return text.replace("\r\n", "\n").replace("\r", "\n")


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


@pytest.fixture(scope="session")
def instance_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The instance every `instance` is a copy of, made once a session (a worker's, under
    xdist) the way a person makes one: the `repo` commit, the example people, then the real
    `regulator init --by alice` process."""
    root = tmp_path_factory.mktemp("template") / "project"
    root.mkdir()
    git(root, "init", "--quiet", "--initial-branch=main")
    (root / "README.md").write_text("# a project\n")
    git(root, "add", "README.md")
    git(root, "commit", "--quiet", "-m", "initial")
    with_example_people(root)
    result = run_cli("init", "--by", "alice", cwd=root)
    assert result.returncode == 0, result.stderr
    return root


@pytest.fixture
def instance(tmp_path: Path, instance_template: Path) -> Iterator[Path]:
    """An initialized instance on the shipped policies, with alice and bob as its people: a
    copy of the session's `instance_template` at ``tmp_path/project``, its manifest naming
    its own definition (the one absolute path `init` writes), as `init` there would have."""
    root = tmp_path / "project"
    shutil.copytree(instance_template, root, symlinks=True)
    manifest = root / ".regulator" / "instance.json"
    text = manifest.read_text()
    made, here = (json.dumps(str(r / "regulator")) for r in (instance_template, root))
    assert text.count(made) == 1, text
    manifest.write_text(text.replace(made, here))
    yield root
