"""The real Claude Code and Codex CLI, run by the tests against a scripted model on localhost.

- **The binaries**: installed from npm at the versions of ``clients.txt`` by ``.ci/run`` into
  ``.cache/agents`` (or ``$REGULATOR_AGENTS_DIR``); ``REGULATOR_TEST_CLAUDE`` or
  ``REGULATOR_TEST_CODEX`` points a test at another install. A client that is not there skips its
  tests, with the reason (``-ra`` prints it in the summary).
- **The repository**: :class:`Workspace` makes one the way a user would (``git init``, ``regulator
  init --by carol``, ``regulator agent install claude-code`` and ``codex``), with a ``HOME`` of its
  own, so nothing of the developer's settings reaches the clients, and nothing edited by hand.
- **The runs**: :meth:`Workspace.claude` and :meth:`Workspace.codex` start the client on a prompt
  against a :class:`ModelServer` playing a script, with an environment made from nothing (no
  variable of the test process leaks in) and no network but 127.0.0.1.

What the clients need, as measured (Claude Code 2.1.328, codex-cli 0.171.0):

- Claude Code: ``ANTHROPIC_BASE_URL``, any ``ANTHROPIC_API_KEY``, ``DISABLE_TELEMETRY=1`` and
  ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``; then it connects to the model and nothing else.
- Codex: a ``[model_providers.<id>]`` with ``wire_api = "responses"`` in ``~/.codex/config.toml``
  (:data:`CODEX_HOME_CONFIG`); ``[features] plugins = false``, without which it looks up
  github.com and chatgpt.com; the project trusted (``[projects."<repo>"] trust_level =
  "trusted"``, what ``codex exec --trust`` or its trust prompt writes there), without which it
  ignores the project's ``.codex/config.toml`` and so regulator's server. Codex gives its MCP
  servers a reduced environment: the test process's ``PYTHONPATH`` (a checkout on the path
  instead of the installed package) is forwarded by name, with ``-c``, which ``--trust`` on the
  same command line would not allow (the overrides are checked before the project's file is
  read, and the server's table then has no command).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from regulator.host.presence import PresenceFile
from regulator.protocol.obligations import ObligationState
from regulator.rules.regulatory_log import RegulatoryLog
from regulator.store import Layout

from .scripted_model import ModelServer, ScriptedModel, Turn

CHECKOUT = Path(__file__).resolve().parents[2]
PINNED = Path(__file__).with_name("clients.txt")
AGENTS_DIR_ENV = "REGULATOR_AGENTS_DIR"
GIT_IDENTITY = ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL")
# Every run ends well within this; a client that hangs fails its test rather than the suite.
RUN_TIMEOUT_S = 120.0

# The clients' own name, the npm package, the variable naming another binary, the binary.
CLIENTS = {
    "claude": ("Claude Code", "@anthropic-ai/claude-code", "REGULATOR_TEST_CLAUDE"),
    "codex": ("Codex CLI", "@openai/codex", "REGULATOR_TEST_CODEX"),
}

CODEX_PROVIDER = "scripted"
CODEX_HOME_CONFIG = f"""\
# The user's Codex configuration in the tests' own HOME: the scripted model, and nothing else
# reached. The provider's base_url is given per run (-c), since each run has its own server.
model = "scripted"
model_provider = "{CODEX_PROVIDER}"
check_for_update_on_startup = false

[model_providers.{CODEX_PROVIDER}]
name = "scripted model"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[features]
plugins = false
"""
# What `codex exec --trust` in the project writes to the user's configuration.
CODEX_TRUST = """
[projects.{root}]
trust_level = "trusted"
"""


def pinned() -> dict[str, str]:
    """``clients.txt``: each npm package and the version the tests pin it to."""
    specs = {}
    for line in PINNED.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            package, _, version = line.rpartition("@")
            specs[package] = version
    return specs


def agents_dir() -> Path:
    return Path(os.environ.get(AGENTS_DIR_ENV) or CHECKOUT / ".cache" / "agents")


@dataclass(frozen=True)
class Client:
    name: str  # "claude" or "codex"
    path: Path


def find(name: str) -> Client | str:
    """The client's binary, or why there is none."""
    title, package, variable = CLIENTS[name]
    version = pinned()[package]
    named = os.environ.get(variable)
    path = Path(named) if named else agents_dir() / "node_modules" / ".bin" / name
    if not (path.is_file() and os.access(path, os.X_OK)):
        where = f"{variable}={named}" if named else str(path)
        return (
            f"{title} is not installed ({where} is not an executable file): `.ci/run` installs it "
            f"with `npm install --prefix .cache/agents {package}@{version}` (node and npm needed), "
            f"or set {variable} to its binary"
        )
    if name == "codex" and shutil.which("node") is None:
        return f"{title} runs under node, which is not on PATH"
    return Client(name, path)


def report_lines() -> list[str]:
    """For the suite's header: which clients the real-agent tests run, or why they skip."""
    lines = []
    for name in CLIENTS:
        found = find(name)
        lines.append(
            f"real agents: {CLIENTS[name][0]} at {found.path}"
            if isinstance(found, Client)
            else f"real agents: skipped: {found}"
        )
    return lines


def client(name: str) -> Client:
    found = find(name)
    if isinstance(found, str):
        pytest.skip(found)
    return found


@pytest.fixture(scope="session")
def claude_code() -> Client:
    return client("claude")


@pytest.fixture(scope="session")
def codex_cli() -> Client:
    return client("codex")


# --- a client's run ---------------------------------------------------------------------------


@dataclass
class Finished:
    returncode: int
    stdout: str
    stderr: str
    seconds: float


class Run:
    """A client started on a prompt, against its own scripted model."""

    def __init__(
        self, argv: list[str], cwd: Path, env: dict[str, str], server: ModelServer
    ) -> None:
        self.argv = argv
        self.server = server
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own process group, ended whole if it hangs
        )
        self.finished: Finished | None = None

    @property
    def model(self) -> ScriptedModel:
        return self.server.model

    def finish(self, timeout: float = RUN_TIMEOUT_S) -> Finished:
        """Wait for the client to exit; its output, and how long it ran."""
        if self.finished is None:
            try:
                out, err = self.process.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                out, err = self.process.communicate()
                raise AssertionError(
                    f"{self.argv[0]} still ran after {timeout} s; stderr:\n{err[-3000:]}"
                ) from None
            finally:
                self.server.close()
            self.finished = Finished(
                self.process.returncode, out, err, time.monotonic() - self.started
            )
        return self.finished

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, 9)

    def close(self) -> None:
        """End the client if it still runs (a failing test), and its model."""
        if self.finished is None:
            self.kill()
            self.process.communicate()
            self.server.close()


def claude_result(finished: Finished) -> dict[str, Any]:
    """``claude -p --output-format json``'s result object."""
    assert finished.returncode == 0, finished.stderr[-3000:]
    result: dict[str, Any] = json.loads(finished.stdout)
    return result


def codex_events(finished: Finished) -> list[dict[str, Any]]:
    """``codex exec --json``'s events, one JSON object a line."""
    assert finished.returncode == 0, finished.stderr[-3000:]
    return [json.loads(line) for line in finished.stdout.splitlines() if line.strip()]


# --- the repository ---------------------------------------------------------------------------


class Workspace:
    """A git repository wired to regulator as a user would, with a HOME of its own."""

    def __init__(self, base: Path) -> None:
        self.home = base / "home"
        self.root = base / "repo"
        self.runs: list[Run] = []
        self.home.mkdir()
        self.root.mkdir()

    def env(self) -> dict[str, str]:
        """The environment every process of the user gets: made from nothing but these."""
        env = {"HOME": str(self.home), "PATH": os.environ.get("PATH", os.defpath)}
        env["LANG"] = "C.UTF-8"
        # The checkout on the path when the suite runs one, and git's identity (the tests' HOME
        # has no git configuration): `init` commits.
        for name in ("PYTHONPATH", "TMPDIR", *GIT_IDENTITY):
            if name in os.environ:
                env[name] = os.environ[name]
        return env

    def git(self, *args: str) -> str:
        return subprocess.run(
            ["git", *args],
            cwd=self.root,
            env=self.env(),
            check=True,
            capture_output=True,
            text=True,
        ).stdout

    def regulator(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """``regulator ARGS`` in the repository, as the person at a terminal of their own."""
        done = subprocess.run(
            [sys.executable, "-m", "regulator", *args],
            cwd=self.root,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        if check:
            assert done.returncode == 0, f"regulator {' '.join(args)}: {done.stderr}"
        return done

    def set_up(self, files: dict[str, str]) -> None:
        """The user's project with ``files``, then ``init`` and ``agent install`` for both."""
        self.git("init", "--quiet", "--initial-branch=main")
        for name, text in files.items():
            path = self.root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        self.git("add", "-A")
        self.git("commit", "--quiet", "-m", "the project")
        self.regulator("init", "--by", "carol")
        self.regulator("agent", "install", "claude-code")
        self.regulator("agent", "install", "codex")
        codex_home = self.home / ".codex"
        codex_home.mkdir()
        trust = CODEX_TRUST.format(root=json.dumps(str(self.root)))
        (codex_home / "config.toml").write_text(CODEX_HOME_CONFIG + trust)

    # --- the agents ---

    def claude(self, claude: Client, script: Sequence[Turn], prompt: str = "go", *args: str) -> Run:
        """``claude -p PROMPT [ARGS]`` started in the repository, its model playing ``script``."""
        server = ModelServer(script)
        env = {
            **self.env(),
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": "sk-ant-scripted",
            "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
        argv = [str(claude.path), "-p", prompt, "--output-format", "json", *args]
        return self._start(argv, env, server)

    def codex(self, codex: Client, script: Sequence[Turn], prompt: str = "go") -> Run:
        """``codex exec --json PROMPT`` started in the repository, its model playing ``script``."""
        server = ModelServer(script)
        argv = [
            str(codex.path),
            "exec",
            "--json",
            "--strict-config",  # a setting this version does not know is an error, not ignored
            "-c",
            f'model_providers.{CODEX_PROVIDER}.base_url="{server.url}/v1"',
        ]
        if "PYTHONPATH" in os.environ:
            argv += ["-c", 'mcp_servers.regulator.env_vars=["PYTHONPATH"]']
        return self._start([*argv, prompt], self.env(), server)

    def _start(self, argv: list[str], env: dict[str, str], server: ModelServer) -> Run:
        try:
            run = Run(argv, self.root, env, server)
        except BaseException:
            server.close()
            raise
        self.runs.append(run)
        return run

    def close(self) -> None:
        for run in self.runs:
            run.close()

    # --- the person ---

    @contextmanager
    def present(self, person: str = "carol") -> Iterator[None]:
        """``person`` in the control room: a presence file kept fresh, as an open room does."""
        presence = PresenceFile(Layout(self.root), person)
        stop = threading.Event()

        def beat() -> None:
            while not stop.is_set():
                presence.beat()
                stop.wait(0.5)

        presence.beat()
        thread = threading.Thread(target=beat, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            presence.close()

    def question(self, run: Run, deadline_s: float = 60.0) -> ObligationState:
        """The question the agent asks, once it is in the log (the run still going)."""
        log = RegulatoryLog(Layout(self.root))
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            log.refresh()
            waiting = [o for o in log.open_obligations() if o.concern == "interaction"]
            if waiting:
                return waiting[0]
            if run.process.poll() is not None:
                finished = run.finish()
                seen = [r.tool_results() for r in run.model.turns[1:]]
                raise AssertionError(
                    f"the agent exited without asking; the model was given {seen}; "
                    f"stderr: {finished.stderr[-3000:]}"
                )
            time.sleep(0.05)
        raise AssertionError(f"no question within {deadline_s} s")

    def obligations(self) -> list[ObligationState]:
        log = RegulatoryLog(Layout(self.root))
        log.refresh()
        return list(log.obligations.values())

    def unit(self, unit_id: str) -> dict[str, Any]:
        unit: dict[str, Any] = json.loads(
            (self.root / ".regulator" / "units" / unit_id / "unit.json").read_text()
        )
        return unit

    def units(self) -> list[str]:
        return sorted(p.name for p in (self.root / ".regulator" / "units").iterdir())


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Workspace]:
    """A repository wired to regulator for both agents, with a notes file and nothing else."""
    made = Workspace(tmp_path)
    made.set_up({"notes.txt": "the release is called pelican\n"})
    try:
        yield made
    finally:
        made.close()
