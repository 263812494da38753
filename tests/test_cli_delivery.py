"""``remind``, ``watch`` and ``effects`` run as separate processes, the way a person runs them."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from regulator.rules.ledger import Ledger
from regulator.store import Layout

from .conftest import cli, run_cli

TICK = re.compile(
    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z  delivered (\d+), reminded (\d+), "
    r"forwarded (\d+)(?:, FAILED (\d+) \(cursor not advanced\))?$"
)


def open_one(root: Path, subject: str, **fields: object) -> str:
    spec: dict[str, object] = {
        "subject": subject,
        "unit": "u1",
        "concern": "audit-finding",
        "sources": ["m1"],
        "severity": "blocking",
        "consumer": "human",
        "blocks": True,
        **fields,
    }
    return Ledger(Layout(root)).open_obligation(**spec).id


def ticks(stdout: str) -> list[tuple[int, ...]]:
    found = []
    for line in stdout.splitlines():
        match = TICK.match(line)
        assert match, f"not a tick line: {line!r}"
        found.append(tuple(int(g or 0) for g in match.groups()))
    return found


def outbox(root: Path) -> list[str]:
    return (root / ".regulator" / "outbox").read_text().splitlines()


def wait_for(predicate: object, what: str, timeout: float = 30.0) -> None:
    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_remind_delivers_what_is_owed_to_people_not_the_s5_proposal_then_nothing(
    instance: Path,
) -> None:
    for n in range(3):
        open_one(instance, f"finding {n}")
    open_one(instance, "a proposal", concern="policy-proposal", consumer="S5", blocks=False)
    first = cli("remind", cwd=instance)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[-1] == "3 delivered"
    assert len(lines) == 4
    for line in lines[:3]:
        # The line shows the obligation as it was before this delivery.
        assert line.startswith("delivered open         human blocking veto ")
        assert line.endswith("(unit u1)  not delivered")
    assert len(outbox(instance)) == 3
    again = cli("remind", cwd=instance)
    assert (again.returncode, again.stdout) == (0, "0 delivered\n")


def test_watch_exec_failing_keeps_the_cursor_and_forwards_the_lines_on_the_next_tick(
    instance: Path, tmp_path: Path
) -> None:
    open_one(instance, "first")
    open_one(instance, "second")
    script = tmp_path / "channel.sh"
    script.write_text(
        'if [ ! -e "$MARK" ]; then : > "$MARK"; echo "channel down" >&2; exit 3; fi\n'
        'printf "%s\\n" "$1" >> "$REC"\n'
    )
    record = tmp_path / "forwarded.txt"
    env = {"MARK": str(tmp_path / "failed-once"), "REC": str(record)}
    cursor = instance / ".regulator" / "outbox.cursor"

    failed = run_cli("watch", "--once", "--exec", "sh", str(script), cwd=instance, env=env)
    assert failed.returncode == 1, failed.stderr
    assert ticks(failed.stdout) == [(2, 0, 0, 1)]
    assert "exited 3" in failed.stderr and "channel down" in failed.stderr
    assert not record.exists()
    assert not cursor.exists() or cursor.read_text() == "0\n"

    # A literal --once inside the command is the flag, not an argument.
    passed = run_cli("watch", "--exec", "sh", str(script), "--once", cwd=instance, env=env)
    assert passed.returncode == 0, passed.stderr
    assert ticks(passed.stdout) == [(0, 0, 2, 0)]
    assert record.read_text().splitlines() == outbox(instance)
    size = (instance / ".regulator" / "outbox").stat().st_size
    assert cursor.read_text() == f"{size}\n"


def test_watch_killed_mid_forward_and_restarted_forwards_nothing_twice_it_recorded_as_sent(
    instance: Path, tmp_path: Path
) -> None:
    for n in range(3):
        open_one(instance, f"finding {n}")
    script = tmp_path / "channel.sh"
    # Records each line it is handed; while SLOW exists, hangs on the second one.
    script.write_text(
        'printf "%s\\n" "$1" >> "$REC"\n'
        'if [ -e "$SLOW" ] && [ "$(wc -l < "$REC")" -eq 2 ]; then sleep 60; fi\n'
    )
    record = tmp_path / "forwarded.txt"
    slow = tmp_path / "slow"
    slow.touch()
    env = {**os.environ, "REC": str(record), "SLOW": str(slow)}
    log = (tmp_path / "watch.out").open("wb")
    argv = [sys.executable, "-m", "regulator", "watch", "--interval", "100", "--exec", "sh"]
    watcher = subprocess.Popen(
        [*argv, str(script)],
        cwd=instance,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own group: the kill takes the hanging channel with it
    )
    try:
        wait_for(
            lambda: record.exists() and len(record.read_text().splitlines()) == 2,
            "the second line to be in flight",
        )
    finally:
        os.killpg(watcher.pid, signal.SIGKILL)
        watcher.wait(timeout=30)
        log.close()
    lines = outbox(instance)
    assert len(lines) == 3
    first_end = len(lines[0].encode()) + 1
    assert (instance / ".regulator" / "outbox.cursor").read_text() == f"{first_end}\n"

    slow.unlink()
    restarted = run_cli("watch", "--once", "--exec", "sh", str(script), cwd=instance, env=env)
    assert restarted.returncode == 0, restarted.stderr
    assert ticks(restarted.stdout) == [(0, 0, 2, 0)]
    sent = record.read_text().splitlines()
    # The first line was recorded as sent: never again. Only the line in flight repeats.
    assert sent == [lines[0], lines[1], lines[1], lines[2]]


def test_effects_lists_every_delivery_and_json_prints_the_states_in_camel_case(
    instance: Path,
) -> None:
    assert cli("effects", cwd=instance).stdout == "no effects journaled\n"
    oid = open_one(instance, "a finding")
    assert cli("remind", cwd=instance).returncode == 0
    listed = cli("effects", cwd=instance)
    assert listed.returncode == 0, listed.stderr
    assert re.fullmatch(
        rf"committed deliver:{oid}:0  deliver  u1  \S+Z  deliver obligation {oid[:8]} to the "
        r"owner's outbox — delivered \S+Z\n",
        listed.stdout,
    )
    [state] = json.loads(cli("effects", "--json", cwd=instance).stdout)
    assert state["key"] == f"deliver:{oid}:0"
    assert (state["status"], state["unitId"], state["tool"]) == ("committed", "u1", "deliver")
    assert state["intendedAt"].endswith("Z") and state["result"].startswith("delivered ")


def test_watch_exec_without_a_command_is_bad_usage(instance: Path) -> None:
    result = cli("watch", "--exec", "--once", cwd=instance)
    assert result.returncode == 2
    assert "--exec needs a command" in result.stderr
