"""Concurrency on one instance: 8 processes × 500 transitions through the ledger, and two
processes resolving the same obligation, 200 rounds.

The processes are small Python scripts against the real ledger (not the CLI, whose start-up
would dominate): each act locks the log, catches up, validates and appends, as every command
does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from regulator.rules.ledger import Ledger
from regulator.rules.regulatory_log import RegulatoryLog
from regulator.store import Layout, TailReader

REPO = Path(__file__).resolve().parents[1]
TERMINAL = {"obligation-resolved", "obligation-escalated", "obligation-superseded"}


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    (tmp_path / ".regulator").mkdir()
    return Layout(tmp_path, env={})


class Children:
    """Python processes running a script; any still running at the end are killed."""

    def __init__(self) -> None:
        self.started: list[subprocess.Popen[str]] = []

    def start(self, script: str, *args: str) -> subprocess.Popen[str]:
        child = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(script), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        self.started.append(child)
        return child

    def close(self) -> None:
        for child in self.started:
            if child.poll() is None:
                child.kill()
            child.wait(timeout=30)
            for stream in (child.stdin, child.stdout):
                if stream is not None and not stream.closed:
                    stream.close()


@pytest.fixture
def children() -> Iterator[Children]:
    made = Children()
    yield made
    made.close()


def read_line(child: subprocess.Popen[str]) -> str:
    assert child.stdout is not None
    return child.stdout.readline()  # blocks only until the child answers (or dies)


def say(child: subprocess.Popen[str], text: str) -> None:
    assert child.stdin is not None
    child.stdin.write(text + "\n")
    child.stdin.flush()


# --- 8 × 500 ----------------------------------------------------------------------------------

ACTOR = """
    import json, random, sys
    from pathlib import Path
    from regulator.rules.ledger import Ledger, LedgerError
    from regulator.store import Layout

    root, me, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    ledger = Ledger(Layout(root, env={}))
    rng = random.Random(me)
    written, refused, done = [], 0, 0
    print("ready", flush=True)
    sys.stdin.readline()
    while done < count:
        # The target is picked from a view that may be stale by the time the lock is held:
        # that is the race every command runs, and the ledger must refuse the loser.
        ledger.refresh()
        open_ = [o.id for o in ledger.log.open_obligations()]
        roll = rng.random()
        try:
            with ledger.transaction() as txn:
                if len(open_) < 2 or roll < 0.3:
                    txn.open(subject=f"{me}-{done}", concern="operational-signal",
                             sources=[f"{me}:{done}"], severity="advisory", consumer="S3",
                             blocks=False)
                else:
                    target, other = rng.sample(open_, 2)
                    if roll < 0.5:
                        txn.acknowledge(target, me, f"seen by {me}")
                    elif roll < 0.75:
                        txn.resolve(target, me, "fixed", "done")
                    elif roll < 0.9:
                        txn.escalate(target, me, "up", to="human")
                    else:
                        txn.supersede(target, me, other, "replaced")
        except LedgerError:
            refused += 1
            continue
        written.append([e.id for e in txn.events])
        done += 1
    print(json.dumps({"written": written, "refused": refused}), flush=True)
"""


def replay(lines: list[dict[str, Any]]) -> dict[str, tuple[str, int]]:
    """The obligations' statuses and event counts (the opening included), by a plain serial
    reading of the lines."""
    status: dict[str, str] = {}
    events: Counter[str] = Counter()
    for line in lines:
        kind = line["type"]
        if kind == "obligation-opened":
            status[line["obligation"]["id"]] = "open"
            events[line["obligation"]["id"]] += 1
            continue
        oid = line["obligationId"]
        events[oid] += 1
        if kind == "obligation-acknowledged" and status[oid] == "open":
            status[oid] = "acknowledged"
        elif kind in TERMINAL:
            status[oid] = kind.removeprefix("obligation-")
    return {oid: (s, events[oid]) for oid, s in status.items()}


def folded(log: RegulatoryLog) -> dict[str, tuple[str, int]]:
    return {oid: (o.status, len(o.history)) for oid, o in log.obligations.items()}


@pytest.mark.slow
def test_eight_processes_making_500_transitions_each_lose_duplicate_and_tear_nothing(
    layout: Layout, children: Children
) -> None:
    writers, count = 8, 500
    actors = [children.start(ACTOR, str(layout.root), f"w{i}", str(count)) for i in range(writers)]
    for actor in actors:
        assert read_line(actor) == "ready\n"
    follower = RegulatoryLog(layout)
    started = time.monotonic()
    for actor in actors:
        say(actor, "go")
    results = []
    for actor in actors:
        # Each actor answers once, when done; the follower folds what is there meanwhile.
        follower.refresh()
        results.append(json.loads(read_line(actor)))
        assert actor.wait(timeout=60) == 0
    elapsed = time.monotonic() - started
    follower.refresh()

    raw = layout.signals.read_bytes()
    assert raw.endswith(b"\n")
    lines = [orjson.loads(line) for line in raw.split(b"\n")[:-1]]  # none interleaved
    assert TailReader(layout.signals).refresh().problems == []
    on_disk = [line["id"] for line in lines]
    reported = [eid for result in results for act in result["written"] for eid in act]
    assert len(on_disk) == len(set(on_disk)), "a line written twice"
    assert sorted(on_disk) == sorted(reported), "a line lost, or one nobody wrote"
    assert all(len(result["written"]) == count for result in results)
    # The lines of one act sit together, in the order the act made them.
    position = {eid: i for i, eid in enumerate(on_disk)}
    for result in results:
        for act in result["written"]:
            first = position[act[0]]
            assert [position[eid] for eid in act] == list(range(first, first + len(act)))

    terminal = Counter(line["obligationId"] for line in lines if line["type"] in TERMINAL)
    assert terminal and max(terminal.values()) == 1, "an obligation closed twice"
    closed: set[str] = set()
    for line in lines:
        oid = line.get("obligationId")
        assert oid not in closed, f"{line['type']} after {oid} was closed"
        if line["type"] in TERMINAL:
            closed.add(oid)

    expected = replay(lines)
    cold = RegulatoryLog(layout)
    cold.refresh()
    assert folded(follower) == folded(cold) == expected
    assert follower.problems == cold.problems == []
    refused = sum(result["refused"] for result in results)
    print(f"8×500: {elapsed:.1f}s, {len(lines)} lines, {refused} stale acts refused")


# --- two processes, one obligation, 200 rounds ------------------------------------------------

RESOLVER = """
    import sys
    from pathlib import Path
    from regulator.rules.ledger import Ledger, LedgerError
    from regulator.store import Layout

    root, me = Path(sys.argv[1]), sys.argv[2]
    ledger = Ledger(Layout(root, env={}))
    print("ready", flush=True)
    for line in sys.stdin:
        oid = line.strip()
        ledger.refresh()  # both see it open before either tries
        print("seen", flush=True)
        sys.stdin.readline()  # "go"
        try:
            ledger.resolve(oid, me, "fixed", f"resolved by {me}")
        except LedgerError as error:
            print("lost " + str(error).replace("\\n", " "), flush=True)
        else:
            print("won", flush=True)
"""


@pytest.mark.slow
def test_two_processes_resolving_the_same_obligation_exactly_one_wins_each_round(
    layout: Layout, children: Children
) -> None:
    rounds = 200
    ledger = Ledger(layout)
    resolvers = [children.start(RESOLVER, str(layout.root), name) for name in ("a", "b")]
    for resolver in resolvers:
        assert read_line(resolver) == "ready\n"
    winners: Counter[str] = Counter()
    for round_ in range(rounds):
        oid = ledger.open_obligation(
            subject=f"round {round_}",
            concern="operational-signal",
            sources=[f"round:{round_}"],
            severity="blocking",
            consumer="human",
            blocks=True,
        ).id
        for resolver in resolvers:
            say(resolver, oid)
        for resolver in resolvers:
            assert read_line(resolver) == "seen\n"
        for resolver in resolvers:
            say(resolver, "go")
        answers = [read_line(resolver) for resolver in resolvers]
        won = [name for name, answer in zip("ab", answers, strict=True) if answer == "won\n"]
        assert len(won) == 1, f"round {round_}: {answers}"
        loser = answers[1 - "ab".index(won[0])]
        assert loser.startswith("lost ") and "resolved" in loser, loser
        winners[won[0]] += 1
        ledger.refresh()
        state = ledger.log.obligations[oid]
        assert state.status == "resolved" and state.closed_by == won[0]
    resolved = Counter(
        line["obligationId"]
        for line in map(orjson.loads, layout.signals.read_bytes().splitlines())
        if line["type"] == "obligation-resolved"
    )
    assert len(resolved) == rounds and set(resolved.values()) == {1}
    print(f"200 rounds: a won {winners['a']}, b won {winners['b']}")
