"""The incremental log reader: fragments held back, bad lines reported and skipped, restarts."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from regulator.store import (
    RESTART_MESSAGE,
    Problem,
    StoreError,
    TailReader,
    append_records,
    parse_object,
)


@pytest.fixture
def log(tmp_path: Path) -> Path:
    (tmp_path / ".regulator").mkdir()
    return tmp_path / ".regulator" / "signals.ndjson"


def raw_append(path: Path, data: bytes) -> None:
    """Bytes written the way a foreign or dying writer would: no lock, no repair."""
    with open(path, "ab") as handle:
        handle.write(data)


def test_a_missing_log_reads_as_empty(log: Path) -> None:
    reader = TailReader(log)
    batch = reader.refresh()
    assert batch.items == [] and batch.problems == [] and not batch.restarted
    assert reader.offset == 0


def test_refresh_returns_only_what_was_appended_since(log: Path) -> None:
    reader = TailReader(log)
    append_records(log, [{"n": 1}, {"n": 2}])
    assert reader.refresh().items == [{"n": 1}, {"n": 2}]
    assert reader.refresh().items == []
    append_records(log, [{"n": 3}])
    assert reader.refresh().items == [{"n": 3}]
    assert reader.offset == log.stat().st_size
    assert reader.next_line == 4


def test_a_cut_last_line_is_held_back_then_becomes_one_problem(log: Path) -> None:
    append_records(log, [{"n": 1}, {"n": 2}])
    complete = log.stat().st_size
    raw_append(log, b'{"n": 3, "cut')
    reader = TailReader(log, label=".regulator/signals.ndjson")
    batch = reader.refresh()
    assert batch.items == [{"n": 1}, {"n": 2}]
    assert batch.problems == []
    assert reader.offset == complete
    assert reader.fragment == b'{"n": 3, "cut'

    append_records(log, [{"n": 4}])  # the writer ends the fragment with "\n" first
    assert log.read_bytes().endswith(b'{"n": 3, "cut\n{"n":4}\n')
    batch = reader.refresh()
    assert batch.items == [{"n": 4}]
    assert len(batch.problems) == 1
    problem = batch.problems[0]
    assert (problem.file, problem.line) == (".regulator/signals.ndjson", 3)
    assert str(problem).startswith(".regulator/signals.ndjson:3: invalid JSON")
    assert reader.problems == [problem]
    # A fresh reader of the whole file agrees line for line.
    again = TailReader(log, label=".regulator/signals.ndjson")
    assert again.refresh().items == [{"n": 1}, {"n": 2}, {"n": 4}]
    assert again.problems == [problem]


def test_a_fragment_completed_by_a_later_write_is_read_whole(log: Path) -> None:
    reader = TailReader(log)
    raw_append(log, b'{"n": ')
    assert reader.refresh().items == []
    raw_append(log, b'5}\n{"n": 6}\n')
    assert reader.refresh().items == [{"n": 5}, {"n": 6}]
    assert reader.problems == []


@pytest.mark.parametrize("what", ["fifo", "directory", "symlink"])
def test_a_log_that_is_not_a_regular_file_is_refused_naming_it_never_read_as_empty(
    log: Path, tmp_path: Path, what: str
) -> None:
    # Read as empty, a FIFO signals log said "no obligations"; a FIFO must not block either.
    if what == "fifo":
        os.mkfifo(log)
    elif what == "directory":
        log.mkdir()
    else:
        elsewhere = tmp_path / "elsewhere.ndjson"
        elsewhere.write_bytes(b'{"n": 1}\n')
        log.symlink_to(elsewhere)
    reader = TailReader(log, label=".regulator/signals.ndjson")
    for _ in range(2):  # every time, not once
        with pytest.raises(StoreError) as refused:
            reader.refresh()
        message = str(refused.value)
        assert message.startswith(f"{log}: ") and "\n" not in message
        assert ("FIFO" if what == "fifo" else what) in message
    assert reader.offset == 0 and reader.problems == []


def test_bad_lines_are_problems_with_their_line_numbers_and_neighbours_still_read(
    log: Path,
) -> None:
    lines = [
        b'{"n": 1}',
        b'{"n": 2',  # 2: invalid JSON
        b'{"n": 3}',
        b'{"n": "\xff\xfe"}',  # 4: invalid UTF-8
        b'{"n": 5}',
        b'{"n": \x00}',  # 6: NUL
        b'{"n": 7}',
        b"[1, 2]",  # 8: not an object
        b"",  # 9: empty line
        b'{"n": "\x1b[31m"}',  # 10: raw control character in a string
        b'{"n": 11}',
    ]
    raw_append(log, b"\n".join(lines) + b"\n")
    reader = TailReader(log, label="signals.ndjson")
    batch = reader.refresh()
    assert [item["n"] for item in batch.items] == [1, 3, 5, 7, 11]
    by_line = {problem.line: problem.message for problem in batch.problems}
    assert list(by_line) == [2, 4, 6, 8, 9, 10]
    assert by_line[2].startswith("invalid JSON at column 8")
    assert by_line[4] == "invalid UTF-8 at byte 8"
    assert by_line[6] == "NUL byte at byte 7"
    assert by_line[8] == "expected a JSON object, got an array"
    assert by_line[9] == "empty line"
    assert "\x1b" not in by_line[10]
    assert str(batch.problems[0]) == f"signals.ndjson:2: {by_line[2]}"


def test_any_exception_from_the_parse_function_is_a_problem(log: Path) -> None:
    def parse(line: bytes) -> int:
        record = parse_object(line)
        if "kind" not in record:
            raise KeyError("kind")
        if record["kind"] == "bad":
            raise ValueError("unknown kind 'bad'\nsecond line")
        return int(record["n"])

    append_records(log, [{"kind": "a", "n": 1}, {"n": 2}, {"kind": "bad"}, {"kind": "b", "n": 4}])
    reader = TailReader(log, parse, label="log")
    batch = reader.refresh()
    assert batch.items == [1, 4]
    assert [str(p) for p in batch.problems] == [
        "log:2: 'kind'",
        "log:3: unknown kind 'bad'; second line",
    ]


def test_a_truncated_log_is_noticed_and_re_read_from_the_start(log: Path) -> None:
    append_records(log, [{"n": 1}, {"n": 2}, {"n": 3}])
    reader = TailReader(log, label="log")
    assert len(reader.refresh()) == 3
    os.truncate(log, 0)
    append_records(log, [{"n": 9}])
    batch = reader.refresh()
    assert batch.restarted
    assert batch.items == [{"n": 9}]
    assert [str(p) for p in batch.problems] == [f"log: {RESTART_MESSAGE}"]
    assert str(batch.problems[0]) == "log: truncated or replaced; re-read from the start"
    assert reader.restarts == 1
    assert reader.next_line == 2
    assert not reader.refresh().restarted


def test_a_log_truncated_and_grown_past_the_old_offset_is_noticed(log: Path) -> None:
    append_records(log, [{"n": 1}, {"n": 2}])
    reader = TailReader(log)
    reader.refresh()
    os.truncate(log, 0)
    append_records(log, [{"n": 3, "pad": "x" * 100}])  # one line longer than the old file
    batch = reader.refresh()
    assert batch.restarted
    assert batch.items == [{"n": 3, "pad": "x" * 100}]


def test_a_replaced_log_is_noticed_and_re_read_from_the_start(log: Path) -> None:
    append_records(log, [{"n": 1}, {"n": 2}])
    reader = TailReader(log)
    reader.refresh()
    raw_append(log, b'{"stale": ')  # a fragment that must not leak into the new file's lines
    reader.refresh()
    replacement = log.with_name("new.ndjson")
    replacement.write_bytes(b'{"n": 1}\n{"n": 2}\n{"n": 3}\n')
    replacement.replace(log)  # a new inode, bigger than before
    batch = reader.refresh()
    assert batch.restarted
    assert batch.items == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert reader.problems == [Problem(str(log), None, RESTART_MESSAGE)]


def test_a_removed_log_restarts_and_reads_again_when_it_comes_back(log: Path) -> None:
    append_records(log, [{"n": 1}])
    reader = TailReader(log)
    reader.refresh()
    log.unlink()
    batch = reader.refresh()
    assert batch.restarted and batch.items == []
    append_records(log, [{"n": 2}])
    assert reader.refresh().items == [{"n": 2}]


def test_an_empty_log_removed_and_made_again_is_read_on_without_a_problem(log: Path) -> None:
    # A refused write removes the empty log it made; a reader that saw it empty has read
    # nothing from it, so its going and coming back is no problem to report.
    log.write_bytes(b"")
    reader = TailReader(log)
    reader.refresh()
    log.unlink()
    assert not reader.refresh().restarted
    append_records(log, [{"n": 1}])  # a new inode
    batch = reader.refresh()
    assert not batch.restarted and batch.items == [{"n": 1}]
    assert reader.problems == [] and reader.restarts == 0
    # And an empty log replaced by another file (a distinct inode: both exist at once).
    other = log.with_name("other.ndjson")
    other.write_bytes(b"")
    fresh = TailReader(other)
    fresh.refresh()
    made = other.with_name("made.ndjson")
    made.write_bytes(b'{"n": 2}\n')
    made.replace(other)
    batch = fresh.refresh()
    assert not batch.restarted and batch.items == [{"n": 2}] and fresh.problems == []


def test_max_bytes_splits_a_refresh_without_losing_a_line(log: Path) -> None:
    records = [{"n": n, "pad": "y" * (n % 7)} for n in range(200)]
    append_records(log, records)
    reader = TailReader(log, chunk_size=64)
    seen: list[dict[str, Any]] = []
    rounds = 0
    while True:
        batch = reader.refresh(max_bytes=100)
        seen.extend(batch.items)
        rounds += 1
        if not batch.more:
            break
    assert seen == records
    assert rounds > 10


# -- properties --------------------------------------------------------------------------


def _read_in_pieces(
    data: bytes, cuts: list[int], chunk_size: int
) -> tuple[TailReader[Any], list[Any]]:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "log.ndjson"
        path.write_bytes(b"")
        reader = TailReader(path, chunk_size=chunk_size)
        items: list[Any] = []
        previous = 0
        for cut in [*sorted(cuts), len(data)]:
            raw_append(path, data[previous:cut])
            previous = max(previous, cut)
            batch = reader.refresh()
            assert not batch.restarted
            items.extend(batch.items)
        return reader, items


garbage_line = st.binary(max_size=120).map(lambda b: b.replace(b"\n", b""))
json_value = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=10,
)
record_line = st.dictionaries(st.text(max_size=10), json_value, max_size=5).map(orjson.dumps)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    data=st.binary(max_size=3000),
    cuts=st.lists(st.integers(0, 3000), max_size=8),
    chunk=st.integers(1, 97),
)
def test_random_bytes_never_make_the_reader_raise(data: bytes, cuts: list[int], chunk: int) -> None:
    reader, items = _read_in_pieces(data, [c for c in cuts if c <= len(data)], chunk)
    complete_lines = data.count(b"\n")
    assert len(items) + len(reader.problems) == complete_lines
    assert all(
        problem.line is not None and 1 <= problem.line <= complete_lines
        for problem in reader.problems
    )
    assert reader.fragment == data[data.rfind(b"\n") + 1 :]


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    lines=st.lists(st.one_of(record_line, garbage_line), max_size=20),
    cuts=st.lists(st.integers(0, 10_000), max_size=6),
    chunk=st.integers(1, 300),
)
def test_valid_lines_among_garbage_are_all_read_in_order(
    lines: list[bytes], cuts: list[int], chunk: int
) -> None:
    data = b"".join(line + b"\n" for line in lines)
    reader, items = _read_in_pieces(data, [c for c in cuts if c <= len(data)], chunk)
    expected: list[Any] = []
    bad_lines: list[int] = []
    for number, line in enumerate(lines, start=1):
        try:
            expected.append(parse_object(line))
        except ValueError:
            bad_lines.append(number)
    assert items == expected
    assert [problem.line for problem in reader.problems] == bad_lines
    assert reader.fragment == b""
    assert reader.offset == len(data)
