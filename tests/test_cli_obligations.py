"""Triage from the shell: ``obligations``, ``obligation …``, ``answer`` — as separate processes."""

from __future__ import annotations

import getpass
import json
import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from regulator.policy import load_definition
from regulator.rules.asking import ask
from regulator.rules.dispositions import Refusal, resolve
from regulator.rules.ledger import Actor, Ledger, LedgerError
from regulator.store import Layout

from .conftest import cli
from .factory import append, message

POLICY = load_definition(None).interaction


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under .regulator/, byte for byte."""
    return {str(p): p.read_bytes() for p in (root / ".regulator").rglob("*") if p.is_file()}


def open_one(root: Path, severity: str = "blocking", unit: str | None = "u1") -> str:
    ledger = Ledger(Layout(root))
    o = ledger.open_obligation(
        subject="a finding",
        unit=unit,
        concern="audit-finding",
        sources=["m1"],
        severity=severity,
        consumer="human",
        blocks=True,
    )
    return o.id


def ask_one(root: Path, kind: str, **fields: Any) -> str:
    asked = ask(
        Ledger(Layout(root)),
        POLICY,
        kind=kind,
        subject=f"a {kind}",
        question=f"the {kind} question?",
        unit="u1",
        attempt=1,
        **fields,
    )
    return asked.obligation.id


def state(root: Path, oid: str) -> dict[str, Any]:
    listed = json.loads(cli("obligations", "--all", "--json", cwd=root).stdout)
    return next(o for o in listed if o["id"] == oid)


# --- answers ------------------------------------------------------------------------------


def test_a_consent_answered_yes_but_only_on_staging_is_refused_not_taken_as_yes(
    instance: Path,
) -> None:
    # Neither a yes-word nor a no-word: refused, nothing written (a reason goes in --note).
    oid = ask_one(instance, "consent", action="push to production")
    before = snapshot(instance)
    result = cli(
        "answer", oid[:8], "--by", "alice", "--answer", "yes but only on staging", cwd=instance
    )
    assert result.returncode == 1 and "is neither" in result.stderr
    assert snapshot(instance) == before
    result = cli(
        "answer",
        oid[:8],
        "--by",
        "alice",
        "--answer",
        "no",
        "--note",
        "only on staging",
        cwd=instance,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("consent answered by alice (rejected): no — only on staging")
    assert "the next attempt carries the answer" in result.stdout
    assert state(instance, oid)["disposition"] == "rejected"


def test_a_consent_answered_approve_is_accepted(instance: Path) -> None:
    oid = ask_one(instance, "consent", action="delete the branch")
    assert cli("answer", oid, "--by", "alice", "--answer", "approve", cwd=instance).returncode == 0
    assert state(instance, oid)["disposition"] == "accepted"


def test_a_uat_answered_yes_is_verified(instance: Path) -> None:
    oid = ask_one(instance, "uat")
    assert cli("answer", oid, "--by", "bob", "--answer", "Yes", cwd=instance).returncode == 0
    assert state(instance, oid)["disposition"] == "verified"


def test_a_choice_answered_with_an_option_not_offered_is_refused_and_nothing_is_written(
    instance: Path,
) -> None:
    oid = ask_one(instance, "choice", options=["rebase", "merge"])
    before = snapshot(instance)
    result = cli("answer", oid, "--by", "alice", "--answer", "squash", cwd=instance)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        'regulator: the question offers rebase | merge; "squash" is not one of them'
    )
    assert snapshot(instance) == before
    ok = cli("answer", oid, "--by", "alice", "--answer", "merge", cwd=instance)
    assert ok.returncode == 0 and "(fixed)" in ok.stdout


def test_answer_is_only_for_an_open_question_a_unit_asked(instance: Path) -> None:
    finding = open_one(instance)
    result = cli("answer", finding, "--by", "alice", "--answer", "ok", cwd=instance)
    assert result.returncode == 1
    assert (
        "is audit-finding, not a question a unit asked; use `obligation resolve`" in result.stderr
    )
    question = ask_one(instance, "clarification")
    assert cli("answer", question, "--by", "alice", "--answer", "42", cwd=instance).returncode == 0
    again = cli("answer", question, "--by", "alice", "--answer", "43", cwd=instance)
    assert again.returncode == 1 and f"obligation {question[:8]} is resolved" in again.stderr


def test_an_empty_answer_is_no_answer(instance: Path) -> None:
    oid = ask_one(instance, "consent", action="pay")
    before = snapshot(instance)
    result = cli("answer", oid, "--by", "alice", "--answer", "  ", cwd=instance)
    assert result.returncode == 1 and snapshot(instance) == before


# --- who may disposition -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "severity", "refusal"),
    [
        (
            ["--by", "bob", "--disposition", "fixed"],
            "critical",
            "regulator: bob may disposition up to blocking; this is critical",
        ),
        (
            ["--by", "bob", "--disposition", "accepted-risk"],
            "blocking",
            "regulator: bob may not accept risk (interaction v1)",
        ),
        (
            ["--by", "carol", "--disposition", "fixed"],
            "info",
            'regulator: "carol" is not a person the interaction policy (interaction v1) names; '
            "a name not listed may disposition nothing",
        ),
    ],
    ids=["bob-resolving-critical", "bob-accepting-risk", "carol-not-listed"],
)
def test_a_refused_disposition_writes_nothing(
    instance: Path, args: list[str], severity: str, refusal: str
) -> None:
    oid = open_one(instance, severity=severity)
    before = snapshot(instance)
    result = cli("obligation", "resolve", oid, *args, "--rationale", "r", cwd=instance)
    assert result.returncode == 1
    assert result.stderr.strip() == refusal
    assert snapshot(instance) == before


def test_a_person_whose_os_users_exclude_this_user_cannot_be_named(instance: Path) -> None:
    policies = instance / "regulator" / "policies"
    policies.mkdir(parents=True, exist_ok=True)
    (policies / "interaction.yaml").write_text(
        (Path(__file__).parent.parent / "policies" / "interaction.yaml")
        .read_text()
        .replace(
            "{ name: alice, resolveUpTo: critical, acceptRisk: true, actAsS5: true }",
            "{ name: alice, resolveUpTo: critical, acceptRisk: true, actAsS5: true, "
            "osUsers: [someone-else] }",
        )
    )
    oid = open_one(instance)
    before = snapshot(instance)
    for args in (
        [
            "obligation",
            "resolve",
            oid,
            "--by",
            "alice",
            "--disposition",
            "fixed",
            "--rationale",
            "r",
        ],
        ["obligation", "ack", oid, "--by", "alice"],
    ):
        result = cli(*args, cwd=instance)
        assert result.returncode == 1
        assert result.stderr.strip() == (
            "regulator: alice may be named only by the OS user(s) someone-else "
            f'(interaction v1); this is OS user "{getpass.getuser()}"'
        )
        assert snapshot(instance) == before
    # bob has no osUsers: naming him is asserted, as in the original.
    assert cli("obligation", "ack", oid, "--by", "bob", cwd=instance).returncode == 0


def test_a_persons_write_records_who_typed_it(instance: Path) -> None:
    oid = open_one(instance)
    cli("obligation", "ack", oid, "--by", "bob", cwd=instance)
    lines = (instance / ".regulator" / "provenance.ndjson").read_text().splitlines()
    record = json.loads(lines[-1])
    assert record["via"] == "cli" and record["osUser"] == getpass.getuser()
    signals = (instance / ".regulator" / "signals.ndjson").read_text().splitlines()
    assert json.loads(signals[-1])["id"] == record["eventId"]


# --- the commands' lines ------------------------------------------------------------------


def test_ack_resolve_escalate_print_the_originals_lines(instance: Path) -> None:
    a = open_one(instance)
    out = cli("obligation", "ack", a[:8], "--by", "bob", "--note", "seen", cwd=instance).stdout
    assert out.strip() == f"obligation {a[:8]} acknowledged by bob: received, not resolved"
    out = cli(
        "obligation",
        "escalate",
        a,
        "--by",
        "bob",
        "--to",
        "S5",
        "--rationale",
        "identity",
        cwd=instance,
    ).stdout
    assert out.startswith(f"obligation {a[:8]} escalated by bob to S5: successor ")
    successor = out.split("successor ")[1].split()[0]
    out = cli(
        "obligation",
        "resolve",
        successor,
        "--by",
        "alice",
        "--disposition",
        "no-action",
        "--rationale",
        "fine",
        cwd=instance,
    ).stdout
    assert out.strip() == (
        f"obligation {successor} resolved by alice as no-action; "
        "unit u1 may proceed if nothing else is owed on it"
    )


def test_a_bad_disposition_or_consumer_is_bad_usage(instance: Path) -> None:
    oid = open_one(instance)
    bad = cli(
        "obligation",
        "resolve",
        oid,
        "--by",
        "alice",
        "--disposition",
        "done",
        "--rationale",
        "r",
        cwd=instance,
    )
    assert bad.returncode == 2 and "--disposition: 'done' is not one of no-action" in bad.stderr
    bad = cli(
        "obligation",
        "escalate",
        oid,
        "--by",
        "alice",
        "--to",
        "S9",
        "--rationale",
        "r",
        cwd=instance,
    )
    assert bad.returncode == 2 and "--to: 'S9' is not one of" in bad.stderr
    missing = cli(
        "obligation", "resolve", oid, "--disposition", "fixed", "--rationale", "r", cwd=instance
    )
    assert missing.returncode == 2 and "--by" in missing.stderr


def test_obligations_lists_what_is_open_and_show_replays_one(instance: Path) -> None:
    oid = open_one(instance)
    closed = open_one(instance, unit="u2")
    cli(
        "obligation",
        "resolve",
        closed,
        "--by",
        "alice",
        "--disposition",
        "fixed",
        "--rationale",
        "r",
        cwd=instance,
    )
    out = cli("obligations", cwd=instance).stdout.splitlines()
    assert out[0].startswith(
        f"open         human blocking veto {oid[:8]}  audit-finding  a finding  (unit u1)  "
        "not delivered"
    )
    assert out[-1] == "1 shown of 2; 0 unrouted message(s)"
    assert len(cli("obligations", "--all", cwd=instance).stdout.splitlines()) == 4
    assert cli("obligations", "--unit", "u2", cwd=instance).stdout.splitlines()[0] == (
        "nothing open; --all shows what was dispositioned"
    )
    shown = cli("obligation", "show", closed[:6], cwd=instance).stdout
    assert f"id {closed}; opened " in shown and "resolved by alice — r" in shown


# --- the original's files ------------------------------------------------------------------


def test_obligations_json_on_a_log_written_by_the_original_lists_what_it_would(
    instance: Path,
) -> None:
    # Lines composed as docs/design.md#obligations-and-the-fold describes: two messages, two
    # openings, an ack, a resolve, a note and a delivery, as the original's JSON.stringify writes
    # them.
    m1 = message("audit-finding", "closeout refused", id="msg-1", unit="u1")
    m2 = message("constraint", "never push", id="msg-2")
    opened: list[dict[str, Any]] = [
        {
            "type": "obligation-opened",
            "id": f"ev-{n}",
            "at": f"2026-12-01T10:0{n}:00.000Z",
            "by": "S3",
            "obligation": {
                "id": f"0b1-{n}",
                "subject": "closeout refused",
                "unit": "u1",
                "concern": "audit-finding",
                "sources": ["msg-1"],
                "severity": "blocking",
                "consumer": "S3",
                "blocks": True,
                "openedAt": f"2026-12-01T10:0{n}:00.000Z",
                "openedBy": "S3",
            },
        }
        for n in (1, 2)
    ]
    events: list[dict[str, Any]] = [
        {
            "type": "obligation-acknowledged",
            "id": "ev-3",
            "at": "2026-12-01T10:03:00.000Z",
            "by": "alice",
            "obligationId": "0b1-1",
        },
        {
            "type": "obligation-resolved",
            "id": "ev-4",
            "at": "2026-12-01T10:04:00.000Z",
            "by": "alice",
            "obligationId": "0b1-2",
            "disposition": "no-action",
            "rationale": "fine",
        },
        {
            "type": "message-noted",
            "id": "ev-5",
            "at": "2026-12-01T10:05:00.000Z",
            "by": "S3",
            "message": "msg-2",
            "reason": "routing v1 has no rule for constraint",
        },
        {
            "type": "obligation-delivered",
            "id": "ev-6",
            "at": "2026-12-01T10:06:00.000Z",
            "by": "S3",
            "obligationId": "0b1-1",
            "channel": "outbox",
            "reminder": False,
            "target": "outbox",
        },
    ]
    append(instance / ".regulator" / "signals.ndjson", m1, m2, *opened, *events)
    result = cli("obligations", "--json", cwd=instance)
    assert result.returncode == 0, result.stderr
    listed = json.loads(result.stdout)
    assert [o["id"] for o in listed] == ["0b1-1"]  # open + acknowledged only, in opening order
    o = listed[0]
    assert o["status"] == "acknowledged" and o["acknowledgedBy"] == ["alice"]
    assert o["deliveries"] == [
        {
            "at": "2026-12-01T10:06:00.000Z",
            "channel": "outbox",
            "reminder": False,
            "target": "outbox",
        }
    ]
    assert [h["type"] for h in o["history"]] == [
        "obligation-opened",
        "obligation-acknowledged",
        "obligation-delivered",
    ]
    assert o["history"][0] == opened[0]  # the raw event, same keys and values
    every = json.loads(cli("obligations", "--all", "--json", cwd=instance).stdout)
    assert every[1]["status"] == "resolved" and every[1]["disposition"] == "no-action"
    assert every[1]["closedBy"] == "alice" and every[1]["closedAt"] == "2026-12-01T10:04:00.000Z"
    text = cli("obligations", cwd=instance).stdout
    assert text.splitlines()[-1] == "1 shown of 2; 0 unrouted message(s)"


# --- two people at once ------------------------------------------------------------------


def _race(root: str, oid: str, who: str, barrier: Any, results: Any) -> None:
    ledger = Ledger(Layout(Path(root)))
    barrier.wait()
    try:
        resolve(ledger, POLICY, oid, who, Actor("cli", "tests"), disposition="fixed", rationale=who)
        results.put((who, "ok"))
    except (LedgerError, Refusal) as exc:
        results.put((who, str(exc)))


def test_two_processes_resolving_one_obligation_exactly_one_wins_each_round(instance: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    ledger = Ledger(Layout(instance))
    for _ in range(100):
        oid = ledger.open_obligation(
            subject="race",
            unit="u1",
            concern="audit-finding",
            sources=["m"],
            severity="blocking",
            consumer="human",
            blocks=True,
        ).id
        barrier, results = ctx.Barrier(2), ctx.Queue()
        procs = [
            ctx.Process(target=_race, args=(str(instance), oid, who, barrier, results))
            for who in ("alice", "bob")
        ]
        for p in procs:
            p.start()
        outcomes = [results.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        wins = [who for who, outcome in outcomes if outcome == "ok"]
        losses = [outcome for _, outcome in outcomes if outcome != "ok"]
        assert len(wins) == 1, outcomes
        assert losses == [
            f"obligation {oid} is resolved; terminal records do not reopen — open a successor"
        ]
    log = ledger.refresh()
    assert all(
        sum(h.type == "obligation-resolved" for h in o.history) == 1
        for o in log.obligations.values()
    )


def test_refusals_and_reads_on_a_new_instance_leave_no_file_behind(instance: Path) -> None:
    # A refusal writes nothing: not even the empty log its check-then-write section opened.
    def tree() -> set[str]:
        return {str(p.relative_to(instance)) for p in (instance / ".regulator").rglob("*")}

    before = tree()
    refused = [
        ("obligation", "resolve", "ob-none", "--by", "alice", "--disposition", "accepted",
         "--rationale", "r"),
        ("obligation", "ack", "ob-none", "--by", "alice"),
        ("answer", "ob-none", "--answer", "yes", "--by", "alice"),
    ]  # fmt: skip
    for args in refused:
        result = cli(*args, cwd=instance)
        assert result.returncode == 1 and "no obligation" in result.stderr, args
        assert tree() == before, args
    for args in [("status",), ("obligations",), ("attention",), ("effects",), ("deliveries",)]:
        assert cli(*args, cwd=instance).returncode == 0, args
        assert tree() == before, args


# --- escalating to a named person (addressees.ndjson) --------------------------------------


def escalate_to(root: Path, oid: str, *extra: str, by: str = "alice") -> Any:
    return cli(
        "obligation",
        "escalate",
        oid,
        "--by",
        by,
        "--to",
        "human",
        "--rationale",
        "yours to decide",
        *extra,
        cwd=root,
    )


def test_escalate_to_a_person_the_policy_allows_records_the_addressee(instance: Path) -> None:
    oid = open_one(instance, severity="blocking")
    done = escalate_to(instance, oid, "--person", "bob")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"obligation {oid[:8]} escalated by alice to human (bob): ")
    successor = done.stdout.split("successor ")[1].split()[0]
    lines = (instance / ".regulator" / "addressees.ndjson").read_text().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert record["obligationId"].startswith(successor) and record["person"] == "bob"
    assert record["by"] == "alice" and record["at"]
    assert state(instance, record["obligationId"])["consumer"] == "human"
    assert state(instance, oid)["status"] == "escalated"


@pytest.mark.parametrize(
    ("severity", "person", "refusal"),
    [
        ("blocking", "carol", '--person: "carol" is not a person the interaction policy'),
        ("critical", "bob", "--person: bob may disposition up to blocking; this is critical"),
    ],
)
def test_escalate_to_a_person_the_policy_does_not_allow_writes_nothing(
    instance: Path, severity: str, person: str, refusal: str
) -> None:
    oid = open_one(instance, severity=severity)
    before = snapshot(instance)
    refused = escalate_to(instance, oid, "--person", person)
    assert refused.returncode != 0
    assert refusal in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert snapshot(instance) == before
    assert not (instance / ".regulator" / "addressees.ndjson").exists()


def test_a_person_needs_to_human(instance: Path) -> None:
    oid = open_one(instance)
    before = snapshot(instance)
    bad = cli(
        "obligation",
        "escalate",
        oid,
        "--by",
        "alice",
        "--to",
        "S5",
        "--person",
        "bob",
        "--rationale",
        "r",
        cwd=instance,
    )
    assert bad.returncode == 2 and "--person: only an escalation --to human" in bad.stderr
    assert snapshot(instance) == before


def test_doctor_names_a_bad_addressee_line(instance: Path) -> None:
    oid = open_one(instance)
    assert escalate_to(instance, oid, "--person", "bob").returncode == 0
    assert cli("doctor", cwd=instance).returncode == 0
    with (instance / ".regulator" / "addressees.ndjson").open("a") as out:
        out.write('{"obligationId": "x", "by": "alice", "at": "2026-12-01T00:00:00.000Z"}\n')
    bad = cli("doctor", cwd=instance)
    assert bad.returncode != 0 and "addressees.ndjson:2" in bad.stdout + bad.stderr
