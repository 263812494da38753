"""Delivery through the core with an injected clock: the outbox, reminders, the watcher's tick."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from regulator.host.delivery import (
    deliver_key,
    deliver_pending,
    forward_outbox,
    outbox_line,
    reconcile_deliveries,
    remind_due,
    remindable,
    undelivered,
    watch_tick,
)
from regulator.policy import load_definition
from regulator.protocol.obligations import ObligationState
from regulator.rules.effect_journal import EffectJournal
from regulator.rules.ledger import Ledger, Transaction
from regulator.store import Layout

POLICY = load_definition(None).interaction


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 9, 22, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += timedelta(milliseconds=ms)


class Env:
    """One instance with a ledger, a journal and a clock, as a tick sees them."""

    def __init__(self, root: Path) -> None:
        (root / ".regulator").mkdir(exist_ok=True)
        self.root = root
        self.layout = Layout(root, env={})
        self.clock = Clock()
        self.ledger = Ledger(self.layout, clock=self.clock)
        self.journal = EffectJournal(self.layout, self.clock)

    def open(self, subject: str = "a finding", **fields: object) -> ObligationState:
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
        return self.ledger.open_obligation(**spec)

    def tick(
        self, run: FakeChannel | None = None, command: Sequence[str] | None = None
    ) -> list[int]:
        cmd = command if command is not None else (["mail"] if run is not None else None)
        r = watch_tick(self.ledger, self.journal, self.layout, POLICY, self.clock, cmd, run=run)
        return [r.delivered, r.reminded, r.forwarded, r.failed]

    def outbox_lines(self) -> list[str]:
        path = self.layout.outbox
        return path.read_text().splitlines() if path.exists() else []

    def deliveries(self, oid: str) -> int:
        return len(self.ledger.refresh().obligations[oid].deliveries)


class FakeChannel:
    """The channel command, in-process: records what it was handed, or refuses."""

    def __init__(self, fail_on: set[int] | None = None) -> None:
        self.sent: list[str] = []
        self.fail = False
        self.fail_on = fail_on or set()
        self.calls = 0

    def __call__(self, command: Sequence[str], line: bytes) -> tuple[int, str]:
        self.calls += 1
        if self.fail or self.calls in self.fail_on:
            return 1, "channel down"
        self.sent.append(f"{command[0]} {line.decode()}")
        return 0, ""


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return Env(tmp_path)


def test_the_upstream_tick_sequence_deliver_nothing_new_remind_refused_then_forwarded(
    env: Env,
) -> None:
    env.open(
        "clarify: which behaviour",
        concern="recovery-decision",
        sources=["d1"],
        question="Which?",
    )
    channel = FakeChannel()
    assert env.tick(channel) == [1, 0, 1, 0]
    assert re.match(
        r"^mail deliver:[0-9a-f-]{36}:0 2026-09-22T12:00:00\.000Z u1 blocking veto "
        r"recovery-decision on u1: clarify: which behaviour — Which\? \(answer with "
        r"`regulator answer [0-9a-f]{8}` or `regulator obligation resolve [0-9a-f]{8}`\)$",
        channel.sent[0],
    )
    assert env.tick(channel) == [0, 0, 0, 0], "nothing new: nothing forwarded twice"
    env.clock.advance(POLICY.reminder_after_ms)
    channel.fail = True
    assert env.tick(channel) == [0, 1, 0, 1], "the reminder reached the outbox; the channel refused"
    channel.fail = False
    assert env.tick(channel) == [0, 0, 1, 0], "the cursor stayed: the reminder goes next tick"
    assert "REMINDER: blocking veto recovery-decision" in channel.sent[1]
    assert len(env.outbox_lines()) == 2, "the outbox is the record: both lines kept"


def test_the_outbox_line_prefix_is_the_originals(env: Env) -> None:
    o = env.open("clarify: which behaviour", concern="recovery-decision", question="Which?")
    [item] = deliver_pending(env.ledger, env.journal, env.layout, env.clock)
    [line] = env.outbox_lines()
    assert line.startswith(
        f"deliver:{o.id}:0 2026-09-22T12:00:00.000Z u1 blocking veto recovery-decision on u1: "
        "clarify: which behaviour — Which? "
    )
    assert item.line == line and not item.reminder
    assert env.deliveries(o.id) == 1
    delivered = env.ledger.log.obligations[o.id].deliveries[0]
    assert (delivered.channel, delivered.reminder, delivered.target) == ("outbox", False, "outbox")


def test_an_obligation_without_unit_or_veto_and_with_line_breaks_stays_one_line(env: Env) -> None:
    o = env.open("two\nlines\r\nhere", unit=None, blocks=False, severity="advisory")
    line = outbox_line("deliver:x:3", "T", o, reminder=True)
    assert line == (
        "deliver:x:3 T - REMINDER: advisory audit-finding on no unit: two lines  here "
        f"(answer with `regulator answer {o.id[:8]}` or `regulator obligation resolve {o.id[:8]}`)"
    )


def test_terminal_escapes_in_an_obligation_reach_the_outbox_as_visible_text(env: Env) -> None:
    o = env.open("red \x1b[31malert\x1b]52;c;eA==\x07 done\x00")
    line = outbox_line("k", "T", o, reminder=False)
    assert "\x1b" not in line and "\x00" not in line and "\x07" not in line
    assert line.startswith(
        "k T u1 blocking veto audit-finding on u1: "
        "red \\x1b[31malert\\x1b]52;c;eA==\\x07 done\\x00 "
        f"(answer with `regulator answer {o.id[:8]}` or `regulator obligation resolve {o.id[:8]}`)"
    )


def test_reminders_are_marked_and_due_exactly_at_reminder_after_ms(env: Env) -> None:
    o = env.open()
    deliver_pending(env.ledger, env.journal, env.layout, env.clock)
    states = list(env.ledger.refresh().obligations.values())
    env.clock.advance(POLICY.reminder_after_ms - 1)
    assert remindable(states, POLICY, env.clock()) == []
    env.clock.advance(1)
    assert [s.id for s in remindable(states, POLICY, env.clock())] == [o.id]
    [item] = remind_due(env.ledger, env.journal, env.layout, POLICY, env.clock)
    assert item.reminder and item.key == f"deliver:{o.id}:1"
    assert "REMINDER: " in env.outbox_lines()[1]
    assert env.ledger.refresh().obligations[o.id].status == "open", "delivery is no disposition"


def test_remind_delivers_a_never_delivered_obligation_as_a_delivery_not_a_reminder(
    env: Env,
) -> None:
    env.open()
    [item] = remind_due(env.ledger, env.journal, env.layout, POLICY, env.clock)
    assert not item.reminder
    assert "REMINDER" not in env.outbox_lines()[0]


def test_obligations_owed_to_s3_or_s5_are_never_delivered(env: Env) -> None:
    env.open(consumer="S3")
    env.open("a proposal", concern="policy-proposal", consumer="S5", blocks=False)
    person = env.open("for a person")
    states = list(env.ledger.refresh().obligations.values())
    assert [o.id for o in undelivered(states)] == [person.id]
    assert len(deliver_pending(env.ledger, env.journal, env.layout, env.clock)) == 1
    env.clock.advance(POLICY.reminder_after_ms)
    assert len(remind_due(env.ledger, env.journal, env.layout, POLICY, env.clock)) == 1
    lines = env.outbox_lines()
    assert len(lines) == 2 and all(line.startswith(f"deliver:{person.id}:") for line in lines)


def test_a_resolved_obligation_is_not_delivered(env: Env) -> None:
    o = env.open()
    env.ledger.resolve(o.id, "alice", "no-action", "fine")
    assert deliver_pending(env.ledger, env.journal, env.layout, env.clock) == []
    assert env.outbox_lines() == []


def test_a_crash_between_the_outbox_and_the_ledger_is_recorded_not_repeated(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    o = env.open()

    def die(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt  # the process dies: the pass's ledger events never land

    with monkeypatch.context() as patch:
        patch.setattr(Transaction, "deliver", die)
        with pytest.raises(KeyboardInterrupt):
            deliver_pending(env.ledger, env.journal, env.layout, env.clock)
    assert len(env.outbox_lines()) == 1 and env.deliveries(o.id) == 0
    assert env.journal.state(deliver_key(o)) is not None
    [item] = deliver_pending(env.ledger, env.journal, env.layout, env.clock)
    assert item.reconciled and item.line is None
    assert len(env.outbox_lines()) == 1, "the line is not written again"
    assert env.deliveries(o.id) == 1, "the delivery is recorded"


def test_a_crash_before_the_commit_is_reconciled_as_confirmed_not_repeated(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    o = env.open()

    def die(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(EffectJournal, "commit", die)
        with pytest.raises(KeyboardInterrupt):
            deliver_pending(env.ledger, env.journal, env.layout, env.clock)
    assert [s.status for s in env.journal.states()] == ["intended"]
    [item] = deliver_pending(env.ledger, env.journal, env.layout, env.clock)
    assert item.reconciled
    assert len(env.outbox_lines()) == 1
    assert [s.status for s in env.journal.states()] == ["confirmed"]
    assert env.deliveries(o.id) == 1


def test_an_intention_that_never_reached_the_outbox_is_absent_and_delivered_again(
    env: Env,
) -> None:
    o = env.open()
    env.journal.begin(deliver_key(o), "deliver", "deliver it", "u1")  # died before writing
    assert [s.status for s in reconcile_deliveries(env.ledger, env.journal, env.layout)] == [
        "absent"
    ]
    [item] = deliver_pending(env.ledger, env.journal, env.layout, env.clock)
    assert not item.reconciled
    assert len(env.outbox_lines()) == 1
    statuses = [json.loads(line)["status"] for line in env.layout.effects.read_text().splitlines()]
    assert statuses == ["intended", "absent", "intended", "committed"]


def test_the_cursor_counts_bytes_and_only_complete_lines_are_forwarded(env: Env) -> None:
    env.open("héllo — ✓ wörld")
    channel = FakeChannel()
    assert env.tick(channel) == [1, 0, 1, 0]
    size = env.layout.outbox.stat().st_size
    assert env.layout.outbox_cursor.read_text() == f"{size}\n"
    assert size > len(env.layout.outbox.read_text()), "non-ASCII: bytes, not characters"
    with env.layout.outbox.open("ab") as out:
        out.write(b"n1 2026 - half a line")
    assert forward_outbox(env.layout, ["mail"], run=channel).forwarded == 0
    with env.layout.outbox.open("ab") as out:
        out.write(b", now whole\n")
    assert forward_outbox(env.layout, ["mail"], run=channel).forwarded == 1
    assert channel.sent[-1] == "mail n1 2026 - half a line, now whole"


def test_forwarding_stops_at_the_first_failure_and_nothing_before_it_is_sent_twice(
    env: Env,
) -> None:
    for n in range(3):
        env.open(f"finding {n}")
    channel = FakeChannel(fail_on={2})
    assert env.tick(channel) == [3, 0, 1, 1]
    first_end = len(env.layout.outbox.read_bytes().split(b"\n")[0]) + 1
    assert env.layout.outbox_cursor.read_text() == f"{first_end}\n"
    assert env.tick(channel) == [0, 0, 2, 0]
    sent = [line.split(" ", 1)[1] for line in channel.sent]
    assert sent == env.outbox_lines(), "each line once, in order"


def test_without_a_command_every_line_counts_as_forwarded(env: Env) -> None:
    env.open("one")
    env.open("two")
    assert env.tick() == [2, 0, 2, 0]
    size = env.layout.outbox.stat().st_size
    assert env.layout.outbox_cursor.read_text() == f"{size}\n"


def test_an_outbox_shorter_than_the_cursor_is_forwarded_from_the_start_and_said_so(
    env: Env,
) -> None:
    env.layout.outbox.write_text("a 1 - first\n")
    env.layout.outbox_cursor.write_text("999\n")
    channel = FakeChannel()
    result = forward_outbox(env.layout, ["mail"], run=channel)
    assert result.forwarded == 1 and channel.sent == ["mail a 1 - first"]
    assert any("shorter than the cursor" in note for note in result.notes)
    assert env.layout.outbox_cursor.read_text() == "12\n"


_DELIVER_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from regulator.host.delivery import deliver_pending
    from regulator.rules.effect_journal import EffectJournal
    from regulator.rules.ledger import Ledger
    from regulator.store import Layout
    root, me = Path(sys.argv[1]), sys.argv[2]
    (root / f"ready-{me}").touch()
    deadline = time.monotonic() + 30
    while not (root / "go").exists():  # start together, or the race is never run
        assert time.monotonic() < deadline
        time.sleep(0.001)
    layout = Layout(root, env={})
    for _ in range(3):
        deliver_pending(Ledger(layout), EffectJournal(layout), layout)
    """
)


def test_processes_delivering_at_once_deliver_each_obligation_once(env: Env) -> None:
    opened = [env.open(f"finding {n}").id for n in range(20)]
    procs = [
        subprocess.Popen([sys.executable, "-c", _DELIVER_SCRIPT, str(env.root), str(n)])
        for n in range(4)
    ]
    deadline = time.monotonic() + 30
    while len(list(env.root.glob("ready-*"))) < 4:
        assert time.monotonic() < deadline, "the delivering processes did not start"
        time.sleep(0.01)
    (env.root / "go").touch()
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0, 0]
    assert len(env.outbox_lines()) == 20
    assert [env.deliveries(oid) for oid in opened] == [1] * 20


def test_regulator_outbox_moves_the_outbox_but_never_the_cursor(tmp_path: Path) -> None:
    (tmp_path / ".regulator").mkdir()
    elsewhere = tmp_path / "mail" / "box"
    layout = Layout(tmp_path, env={"REGULATOR_OUTBOX": str(elsewhere)})
    ledger = Ledger(layout)
    o = ledger.open_obligation(
        subject="s",
        concern="audit-finding",
        sources=["m"],
        severity="blocking",
        consumer="human",
        blocks=True,
    )
    report = watch_tick(ledger, EffectJournal(layout), layout, POLICY)
    assert (report.delivered, report.forwarded) == (1, 1)
    assert elsewhere.read_text().startswith(f"deliver:{o.id}:0 ")
    assert not (tmp_path / ".regulator" / "outbox").exists()
    assert (
        tmp_path / ".regulator" / "outbox.cursor"
    ).read_text() == f"{elsewhere.stat().st_size}\n"
    assert ledger.refresh().obligations[o.id].deliveries[0].target == "box"
