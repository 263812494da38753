"""``regulator serve`` as a process beside another writer: routing on append, restarts, stop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from regulator.rules.asking import ask
from regulator.rules.ledger import Ledger
from regulator.store import Layout
from tests.test_channels import Instance, Mailbox, Web, mailbox, wait_for, web

__all__ = ["mailbox", "web"]  # fixtures, used by name


class Serve:
    """``regulator serve`` in its own process, its output read line by line."""

    def __init__(self, inst: Instance) -> None:
        env = {**os.environ, **inst.env, "PYTHONWARNINGS": "ignore"}
        env.pop("REGULATOR_OUTBOX", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "regulator", "serve", "--instance", str(inst.root)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.lines: list[str] = []
        self.errors: list[str] = []
        assert self.proc.stdout is not None and self.proc.stderr is not None
        for stream, into in ((self.proc.stdout, self.lines), (self.proc.stderr, self.errors)):
            threading.Thread(target=self._read, args=(stream, into), daemon=True).start()

    @staticmethod
    def _read(stream: object, into: list[str]) -> None:
        for line in stream:  # type: ignore[attr-defined]
            into.append(line.rstrip("\n"))

    def wait_line(self, text: str, timeout: float = 20.0) -> bool:
        return wait_for(lambda: any(text in line for line in self.lines), timeout)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=20)
            raise


@pytest.fixture
def served(tmp_path: Path, mailbox: Mailbox, web: Web) -> Iterator[tuple[Instance, list[Serve]]]:
    inst = Instance(tmp_path / "repo", mailbox.port, web.port)
    servers: list[Serve] = []
    yield inst, servers
    for server in servers:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait(timeout=20)


def another_process_asks(inst: Instance, subject: str) -> None:
    """The way a unit's session asks: through the log, from a process of its own."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from regulator.policy import load_definition\n"
        "from regulator.rules.asking import ask\n"
        "from regulator.rules.ledger import Ledger\n"
        "from regulator.store import Layout\n"
        "root = Path(sys.argv[1])\n"
        "ask(Ledger(Layout(root)), load_definition(root).interaction, kind='consent',\n"
        "    subject=sys.argv[2], question='Go ahead?', action='deploy', unit='u1')\n"
    )
    subprocess.run([sys.executable, "-c", code, str(inst.root), subject], check=True, timeout=60)


@pytest.mark.slow
def test_serve_delivers_an_obligation_appended_by_another_process_within_a_second(
    served: tuple[Instance, list[Serve]], mailbox: Mailbox, web: Web
) -> None:
    inst, servers = served
    server = Serve(inst)
    servers.append(server)
    assert server.wait_line("watching"), (server.lines, server.errors)
    # Appended directly in this process: one line lands, nothing else runs.
    appended = time.monotonic()
    ask(
        Ledger(Layout(inst.root, env={})),
        inst.policy,
        kind="consent",
        subject="deploy",
        question="Deploy now?",
        action="deploy",
        unit="u1",
    )
    assert wait_for(lambda: len(web.to("/")) == 1 and len(mailbox.messages) == 1, 10)
    elapsed = time.monotonic() - appended
    assert elapsed < 1.0, f"delivered after {elapsed:.2f} s"
    assert server.stop() == 0
    assert server.lines[-1].endswith("stopped")


@pytest.mark.slow
def test_serve_killed_and_restarted_sends_nothing_twice(
    served: tuple[Instance, list[Serve]], mailbox: Mailbox, web: Web
) -> None:
    inst, servers = served
    another_process_asks(inst, "before any server")
    first = Serve(inst)
    servers.append(first)
    assert first.wait_line("sent 2 to channels"), (first.lines, first.errors)
    another_process_asks(inst, "while it runs")
    assert wait_for(lambda: len(web.to("/")) == 2 and len(mailbox.messages) == 2)
    first.stop(signal.SIGKILL)
    another_process_asks(inst, "while it is down")
    second = Serve(inst)
    servers.append(second)
    assert second.wait_line("resuming after byte"), (second.lines, second.errors)
    assert wait_for(lambda: len(web.to("/")) == 3 and len(mailbox.messages) == 3)
    # A few more passes (the interval wake-up, a change): still three of each.
    inst.ledger.refresh()
    another_process_asks(inst, "one more")
    assert wait_for(lambda: len(web.to("/")) == 4 and len(mailbox.messages) == 4)
    assert second.stop(signal.SIGINT) == 0
    subjects = sorted(body["message"].splitlines()[0] for body in web.to("/"))
    assert subjects == sorted(
        [
            "consent: " + s
            for s in ("before any server", "while it runs", "while it is down", "one more")
        ]
    )


@pytest.mark.slow
def test_a_second_serve_on_the_same_instance_is_refused(
    served: tuple[Instance, list[Serve]],
) -> None:
    inst, servers = served
    first = Serve(inst)
    servers.append(first)
    assert first.wait_line("serving")
    second = Serve(inst)
    servers.append(second)
    assert second.proc.wait(timeout=30) == 5  # a host failure: try again once the first stops
    assert wait_for(lambda: any("another regulator serve" in e for e in second.errors))
    assert first.stop() == 0
