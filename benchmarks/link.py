"""B9: an answer from a channel's link, from the POST until the waiting ``regulator ask`` returns.

Real processes, as a person meets them: ``regulator serve --http 127.0.0.1:0`` with a webhook
channel whose receiver is a small HTTP server here (alice's phone); for each question a
``regulator ask --kind consent`` process waiting; the link taken from the message received,
the page opened and its first step posted; then the clock runs from the confirming POST until
the ``ask`` process has exited (its exit status read by ``waitpid``). Prints one JSON line:
``{"n", "p50", "p95", "max", "post_p50", "missed"}`` (milliseconds).

    python benchmarks/link.py --questions 20
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

PYTHON = sys.executable
POLICY = """\
name: interaction
version: 1
description: alice, reached on a webhook
timeoutsMs: {{recap: 30000, choice: 120000, clarification: 300000, consent: 300000, uat: 600000}}
attention: {{blockingPerAttempt: 2}}
reminderAfterMs: 3600000
people:
  - name: alice
    resolveUpTo: critical
    acceptRisk: true
    actAsS5: true
    channels:
      - {{type: webhook, name: phone, url: "http://127.0.0.1:{port}/alice"}}
"""


class Phone:
    def __init__(self) -> None:
        self.links: dict[str, str] = {}
        self.arrived = threading.Condition()
        phone = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                self.send_response(200)
                self.end_headers()
                match = re.search(r"consent: (q\d+)", body.get("message", ""))
                if match and "answerUrl" in body:
                    with phone.arrived:
                        phone.links[match.group(1)] = body["answerUrl"]
                        phone.arrived.notify_all()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def link(self, subject: str, timeout: float = 60) -> str | None:
        with self.arrived:
            self.arrived.wait_for(lambda: subject in self.links, timeout)
            return self.links.get(subject)


def _form(text: str) -> dict[str, str]:
    import html

    found = re.findall(r"<input type=hidden name=(\w+) value='([^']*)'>", text)
    return {name: html.unescape(value) for name, value in found}


def _post(url: str, form: dict[str, str]) -> str:
    data = urllib.parse.urlencode(form).encode()
    with urllib.request.urlopen(url, data=data, timeout=60) as response:
        return str(response.read().decode())


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=20)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGULATOR_")}
    env["PYTHONWARNINGS"] = "ignore"
    phone = Phone()
    with tempfile.TemporaryDirectory(prefix="regulator-b9-") as tmp:
        root = Path(tmp) / "project"
        (root / "regulator" / "policies").mkdir(parents=True)
        (root / "regulator" / "policies" / "interaction.yaml").write_text(
            POLICY.format(port=phone.port)
        )
        for command in (
            ["git", "init", "-q", "-b", "main"],
            ["git", "add", "."],
            ["git", "-c", "user.name=b9", "-c", "user.email=b9@invalid", "commit", "-qm", "p"],
        ):
            subprocess.run(command, cwd=root, check=True, env=env)
        regulator = [PYTHON, "-m", "regulator"]
        git_env = {**env, "GIT_AUTHOR_NAME": "b9", "GIT_AUTHOR_EMAIL": "b9@invalid"}
        git_env |= {"GIT_COMMITTER_NAME": "b9", "GIT_COMMITTER_EMAIL": "b9@invalid"}
        subprocess.run(
            [*regulator, "init", "--by", "alice"],
            cwd=root,
            check=True,
            env=git_env,
            capture_output=True,
        )
        serve = subprocess.Popen(
            [*regulator, "serve", "--http", "127.0.0.1:0"],
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        try:
            assert serve.stdout is not None
            for line in serve.stdout:
                if "watching" in line:
                    break
            threading.Thread(target=serve.stdout.read, daemon=True).start()
            took: list[float] = []
            posts: list[float] = []
            missed = 0
            for n in range(args.questions):
                subject = f"q{n}"
                asking = subprocess.Popen(
                    [
                        *regulator,
                        "ask",
                        "--kind",
                        "consent",
                        "--subject",
                        subject,
                        "--question",
                        f"May I run {subject}?",
                        "--action",
                        f"run {subject}",
                    ],
                    cwd=root,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    env=env,
                )
                link = phone.link(subject)
                if link is None:
                    asking.kill()
                    asking.communicate()
                    missed += 1
                    continue
                with urllib.request.urlopen(link, timeout=60) as page:
                    form = _form(page.read().decode())
                confirm = _form(_post(link, {**form, "answer": "yes"}))
                started = time.perf_counter()
                _post(link, confirm)
                posted = time.perf_counter()
                code = asking.wait(timeout=60)
                ended = time.perf_counter()
                asking.communicate()
                if code != 0:
                    missed += 1
                    continue
                took.append((ended - started) * 1000)
                posts.append((posted - started) * 1000)
        finally:
            serve.terminate()
            serve.wait(timeout=30)
    phone.server.shutdown()
    result: dict[str, Any] = {"n": len(took), "missed": missed, "questions": args.questions}
    if took:
        ordered = sorted(took)
        result |= {
            "p50": statistics.median(ordered),
            "p95": ordered[max(0, round(0.95 * len(ordered)) - 1)],
            "max": ordered[-1],
            "post_p50": statistics.median(posts),
        }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
