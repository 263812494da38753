"""Build a large instance through the real write path: ``python benchmarks/generate.py DIR``.

Nothing here writes a log line itself. Each round plays what a busy instance does, in the
transactions the real code uses, many events per transaction as a routing pass has:

1. emitters append a batch of messages (``Transaction.append_raw``, as ``tools`` does);
2. one routing pass (``router.route_messages``) opens obligations or notes each message;
3. units ask questions (``asking.ask_in``): an obligation owed to a person and its request;
4. what is owed to a person is delivered, and earlier deliveries are reminded;
5. obligations are acknowledged, resolved, escalated (opening a successor) or superseded,
   questions are answered (``interaction-answered`` then ``obligation-resolved``, as
   ``dispositions.answer`` writes them) or time out.

Deliveries are recorded with ``Transaction.deliver`` rather than through the outbox and the
effect journal: the regulatory log gets the same lines, without a file write per obligation.

About ten log lines per obligation, as in B1 (1,000,000 lines, 100,000 obligations). A clock
that moves a few seconds per round keeps timestamps realistic and the run deterministic apart
from the uuids.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from regulator.host.demo import SimClock, contract  # noqa: E402
from regulator.host.instance import init_instance  # noqa: E402
from regulator.policy import load_definition  # noqa: E402
from regulator.protocol.entry import validate_entry  # noqa: E402
from regulator.rules.asking import ask_in  # noqa: E402
from regulator.rules.execution import ExecutionStore  # noqa: E402
from regulator.rules.ledger import Ledger, Transaction  # noqa: E402
from regulator.rules.router import route_messages  # noqa: E402
from regulator.store import Layout  # noqa: E402

#: Bump when the mix changes, so that run.py regenerates cached instances.
GENERATOR_VERSION = 3

UNITS = [f"unit-{n:03d}" for n in range(1, 121)]
#: One unit far busier than the others: about 5% of every message and question names it, so
#: that at 1,000,000 lines its timeline holds some 50,000 records (B5's inspector).
HOT_UNIT = "unit-000"
HOT_SHARE = 0.05
PEOPLE = ["alice", "bob", "carol"]

QUESTIONS: list[dict[str, Any]] = [
    {
        "kind": "consent",
        "subject": "push the release tag",
        "question": "May I push the tag to origin? It publishes the release to every user.",
        "action": "git push origin v1.2.0",
    },
    {
        "kind": "choice",
        "subject": "where history is stored",
        "question": "History must survive restarts. Which store should I use?",
        "options": ["sqlite file", "JSON lines file", "no persistence"],
    },
    {
        "kind": "clarification",
        "subject": "empty input to mean()",
        "question": "What should mean([]) return over HTTP: 400, or 0?",
    },
    {
        "kind": "uat",
        "subject": "the new CLI output",
        "question": "Does `python3 calc.py 2 3` print a result you find readable?",
    },
    {
        "kind": "recap",
        "subject": "changelog wording",
        "question": "I grouped the changes under one heading; correct me if that is wrong.",
    },
]

ANSWERS = {
    "consent": "yes",
    "choice": "sqlite file",
    "clarification": "400, with a message",
    "uat": "yes",
    "recap": "fine",
}


@dataclass
class Pools:
    """Open obligations the generator may act on next, by who they are owed to."""

    s3: list[str] = field(default_factory=list)
    s5: list[str] = field(default_factory=list)
    human: list[str] = field(default_factory=list)
    # obligation id → (interaction request id, question kind)
    asks: dict[str, tuple[str, str]] = field(default_factory=dict)
    undelivered: list[str] = field(default_factory=list)
    delivered: list[str] = field(default_factory=list)


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class Generator:
    def __init__(self, root: Path, *, seed: int, close: float) -> None:
        self.rng = random.Random(seed)
        self.close = close
        self.clock = SimClock(datetime(2026, 1, 5, 8, 0, tzinfo=UTC))
        self.layout = Layout(root)
        self.definition = load_definition(root)
        self.ledger = Ledger(self.layout, clock=self.clock)
        self.pools = Pools()
        self.serial = 0

    # -- messages ------------------------------------------------------------------------

    def _message(self) -> dict[str, Any]:
        self.serial += 1
        n = self.serial
        rng = self.rng
        unit = self._unit()
        base: dict[str, Any] = {
            "id": f"msg-{n:07d}-{rng.getrandbits(32):08x}",
            "timestamp": _iso(self.clock()),
            "unit": unit,
        }
        evidence = [{"class": "command", "ref": "python3 -m unittest", "observation": "exit 1"}]
        roll = rng.random()
        if roll < 0.45:  # below the line: noted, not owed
            return {
                **base,
                "kind": "operational-signal",
                "source": "S1",
                "channel": "signal",
                "destination": "S3",
                "severity": "info",
                "subject": f"attempt {n % 7 + 1} of {unit} finished",
                "observation": "the unit reported; all required checks passed",
                "evidence": evidence,
            }
        if roll < 0.58:
            return {
                **base,
                "kind": "operational-signal",
                "source": "S1",
                "channel": "signal",
                "destination": "S3",
                "severity": "blocking",
                "subject": f"{unit}: tests fail after the change to calc.py",
                "observation": "2 of 14 tests fail: test_mean, test_round_half_up",
                "evidence": evidence,
            }
        if roll < 0.66:
            return {
                **base,
                "kind": "audit-finding",
                "source": "S3*",
                "channel": "audit",
                "destination": "S3",
                "severity": rng.choice(["blocking", "critical", "advisory"]),
                "subject": f"closeout audit of {unit}: a claimed test run has no evidence",
                "observation": "the report cites tests-pass but no command output",
                "evidence": [{"class": "file", "ref": f".regulator/units/{unit}/report.json"}],
                "invariant": "INV-004" if n % 5 == 0 else None,
            }
        if roll < 0.72:
            return {
                **base,
                "kind": "coordination-signal",
                "source": "S2",
                "channel": "signal",
                "destination": "S3",
                "severity": "advisory",
                "coordination": rng.choice(["oscillation", "conflict", "collision"]),
                "subject": f"{unit} and another unit edit calc.py",
                "observation": "both worktrees changed the same function",
                "evidence": evidence,
                "resource": "calc.py",
            }
        if roll < 0.80:
            return {
                **base,
                "kind": "uncertainty-signal",
                "source": "S1",
                "channel": "signal",
                "destination": "S3",
                "subject": f"{unit}: which rounding rule applies",
                "decision": "round half up or half to even",
                "reason": "the contract does not say",
                "alternatives": ["half up", "half to even"],
                "consequence": "results differ on .5 values",
                "impact": rng.choice(["low", "high", "high", "critical"]),
                "evidence": [],
            }
        if roll < 0.83:
            other = rng.choice(UNITS)
            return {
                **base,
                "kind": "intelligence-signal",
                "source": "S4",
                "channel": "intelligence",
                "destination": "S3",
                "severity": "advisory",
                "subject": "a dependency we use has an open security advisory",
                "observation": "advisory published this week; a fix is released",
                "evidence": [{"class": "runtime", "ref": "pip index versions"}],
                "confidence": "high",
                "affectedUnits": sorted({unit, other}),
            }
        if roll < 0.90:
            return {
                **base,
                "kind": "algedonic-signal",
                "source": rng.choice(["S1", "S3", "S3*"]),
                "channel": "algedonic",
                "destination": "S5",
                "severity": rng.choice(["blocking", "critical"]),
                "subject": f"{unit} spent its whole budget without a report",
                "observation": "tokens exhausted in attempt 3; no report written",
                "evidence": evidence,
                "requiresHumanAttention": True,
            }
        return {
            **base,
            "kind": "policy-proposal",
            "source": "S4",
            "channel": "proposal",
            "destination": "S5",
            "severity": "advisory",
            "subject": "allow one vetted third-party dependency (INV-001)",
            "rationale": "the standard library has no HTTP router",
            "requestedChange": {"invariant": "INV-001", "allow": ["one vetted dependency"]},
            "evidence": [],
        }

    # -- one round -----------------------------------------------------------------------

    def round(self, size: int) -> None:
        rng, pools = self.rng, self.pools
        before = {"s3": len(pools.s3), "s5": len(pools.s5), "human": len(pools.human)}
        self.clock.advance(rng.uniform(0.5, 3))
        with self.ledger.transaction() as txn:
            for _ in range(size):
                data = {k: v for k, v in self._message().items() if v is not None}
                txn.append_raw(validate_entry(data))
        routed = route_messages(self.ledger, self.definition.routing)
        for state in routed.opened:
            {"S3": pools.s3, "S5": pools.s5, "human": pools.human}[state.consumer].append(state.id)
            if state.consumer == "human":
                pools.undelivered.append(state.id)

        self.clock.advance(rng.uniform(0.2, 1))
        interaction = self.definition.interaction
        with self.ledger.transaction() as txn:
            for _ in range(int(size * 0.22)):
                q = dict(rng.choice(QUESTIONS))
                asked = ask_in(txn, interaction, unit=self._unit(), attempt=1, **q)
                pools.human.append(asked.obligation.id)
                pools.undelivered.append(asked.obligation.id)
                pools.asks[asked.obligation.id] = (asked.request.id, q["kind"])

        self.clock.advance(rng.uniform(0.2, 1))
        with self.ledger.transaction() as txn:
            # First deliveries of everything owed to a person and not yet delivered.
            for ref in pools.undelivered:
                txn.deliver(ref, "S3", "outbox")
                pools.delivered.append(ref)
            pools.undelivered.clear()
            # Reminders of earlier deliveries still open.
            for ref in self._sample(pools.delivered, int(size * 4.5)):
                if self._is_open(txn, ref):
                    txn.deliver(ref, "S3", "outbox", reminder=True)

        self.clock.advance(rng.uniform(0.2, 1))
        with self.ledger.transaction() as txn:
            for ref in self._sample(pools.s3, int(size * 1.1)):
                if self._is_open(txn, ref):
                    txn.acknowledge(ref, "S3")
            for ref in self._sample(pools.human, int(size * 0.6)):
                if self._is_open(txn, ref):
                    txn.acknowledge(ref, rng.choice(PEOPLE), note=rng.choice([None, "looking"]))
        inflow = {
            "s3": len(pools.s3) - before["s3"],
            "s5": len(pools.s5) - before["s5"],
            "human": len(pools.human) - before["human"],
        }
        self._close_some(inflow)

    def _close_some(self, inflow: dict[str, int]) -> None:
        # Close about ``close`` of what arrived this round, oldest first: the rest piles up
        # into the open inbox a busy instance has.
        rng, pools = self.rng, self.pools
        self.clock.advance(rng.uniform(0.2, 1))
        with self.ledger.transaction() as txn:
            # The generator plays a person who may act as S5 (moving an S5 item to a human).
            txn.s5_authorized = True
            for name, pool, closer in (("s3", pools.s3, "S3"), ("s5", pools.s5, "S5")):
                for ref in self._take(pool, round(inflow[name] * self.close)):
                    if not self._is_open(txn, ref):
                        continue
                    roll = rng.random()
                    if roll < 0.08:
                        succ = txn.escalate(ref, closer, "needs a person's call", to="human")
                        pools.human.append(succ.id)
                        pools.undelivered.append(succ.id)
                    elif roll < 0.12 and pool:
                        successor = pool[-1]
                        if successor != ref and self._is_open(txn, successor):
                            txn.supersede(ref, closer, successor, "the later finding covers it")
                    else:
                        disposition = rng.choice(["fixed", "verified", "rework", "no-action"])
                        txn.resolve(ref, closer, disposition, "handled in the next attempt")
            for ref in self._take(pools.human, round(inflow["human"] * self.close)):
                if not self._is_open(txn, ref):
                    continue
                ask = pools.asks.pop(ref, None)
                person = rng.choice(PEOPLE)
                if ask is None:
                    txn.resolve(ref, person, "accepted-risk", "known; accepted for this release")
                    continue
                request_id, kind = ask
                if rng.random() < 0.1:
                    txn.answer_interaction(request_id, outcome="timed-out", by="S1", channel="none")
                    pools.asks[ref] = ask
                    pools.human.append(ref)  # still owed: a time-out is not an answer
                    continue
                text = ANSWERS[kind]
                txn.answer_interaction(
                    request_id, outcome="answered", by=person, channel="cli", answer=text
                )
                disposition = {"consent": "accepted", "uat": "verified"}.get(kind, "fixed")
                txn.resolve(ref, person, disposition, text)

    # -- helpers -------------------------------------------------------------------------

    def _unit(self) -> str:
        return HOT_UNIT if self.rng.random() < HOT_SHARE else self.rng.choice(UNITS)

    def _is_open(self, txn: Transaction, ref: str) -> bool:
        state = txn.get(ref)
        return state.status in ("open", "acknowledged") and state.id not in txn.closed

    def _sample(self, pool: list[str], count: int) -> list[str]:
        # Recent obligations are acted on more than old ones, as in a real inbox.
        if not pool:
            return []
        window = pool[-min(len(pool), count * 6) :]
        return [self.rng.choice(window) for _ in range(count)]

    def _take(self, pool: list[str], count: int) -> list[str]:
        # Close the oldest first, leaving the newest few to be worked on next round.
        n = min(count, max(0, len(pool) - 50))
        taken = pool[:n]
        del pool[:n]
        return taken


def count_lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


def generate(
    directory: Path,
    lines: int,
    *,
    seed: int = 7,
    close: float = 0.75,
    round_size: int = 500,
    progress: Callable[[str], None] = lambda _: None,
) -> Layout:
    """A new instance in ``directory`` whose ``signals.ndjson`` holds at least ``lines`` lines."""
    directory.mkdir(parents=True, exist_ok=True)
    if any(directory.iterdir()):
        raise FileExistsError(f"{directory}: not empty")
    subprocess.run(["git", "init", "--quiet", str(directory)], check=True)
    init_instance(directory, by="alice", clock=lambda: datetime(2026, 1, 5, 7, 0, tzinfo=UTC))
    gen = Generator(directory, seed=seed, close=close)
    # Every unit the messages name has its record and contract, as a dispatched unit has:
    # ``status`` and the room list them.
    store = ExecutionStore(gen.layout, clock=gen.clock)
    for unit_id in [HOT_UNIT, *UNITS]:
        store.create_unit(contract(unit_id, f"the work of {unit_id}", tests=True, clock=gen.clock))
    started = time.monotonic()
    written = 0
    while written < lines:
        # Shrink the last rounds so the count lands close to the target.
        left = lines - written
        gen.round(max(5, min(round_size, left // 20)))
        written = gen.ledger.log.lines
        progress(f"{written:>9,} lines  {time.monotonic() - started:6.1f} s")
    return gen.layout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("directory", type=Path, help="a new or empty directory")
    parser.add_argument("--lines", type=int, default=1_000_000, help="log lines to write")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--close",
        type=float,
        default=0.75,
        help="how much of what opens each round is closed (0: everything stays open)",
    )
    args = parser.parse_args(argv)
    tty = sys.stderr.isatty()

    def progress(text: str) -> None:
        if tty:
            print(f"\r{text}", end="", file=sys.stderr, flush=True)

    layout = generate(
        args.directory, args.lines, seed=args.seed, close=args.close, progress=progress
    )
    if tty:
        print(file=sys.stderr)
    print(f"{layout.signals}: {count_lines(layout.signals):,} lines")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
