"""Reaching people on their own channels: local receivers only (127.0.0.1), an injected clock.

A local SMTP server (aiosmtpd) stands in for a mail relay, a local HTTP server for ntfy, Slack
and a webhook, and a small script for the desktop notifier.
"""

from __future__ import annotations

import http.server
import json
import re
import socket
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from regulator.host import answer_codes
from regulator.host.channels import (
    Message,
    default_sender,
    deliveries_path,
    fan_out,
    in_quiet_hours,
    read_deliveries,
)
from regulator.host.delivery import deliver_pending, remind_due
from regulator.policy import PolicyError, load_definition, load_policy_file
from regulator.protocol.policies import Channel, InteractionPolicy
from regulator.rules.asking import ask
from regulator.rules.effect_journal import EffectJournal
from regulator.rules.ledger import Ledger
from regulator.store import Layout

# --------------------------------------------------------------------------------------------
# Receivers


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 9, 22, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Mailbox:
    """A local SMTP server: every message it takes, as (recipients, text)."""

    def __init__(self) -> None:
        from aiosmtpd.controller import Controller

        self.messages: list[tuple[list[str], str]] = []
        mailbox = self

        class Handler:
            async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
                content = envelope.content
                text = content.decode("utf-8", "replace") if isinstance(content, bytes) else content
                mailbox.messages.append((list(envelope.rcpt_tos), text))
                return "250 OK"

        self.port = free_port()
        self.controller = Controller(Handler(), hostname="127.0.0.1", port=self.port)
        self.controller.start()

    def stop(self) -> None:
        self.controller.stop()


class Web:
    """A local HTTP server standing in for ntfy, Slack and webhooks: (path, JSON body)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        web = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                try:
                    data = json.loads(body or b"{}")
                except ValueError:
                    data = {"raw": body.decode("utf-8", "replace")}
                web.requests.append((self.path, data))
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}")

            do_PUT = do_POST

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def to(self, path: str) -> list[dict[str, Any]]:
        return [body for p, body in self.requests if p == path]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def mailbox() -> Iterator[Mailbox]:
    box = Mailbox()
    yield box
    box.stop()


@pytest.fixture
def web() -> Iterator[Web]:
    server = Web()
    yield server
    server.stop()


def wait_for(check: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return check()


NOTIFIER = """
import json, sys
with open(sys.argv[1], "a") as out:
    out.write(json.dumps(sys.argv[2:]) + "\\n")
"""


def policy_text(
    mail_port: int, web_port: int, desktop_log: Path, script: Path, extra: str = ""
) -> str:
    return textwrap.dedent(
        f"""\
        name: interaction
        version: 1
        description: people and where they are reached
        timeoutsMs: {{recap: 30000, choice: 120000, clarification: 300000, consent: 300000,
                     uat: 600000}}
        attention: {{blockingPerAttempt: 2}}
        reminderAfterMs: 3600000
        people:
          - name: alice
            resolveUpTo: critical
            acceptRisk: true
            actAsS5: true
            channels:
              - type: email
                url: "mailto://127.0.0.1:{mail_port}?from=regulator@example.com&mode=insecure"
                to: alice@example.com
              - type: ntfy
                name: phone
                minSeverity: blocking
                url: "ntfy://${{ALICE_NTFY_USER}}:${{ALICE_NTFY_PASS}}@127.0.0.1:{web_port}/alice"
          - name: bob
            resolveUpTo: advisory
            acceptRisk: false
            actAsS5: false
            channels:
              - type: slack
                url: "http://127.0.0.1:{web_port}/slack/bob"
              - type: desktop
                command: ["{sys.executable}", "{script}", "{desktop_log}"]
        {extra}"""
    )


class Instance:
    def __init__(self, root: Path, mail_port: int, web_port: int, extra: str = "") -> None:
        (root / ".regulator").mkdir(parents=True, exist_ok=True)
        policies = root / "regulator" / "policies"
        policies.mkdir(parents=True, exist_ok=True)
        self.desktop_log = root.parent / f"{root.name}-desktop.ndjson"
        self.script = root.parent / "notifier.py"
        self.script.write_text(NOTIFIER)
        (policies / "interaction.yaml").write_text(
            policy_text(mail_port, web_port, self.desktop_log, self.script, extra)
        )
        self.root = root
        self.layout = Layout(root, env={})
        self.clock = Clock()
        self.ledger = Ledger(self.layout, clock=self.clock)
        self.journal = EffectJournal(self.layout, self.clock)
        self.env = {"ALICE_NTFY_USER": "alice", "ALICE_NTFY_PASS": "s3cret-Ntfy-Pass-0042"}

    @property
    def policy(self) -> InteractionPolicy:
        return load_definition(self.root).interaction

    def ask(self, kind: str = "consent", **fields: Any) -> str:
        question: dict[str, Any] = {
            "kind": kind,
            "subject": "deploy",
            "question": "Deploy 1.4 to production now?",
            "unit": "u1",
        }
        if kind == "consent":
            question["action"] = "deploy 1.4 to production"
        question.update(fields)
        return ask(self.ledger, self.policy, **question).obligation.id

    def tick(self, sender: Any = None) -> Any:
        deliver_pending(self.ledger, self.journal, self.layout, self.clock)
        remind_due(self.ledger, self.journal, self.layout, self.policy, self.clock)
        return fan_out(
            self.ledger,
            self.journal,
            self.layout,
            self.policy,
            clock=self.clock,
            sender=sender,
            env=self.env,
        )

    def desktop(self) -> list[list[str]]:
        if not self.desktop_log.exists():
            return []
        return [json.loads(line) for line in self.desktop_log.read_text().splitlines()]


@pytest.fixture
def inst(tmp_path: Path, mailbox: Mailbox, web: Web) -> Instance:
    return Instance(tmp_path / "repo", mailbox.port, web.port)


# --------------------------------------------------------------------------------------------
# Delivery to each owner's channels


def test_a_blocking_question_owed_to_alice_reaches_her_two_channels_once_each_then_a_reminder(
    inst: Instance, mailbox: Mailbox, web: Web
) -> None:
    inst.ask()
    first = inst.tick()
    assert [(d.person, d.channel, d.outcome) for d in first.sent] == [
        ("alice", "email", "sent"),
        ("alice", "phone", "sent"),
    ]
    assert wait_for(lambda: len(mailbox.messages) == 1 and len(web.to("/")) == 1)
    assert mailbox.messages[0][0] == ["alice@example.com"]
    ntfy = web.to("/")[0]
    assert ntfy["topic"] == "alice"
    assert "regulator answer" in ntfy["message"] and "--code" in ntfy["message"]
    # Another pass, and another: nothing new is owed, nothing is sent again.
    assert inst.tick().sent == [] and inst.tick().sent == []
    assert len(mailbox.messages) == 1 and len(web.to("/")) == 1
    # The reminder interval passes: one reminder on each channel.
    inst.clock.now += timedelta(hours=1)
    second = inst.tick()
    assert [(d.channel, d.reminder, d.delivery) for d in second.sent] == [
        ("email", True, 1),
        ("phone", True, 1),
    ]
    assert wait_for(lambda: len(mailbox.messages) == 2 and len(web.to("/")) == 2)
    assert web.to("/")[1]["title"].startswith("REMINDER: ")
    assert inst.tick().sent == []


def test_bob_with_advisory_authority_gets_nothing_for_a_blocking_question(
    inst: Instance, web: Web
) -> None:
    inst.ask()
    result = inst.tick()
    assert {d.person for d in result.sent} == {"alice"}
    assert web.to("/slack/bob") == [] and inst.desktop() == []
    # A recap (advisory) is within his grants: it reaches his Slack and his desktop.
    inst.ask(kind="recap", subject="naming", question="I named it Foo; fine?")
    result = inst.tick()
    assert sorted(d.channel for d in result.sent if d.person == "bob") == ["desktop", "slack"]
    # Alice's phone takes blocking and above only: the recap reaches her by email alone.
    assert [d.channel for d in result.sent if d.person == "alice"] == ["email"]
    assert wait_for(lambda: len(web.to("/slack/bob")) == 1)
    slack = web.to("/slack/bob")[0]
    assert set(slack) <= {"text", "attachments"} and "naming" in slack["text"]
    [desktop] = inst.desktop()
    assert desktop[0].startswith("regulator: advisory recap on u1")


def escalated_to(inst: Instance, person: str | None) -> str:
    """An advisory finding for S3, escalated by alice to human (and to ``person``)."""
    from regulator.rules.dispositions import escalate
    from regulator.rules.ledger import Actor

    o = inst.ledger.open_obligation(
        subject="a naming nit",
        unit="u1",
        concern="audit-finding",
        sources=["m1"],
        severity="advisory",
        consumer="S3",
        blocks=False,
    )
    done = escalate(
        inst.ledger,
        inst.policy,
        o.id,
        "alice",
        Actor(via="cli"),
        to="human",
        rationale="a person looks",
        person=person,
    )
    return done.successor.id


def test_an_obligation_escalated_to_a_person_reaches_only_that_persons_channels(
    inst: Instance, web: Web
) -> None:
    # Addressed to bob: his Slack and desktop, nothing of alice's though she may decide it too.
    bobs = escalated_to(inst, "bob")
    result = inst.tick()
    assert {(d.obligation_id, d.person) for d in result.sent} == {(bobs, "bob")}
    assert sorted(d.channel for d in result.sent) == ["desktop", "slack"]
    # Addressed to alice: her email alone (her phone takes blocking and above: still respected).
    alices = escalated_to(inst, "alice")
    result = inst.tick()
    assert [(d.obligation_id, d.person, d.channel) for d in result.sent] == [
        (alices, "alice", "email")
    ]
    # Addressed to nobody: everyone who may decide it, as before.
    everyones = escalated_to(inst, None)
    result = inst.tick()
    assert {d.obligation_id for d in result.sent} == {everyones}
    assert {d.person for d in result.sent} == {"alice", "bob"}


def test_a_send_interrupted_before_it_was_recorded_is_not_sent_again(
    inst: Instance, mailbox: Mailbox
) -> None:
    inst.ask()

    def crash_after_sending(channel: Channel, url: str | None, message: Message) -> None:
        default_sender(channel, url, message)
        raise KeyboardInterrupt  # the process dies here: sent, not recorded

    with pytest.raises(KeyboardInterrupt):
        inst.tick(sender=crash_after_sending)
    assert wait_for(lambda: len(mailbox.messages) == 1)
    # The next pass settles the interrupted send as unknown and sends it to nobody again;
    # the channel not yet tried (phone) gets its delivery.
    result = inst.tick()
    assert [(d.channel, d.outcome) for d in result.reconciled] == [("email", "unknown")]
    assert [d.channel for d in result.sent] == ["phone"]
    assert inst.tick().sent == []
    time.sleep(0)  # nothing to wait for: the mailbox has what it will get
    assert len(mailbox.messages) == 1
    records, problems = read_deliveries(inst.layout)
    assert problems == []
    assert [(r.channel, r.outcome) for r in records] == [("email", "unknown"), ("phone", "sent")]
    key = records[0].key
    state = inst.journal.state(key)
    assert state is not None and state.status == "confirmed"
    assert state.result is not None and state.result.startswith("unknown")


def test_a_channel_in_quiet_hours_gets_the_latest_delivery_when_they_end(
    tmp_path: Path, mailbox: Mailbox, web: Web
) -> None:
    inst = Instance(tmp_path / "quiet", mailbox.port, web.port)
    text = (inst.root / "regulator/policies/interaction.yaml").read_text()
    text = re.sub(
        r"( *)name: phone\n",
        r"\1name: phone\n\1quietHours: {start: '11:00', end: '13:30', timezone: UTC}\n",
        text,
    )
    (inst.root / "regulator/policies/interaction.yaml").write_text(text)
    inst.ask()
    result = inst.tick()  # 12:00 UTC: the phone is quiet, email is not
    assert [d.channel for d in result.sent] == ["email"] and result.deferred == 1
    inst.clock.now += timedelta(hours=1)  # a reminder falls due, still quiet for the phone
    assert [d.channel for d in inst.tick().sent] == ["email"]
    inst.clock.now += timedelta(minutes=45)  # 13:45: quiet hours are over
    result = inst.tick()
    assert [(d.channel, d.delivery) for d in result.sent] == [("phone", 1)]
    assert wait_for(lambda: len(web.to("/")) == 1)


def test_quiet_hours_let_a_critical_obligation_through_and_wrap_past_midnight() -> None:
    channel = Channel.from_json_dict(
        {
            "type": "ntfy",
            "url": "ntfy://127.0.0.1/x",
            "quietHours": {"start": "22:00", "end": "07:00", "timezone": "UTC"},
        }
    )
    night = datetime(2026, 9, 22, 23, 30, tzinfo=UTC)
    morning = datetime(2026, 9, 22, 6, 59, tzinfo=UTC)
    noon = datetime(2026, 9, 22, 12, 0, tzinfo=UTC)
    assert in_quiet_hours(channel, night, "blocking")
    assert in_quiet_hours(channel, morning, "blocking")
    assert not in_quiet_hours(channel, noon, "blocking")
    assert not in_quiet_hours(channel, night, "critical")


def test_a_failed_send_is_recorded_with_its_reason_and_never_its_secret(
    tmp_path: Path, mailbox: Mailbox
) -> None:
    closed = free_port()  # nothing listens there
    inst = Instance(tmp_path / "failing", mailbox.port, closed)
    inst.ask()
    result = inst.tick()
    assert [d.channel for d in result.failed] == ["phone"]
    assert [d.channel for d in result.sent] == ["email"]
    raw = deliveries_path(inst.layout).read_text()
    effects = inst.layout.effects.read_text()
    for text in (raw, effects):
        assert "s3cret-Ntfy-Pass-0042" not in text
    [failed] = [json.loads(line) for line in raw.splitlines() if '"failed"' in line]
    assert failed["outcome"] == "failed" and failed["error"]
    assert failed["target"] == f"ntfy://127.0.0.1:{closed}/alice"
    # A failure is not retried for that delivery (at most once); the next reminder tries again.
    assert inst.tick().failed == []


def test_a_secret_missing_from_environment_and_files_fails_the_send_naming_the_variable(
    inst: Instance,
) -> None:
    inst.env = {}
    inst.ask()
    result = inst.tick()
    [failed] = result.failed
    assert failed.channel == "phone"
    assert failed.error is not None and "${ALICE_NTFY_USER}" in failed.error


def test_secrets_come_from_a_secrets_file_outside_the_repository_not_one_inside(
    inst: Instance, tmp_path: Path, web: Web
) -> None:
    outside = tmp_path / "secrets.env"
    outside.write_text("ALICE_NTFY_USER=alice\nexport ALICE_NTFY_PASS='from-the-file-0099'\n")
    inst.env = {"REGULATOR_SECRETS_FILE": str(outside)}
    inst.ask()
    assert [d.channel for d in inst.tick().sent] == ["email", "phone"]
    inside = inst.root / "secrets.env"
    inside.write_text(outside.read_text())
    inst.env = {"REGULATOR_SECRETS_FILE": str(inside)}
    inst.ask(subject="second")
    [failed] = inst.tick().failed
    assert failed.error is not None and "inside the repository" in failed.error


def test_a_policy_with_a_literal_token_in_a_channel_url_is_refused_naming_the_field(
    tmp_path: Path,
) -> None:
    path = tmp_path / "interaction.yaml"
    base = policy_text(25, 80, tmp_path / "d", tmp_path / "s")
    for literal in (
        "ntfy://alice:hunter2hunter2@ntfy.sh/alice",
        "slack://T0001/B0002/abcdefabcdef",
        "https://example.com/hook?token=abc123",
        "json://example.com/hooks/aB3dE5fG7hJ9kL1mN3pQ5rS7tU9",
    ):
        path.write_text(
            base.replace(
                '"ntfy://${ALICE_NTFY_USER}:${ALICE_NTFY_PASS}@127.0.0.1:80/alice"',
                f'"{literal}"',
            )
        )
        with pytest.raises(PolicyError) as refused:
            load_policy_file("interaction", path, InteractionPolicy)
        [problem] = refused.value.problems
        assert "people[0].channels[1].url" in problem and "${NAME}" in problem
        assert literal not in problem


NTFY_URL = '"ntfy://${ALICE_NTFY_USER}:${ALICE_NTFY_PASS}@127.0.0.1:80/alice"'


def refusal(
    tmp_path: Path, *, url: str | None = None, command: list[str] | None = None
) -> str | None:
    """The one problem loading the test policy with alice's phone at ``url`` or bob's desktop
    running ``command``, if there is one."""
    path = tmp_path / "interaction.yaml"
    text = policy_text(25, 80, tmp_path / "d", tmp_path / "s")
    if url is not None:
        text = text.replace(NTFY_URL, json.dumps(url))
    if command is not None:
        text = re.sub(r"command: \[.*\]", lambda _: f"command: {json.dumps(command)}", text)
    path.write_text(text)
    try:
        load_policy_file("interaction", path, InteractionPolicy)
    except PolicyError as refused:
        [problem] = refused.problems
        return problem
    return None


@pytest.mark.parametrize(
    "literal",
    [
        "https://example.com/hook?access_token=abc",
        "https://example.com/hook?ACCESS_TOKEN=abc",
        "https://example.com/hook?Access-Token=abc",
        "https://example.com/hook?accessToken=abc",
        "https://example.com/hook?access%5Ftoken=abc",
        "https://example.com/hook?access%255Ftoken=abc",
        "https://example.com/hook?x=1#access_token=abc",
        "json://example.com/hook?+Authorization=Bearer%20abc",
        "json://example.com/hook?+Authorization=Bearer+abc",
        "json://example.com/hook?%2Bauthorization=bearer%20abc",
        "json://example.com/hook?+AUTHORIZATION=Basic%20YWxpY2U6aHVudGVyMg==",
        "json://example.com/hook?+X-Api-Key=abc",
        "json://example.com/hook?+Authorization=Bearer%20${TOKEN}abc",
        "mailtos://smtp.example.com?user=alice&smtp_password=hunter2",
        "mailtos://smtp.example.com?user=alice&SMTP-Password=hunter2",
        "mailtos://smtp.example.com?user=alice&smtp%5Fpassword=hunter2",
        "mailtos://smtp.example.com?user=alice&smtpPassword=hunter2",
        "ntfy://ntfy.example.com/alice?auth=QmFzaWMgYWxpY2U",
    ],
)
def test_a_credential_named_in_a_channel_url_is_refused_in_any_case_or_encoding(
    tmp_path: Path, literal: str
) -> None:
    problem = refusal(tmp_path, url=literal)
    assert problem is not None, literal
    assert "people[0].channels[1].url: holds a" in problem and "${NAME}" in problem
    for secret in ("abc", "hunter2", "YWxpY2U6aHVudGVyMg", "QmFzaWMgYWxpY2U"):
        assert secret not in problem


@pytest.mark.parametrize(
    "command",
    [
        ["curl", "-H", "Authorization: Bearer abc123", "https://example.com/notify"],
        ["curl", "-H", "authorization:bearer abc123", "https://example.com/notify"],
        ["curl", "--header", "X-Api-Key: abc123", "https://example.com/notify"],
        ["sh", "-c", "curl -H 'Authorization: Bearer abc123' https://example.com"],
        ["curl", "-d", '{"token": "abc123"}', "https://example.com/notify"],
        ["curl", "https://example.com/notify?access_token=abc123"],
        ["curl", "-u", "alice:abc123", "https://example.com/notify"],
        ["curl", "--user=alice:abc123", "https://example.com/notify"],
        ["notify-tool", "--password", "abc123"],
        ["notify-tool", "--api-key=abc123"],
        ["notify-tool", "smtp_password=abc123"],
    ],
)
def test_a_literal_secret_in_a_desktop_command_is_refused(
    tmp_path: Path, command: list[str]
) -> None:
    problem = refusal(tmp_path, command=command)
    assert problem is not None, command
    assert "people[1].channels[1].command: holds a" in problem and "${NAME}" in problem
    assert "abc123" not in problem


@pytest.mark.parametrize(
    "url",
    [
        "mailtos://alice:${ALICE_SMTP_PASSWORD}@smtp.example.com?from=regulator@example.com",
        "ntfys://alice:${ALICE_NTFY_PASS}@ntfy.example.com/alice-approvals",
        "ntfy://ntfy.example.com/alice?token=${NTFY_TOKEN}&auth=",
        "json://example.com/hook?+Authorization=Bearer%20${TOKEN}",
        "json://example.com/hook?+Authorization=Bearer+${TOKEN}&+Content-Type=application/json",
        "json://example.com/hook?:message=text&:title=&priority=high",
        "https://key.example.com:8443/hook?token_type=bearer&key_file=/etc/x&keyword=release",
        "tgram://${TELEGRAM_BOT_TOKEN}/${ALICE_TELEGRAM_CHAT}",
        "${BOB_SLACK_WEBHOOK}",
    ],
)
def test_an_ordinary_or_referenced_channel_url_loads(tmp_path: Path, url: str) -> None:
    assert refusal(tmp_path, url=url) is None


@pytest.mark.parametrize(
    "command",
    [
        ["curl", "-H", "Authorization: Bearer ${NOTIFY_TOKEN}", "https://example.com/notify"],
        ["curl", "-u", "alice:${NOTIFY_PASS}", "https://example.com/notify"],
        ["sh", "-c", 'curl -H "Authorization: Bearer $NOTIFY_TOKEN" https://example.com'],
        ["notify-send", "-u", "critical", "--app-name=regulator"],
        ["notify-tool", "--password-file", "/home/alice/.config/notify/password"],
        ["notify-tool", "--title", "Token: see the vault"],
        ["python3", "/tmp/pytest-of-alice/test_a_blocking_question_owed_0/notify.py"],
    ],
)
def test_an_ordinary_or_referenced_desktop_command_loads(
    tmp_path: Path, command: list[str]
) -> None:
    assert refusal(tmp_path, command=command) is None


def test_a_reference_in_a_desktop_command_is_resolved_when_sent_and_redacted_after(
    tmp_path: Path, mailbox: Mailbox, web: Web
) -> None:
    inst = Instance(tmp_path / "repo", mailbox.port, web.port)
    policy = inst.root / "regulator" / "policies" / "interaction.yaml"
    text = policy.read_text()
    log = f'"{inst.desktop_log}"'
    policy.write_text(text.replace(f"{log}]", f'{log}, "--token=${{BOB_DESKTOP_TOKEN}}"]'))
    inst.env = {**inst.env, "BOB_DESKTOP_TOKEN": "desk-Token-0077-secret"}
    inst.ask(kind="recap", subject="naming", question="I named it Foo; fine?")
    result = inst.tick()
    assert [d.outcome for d in result.sent if d.channel == "desktop"] == ["sent"]
    [argv] = inst.desktop()
    assert argv[0] == "--token=desk-Token-0077-secret"
    from regulator.host.channels import channel_secrets

    assert "desk-Token-0077-secret" in channel_secrets(inst.policy, inst.env)
    assert "desk-Token-0077-secret" not in deliveries_path(inst.layout).read_text()


def test_channels_are_a_field_of_ours_that_doctor_can_name() -> None:
    from regulator.protocol.policies import fields_of_ours

    policy = InteractionPolicy.from_json_dict(
        {
            **load_definition(None).interaction.to_json_dict(),
            "people": [
                {
                    "name": "alice",
                    "resolveUpTo": "critical",
                    "acceptRisk": True,
                    "actAsS5": True,
                    "channels": [{"type": "desktop"}],
                }
            ],
        }
    )
    assert "people[0].channels" in fields_of_ours(policy)


def test_the_redactor_hides_a_channel_secret_an_agent_wrote_into_a_record(
    inst: Instance, monkeypatch: pytest.MonkeyPatch
) -> None:
    from regulator.views.redaction import Redactor

    monkeypatch.setenv("ALICE_NTFY_USER", "alice")
    monkeypatch.setenv("ALICE_NTFY_PASS", "s3cret-Ntfy-Pass-0042")
    redactor = Redactor.for_layout(inst.layout)
    assert "s3cret" not in redactor.redact("the agent saw s3cret-Ntfy-Pass-0042 in env")


# --------------------------------------------------------------------------------------------
# Answer codes


def run_main(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from regulator.cli.main import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted((root / ".regulator").rglob("*"))
        if p.is_file()
    }


def test_an_answer_code_is_stored_hashed_bound_to_its_person_and_works_once(
    inst: Instance, web: Web, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(inst.root)
    inst.clock.now = datetime.now(UTC)  # the CLI checks expiry on the system clock
    oid = inst.ask()
    inst.tick()
    assert wait_for(lambda: len(web.to("/")) == 1)
    message = web.to("/")[0]["message"]
    code = message.split("--code ", 1)[1].split(" ", 1)[0]
    assert code not in answer_codes.codes_path(inst.layout).read_text()
    before = snapshot(inst.root)
    # A wrong code, and the right code given by someone else: refused, nothing written.
    status, _, err = run_main(
        "answer", oid[:8], "--by", "alice", "--code", "ABCD-EFGH", "--answer", "yes", capsys=capsys
    )
    assert status == 1 and "not the answer code sent to alice" in err
    status, _, err = run_main(
        "answer", oid[:8], "--by", "bob", "--code", code, "--answer", "yes", capsys=capsys
    )
    assert status == 1 and "no answer code was sent to bob" in err
    assert snapshot(inst.root) == before
    # A refused answer (not a yes or a no) does not spend the code.
    status, _, err = run_main(
        "answer", oid[:8], "--by", "alice", "--code", code, "--answer", "sure thing", capsys=capsys
    )
    assert status == 1
    status, out, err = run_main(
        "answer", oid[:8], "--by", "alice", "--code", code.lower(), "--answer", "yes", capsys=capsys
    )
    assert status == 0, err
    assert "consent answered by alice (accepted)" in out
    used = answer_codes._read(inst.layout)[1]
    assert len(used) == 1


def test_an_answer_code_that_was_used_or_has_expired_is_refused(inst: Instance) -> None:
    oid = inst.ask()
    code = answer_codes.issue(inst.layout, oid, "alice", "k", inst.clock)
    code_id = answer_codes.check(inst.layout, oid, "alice", code, inst.clock)
    answer_codes.consume(inst.layout, code_id, inst.clock)
    with pytest.raises(answer_codes.CodeRefused, match="used already"):
        answer_codes.check(inst.layout, oid, "alice", code, inst.clock)
    fresh = answer_codes.issue(inst.layout, oid, "alice", "k2", inst.clock)
    inst.clock.now += answer_codes.TTL
    with pytest.raises(answer_codes.CodeRefused, match="expired"):
        answer_codes.check(inst.layout, oid, "alice", fresh, inst.clock)


def test_an_answer_code_matches_letter_for_letter_ignoring_only_ascii_case(inst: Instance) -> None:
    oid = inst.ask()
    while "S" not in (code := answer_codes.issue(inst.layout, oid, "alice", "k", inst.clock)):
        pass  # a code holding an S, so that a long s can stand in for it
    # str.upper() turns "ſ" into "S": a lookalike must not pass for the letter sent.
    with pytest.raises(answer_codes.CodeRefused, match="not the answer code"):
        answer_codes.check(inst.layout, oid, "alice", code.replace("S", "ſ"), inst.clock)
    assert answer_codes.check(inst.layout, oid, "alice", code.lower(), inst.clock)


def test_the_answer_logs_lines_are_closed_records_a_bad_one_authorizes_nothing(
    inst: Instance,
) -> None:
    from regulator.host import answer_links
    from regulator.protocol.ours import ANSWER_CODES, ANSWER_LINKS
    from regulator.store.logs import instance_logs, read_log

    oid = inst.ask()
    code = answer_codes.issue(inst.layout, oid, "alice", "k", inst.clock)
    token = answer_links.issue(inst.layout, oid, "alice", "phone", "k", inst.clock)
    codes, links = inst.layout.answer_codes, inst.layout.answer_links
    # Written as the log's closed records: field for field what the reader takes back.
    (line,) = codes.read_bytes().splitlines()
    assert list(json.loads(line)) == [
        *("type", "id", "obligationId", "person", "key", "salt", "hash", "at", "expiresAt")
    ]
    assert ANSWER_CODES.read(codes.read_bytes())[0][0].person == "alice"
    assert ANSWER_LINKS.read(links.read_bytes())[0][0].channel == "phone"
    # The issued line bent by hand: an id that is no string, an unknown field, a salt that is
    # not hex. Each is skipped, so the code it held answers nothing.
    issued = json.loads(line)
    for bent in ({"id": 7}, {"extra": 1}, {"salt": "zz"}):
        codes.write_text(json.dumps({**issued, **bent}) + "\n")
        with pytest.raises(answer_codes.CodeRefused, match="no answer code was sent"):
            answer_codes.check(inst.layout, oid, "alice", code, inst.clock)
    codes.write_text(line.decode() + "\n")
    code_id = answer_codes.check(inst.layout, oid, "alice", code, inst.clock)
    answer_codes.consume(inst.layout, code_id, inst.clock)
    # A used line of the other log's shape is a used line of either: one reader for both.
    link = answer_links.check(inst.layout, token, inst.clock)
    answer_links.consume(inst.layout, link.id, inst.clock)
    assert (
        codes.read_bytes().splitlines()[1].split(b'"id"')[0]
        == links.read_bytes().splitlines()[1].split(b'"id"')[0]
    )
    # doctor's catalogue names a refused line by file and line, in one line.
    with codes.open("a") as out:
        out.write('{"type": "used", "id": ""}\n')
    (spec,) = [s for s in instance_logs(inst.layout) if s.path == codes]
    _, problems = read_log(inst.layout, spec)
    assert [str(p) for p in problems] == [
        f"{inst.layout.label(codes)}:3: used: id: expected `str` of length >= 1 (got '')"
    ], problems


def test_a_channel_message_says_replies_are_not_read_and_carries_record_text_inert(
    inst: Instance, web: Web
) -> None:
    inst.ask(question="Deploy?\x1b]52;c;ZXZpbA==\x07 now")
    inst.tick()
    assert wait_for(lambda: len(web.to("/")) == 1)
    text = web.to("/")[0]["message"]
    assert "\x1b" not in text and "\\x1b" in text
    assert "replies to this message are not read" in text


def test_no_channels_in_the_policy_means_no_deliveries_file(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    (root / ".regulator").mkdir(parents=True)
    layout = Layout(root, env={})
    ledger = Ledger(layout)
    policy = load_definition(None).interaction
    ask(ledger, policy, kind="consent", subject="s", question="q?", action="a")
    deliver_pending(ledger)
    assert fan_out(ledger, EffectJournal(layout), layout, policy).sent == []
    assert not deliveries_path(layout).exists()
