"""The locked log writer: separate processes, a follower, SIGKILL mid-batch, symlinks refused."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from regulator.store import (
    Layout,
    SymlinkRefused,
    TailReader,
    append_lines,
    append_records,
    locked_log,
)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    (tmp_path / ".regulator").mkdir()
    return Layout(tmp_path, env={})


Spawn = Callable[..., "subprocess.Popen[str]"]


@pytest.fixture
def start_child() -> Iterator[Spawn]:
    """Start separate Python processes running a script; any left running are killed after."""
    children: list[subprocess.Popen[str]] = []

    def spawn(script: str, *args: str) -> subprocess.Popen[str]:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        child = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(script), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        children.append(child)
        return child

    yield spawn
    for child in children:
        if child.poll() is None:
            child.kill()
        child.wait(timeout=30)
        for stream in (child.stdin, child.stdout):
            if stream is not None and not stream.closed:
                stream.close()


def wait_ready(child: subprocess.Popen[str]) -> None:
    assert child.stdout is not None
    line = child.stdout.readline()  # blocks only until the child has started (or died)
    assert line == "ready\n", f"child did not start: {line!r}"


def size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def written_or_exited(path: Path, threshold: int, child: subprocess.Popen[str]) -> bool:
    return size(path) >= threshold or child.poll() is not None


def poll_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.002)


WRITER = """
    import sys
    from pathlib import Path
    from regulator.store import append_lines
    path, writer, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    pad = (writer * 150)[:150]
    print("ready", flush=True)
    sys.stdin.readline()  # "go": both writers start together
    for seq in range(count):
        line = b'{"writer":"%s","seq":%d,"pad":"%s"}' % (writer.encode(), seq, pad.encode())
        append_lines(path, [line])
"""


def test_two_processes_appending_leave_every_record_once_and_a_follower_sees_each_once(
    layout: Layout, start_child: Spawn
) -> None:
    count = 10_000
    log = layout.signals
    writers = [start_child(WRITER, str(log), name, str(count)) for name in ("a", "b")]
    for writer in writers:
        wait_ready(writer)
    reader = TailReader(log)
    followed: list[dict[str, Any]] = []
    for writer in writers:
        assert writer.stdin is not None
        writer.stdin.write("go\n")
        writer.stdin.close()
    deadline = time.monotonic() + 120
    while any(writer.poll() is None for writer in writers):
        assert time.monotonic() < deadline, "writers did not finish"
        followed.extend(reader.refresh().items)
        time.sleep(0.001)
    assert [writer.returncode for writer in writers] == [0, 0]
    followed.extend(reader.refresh().items)

    raw = log.read_bytes()
    lines = raw.split(b"\n")
    assert lines[-1] == b""
    whole = TailReader(log).refresh()
    assert whole.problems == []
    on_disk = whole.items
    assert len(lines) - 1 == len(on_disk) == 2 * count
    keys = [(record["writer"], record["seq"]) for record in on_disk]
    assert len(set(keys)) == 2 * count
    for name in ("a", "b"):
        assert [seq for who, seq in keys if who == name] == list(range(count))
        pad = (name * 150)[:150]
        assert all(r["pad"] == pad for r in on_disk if r["writer"] == name)
    assert reader.problems == []
    assert followed == on_disk  # each record exactly once, in file order


CRASHER = """
    import os, sys
    from pathlib import Path
    from regulator.store import append_lines
    path, start, mode = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    pad = b"z" * 90
    print("ready", flush=True)
    seq = start
    if mode == "fragment":
        # Die mid-line for certain: write half a record without the lock's repair.
        append_lines(path, [b'{"seq":%d,"pad":"%s"}' % (seq, pad)])
        seq += 1
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        os.write(fd, b'{"seq":%d,"pa' % seq)
        print("fragment", flush=True)
        sys.stdin.readline()
    while True:
        batch = [b'{"seq":%d,"pad":"%s"}' % (seq + i, pad) for i in range(2000)]
        append_lines(path, batch)
        seq += len(batch)
"""


def test_a_writer_killed_mid_batch_loses_no_earlier_line_and_the_next_append_starts_fresh(
    layout: Layout, start_child: Spawn
) -> None:
    log = layout.signals
    reader = TailReader(log, label="signals.ndjson")
    rng = random.Random(20240607)
    trials = 24
    fragments = 0
    for trial in range(trials):
        start = trial * 10_000_000
        mode = "fragment" if trial % 4 == 3 else "loop"
        before = size(log)
        child = start_child(CRASHER, str(log), str(start), mode)
        wait_ready(child)
        if mode == "fragment":
            assert child.stdout is not None
            assert child.stdout.readline() == "fragment\n"
        else:
            # Kill at a random moment: once the child has written a random amount.
            threshold = before + rng.randrange(1, 3_000_000)
            poll_until(partial(written_or_exited, log, threshold, child), 30, "the child to write")
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        assert child.returncode == -signal.SIGKILL

        first_line = reader.next_line
        batch = reader.refresh()
        assert batch.problems == [] and not batch.restarted
        seqs = [item["seq"] for item in batch.items]
        assert seqs == list(range(start, start + len(seqs)))  # every line before the kill reads
        fragment = reader.fragment
        if mode == "fragment":
            assert fragment.startswith(b'{"seq":')
        if fragment:
            fragments += 1
        else:
            assert log.read_bytes().endswith(b"\n")

        marker = {"marker": trial}
        append_records(log, [marker])
        batch = reader.refresh()
        assert batch.items == [marker]
        if fragment:
            assert [p.line for p in batch.problems] == [first_line + len(seqs)]
            assert str(batch.problems[0]).startswith(f"signals.ndjson:{first_line + len(seqs)}:")
        else:
            assert batch.problems == []
        assert log.read_bytes().endswith(b'{"marker":%d}\n' % trial)
        assert reader.fragment == b""

    # Read from scratch: at most one problem per kill, each a single line.
    whole = TailReader(log, label="signals.ndjson")
    whole.refresh()
    assert len(whole.problems) == fragments <= trials
    assert fragments >= trials // 4


def test_a_refused_check_then_write_leaves_the_log_byte_for_byte_unchanged(layout: Layout) -> None:
    log = layout.signals
    append_records(log, [{"n": 1}])
    with open(log, "ab") as handle:
        handle.write(b'{"dead writer')  # the repair "\n" must not be written by a refusal
    before = log.read_bytes()
    with pytest.raises(RuntimeError), locked_log(log) as appender:
        reader = TailReader(log)
        reader.refresh()
        raise RuntimeError("refused after validating")
    assert appender.bytes_written == 0
    assert log.read_bytes() == before


def test_a_refusal_on_a_log_that_did_not_exist_leaves_no_file_behind(layout: Layout) -> None:
    log = layout.signals
    with pytest.raises(RuntimeError), locked_log(log):
        raise RuntimeError("refused")
    with locked_log(log):
        pass  # a check that found nothing to write
    assert not log.exists()
    append_records(log, [{"n": 1}])  # the next writer makes it as usual
    assert TailReader(log).refresh().items == [{"n": 1}]


def test_writers_waiting_on_a_log_a_refusal_made_and_removed_lose_no_line(layout: Layout) -> None:
    # Each round starts with no file: refusing writers make it and remove it again while the
    # appending ones wait on the same name. A writer that appended to the removed inode would
    # lose its line.
    rounds, per_round = 40, 6
    for round_ in range(rounds):
        log = layout.state / f"race-{round_}.ndjson"
        start = threading.Barrier(per_round)

        def write(n: int, log: Path = log, start: threading.Barrier = start) -> None:
            start.wait()
            with locked_log(log) as out:
                if n % 2:
                    out.append_records([{"n": n}])

        threads = [threading.Thread(target=write, args=(n,)) for n in range(per_round)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        got = sorted(item["n"] for item in TailReader(log).refresh().items)
        assert got == [1, 3, 5], f"round {round_}: {got}"


CLAIMER = """
    import sys
    from pathlib import Path
    from regulator.store import TailReader, locked_log
    path, me, rounds = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    reader = TailReader(path)
    claimed = set()
    print("ready", flush=True)
    sys.stdin.readline()
    for round_ in range(rounds):
        with locked_log(path) as log:
            claimed.update(item["round"] for item in reader.refresh().items)
            if round_ not in claimed:
                log.append_records([{"round": round_, "by": me}])
"""


def test_check_then_write_under_the_lock_lets_exactly_one_process_win_each_round(
    layout: Layout, start_child: Spawn
) -> None:
    rounds = 200
    log = layout.signals
    claimers = [start_child(CLAIMER, str(log), name, str(rounds)) for name in ("a", "b")]
    for claimer in claimers:
        wait_ready(claimer)
    for claimer in claimers:
        assert claimer.stdin is not None
        claimer.stdin.write("go\n")
        claimer.stdin.close()
    for claimer in claimers:
        assert claimer.wait(timeout=60) == 0
    items = TailReader(log).refresh().items
    assert sorted(item["round"] for item in items) == list(range(rounds))


def test_a_symlinked_log_file_is_refused_and_its_target_untouched(
    layout: Layout, tmp_path: Path
) -> None:
    target = tmp_path / "elsewhere.ndjson"
    target.write_bytes(b"")
    layout.signals.symlink_to(target)
    with pytest.raises(SymlinkRefused) as caught:
        append_records(layout.signals, [{"n": 1}])
    assert str(layout.signals) in str(caught.value)
    assert target.read_bytes() == b""
    reader = TailReader(layout.signals, label="signals.ndjson")
    # A reader refuses as the writer does: read as empty, the log would say nothing happened.
    for _ in range(2):
        with pytest.raises(SymlinkRefused) as read:
            reader.refresh()
        assert str(layout.signals) in str(read.value)


def test_a_dangling_symlink_is_not_created_through(layout: Layout, tmp_path: Path) -> None:
    target = tmp_path / "would-be-created.ndjson"
    layout.audit.symlink_to(target)
    with pytest.raises(SymlinkRefused):
        append_lines(layout.audit, [b"{}"])
    assert not target.exists()


def test_a_symlinked_directory_under_regulator_is_refused_for_logs(
    layout: Layout, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    layout.units_dir.mkdir()
    layout.unit_dir("u1").symlink_to(outside)
    with pytest.raises(SymlinkRefused) as caught:
        append_records(layout.attempts("u1"), [{"attempt": 1}])
    assert str(layout.unit_dir("u1")) in str(caught.value)
    assert list(outside.iterdir()) == []
    with pytest.raises(SymlinkRefused) as read:
        TailReader(layout.attempts("u1")).refresh()
    assert str(layout.unit_dir("u1")) in str(read.value)


def test_a_log_line_holding_a_newline_is_refused_before_anything_is_written(
    layout: Layout,
) -> None:
    append_records(layout.signals, [{"n": 1}])
    before = layout.signals.read_bytes()
    for bad in ([b'{"a":1}\n{"b":2}'], [b""], [b'{"n": 2}', b"x\r"]):
        with pytest.raises(ValueError, match="newline"):
            append_lines(layout.signals, bad)
    with pytest.raises(TypeError):
        append_lines(layout.signals, b'{"n": 2}')  # type: ignore[arg-type]
    assert layout.signals.read_bytes() == before


def test_the_first_append_creates_missing_unit_directories(layout: Layout) -> None:
    append_records(layout.decisions("u9"), [{"d": 1}])
    assert layout.decisions("u9").read_bytes() == b'{"d":1}\n'
