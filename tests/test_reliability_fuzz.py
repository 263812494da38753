"""Hostile input: hypothesis-made log lines and policy files.

Log readers never raise: each bad line is one problem naming the file and its line, and every
good line around it is kept. A bad policy is refused with every problem naming the file and
the field, and loading it never raises anything but that refusal.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from regulator.policy import POLICY_KINDS, Definition, shipped_policies_dir
from regulator.protocol.errors import field_path
from regulator.rules.effect_journal import EffectJournal
from regulator.rules.regulatory_log import RegulatoryLog
from regulator.store import Layout

# Seconds of hypothesis: part of `pytest -m slow` with the concurrency and crash tests.
pytestmark = pytest.mark.slow

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def fresh_layout(tmp_path_factory: pytest.TempPathFactory) -> Layout:
    root = tmp_path_factory.mktemp("fuzz")
    (root / ".regulator").mkdir()
    return Layout(root, env={})


# --- log lines --------------------------------------------------------------------------------


def opened(n: int) -> dict[str, Any]:
    return {
        "type": "obligation-opened",
        "id": f"e-{n}",
        "at": "2026-12-01T10:00:00.000Z",
        "by": "S3",
        "obligation": {
            "id": f"ob-{n}",
            "subject": f"subject {n}",
            "concern": "audit-finding",
            "sources": [f"m-{n}"],
            "severity": "blocking",
            "consumer": "human",
            "blocks": True,
            "openedAt": "2026-12-01T10:00:00.000Z",
            "openedBy": "S3",
        },
    }


JSON_ODDITIES = st.sampled_from(
    [None, True, 0, 1, -1, 1.5, 10**30, "", "x", [], [1], {}, {"a": None}, "\x00", "\u202e"]
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    if isinstance(value, dict):
        for key, inner in value.items():
            out += [(*prefix, key), *_paths(inner, (*prefix, key))]
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            out += [(*prefix, index), *_paths(inner, (*prefix, index))]
    return out


@st.composite
def bad_line(draw: st.DrawFn, n: int) -> bytes:
    """A line no reader may take as a record: cut, mistyped, huge, NUL, invalid UTF-8, noise."""
    good = orjson.dumps(opened(n))
    how = draw(st.sampled_from(["cut", "type", "huge", "nul", "utf8", "noise", "scalar"]))
    if how == "cut":
        return good[: draw(st.integers(1, len(good) - 1))]
    if how == "type":
        record = opened(n)
        path = draw(st.sampled_from(_paths(record)))
        parent: Any = record
        for step in path[:-1]:
            parent = parent[step]
        old = parent[path[-1]]
        new = draw(JSON_ODDITIES.filter(lambda v: type(v) is not type(old)))
        parent[path[-1]] = new
        return json.dumps(record, separators=(",", ":")).encode()  # 10**30 too
    if how == "huge":
        return b'{"type":"obligation-opened","id":"' + b"h" * 3_000_000 + b'"'
    if how == "nul":
        at = draw(st.integers(0, len(good)))
        return good[:at] + b"\x00" + good[at:]
    if how == "utf8":
        at = draw(st.integers(1, len(good) - 1))
        return (
            good[:at]
            + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80"]))
            + good[at:]
        )
    if how == "scalar":
        return draw(st.sampled_from([b"null", b"1", b'"x"', b"[]", b"true", b"{}"]))
    noise = draw(st.binary(min_size=1, max_size=200))
    return noise.replace(b"\n", b" ").replace(b"\r", b" ") or b"?"


@st.composite
def logs(draw: st.DrawFn) -> tuple[list[bytes], set[int], set[int]]:
    """Lines, the line numbers of the good ones, and of the bad ones."""
    lines: list[bytes] = []
    good: set[int] = set()
    bad: set[int] = set()
    for n in range(draw(st.integers(1, 25))):
        if draw(st.booleans()):
            lines.append(orjson.dumps(opened(n)))
            good.add(len(lines))
        else:
            lines.append(draw(bad_line(n)))
            bad.add(len(lines))
    return lines, good, bad


def good_ids(lines: list[bytes], good: set[int]) -> set[str]:
    return {f"ob-{orjson.loads(lines[i - 1])['id'][2:]}" for i in good}


@SETTINGS
@given(log=logs(), cuts=st.lists(st.integers(0, 1 << 22), max_size=4))
def test_hostile_log_lines_are_problems_with_file_and_line_and_good_lines_are_kept(
    tmp_path_factory: pytest.TempPathFactory,
    log: tuple[list[bytes], set[int], set[int]],
    cuts: list[int],
) -> None:
    lines, good, bad = log
    layout = fresh_layout(tmp_path_factory)
    data = b"".join(line + b"\n" for line in lines)
    # Written in pieces, read after each: a line cut by a refresh is read whole later.
    follower = RegulatoryLog(layout)
    with layout.signals.open("wb") as out:
        for cut in sorted({c % (len(data) + 1) for c in cuts} | {len(data)}):
            out.write(data[out.tell() : cut])
            out.flush()
            follower.refresh()
    cold = RegulatoryLog(layout)
    cold.refresh()
    label = layout.label(layout.signals)
    for fold in (follower, cold):
        assert set(fold.obligations) >= good_ids(lines, good)
        lines_with_problems = set()
        for problem in fold.problems:
            assert str(problem).startswith(f"{label}:{problem.line}: "), str(problem)
            assert len(str(problem)) < 2000, "a problem quotes a bounded excerpt"
            lines_with_problems.add(problem.line)
        # Each problem is a bad line; a bad line that still builds a record is not one.
        assert lines_with_problems <= bad
        assert len(fold.problems) == len(lines_with_problems)
        unparsed = bad - lines_with_problems
        assert len(fold.obligations) == len(good) + len(unparsed)
    assert [str(p) for p in follower.problems] == [str(p) for p in cold.problems]


def test_every_kind_of_bad_line_is_a_problem_of_its_own_line(tmp_path: Path) -> None:
    layout = Layout(tmp_path, env={})
    (tmp_path / ".regulator").mkdir()

    def line(n: int) -> bytes:
        return orjson.dumps(opened(n))

    # Each bad line would open an obligation of its own (ob-2 …): none may be opened.
    bad = [
        line(2)[:-5],
        line(3).replace(b'"blocks":true', b'"blocks":1'),
        line(4).replace(b'"subject 4"', b'"' + b"s" * 3_000_000 + b'\x00"'),
        line(5).replace(b"subject", b"subj\xffect"),
        b"\x00\x00\x00",
        b"[1,2,3]",
    ]
    lines = [line(0), *bad, line(1)]
    layout.signals.write_bytes(b"".join(line + b"\n" for line in lines))
    log = RegulatoryLog(layout)
    log.refresh()
    assert set(log.obligations) == {"ob-0", "ob-1"}
    assert [p.line for p in log.problems] == [2, 3, 4, 5, 6, 7]


@SETTINGS
@given(log=logs())
def test_the_effect_journal_reads_hostile_lines_as_problems_and_keeps_the_rest(
    tmp_path_factory: pytest.TempPathFactory, log: tuple[list[bytes], set[int], set[int]]
) -> None:
    lines, _good, _bad = log
    layout = fresh_layout(tmp_path_factory)
    journal = EffectJournal(layout)
    journal.begin("k-good", "deliver", "a good line", None)
    before = layout.effects.read_bytes()
    with layout.effects.open("ab") as out:
        out.write(b"".join(line + b"\n" for line in lines))
    again = EffectJournal(layout)
    again.refresh()
    assert again.state("k-good") is not None
    label = layout.label(layout.effects)
    assert len(again.problems) == len(lines)  # none of these is a journal line
    for problem in again.problems:
        assert str(problem).startswith(f"{label}:{problem.line}: ")
    assert layout.effects.read_bytes().startswith(before)


# --- policy files -----------------------------------------------------------------------------


def shipped(kind: str) -> tuple[str, Any]:
    [path] = [p for p in shipped_policies_dir().iterdir() if p.stem == kind]
    return path.name, yaml.safe_load(path.read_text(encoding="utf-8"))


POLICY_ODDITIES = st.sampled_from(
    [None, -1, 0, 10**20, "", "nope", [], {}, True, 1.5, "\x00", {"unknown": 1}, ["x"]]
)


@st.composite
def bad_policies(draw: st.DrawFn) -> tuple[str, str, bytes, tuple[Any, ...] | None]:
    """``(kind, file name, file bytes, the path changed or None for byte damage)``."""
    kind = draw(st.sampled_from(sorted(POLICY_KINDS)))
    name, data = shipped(kind)
    how = draw(st.sampled_from(["set", "set", "drop", "add", "bytes"]))
    if how == "bytes":
        raw = yaml.safe_dump(data).encode()
        at = draw(st.integers(0, len(raw)))
        junk = draw(st.sampled_from([b"\x00", b"\xff\xfe", b": : :", b"\t- [", b"{{", b""]))
        return kind, name, raw[:at] + junk, None
    path = draw(st.sampled_from(_paths(data)))
    parent: Any = data
    for step in path[:-1]:
        parent = parent[step]
    if how == "drop" and isinstance(parent, dict):
        del parent[path[-1]]
    elif how == "add" and isinstance(parent, dict):
        parent["notAField"] = 1
        path = (*path[:-1], "notAField")
    else:
        parent[path[-1]] = draw(POLICY_ODDITIES)
    return kind, name, yaml.safe_dump(data, allow_unicode=True).encode(), path


@SETTINGS
@given(policy=bad_policies())
def test_a_hostile_policy_is_refused_naming_the_file_and_the_field_and_never_raises(
    tmp_path_factory: pytest.TempPathFactory,
    policy: tuple[str, str, bytes, tuple[Any, ...] | None],
) -> None:
    kind, name, raw, path = policy
    root = tmp_path_factory.mktemp("definition")
    (root / "policies").mkdir()
    (root / "policies" / name).write_bytes(raw)
    problems = Definition(root).check()[kind]  # PolicyError is caught there; nothing else may be
    for problem in problems:
        assert f"policies/{name}" in problem.split(": ")[0], problem
    if path is None or not problems:
        return  # damage that still parses to a valid policy is a valid policy
    # Some problem names the changed field or one of the records holding it.
    prefixes = {field_path(list(path[:i])) for i in range(1, len(path) + 1)}
    assert any(prefix in problem for problem in problems for prefix in prefixes), (
        path,
        problems,
    )


def test_a_valid_policy_written_back_loads(tmp_path: Path) -> None:
    # The premise of the test above: the shipped policies survive the YAML round trip.
    (tmp_path / "policies").mkdir()
    for kind in POLICY_KINDS:
        name, data = shipped(kind)
        (tmp_path / "policies" / name).write_text(yaml.safe_dump(data, allow_unicode=True))
    assert Definition(tmp_path).check() == {kind: [] for kind in POLICY_KINDS}
