"""Who is reachable without the room, what each channel's message carries, and the page's text.

In-process, on an injected clock where time matters: `serve.json` read like a presence, a
person's channels judged for this question now, the answer link as each service's own action,
and an agent's words on the answer page as inert text.
"""

from __future__ import annotations

import html
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from regulator.host import answer_links
from regulator.host.answer_page import AnswerService
from regulator.host.channels import fan_out
from regulator.host.delivery import deliver_pending
from regulator.host.reach import ServeBeat, reachable, serve_path, serving, where_asked
from regulator.policy import load_definition
from regulator.store import write_json_atomic
from tests.test_answer_links import Phones, wait_for
from tests.test_channels import Instance, Mailbox, mailbox

__all__ = ["mailbox"]  # a fixture, used by name

ANSWER_URL = "https://regulator.example.com"


@pytest.fixture
def phones() -> Iterator[Phones]:
    server = Phones()
    yield server
    server.stop()


@pytest.fixture
def inst(tmp_path: Path, mailbox: Mailbox, phones: Phones) -> Instance:
    return Instance(tmp_path / "repo", mailbox.port, phones.port)


def beat(inst: Instance, answer_url: str | None = ANSWER_URL) -> ServeBeat:
    server = ServeBeat(inst.layout, answer_url, clock=inst.clock)
    server.beat()
    return server


# --------------------------------------------------------------------------------------------
# serve.json


def test_a_running_server_with_pages_makes_alice_reachable_on_each_channel_that_takes_it(
    inst: Instance,
) -> None:
    assert reachable(inst.layout, inst.policy, "consent", inst.clock) == []
    beat(inst)
    found = reachable(inst.layout, inst.policy, "consent", inst.clock)
    # Bob may not answer a blocking question (advisory only): he is nobody's way here.
    assert [(r.person, r.channel) for r in found] == [("alice", "email"), ("alice", "phone")]
    # A recap is advisory: bob's two channels take it, alice's phone (blocking+) does not.
    recap = reachable(inst.layout, inst.policy, "recap", inst.clock)
    assert [(r.person, r.channel) for r in recap] == [
        ("alice", "email"),
        ("bob", "slack"),
        ("bob", "desktop"),
    ]


def test_a_server_without_pages_reaches_nobody(inst: Instance) -> None:
    beat(inst, answer_url=None)
    assert serving(inst.layout, inst.clock) is not None
    assert reachable(inst.layout, inst.policy, "consent", inst.clock) == []


def test_a_server_that_stopped_beating_is_not_there_after_three_missed_heartbeats(
    inst: Instance,
) -> None:
    beat(inst)
    inst.clock.now += timedelta(seconds=5)
    assert serving(inst.layout, inst.clock) is not None
    inst.clock.now += timedelta(seconds=2)
    assert serving(inst.layout, inst.clock) is None
    assert reachable(inst.layout, inst.policy, "consent", inst.clock) == []


def test_a_killed_server_reaches_nobody_at_once_even_with_a_fresh_file(inst: Instance) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        server = ServeBeat(inst.layout, ANSWER_URL, clock=inst.clock)
        server.pid = child.pid
        from regulator.host.agent_process import process_start

        server.process_start = process_start(child.pid)
        server.beat()
        assert serving(inst.layout, inst.clock) is not None
    finally:
        child.kill()
        child.wait()
    assert serving(inst.layout, inst.clock) is None


def test_a_file_naming_a_live_process_started_at_another_time_is_not_a_server(
    inst: Instance,
) -> None:
    record = beat(inst).record().to_json_dict()
    record["processStart"] = (record.get("processStart") or 0) + 12345
    write_json_atomic(serve_path(inst.layout), record)
    assert serving(inst.layout, inst.clock) is None


def test_quiet_hours_and_kinds_leave_a_person_unreachable_for_now(tmp_path: Path) -> None:
    inst = Instance(tmp_path / "repo", 1, 2)
    policy_file = inst.root / "regulator" / "policies" / "interaction.yaml"
    text = policy_file.read_text()
    # Alice's email takes only recaps; her phone sleeps from 11:00 to 13:00 (it is 12:00 UTC).
    text = text.replace(
        "        to: alice@example.com\n",
        "        to: alice@example.com\n        kinds: [recap]\n",
    ).replace(
        "        minSeverity: blocking\n",
        "        minSeverity: blocking\n"
        "        quietHours: {start: '11:00', end: '13:00', timezone: UTC}\n",
    )
    policy_file.write_text(text)
    beat(inst)
    assert reachable(inst.layout, inst.policy, "consent", inst.clock) == []
    inst.clock.now += timedelta(hours=2)
    beat(inst)  # the server kept beating meanwhile
    assert [r.channel for r in reachable(inst.layout, inst.policy, "consent", inst.clock)] == [
        "phone"
    ]


def test_where_a_question_went_is_said_with_the_time_since(inst: Instance) -> None:
    oid = inst.ask()
    inst.tick()
    from regulator.host.channels import read_deliveries

    sent = [d for d in read_deliveries(inst.layout)[0] if d.obligation_id == oid]
    inst.clock.now += timedelta(seconds=42)
    assert where_asked(sent, inst.clock()) == "asked alice on email and phone, 0:42 ago"


# --------------------------------------------------------------------------------------------
# What each channel's message carries


def test_each_channel_carries_the_link_its_own_way(
    inst: Instance, mailbox: Mailbox, phones: Phones
) -> None:
    extra = (
        "  - name: carol\n    resolveUpTo: critical\n    acceptRisk: false\n"
        "    actAsS5: false\n    channels:\n"
        f"      - {{type: webhook, url: 'http://127.0.0.1:{phones.port}/carol'}}\n"
        f"      - {{type: slack, url: 'http://127.0.0.1:{phones.port}/slack/carol'}}\n"
    )
    policy_file = inst.root / "regulator" / "policies" / "interaction.yaml"
    policy_file.write_text(policy_file.read_text() + extra)
    oid = inst.ask()
    deliver_pending(inst.ledger, inst.journal, inst.layout, inst.clock)
    result = fan_out(
        inst.ledger,
        inst.journal,
        inst.layout,
        inst.policy,
        clock=inst.clock,
        env=inst.env,
        answer_url=ANSWER_URL,
    )
    assert all(d.link for d in result.sent), result
    assert wait_for(lambda: len(phones.received) == 3 and len(mailbox.messages) == 1)
    links: dict[str, str] = {}
    for path, headers, body in phones.received:
        if path == "/":  # ntfy: a view action on the notification, and a click through
            assert headers["X-Actions"].startswith("view, Answer, https://")
            links["ntfy"] = headers["X-Click"]
            assert headers["X-Actions"] == f"view, Answer, {links['ntfy']}, clear=true"
        elif path == "/carol":  # a webhook: a field of its own
            links["webhook"] = body["answerUrl"]
        elif path == "/slack/carol":  # Slack: a link button
            [button] = body["blocks"][1]["elements"]
            assert button["type"] == "button"
            links["slack"] = button["url"]
            assert body["blocks"][0]["text"]["type"] == "plain_text"
    # Email: a plain link in the text.
    mail = mailbox.messages[0][1]
    links["email"] = next(
        line.split(": ", 1)[1] for line in mail.splitlines() if line.startswith("answer here: ")
    )
    assert sorted(links) == ["email", "ntfy", "slack", "webhook"]
    assert len(set(links.values())) == 4  # one link per channel: the provenance names it
    assert all(link.startswith(f"{ANSWER_URL}/a/") for link in links.values())
    # Only hashes are kept.
    stored = answer_links.links_path(inst.layout).read_text()
    for link in links.values():
        assert link.rsplit("/", 1)[1] not in stored
    found = answer_links.check(inst.layout, links["webhook"].rsplit("/", 1)[1], inst.clock)
    assert (found.obligation_id, found.person, found.channel) == (oid, "carol", "webhook")


# --------------------------------------------------------------------------------------------
# The page


def service(inst: Instance) -> AnswerService:
    return AnswerService(inst.layout, lambda: load_definition(inst.root), clock=inst.clock)


def test_the_page_shows_an_agents_markup_and_escapes_as_inert_text(inst: Instance) -> None:
    hostile = "<script>alert(1)</script> \x1b[31mred\x1b]52;c;aGk=\x07 <img src=x onerror=y>"
    oid = inst.ask(
        question=hostile,
        action="rm -rf / '\"><b>",
        subject="x</title><h1>",
        evidence=[{"class": "file", "ref": "<a href=javascript:1>", "observation": "\x00nul"}],
    )
    token = answer_links.issue(inst.layout, oid, "alice", "phone", "k", inst.clock)
    page = service(inst).page(token)
    assert page.status == 200
    body = page.body
    for raw in ("<script>", "<img", "<b>", "</title><h1>", "<a href", "\x1b", "\x07", "\x00"):
        assert raw not in body, raw
    assert html.escape("<script>alert(1)</script>") in body
    assert "\\x1b[31mred" in body
    assert "<script" not in body.lower()


def test_an_expired_or_unknown_link_answers_nothing_and_says_why(inst: Instance) -> None:
    oid = inst.ask()
    token = answer_links.issue(inst.layout, oid, "alice", "phone", "k", inst.clock)
    pages = service(inst)
    assert pages.page("nope").status == 404
    inst.clock.now += answer_links.TTL
    expired = pages.page(token)
    assert expired.status == 410 and "expired" in expired.body
    before = inst.layout.signals.read_bytes()
    answered = pages.post(token, {"link": token, "obligation": oid, "answer": "yes"})
    assert answered.status == 410
    assert inst.layout.signals.read_bytes() == before


def test_the_link_is_checked_against_the_person_s_authority_again(inst: Instance) -> None:
    # A link issued to bob (advisory) for a blocking question: the page cannot answer it.
    oid = inst.ask(kind="clarification", question="Which region?")
    token = answer_links.issue(inst.layout, oid, "bob", "slack", "k", inst.clock)
    pages = service(inst)
    before = inst.layout.signals.read_bytes()
    refused = pages.post(
        token, {"link": token, "obligation": oid, "submit": "text", "text": "eu-west"}
    )
    assert refused.status == 403 and "may disposition up to advisory" in refused.body
    assert inst.layout.signals.read_bytes() == before
    # The refusal did not spend it: it is still the page it was.
    assert pages.page(token).status == 200


def test_a_choice_is_answered_by_its_option_and_a_clarification_by_its_text(
    inst: Instance,
) -> None:
    pages = service(inst)
    choice = inst.ask(kind="choice", question="How long?", options=["1 day", "2 days", "20 days"])
    token = answer_links.issue(inst.layout, choice, "alice", "phone", "k", inst.clock)
    done = pages.post(token, {"link": token, "obligation": choice, "answer": "option:2"})
    assert done.status == 200, done.body
    assert inst.ledger.refresh().obligations[choice].rationale == "2 days"
    question = inst.ask(kind="clarification", question="Which region?")
    token = answer_links.issue(inst.layout, question, "alice", "phone", "k2", inst.clock)
    done = pages.post(
        token,
        {"link": token, "obligation": question, "submit": "text", "text": "eu-west", "note": "n"},
    )
    assert done.status == 200 and "eu-west" in done.body


def test_the_links_file_holds_no_token_and_a_line_is_never_reused_after_use(
    inst: Instance,
) -> None:
    oid = inst.ask(kind="recap", question="I named it Foo.")
    token = answer_links.issue(inst.layout, oid, "alice", "email", "k", inst.clock)
    pages = service(inst)
    assert token not in answer_links.links_path(inst.layout).read_text()
    assert pages.post(token, {"link": token, "obligation": oid, "answer": "ok"}).status == 200
    again = pages.post(token, {"link": token, "obligation": oid, "answer": "ok"})
    assert again.status == 410
    assert "used already" in again.body


# --------------------------------------------------------------------------------------------
# Where the waiting question went: status and the room's banner


def _asked_through_serve(inst: Instance) -> str:
    """A consent asked while a server reached alice (channel ``outbox``), then sent to her."""
    from regulator.rules.asking import ask_in

    with inst.ledger.transaction() as txn:
        asked = ask_in(
            txn,
            inst.policy,
            kind="consent",
            subject="deploy",
            question="Deploy now?",
            action="deploy 1.4",
            unit="u1",
            channel="outbox",
        )
    inst.tick()
    return asked.obligation.id


def test_status_says_where_a_waiting_question_went_and_how_long_ago(inst: Instance) -> None:
    from regulator.rules.regulatory_log import RegulatoryLog
    from regulator.views.status import waiting_lines

    oid = _asked_through_serve(inst)
    log = RegulatoryLog(inst.layout)
    log.refresh()
    now = inst.clock() + timedelta(seconds=42)
    [line] = waiting_lines(inst.layout, log, now)
    assert line.startswith(f"  waiting {oid[:8]} consent: deploy — asked alice on email and phone")
    assert "0:42 ago; 4:18 left" in line
    # Past the kind's timeout the call has given up: nothing waits any more.
    assert waiting_lines(inst.layout, log, inst.clock() + timedelta(minutes=6)) == []


def test_the_rooms_waiting_banner_says_where_the_question_went(inst: Instance) -> None:
    from tui.model import InstanceModel
    from tui.widgets.banners import WaitingBanner

    _asked_through_serve(inst)
    inst.clock.now += timedelta(seconds=5)
    model = InstanceModel(inst.root, clock=inst.clock)
    model.refresh()
    assert len(model.waiting_sessions()) == 1
    text = WaitingBanner([model]).message().plain
    assert "asked alice on email and phone, 0:05 ago" in text and "4:55 left" in text
