"""Crashes: writers SIGKILLed at random points, an effect killed between acting and recording,
and the watcher killed mid-tick.

Killing means SIGKILL of a real process. Starting a fresh Python for each of a hundred kills
would cost most of the test, so one helper process imports the core once and forks a worker
per trial; the test kills the worker by its id and has the helper reap it.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from regulator.host.delivery import deliver_pending, forward_outbox
from regulator.rules.effect_journal import EffectJournal
from regulator.rules.ledger import Ledger
from regulator.rules.regulatory_log import RegulatoryLog
from regulator.store import Layout, TailReader

REPO = Path(__file__).resolve().parents[1]

# Workers, run in a forked child of the helper; each writes until it is killed (or returns).
HELPER = r'''
import json, os, random, signal, sys
from pathlib import Path
from regulator.host.delivery import deliver_pending, watch_tick
from regulator.rules.effect_journal import EffectJournal
from regulator.rules.ledger import Ledger, Transaction
from regulator.policy import load_definition
from regulator.protocol.obligations import ObligationState
from regulator.store import Layout

POLICY = load_definition(None).interaction


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


LEDGERS = {}


def ledger_for(root):
    """The helper's ledger for ``root``, caught up before each fork: a worker starts warm
    instead of folding the whole (growing) log again."""
    if root not in LEDGERS:
        LEDGERS[root] = Ledger(Layout(Path(root), env={}))
    LEDGERS[root].refresh()
    return LEDGERS[root]


def open_forever(root, trial, seed):
    """Obligations in batches of 1–300 (one write each), numbered, until killed."""
    ledger, rng, seq = ledger_for(root), random.Random(seed), 0
    while True:
        count = rng.randint(1, 300)
        with ledger.transaction() as txn:
            for i in range(count):
                txn.open(subject=f"t{trial}-{seq + i}", concern="audit-finding",
                         sources=[f"t{trial}:{seq + i}"], severity="advisory",
                         consumer="S3", blocks=False, question="x" * rng.randint(1, 400))
        seq += count


def open_then_tear(root, trial, seed):
    """A few whole obligations, then half a line written without the writer's repair."""
    ledger = ledger_for(root)
    for i in range(3):
        ledger.open_obligation(subject=f"t{trial}-{i}", concern="audit-finding",
                               sources=[f"t{trial}:{i}"], severity="advisory",
                               consumer="S3", blocks=False)
    fd = os.open(ledger.layout.signals, os.O_WRONLY | os.O_APPEND)
    os.write(fd, b'{"type":"obligation-opened","id":"torn-%d","at":"2026-' % trial)
    die()


def deliver_and_die(root, where):
    """A delivery pass killed right after the outbox line is written (before the journal's
    commit) or right after the commit (before the ledger records the delivery)."""
    if where == "before-commit":
        EffectJournal.commit = lambda self, key, result: die()
    else:
        original = EffectJournal.commit
        def commit_then_die(self, key, result):
            original(self, key, result)
            die()
        EffectJournal.commit = commit_then_die
    deliver_pending(ledger_for(root))


def deliver_forever(root):
    ledger = ledger_for(root)
    while True:
        deliver_pending(ledger)


def tick(root, command):
    """One watcher tick: deliver, remind, forward every new outbox line through command."""
    layout = Layout(Path(root), env={})
    ledger = Ledger(layout)
    watch_tick(ledger, EffectJournal(layout), layout, POLICY, command=command)


print("ready", flush=True)
for line in sys.stdin:
    verb, _, rest = line.rstrip("\n").partition(" ")
    if verb == "fork":
        name, args = json.loads(rest)
        ledger_for(args[0])  # every worker's first argument is the instance
        pid = os.fork()
        if pid == 0:
            try:
                globals()[name](*args)
            except BaseException:
                import traceback
                traceback.print_exc()
                os._exit(1)
            os._exit(0)
        print(pid, flush=True)
    elif verb == "reap":
        _, status = os.waitpid(int(rest), 0)
        print(status, flush=True)
'''


class Helper:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", HELPER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        self.live: set[int] = set()
        assert self._read() == "ready"

    def _read(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def _say(self, text: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text + "\n")
        self.process.stdin.flush()

    def fork(self, name: str, *args: Any) -> int:
        self._say(f"fork {json.dumps([name, list(args)])}")
        pid = int(self._read())
        self.live.add(pid)
        return pid

    def reap(self, pid: int) -> int:
        """The worker's wait status, once it has ended."""
        self._say(f"reap {pid}")
        status = int(self._read())
        self.live.discard(pid)
        return status

    def kill(self, pid: int) -> None:
        os.kill(pid, signal.SIGKILL)
        assert os.WTERMSIG(self.reap(pid)) == signal.SIGKILL

    def close(self) -> None:
        for pid in list(self.live):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.reap(pid)
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)
        self.process.stdout.close()


@pytest.fixture
def helper() -> Iterator[Helper]:
    made = Helper()
    yield made
    made.close()


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    (tmp_path / ".regulator").mkdir()
    return Layout(tmp_path, env={})


def poll_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.001)


def count_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def ended(pid: int) -> bool:
    """Whether the worker has exited (a zombie, until the helper reaps it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def written(path: Path, threshold: int, pid: int) -> Callable[[], bool]:
    def check() -> bool:
        assert not ended(pid), "the worker died on its own"
        return size(path) >= threshold

    return check


def forwarded(received: Path, wanted: int, pid: int) -> Callable[[], bool]:
    return lambda: count_lines(received) >= wanted or ended(pid)


def size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


# --- a hundred writers killed ----------------------------------------------------------------


@pytest.mark.slow
def test_a_hundred_writers_killed_at_random_points_lose_no_whole_line_and_leave_one_problem_each(
    layout: Layout, helper: Helper
) -> None:
    trials = 100
    rng = random.Random(20261201)
    follower = RegulatoryLog(layout)
    lines = TailReader(layout.signals, label="signals.ndjson")
    ledger = Ledger(layout)
    torn = 0
    started = time.monotonic()
    for trial in range(trials):
        before = size(layout.signals)
        if trial % 5 == 4:
            pid = helper.fork("open_then_tear", str(layout.root), trial, trial)
            assert os.WTERMSIG(helper.reap(pid)) == signal.SIGKILL
        else:
            pid = helper.fork("open_forever", str(layout.root), trial, trial)
            poll_until(
                written(layout.signals, before + rng.randrange(1, 200_000), pid),
                60,
                "the worker to write",
            )
            helper.kill(pid)

        # Every whole line written before the kill reads, in order; a fragment is held back,
        # not yet a problem (its writer might be alive and finishing it).
        known = set(follower.obligations)
        problems_before = len(follower.problems)
        follower.refresh()
        batch = lines.refresh()
        assert batch.problems == [] and len(follower.problems) == problems_before
        subjects = [o.subject for oid, o in follower.obligations.items() if oid not in known]
        assert subjects == [f"t{trial}-{i}" for i in range(len(subjects))]
        fragment = lines.fragment
        fragment_line = lines.next_line
        if trial % 5 == 4:
            assert fragment.startswith(b'{"type":"obligation-opened","id":"torn-')
        if fragment:
            torn += 1

        # The next write starts on a fresh line; the fragment becomes exactly one problem.
        marker = ledger.open_obligation(
            subject=f"marker {trial}",
            concern="audit-finding",
            sources=[f"marker:{trial}"],
            severity="info",
            consumer="S3",
            blocks=False,
        )
        follower.refresh()
        batch = lines.refresh()
        assert [item["obligation"]["id"] for item in batch.items] == [marker.id]
        assert marker.id in follower.obligations
        new_problems = follower.problems[problems_before:]
        if fragment:
            assert [p.line for p in batch.problems] == [fragment_line]
            assert [str(p).split(": ")[0] for p in new_problems] == [
                f"{layout.label(layout.signals)}:{fragment_line}"
            ]
        else:
            assert batch.problems == [] and new_problems == []
        assert lines.fragment == b""
        assert layout.signals.read_bytes().endswith(b"\n")

    cold = RegulatoryLog(layout)
    cold.refresh()
    assert len(cold.problems) == torn >= trials // 5, "one problem per torn line, no more"
    assert set(cold.obligations) == set(follower.obligations)
    print(f"100 kills: {time.monotonic() - started:.1f}s, {torn} torn lines")


# --- an effect killed between acting and recording -------------------------------------------


def open_for_a_person(ledger: Ledger, n: int) -> list[str]:
    return [
        ledger.open_obligation(
            subject=f"owed {i}",
            concern="audit-finding",
            sources=[f"m{i}"],
            severity="blocking",
            consumer="human",
            blocks=True,
        ).id
        for i in range(n)
    ]


def outbox_keys(layout: Layout) -> Counter[str]:
    data = layout.outbox.read_bytes() if layout.outbox.exists() else b""
    return Counter(line.split(b" ")[0].decode() for line in data.splitlines())


def delivered_events(ledger: Ledger) -> Counter[str]:
    ledger.refresh()
    return Counter({oid: len(o.deliveries) for oid, o in ledger.log.obligations.items()})


@pytest.mark.parametrize("where", ["before-commit", "before-the-ledger-records-it"])
def test_a_delivery_killed_between_acting_and_recording_is_reconciled_not_repeated(
    layout: Layout, helper: Helper, where: str
) -> None:
    ledger = Ledger(layout)
    owed = open_for_a_person(ledger, 3)
    pid = helper.fork("deliver_and_die", str(layout.root), where)
    assert os.WTERMSIG(helper.reap(pid)) == signal.SIGKILL
    # Acted (the first line is in the outbox), not recorded (no delivery in the log).
    assert sum(outbox_keys(layout).values()) == 1
    assert sum(delivered_events(ledger).values()) == 0

    done = deliver_pending(ledger, EffectJournal(layout), layout)
    assert [d.reconciled for d in done].count(True) == 1
    keys = outbox_keys(layout)
    assert sorted(keys) == sorted(f"deliver:{oid}:0" for oid in owed)
    assert set(keys.values()) == {1}, "a line written twice"
    assert delivered_events(ledger) == Counter(dict.fromkeys(owed, 1))


@pytest.mark.slow
def test_delivery_passes_killed_at_random_points_deliver_each_obligation_exactly_once(
    layout: Layout, helper: Helper
) -> None:
    rng = random.Random(7)
    ledger = Ledger(layout)
    owed: list[str] = []
    for _ in range(20):
        owed += open_for_a_person(ledger, 10)
        pid = helper.fork("deliver_forever", str(layout.root))
        time.sleep(rng.uniform(0, 0.15))  # a random moment to kill at, not a wait for anything
        helper.kill(pid)
        deliver_pending(ledger, EffectJournal(layout), layout)
        keys = outbox_keys(layout)
        assert sorted(keys) == sorted(f"deliver:{oid}:0" for oid in owed)
        assert set(keys.values()) == {1}
        assert delivered_events(ledger) == Counter(dict.fromkeys(owed, 1))
    journal = EffectJournal(layout)
    assert journal.problems == []
    assert all(journal.state(f"deliver:{oid}:0") is not None for oid in owed)


# --- the watcher killed mid-tick ---------------------------------------------------------------


@pytest.mark.slow
def test_a_watcher_killed_mid_tick_forwards_nothing_twice_beyond_the_line_in_flight(
    layout: Layout, helper: Helper, tmp_path: Path
) -> None:
    rng = random.Random(11)
    received = tmp_path / "received"
    # The channel: appends the line it is given to a file, as a notifier would send it.
    command = ["sh", "-c", 'printf "%s\\n" "$1" >> "$0"', str(received)]
    ledger = Ledger(layout)
    owed: list[str] = []
    kills = 0
    for trial in range(12):
        owed += open_for_a_person(ledger, 15)
        pid = helper.fork("tick", str(layout.root), command)
        if trial % 2:
            time.sleep(rng.uniform(0, 0.3))  # anywhere in the tick: delivering or forwarding
        else:
            target = rng.randrange(1, 15)
            poll_until(forwarded(received, count_lines(received) + target, pid), 60, "lines")
        try:
            os.kill(pid, signal.SIGKILL)
            kills += 1
        except ProcessLookupError:
            pass
        helper.reap(pid)
    deliver_pending(ledger, EffectJournal(layout), layout)
    forward_outbox(layout, command)

    sent = layout.outbox.read_bytes().decode().splitlines()
    got = received.read_text().splitlines()
    assert len(sent) == len(owed) and Counter(sent) == Counter(dict.fromkeys(sent, 1))
    assert set(got) == set(sent), "every outbox line forwarded"
    repeats = Counter(got) - Counter(sent)
    assert sum(repeats.values()) <= kills, f"{sum(repeats.values())} repeats for {kills} kills"
    # A repeat is the line in flight when the watcher died: it follows its first copy at once.
    for line in repeats:
        first = got.index(line)
        assert got[first + 1] == line
    assert {line.split(" ")[0] for line in sent} == {f"deliver:{oid}:0" for oid in owed}
