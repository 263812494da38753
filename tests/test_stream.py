"""``regulator stream``: the server side of a remote room, run over a local subprocess the way
``ssh host regulator stream`` runs it."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from regulator.policy import load_definition
from regulator.rules.asking import ask
from regulator.rules.ledger import Ledger
from regulator.store import Layout
from tests.conftest import cli, run_cli

CANARY = "canary-Zq81-value-DO-NOT-SHOW"


def make(root: Path) -> Path:
    (root / ".regulator").mkdir(parents=True)
    (root / ".regulator" / "canaries").write_text(CANARY + "\n")
    return root


def asks(root: Path, subject: str) -> str:
    asked = ask(
        Ledger(Layout(root, env={})),
        load_definition(None).interaction,
        kind="consent",
        subject=subject,
        question="Go ahead?",
        action="deploy",
        unit="u1",
    )
    return asked.obligation.id


def lines_of(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def stream_once(root: Path, since: str = "0") -> list[dict[str, Any]]:
    result = run_cli("stream", "--instance", str(root), "--since", since, "--once", cwd=root)
    assert result.returncode == 0, result.stderr
    return lines_of(result.stdout)


def test_a_stream_from_zero_holds_every_folded_obligation_then_a_sync_cursor(
    tmp_path: Path,
) -> None:
    root = make(tmp_path / "remote")
    oid = asks(root, f"deploy with {CANARY}")
    items = stream_once(root)
    assert items[0]["type"] == "hello" and items[0]["protocol"] == 1
    assert items[0]["cursor"] == "s0.d0.p0" and items[0]["reset"] is False
    [o] = [i["obligation"] for i in items if i["type"] == "obligation"]
    assert o["id"] == oid and o["status"] == "open" and o["concern"] == "interaction"
    [interaction] = [i["interaction"] for i in items if i["type"] == "interaction"]
    assert interaction["request"]["obligationId"] == oid
    assert items[-1]["type"] == "sync"
    size = (root / ".regulator" / "signals.ndjson").stat().st_size
    assert items[-1]["cursor"] == f"s{size}.d0.p0"
    # The canary an agent wrote never leaves the host.
    assert CANARY not in json.dumps(items)
    # From that cursor, nothing is sent again.
    again = stream_once(root, items[-1]["cursor"])
    assert [i["type"] for i in again] == ["hello", "sync"]


def test_an_answer_given_as_the_remote_cli_streams_the_resolved_state_and_its_os_user(
    tmp_path: Path,
) -> None:
    root = make(tmp_path / "remote")
    oid = asks(root, "deploy")
    cursor = stream_once(root)[-1]["cursor"]
    # The room's act goes as the remote CLI command: authority and provenance are the host's.
    answered = cli("answer", oid[:8], "--by", "alice", "--answer", "yes", cwd=root)
    assert answered.returncode == 0, answered.stderr
    items = stream_once(root, cursor)
    [o] = [i["obligation"] for i in items if i["type"] == "obligation"]
    assert o["id"] == oid and o["status"] == "resolved" and o["disposition"] == "accepted"
    provenance = [i["provenance"] for i in items if i["type"] == "provenance"]
    assert provenance and {p["via"] for p in provenance} == {"cli"}
    from regulator.rules.authority import process_os_user

    assert {p["osUser"] for p in provenance} == {process_os_user()}
    # An acknowledgement is one obligation event: its new state is streamed too.
    other = asks(root, "second")
    cursor = stream_once(root, items[-1]["cursor"])[-1]["cursor"]
    acked = cli("obligation", "ack", other[:8], "--by", "alice", cwd=root)
    assert acked.returncode == 0, acked.stderr
    items = stream_once(root, cursor)
    states = {i["obligation"]["id"]: i["obligation"] for i in items if i["type"] == "obligation"}
    assert states[other]["status"] == "acknowledged"
    assert states[other]["acknowledgedBy"] == ["alice"]


def test_a_cursor_past_the_end_of_a_replaced_log_starts_over_with_reset(tmp_path: Path) -> None:
    root = make(tmp_path / "remote")
    asks(root, "deploy")
    items = stream_once(root, "s999999.d0.p0")
    assert items[0]["type"] == "hello" and items[0]["reset"] is True
    assert any(i["type"] == "obligation" for i in items)


def test_a_malformed_cursor_is_refused_naming_the_argument(tmp_path: Path) -> None:
    root = make(tmp_path / "remote")
    result = cli("stream", "--instance", str(root), "--since", "12abc", "--once", cwd=root)
    assert result.returncode == 2 and "--since" in result.stderr and result.stdout == ""


@pytest.mark.slow
def test_a_followed_stream_sends_each_append_then_heartbeats_and_stops_on_sigterm(
    tmp_path: Path,
) -> None:
    root = make(tmp_path / "remote")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "regulator",
            "stream",
            "--instance",
            str(root),
            "--heartbeat",
            "0.5",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    got: queue.Queue[dict[str, Any]] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            got.put(json.loads(line))

    threading.Thread(target=read, daemon=True).start()

    def next_of(kind: str, timeout: float = 20.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                item = got.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            if item["type"] == kind:
                return item
        raise AssertionError(f"no {kind} line within {timeout} s")

    try:
        assert next_of("hello")["cursor"] == "s0.d0.p0"
        next_of("sync")
        oid = asks(root, "deploy")
        assert next_of("obligation")["obligation"]["id"] == oid
        cursor = next_of("sync")["cursor"]
        beat = next_of("heartbeat")
        assert beat["cursor"] == cursor
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=20)
