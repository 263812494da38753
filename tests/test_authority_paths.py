"""Authority on every write path, and no laundering: what a person may not do directly, no
sequence of allowed acts (escalate then resolve, supersede, escalate again) lets them do.

Run through the CLI as separate processes (a refusal leaves every file under ``.regulator/``
byte for byte as it was), through the core, and through the room's dialogs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from regulator.policy import load_definition
from regulator.protocol.vocab import TERMINAL_STATUSES
from regulator.rules import dispositions
from regulator.rules.asking import ask
from regulator.rules.authority import owed_to_s5, process_os_user
from regulator.rules.ledger import Actor, Ledger, LedgerError
from regulator.store import Layout

from .conftest import cli

POLICY = load_definition(None).interaction
ACTOR = Actor(via="cli", os_user=process_os_user())


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under .regulator/, byte for byte."""
    return {str(p): p.read_bytes() for p in (root / ".regulator").rglob("*") if p.is_file()}


def open_one(
    root: Path,
    *,
    consumer: str = "human",
    severity: str = "blocking",
    concern: str = "audit-finding",
) -> str:
    return (
        Ledger(Layout(root))
        .open_obligation(
            subject=f"owed to {consumer}",
            unit="u1",
            concern=concern,
            sources=["m1"],
            severity=severity,
            consumer=consumer,
            blocks=True,
        )
        .id
    )


def open_s5(root: Path) -> str:
    return open_one(root, consumer="S5", severity="info", concern="policy-proposal")


def status(root: Path, oid: str) -> dict[str, Any]:
    listed = json.loads(cli("obligations", "--all", "--json", cwd=root).stdout)
    return next(o for o in listed if o["id"] == oid)


def refused(root: Path, *args: str) -> str:
    """Run a command that must be refused: exit 1, one line, nothing written."""
    before = snapshot(root)
    result = cli(*args, cwd=root)
    assert result.returncode == 1, result.stdout + result.stderr
    assert snapshot(root) == before
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def launder_by_hand(root: Path, s5_id: str, by: str = "bob", consumer: str = "human") -> str:
    """What an older version let through: an S5 obligation moved away from S5 by ``by``.

    Written as lines (the ledger itself now refuses it), as the original or an old log holds.
    """
    successor = open_one(root, consumer=consumer, severity="info", concern="policy-proposal")
    line = {
        "type": "obligation-escalated",
        "id": f"ev-{s5_id[:8]}",
        "at": "2026-12-01T10:00:00.000Z",
        "by": by,
        "obligationId": s5_id,
        "successor": successor,
        "rationale": "not mine to hold",
    }
    with (root / ".regulator" / "signals.ndjson").open("a") as f:
        f.write(json.dumps(line) + "\n")
    return successor


# --- escalating away from S5 ------------------------------------------------------------------


def test_a_person_without_act_as_s5_cannot_escalate_an_s5_obligation_down_to_a_human(
    instance: Path,
) -> None:
    oid = open_s5(instance)
    line = refused(
        instance, "obligation", "escalate", oid, "--by", "bob", "--to", "human", "--rationale", "r"
    )
    assert line == (
        f"regulator: bob may not act as S5 (interaction v1): obligation {oid[:8]} is S5's to "
        "decide, and escalating it to human would hand that decision over"
    )
    assert status(instance, oid)["status"] == "open"


@pytest.mark.parametrize("to", ["S3", "S4", "S1", "S2", "S3*", "human"])
def test_escalating_away_from_s5_to_any_other_consumer_needs_act_as_s5(
    instance: Path, to: str
) -> None:
    oid = open_s5(instance)
    with pytest.raises(dispositions.Refusal, match="bob may not act as S5"):
        dispositions.escalate(
            Ledger(Layout(instance)), POLICY, oid, "bob", ACTOR, to=to, rationale="r"
        )
    assert Ledger(Layout(instance)).refresh().obligations[oid].status == "open"


def test_bobs_escalation_within_s5_leaves_the_successor_s5s_to_decide(instance: Path) -> None:
    oid = open_s5(instance)
    out = cli(
        "obligation", "escalate", oid, "--by", "bob", "--to", "S5", "--rationale", "r", cwd=instance
    )
    assert out.returncode == 0, out.stderr
    successor = status(instance, oid)["successor"]
    line = refused(
        instance,
        "obligation",
        "resolve",
        successor,
        "--by",
        "bob",
        "--disposition",
        "accepted",
        "--rationale",
        "r",
    )
    assert line == "regulator: bob may not act as S5 (interaction v1)"


def test_what_a_person_who_may_act_as_s5_hands_to_a_human_a_human_may_decide(
    instance: Path,
) -> None:
    oid = open_s5(instance)
    out = cli(
        "obligation",
        "escalate",
        oid,
        "--by",
        "alice",
        "--to",
        "human",
        "--rationale",
        "yours",
        cwd=instance,
    )
    assert out.returncode == 0, out.stderr
    successor = status(instance, oid)["successor"]
    resolved = cli(
        "obligation", "resolve", successor, "--by", "bob", "--disposition", "accepted",
        "--rationale", "ok", cwd=instance,
    )  # fmt: skip
    assert resolved.returncode == 0, resolved.stderr
    assert status(instance, successor)["status"] == "resolved"


# --- resolving what is owed to S5 -------------------------------------------------------------


def test_a_person_without_act_as_s5_cannot_resolve_what_is_owed_to_s5(instance: Path) -> None:
    oid = open_s5(instance)
    line = refused(
        instance,
        "obligation",
        "resolve",
        oid,
        "--by",
        "bob",
        "--disposition",
        "accepted",
        "--rationale",
        "r",
    )
    assert line == "regulator: bob may not act as S5 (interaction v1)"


def test_a_successor_laundered_away_from_s5_by_a_non_s5_person_stays_s5s_to_decide(
    instance: Path,
) -> None:
    oid = open_s5(instance)
    successor = launder_by_hand(instance, oid)
    assert status(instance, successor)["consumer"] == "human"
    for args in (
        ["obligation", "resolve", successor, "--by", "bob", "--disposition", "accepted"],
        ["obligation", "escalate", successor, "--by", "bob", "--to", "S3"],
    ):
        assert refused(instance, *args, "--rationale", "r").startswith(
            "regulator: bob may not act as S5 (interaction v1)"
        )
    # Handing it back to S5 is allowed, and alice decides it.
    ok = cli(
        "obligation", "resolve", successor, "--by", "alice", "--disposition", "accepted",
        "--rationale", "S5 agrees", cwd=instance,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr


def test_a_chain_of_moves_does_not_launder_what_s5_decides(instance: Path) -> None:
    """S5 → human (by bob, an old log) → S3 → human: the last one is still S5's."""
    oid = open_s5(instance)
    first = launder_by_hand(instance, oid)
    second = launder_by_hand(instance, first, by="S3", consumer="S3")
    third = launder_by_hand(instance, second, by="bob")
    log = Ledger(Layout(instance)).refresh()
    assert owed_to_s5(log.obligations, log.obligations[third], POLICY)
    with pytest.raises(dispositions.Refusal, match="bob may not act as S5"):
        dispositions.resolve(
            Ledger(Layout(instance)), POLICY, third, "bob", ACTOR,
            disposition="fixed", rationale="r",
        )  # fmt: skip


def test_a_move_made_by_a_person_who_may_act_as_s5_ends_the_chain(instance: Path) -> None:
    oid = open_s5(instance)
    successor = launder_by_hand(instance, oid, by="alice")
    log = Ledger(Layout(instance)).refresh()
    assert not owed_to_s5(log.obligations, log.obligations[successor], POLICY)


def supersede_by_hand(root: Path, predecessor: str, successor: str, by: str = "bob") -> None:
    """An old log's line: ``predecessor`` superseded by ``successor``, by ``by``."""
    with (root / ".regulator" / "signals.ndjson").open("a") as f:
        line = {
            "type": "obligation-superseded",
            "id": f"ev-sup-{predecessor[:8]}",
            "at": "2026-12-01T10:00:00.000Z",
            "by": by,
            "obligationId": predecessor,
            "successor": successor,
            "rationale": "folded into the question",
        }
        f.write(json.dumps(line) + "\n")


def ask_owed_to_s5(root: Path) -> str:
    """A question that took over from an S5 obligation, superseded by bob in an old log."""
    asked = ask(
        Ledger(Layout(root)), POLICY, kind="clarification", subject="identity",
        question="rename it?", unit="u2", attempt=1,
    )  # fmt: skip
    supersede_by_hand(root, open_s5(root), asked.obligation.id)
    return asked.obligation.id


def test_an_answer_to_a_question_that_took_over_from_s5_needs_act_as_s5(instance: Path) -> None:
    oid = ask_owed_to_s5(instance)
    line = refused(instance, "answer", oid[:8], "--by", "bob", "--answer", "the red one")
    assert line == "regulator: bob may not act as S5 (interaction v1)"
    ok = cli("answer", oid[:8], "--by", "alice", "--answer", "the red one", cwd=instance)
    assert ok.returncode == 0, ok.stderr


# --- the ledger itself: no path around the dispositions ---------------------------------------


def test_the_ledger_refuses_to_supersede_an_s5_obligation_with_one_owed_to_someone_else(
    instance: Path,
) -> None:
    oid = open_s5(instance)
    other = open_one(instance, severity="info")
    before = snapshot(instance)
    with pytest.raises(LedgerError, match="owed to S5; only a person who may act as S5"):
        Ledger(Layout(instance)).supersede(oid, "bob", other, "r")
    with pytest.raises(LedgerError, match="owed to S5; only a person who may act as S5"):
        Ledger(Layout(instance)).escalate(oid, "bob", "r", successor=other)
    with pytest.raises(LedgerError, match="owed to S5; only a person who may act as S5"):
        Ledger(Layout(instance)).escalate(oid, "bob", "r", to="human")
    assert snapshot(instance) == before


def test_the_ledger_lets_an_s5_obligation_be_superseded_by_another_owed_to_s5(
    instance: Path,
) -> None:
    oid = open_s5(instance)
    other = open_s5(instance)
    Ledger(Layout(instance)).supersede(oid, "S3", other, "a newer proposal")
    assert Ledger(Layout(instance)).refresh().obligations[oid].status == "superseded"


# --- terminal records do not reopen -----------------------------------------------------------


def _closed_three_ways(root: Path) -> dict[str, str]:
    ledger = Ledger(Layout(root))
    resolved = open_one(root)
    ledger.resolve(resolved, "alice", "fixed", "done")
    escalated = open_one(root)
    ledger.escalate(escalated, "alice", "up", to="S3")
    superseded = open_one(root)
    ledger.supersede(superseded, "alice", open_one(root), "newer")
    return {"resolved": resolved, "escalated": escalated, "superseded": superseded}


@pytest.mark.parametrize("how", ["resolved", "escalated", "superseded"])
@pytest.mark.parametrize(
    "act",
    [
        ["obligation", "ack", "{id}", "--by", "alice"],
        ["obligation", "resolve", "{id}", "--by", "alice", "--disposition", "fixed"],
        ["obligation", "escalate", "{id}", "--by", "alice", "--to", "S3"],
    ],
    ids=["ack", "resolve", "escalate"],
)
def test_an_escalated_superseded_or_resolved_obligation_cannot_be_acted_on_again(
    instance: Path, how: str, act: list[str]
) -> None:
    assert how in TERMINAL_STATUSES
    oid = _closed_three_ways(instance)[how]
    args = [a.replace("{id}", oid) for a in act]
    if args[1] != "ack":
        args += ["--rationale", "again"]
    line = refused(instance, *args)
    assert line == (
        f"regulator: obligation {oid} is {how}; terminal records do not reopen — open a successor"
    )


# --- the fold: an ack after a terminal event reopens nothing ----------------------------------


def test_an_ack_line_after_a_resolution_does_not_reopen_the_obligation_in_the_fold(
    instance: Path,
) -> None:
    closed = _closed_three_ways(instance)
    with (instance / ".regulator" / "signals.ndjson").open("a") as f:
        for n, oid in enumerate(closed.values()):
            f.write(
                json.dumps(
                    {
                        "type": "obligation-acknowledged",
                        "id": f"late-ack-{n}",
                        "at": "2026-12-01T11:00:00.000Z",
                        "by": "bob",
                        "obligationId": oid,
                    }
                )
                + "\n"
            )
    log = Ledger(Layout(instance)).refresh()
    for how, oid in closed.items():
        state = log.obligations[oid]
        assert state.status == how
        assert state.acknowledged_by == ["bob"]
    assert not {o.id for o in log.open_obligations()} & set(closed.values())
    listed = json.loads(cli("obligations", "--json", cwd=instance).stdout)
    assert not {o["id"] for o in listed} & set(closed.values())


# --- every write path refuses the same five things --------------------------------------------

SHIPPED_INTERACTION = (Path(__file__).parent.parent / "policies" / "interaction.yaml").read_text()
BOB = "{ name: bob, resolveUpTo: blocking, acceptRisk: false, actAsS5: false }"


def interaction_policy(*, bob: str = BOB, erin_os_user: str = "nobody") -> str:
    """The shipped interaction policy, with bob as given and erin who may do anything, but
    only as ``erin_os_user``."""
    assert BOB in SHIPPED_INTERACTION
    erin = (
        "{ name: erin, resolveUpTo: critical, acceptRisk: true, actAsS5: true, "
        f"osUsers: [{erin_os_user}] }}"
    )
    return SHIPPED_INTERACTION.replace(BOB, f"{bob}\n  - {erin}")


def with_erin(root: Path) -> None:
    """erin may do anything, but only as an OS user this test does not run as."""
    policies = root / "regulator" / "policies"
    policies.mkdir(parents=True, exist_ok=True)
    (policies / "interaction.yaml").write_text(
        interaction_policy(erin_os_user="x" + process_os_user())
    )


CASES: list[tuple[str, str, str, str]] = [
    # (name, who, obligation kind, the refusal's start)
    ("a name not listed", "carol", "blocking", '"carol" is not a person'),
    ("a severity above resolveUpTo", "bob", "critical", "bob may disposition up to blocking"),
    ("S5 without actAsS5", "bob", "s5", "bob may not act as S5"),
    ("an OS user not in osUsers", "erin", "blocking", "erin may be named only by the OS user"),
]


def _obligation(root: Path, kind: str) -> str:
    if kind == "s5":
        return open_s5(root)
    return open_one(root, severity=kind)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("command", ["resolve", "escalate", "answer", "ack"])
def test_each_refusal_holds_on_every_cli_write_path(
    instance: Path, case: tuple[str, str, str, str], command: str
) -> None:
    name, who, kind, refusal = case
    with_erin(instance)
    if command == "ack" and kind != "blocking":
        pytest.skip("acknowledging is open to every listed person at any severity")
    if command == "answer":
        if kind == "critical":
            pytest.skip("a unit's question is asked at blocking at most")
        if kind == "s5":
            oid = ask_owed_to_s5(instance)
        else:
            oid = ask(
                Ledger(Layout(instance)), POLICY, kind="clarification", subject="q",
                question="which?", unit="u1", attempt=1,
            ).obligation.id  # fmt: skip
        args = ["answer", oid[:8], "--by", who, "--answer", "the first"]
    else:
        oid = _obligation(instance, kind)
        args = ["obligation", command, oid, "--by", who]
        if command == "resolve":
            args += ["--disposition", "fixed", "--rationale", "r"]
        elif command == "escalate":
            args += ["--to", "human" if kind == "s5" else "S3", "--rationale", "r"]
    assert refused(instance, *args).startswith(f"regulator: {refusal}"), name


def test_accepted_risk_without_accept_risk_is_refused_on_the_cli(instance: Path) -> None:
    oid = open_one(instance)
    line = refused(
        instance, "obligation", "resolve", oid, "--by", "bob", "--disposition", "accepted-risk",
        "--rationale", "r",
    )  # fmt: skip
    assert line == "regulator: bob may not accept risk (interaction v1)"


@pytest.mark.parametrize("act", ["accept", "reject"])
def test_identity_decisions_refuse_a_person_without_act_as_s5(instance: Path, act: str) -> None:
    oid = open_s5(instance)
    args = ["identity", act, oid, "--by", "bob", "--rationale", "r"]
    if act == "accept":
        source = instance.parent / "new.md"
        source.write_text("# Invariants\n")
        args += ["--file", "INVARIANTS.md", "--from", str(source)]
    assert refused(instance, *args) == "regulator: bob may not act as S5 (interaction v1)"


def test_a_second_definition_is_recorded_beside_the_act_it_allowed(
    instance: Path, tmp_path: Path
) -> None:
    """A definition brought with --definition (same people, other policies): the act names it."""
    mine = tmp_path / "mine"
    (mine / "policies").mkdir(parents=True)
    (mine / "policies" / "interaction.yaml").write_text(SHIPPED_INTERACTION)
    oid = open_one(instance, severity="advisory")
    done = cli(
        "obligation", "resolve", oid, "--by", "alice", "--disposition", "accepted",
        "--rationale", "r", "--definition", str(mine), cwd=instance,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = (instance / ".regulator" / "provenance.ndjson").read_text().splitlines()
    assert json.loads(lines[-1])["definition"] == str(mine.resolve())


# --- the room ---------------------------------------------------------------------------------


@pytest.mark.room
@pytest.mark.asyncio
async def test_the_room_refuses_bob_escalating_an_s5_obligation_down_and_writes_nothing(
    instance: Path,
) -> None:
    from tui.app import RoomApp
    from tui.dialogs.obligation import EscalateDialog

    oid = open_s5(instance)
    before = snapshot(instance)
    app = RoomApp([instance], person="bob", watch=False, presence=False)
    async with app.run_test(size=(160, 48)) as pilot:
        dialog = EscalateDialog(app.models[0], _state(instance, oid), "bob", app.actor)
        await app.push_screen(dialog)
        await pilot.pause()
        await pilot.click("#rationale")
        await pilot.press(*"not mine", "enter")
        await pilot.pause()
        refusal = str(dialog.query_one("#refusal").render())
        assert "bob may not act as S5" in refusal
        assert isinstance(app.screen, EscalateDialog)
    assert snapshot(instance) == before


def _state(root: Path, oid: str) -> Any:
    return Ledger(Layout(root)).refresh().obligations[oid]


def test_an_ack_line_after_a_resolution_reopens_nothing_in_the_fold(instance: Path) -> None:
    from regulator.rules import regulatory_log as rl

    closed = _closed_three_ways(instance)
    with (instance / ".regulator" / "signals.ndjson").open("a") as f:
        for n, oid in enumerate(closed.values()):
            ack = {
                "type": "obligation-acknowledged",
                "id": f"late-ack-{n}",
                "at": "2026-12-01T11:00:00.000Z",
                "by": "bob",
                "obligationId": oid,
            }
            f.write(json.dumps(ack) + "\n")
    log = rl.RegulatoryLog(Layout(instance))
    log.refresh()
    for how, oid in closed.items():
        assert log.obligations[oid].status == how
        assert log.obligations[oid].acknowledged_by == ["bob"]


# --- a second definition --------------------------------------------------------------------


def bobs_own_definition(root: Path) -> Path:
    """A definition directory of bob's making, in which bob may act as S5."""
    mine = root.parent / "bobs-definition"
    (mine / "policies").mkdir(parents=True)
    (mine / "policies" / "interaction.yaml").write_text(
        SHIPPED_INTERACTION.replace(BOB, BOB.replace("actAsS5: false", "actAsS5: true"))
    )
    return mine


def test_a_second_definition_cannot_grant_a_person_what_the_instance_does_not(
    instance: Path,
) -> None:
    oid = open_s5(instance)
    mine = str(bobs_own_definition(instance))
    for args in (
        (
            "obligation",
            "resolve",
            oid[:8],
            "--by",
            "bob",
            "--disposition",
            "accepted",
            "--rationale",
            "mine now",
        ),
        ("obligation", "escalate", oid[:8], "--by", "bob", "--to", "human", "--rationale", "x"),
        ("identity", "reject", oid[:8], "--by", "bob", "--rationale", "no"),
    ):
        line = refused(instance, *args, "--definition", mine)
        assert "lists other people than the instance's own" in line
    assert status(instance, oid)["status"] == "open"


def test_a_second_definition_with_the_same_people_may_change_other_policies(
    instance: Path,
) -> None:
    oid = open_one(instance, severity="advisory")
    other = instance.parent / "other-definition"
    (other / "policies").mkdir(parents=True)
    (other / "policies" / "interaction.yaml").write_text(SHIPPED_INTERACTION)
    done = cli(
        "obligation", "ack", oid[:8], "--by", "alice", "--definition", str(other), cwd=instance
    )
    assert done.returncode == 0, done.stderr


def test_the_room_refuses_a_definition_that_brings_other_people(instance: Path) -> None:
    mine = str(bobs_own_definition(instance))
    done = cli("room", str(instance), "--as", "bob", "--definition", mine, cwd=instance)
    assert done.returncode == 1
    assert "lists other people than the instance's own" in done.stderr
