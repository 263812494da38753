"""Answering from the message: `regulator serve --http` and its one-time answer links.

Real processes on real ports: `regulator serve --http 127.0.0.1:0`, a webhook receiver in the
test standing in for each person's phone, `regulator ask` waiting in a process of its own. The
test is the person: it takes the link from the message received, opens the page and posts the
form as a browser would.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from regulator.rules.regulatory_log import RegulatoryLog
from regulator.store import Layout

from .conftest import cli, git

# --------------------------------------------------------------------------------------------
# The people's phones, the server, the asking process


class Phones:
    """A local HTTP server taking each webhook POST: (path, headers, JSON body)."""

    def __init__(self) -> None:
        self.received: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        phones = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                try:
                    data = json.loads(body or b"{}")
                except ValueError:
                    data = {"raw": body.decode("utf-8", "replace")}
                phones.received.append((self.path, dict(self.headers.items()), data))
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def to(self, path: str) -> list[dict[str, Any]]:
        return [body for p, _h, body in self.received if p == path]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def wait_for(check: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.02)
    return check()


def policy(port: int, extra_alice: str = "") -> str:
    return textwrap.dedent(
        f"""\
        name: interaction
        version: 1
        description: alice and bob, each reached on a webhook
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
              - type: webhook
                name: phone
                url: "http://127.0.0.1:{port}/alice"
        {extra_alice}
          - name: bob
            resolveUpTo: blocking
            acceptRisk: false
            actAsS5: false
            channels:
              - {{type: webhook, url: "http://127.0.0.1:{port}/bob"}}
        """
    )


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGULATOR_")}
    env["PYTHONWARNINGS"] = "ignore"
    return env


class Serve:
    def __init__(self, root: Path, *extra: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "regulator", "serve", "--instance", str(root), *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=clean_env(),
        )
        self.lines: list[str] = []
        self.errors: list[str] = []
        assert self.proc.stdout is not None and self.proc.stderr is not None
        for stream, into in ((self.proc.stdout, self.lines), (self.proc.stderr, self.errors)):
            threading.Thread(target=self._read, args=(stream, into), daemon=True).start()

    @staticmethod
    def _read(stream: Any, into: list[str]) -> None:
        for line in stream:
            into.append(line.rstrip("\n"))

    def wait_line(self, text: str, timeout: float = 30.0) -> bool:
        return bool(wait_for(lambda: any(text in line for line in self.lines), timeout))

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(timeout=30)


@dataclass
class Setup:
    root: Path
    phones: Phones
    serve: Serve

    def layout(self) -> Layout:
        return Layout(self.root, env={})

    def ask(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "regulator", "ask", *args],
            cwd=self.root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=clean_env(),
        )

    def link(self, person: str, subject: str, timeout: float = 30.0) -> str:
        """The answer link in the message ``person``'s phone received about ``subject``."""

        def found() -> str | None:
            for body in self.phones.to(f"/{person}"):
                if f"consent: {subject}" in body.get("message", "") or subject in body.get(
                    "message", ""
                ):
                    return str(body["answerUrl"])
            return None

        link = wait_for(found, timeout)
        assert link, (self.phones.received, self.serve.lines, self.serve.errors)
        # Both people are sent every question here: once both messages are in, the server
        # writes nothing more about it, and the instance's files can be compared.
        assert wait_for(
            lambda: all(
                any(subject in b.get("message", "") for b in self.phones.to(f"/{p}"))
                for p in ("alice", "bob")
            ),
            timeout,
        )
        return str(link)


def make_instance(root: Path, port: int, extra_alice: str = "") -> Path:
    root.mkdir()
    git(root, "init", "--quiet", "--initial-branch=main")
    (root / "README.md").write_text("# a project\n")
    policies = root / "regulator" / "policies"
    policies.mkdir(parents=True)
    (policies / "interaction.yaml").write_text(policy(port, extra_alice))
    git(root, "add", ".")
    git(root, "commit", "--quiet", "-m", "people")
    done = cli("init", "--by", "alice", cwd=root)
    assert done.returncode == 0, done.stderr
    return root


@pytest.fixture
def phones() -> Iterator[Phones]:
    server = Phones()
    yield server
    server.stop()


@pytest.fixture
def served(tmp_path: Path, phones: Phones) -> Iterator[Setup]:
    root = make_instance(tmp_path / "project", phones.port)
    serve = Serve(root, "--http", "127.0.0.1:0")
    try:
        assert serve.wait_line("watching"), (serve.lines, serve.errors)
        yield Setup(root, phones, serve)
    finally:
        serve.stop()


# --------------------------------------------------------------------------------------------
# A browser's side of it


@dataclass
class Reply:
    status: int
    text: str

    def form(self) -> dict[str, str]:
        """The hidden fields of the page's form, as a browser would post them."""
        fields = re.findall(r"<input type=hidden name=(\w+) value='([^']*)'>", self.text)
        return {name: _unescape(value) for name, value in fields}


def _unescape(text: str) -> str:
    import html

    return html.unescape(text)


def get(url: str) -> Reply:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return Reply(response.status, response.read().decode())
    except urllib.error.HTTPError as exc:
        return Reply(exc.code, exc.read().decode())


def post(url: str, form: dict[str, str], headers: dict[str, str] | None = None) -> Reply:
    data = urllib.parse.urlencode(form).encode()
    request = urllib.request.Request(
        url,
        data=data,
        method="POST",
        headers={"Content-Type": "application/x-www-form-urlencoded", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return Reply(response.status, response.read().decode())
    except urllib.error.HTTPError as exc:
        return Reply(exc.code, exc.read().decode())


def answer_on_page(link: str, answer: str, note: str = "") -> Reply:
    """Open the page, press the answer's button, then confirm on the second step."""
    page = get(link)
    assert page.status == 200, page.text
    first = post(link, {**page.form(), "answer": answer, "note": note})
    assert first.status == 200, first.text
    return post(link, first.form())


def consent(subject: str) -> list[str]:
    return [
        "--kind",
        "consent",
        "--subject",
        subject,
        "--question",
        f"May I {subject}?",
        "--action",
        f"{subject} on production",
    ]


def state_files(root: Path) -> dict[str, bytes]:
    state = root / ".regulator"
    names = ("signals.ndjson", "provenance.ndjson", "answer-links.ndjson")
    return {n: (state / n).read_bytes() if (state / n).exists() else b"" for n in names}


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=90)
    return process.returncode, out, err


# --------------------------------------------------------------------------------------------
# The whole way round


@pytest.mark.slow
def test_a_consent_answered_yes_from_the_link_in_the_message_ends_ask_with_0_and_the_note(
    served: Setup,
) -> None:
    asking = served.ask(*consent("deploy 1.4"))
    link = served.link("alice", "deploy 1.4")
    assert link.startswith("http://127.0.0.1:")
    page = get(link)
    assert page.status == 200
    assert "May I deploy 1.4?" in page.text and "deploy 1.4 on production" in page.text
    done = answer_on_page(link, "yes", note="only before 18:00")
    assert done.status == 200, done.text
    assert "accepted" in done.text
    code, out, err = finish(asking)
    assert code == 0, err
    assert out.splitlines() == ["yes", "only before 18:00"]
    # Who answered, and from where: the link and the channel that carried it.
    provenance = [
        json.loads(line)
        for line in (served.root / ".regulator" / "provenance.ndjson").read_text().splitlines()
    ]
    assert provenance[-1]["via"] == "link" and provenance[-1]["channel"] == "phone"
    log = RegulatoryLog(served.layout())
    log.refresh()
    resolved = [o for o in log.obligations.values() if o.concern == "interaction"]
    assert [(o.status, o.disposition, o.closed_by) for o in resolved] == [
        ("resolved", "accepted", "alice")
    ]


@pytest.mark.slow
def test_the_same_link_a_second_time_changes_nothing(served: Setup) -> None:
    asking = served.ask(*consent("rotate keys"))
    link = served.link("alice", "rotate keys")
    page = get(link)
    first = post(link, {**page.form(), "answer": "yes"})
    confirm = first.form()
    assert post(link, confirm).status == 200
    assert finish(asking)[0] == 0
    before = state_files(served.root)
    again = post(link, confirm)
    assert again.status == 410 and "used already" in again.text
    assert get(link).status == 410
    # Bob's link to the same question: the question is closed, so it answers nothing either.
    bobs = served.link("bob", "rotate keys")
    closed = get(bobs)
    assert closed.status == 410 and "answered or closed already" in closed.text
    assert post(bobs, {**page.form(), "link": bobs.rsplit("/", 1)[1], "answer": "no"}).status == 410
    assert state_files(served.root) == before


@pytest.mark.slow
def test_a_link_for_bobs_question_cannot_answer_alices(served: Setup) -> None:
    # Two questions waiting: bob's link is for the first, alice's for the second.
    bobs_question = served.ask(*consent("drop the cache"))
    bobs = served.link("bob", "drop the cache")
    alices_question = served.ask(*consent("restart the db"))
    alices = served.link("alice", "restart the db")
    alices_form = get(alices).form()
    bobs_form = get(bobs).form()
    before = state_files(served.root)
    # Bob's link, posting alice's question: refused.
    stolen = post(bobs, {**bobs_form, "obligation": alices_form["obligation"], "answer": "yes"})
    assert stolen.status == 403 and "another question" in stolen.text
    # Alice's page, posted with bob's link in the form: refused.
    mixed = post(alices, {**alices_form, "link": bobs_form["link"], "answer": "yes"})
    assert mixed.status == 403
    # A link nobody was sent.
    forged = alices.rsplit("/", 1)[0] + "/" + "A" * 43
    assert get(forged).status == 404
    assert state_files(served.root) == before
    assert bobs_question.poll() is None and alices_question.poll() is None
    # Each still answers its own.
    assert answer_on_page(alices, "yes").status == 200
    assert answer_on_page(bobs, "no").status == 200
    assert finish(alices_question)[0] == 0
    assert finish(bobs_question)[0] == 1


@pytest.mark.slow
def test_a_page_answered_no_ends_ask_with_1_and_says_why(served: Setup) -> None:
    asking = served.ask(*consent("force-push main"))
    link = served.link("alice", "force-push main")
    done = answer_on_page(link, "no", note="not on main, ever")
    assert done.status == 200 and "rejected" in done.text
    code, out, err = finish(asking)
    assert code == 1
    assert "not on main, ever" in out + err


@pytest.mark.slow
def test_a_consent_is_never_answered_by_the_first_press_or_a_forged_confirmation(
    served: Setup,
) -> None:
    asking = served.ask(*consent("delete backups"))
    link = served.link("alice", "delete backups")
    page = get(link)
    before = state_files(served.root)
    first = post(link, {**page.form(), "answer": "yes"})
    # The second step restates the action, and nothing is recorded yet.
    assert first.status == 200 and "delete backups on production" in first.text
    assert "Yes, authorize it" in first.text
    forged = post(link, {**page.form(), "answer": "yes", "confirm": "0" * 64})
    assert forged.status == 200 and "Yes, authorize it" in forged.text
    # The proof of the second step is for that answer only: it does not turn into a no-proof.
    swapped = post(link, {**first.form(), "answer": "no"})
    assert "No, refuse it" in swapped.text
    # A word that is neither yes nor no is refused, not mapped.
    unclear = post(link, {**page.form(), "answer": "sure"})
    assert unclear.status == 422 and "neither" in unclear.text
    assert state_files(served.root) == before
    assert asking.poll() is None
    asking.send_signal(signal.SIGTERM)
    finish(asking)


@pytest.mark.slow
def test_another_sites_form_and_a_get_answer_nothing(served: Setup) -> None:
    asking = served.ask(*consent("ship it"))
    link = served.link("alice", "ship it")
    page = get(link)
    confirm = post(link, {**page.form(), "answer": "yes"}).form()
    before = state_files(served.root)
    for headers in (
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
    ):
        refused = post(link, confirm, headers)
        assert refused.status == 403, headers
    # A GET with the form's fields in its query is only a page.
    query = urllib.parse.urlencode(confirm)
    assert get(f"{link}?{query}").status == 200
    # Not a form: refused before anything is read.
    request = urllib.request.Request(
        link,
        data=json.dumps(confirm).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request, timeout=30)
    assert raised.value.code == 415
    assert state_files(served.root) == before
    # The same form from the page's own origin answers.
    origin = "http://" + urllib.parse.urlsplit(link).netloc
    assert post(link, confirm, {"Origin": origin}).status == 200
    assert finish(asking)[0] == 0


@pytest.mark.slow
def test_nobody_reachable_gives_up_at_once_as_before(tmp_path: Path, phones: Phones) -> None:
    root = make_instance(tmp_path / "project", phones.port)
    # serve without --http: the messages carry no link, and nobody counts as present.
    serve = Serve(root)
    try:
        assert serve.wait_line("watching"), serve.errors
        started = time.monotonic()
        code, _out, err = finish(
            subprocess.Popen(
                [sys.executable, "-m", "regulator", "ask", *consent("tag 1.4")],
                cwd=root,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=clean_env(),
            )
        )
        assert code == 3 and "unavailable" in err
        assert time.monotonic() - started < 20
        sent = wait_for(lambda: [b for b in phones.to("/alice") if "tag 1.4" in b["message"]])
        assert sent and "answerUrl" not in sent[0] and "answer here" not in sent[0]["message"]
    finally:
        serve.stop()


@pytest.mark.slow
def test_claude_codes_hook_waits_for_a_reachable_person_and_takes_the_links_yes_and_note(
    served: Setup,
) -> None:
    # Nobody in the room: without `serve --http` the hook would hand the call to Claude Code's
    # own prompt at once ("ask"). Alice is reachable on her phone, so the hook asks and waits.
    recorded = Path(__file__).parent / "agents" / "claude_code" / "pre_tool_use_bash_rm.json"
    payload = {**json.loads(recorded.read_text()), "cwd": str(served.root)}
    hook = subprocess.Popen(
        [sys.executable, "-m", "regulator", "hook", "claude-code"],
        cwd=served.root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(),
    )
    assert hook.stdin is not None
    hook.stdin.write(json.dumps(payload))
    hook.stdin.close()
    hook.stdin = None  # communicate() must not flush it again
    link = served.link("alice", "rm -rf build")
    done = answer_on_page(link, "yes", note="build/ is regenerated anyway")
    assert done.status == 200, done.text
    code, out, err = finish(hook)
    assert code == 0, err
    reply = json.loads(out)["hookSpecificOutput"]
    assert reply["permissionDecision"] == "allow"
    assert "build/ is regenerated anyway" in reply["additionalContext"]
