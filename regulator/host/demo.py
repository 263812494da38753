"""``regulator demo DIR [--live]``: a small project with every state the control room shows.

Everything in it is written by the real code paths: a git repository with a tiny Python
project and its own interaction policy (the example people alice and bob, whom the room acts
as), ``init``, and scripted units driven through the real loop (worktrees, host checks,
routing, recovery, delivery). The story runs on a simulated clock that starts two hours ago and
ends now, so the reminder that an hour of silence earns is real too.

``--live`` keeps going on the real clock: a new unit arrives every few seconds and asks a
question that waits for the control room; a unit whose question was answered, or whose
obligation was dispositioned, is driven again.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from regulator.host import gitops
from regulator.host.delivery import remind_due
from regulator.host.instance import checked_interaction_policy, init_instance
from regulator.host.loop import Loop
from regulator.host.sessions.script import ScriptAdapter
from regulator.policy import load_definition
from regulator.protocol.clock import Clock, system_clock
from regulator.protocol.execution import WorkContract
from regulator.rules.effect_journal import EffectJournal
from regulator.store import Layout

MODELS = {"anthropic/claude-sonnet-4-5", "anthropic/claude-haiku-4-5", "openai/gpt-5"}

CALC = '''"""A small calculator: the demo project."""


def add(a: float, b: float) -> float:
    return a + b


def mean(values: list[float]) -> float:
    return sum(values) / len(values)
'''

CALC_TESTS = """import unittest

from calc import add, mean


class CalcTests(unittest.TestCase):
    def test_add(self) -> None:
        self.assertEqual(add(2, 3), 5)

    def test_mean(self) -> None:
        self.assertEqual(mean([1, 2, 3]), 2)
"""

ROUND_BROKEN = (
    CALC
    + """

def round_half_up(x: float) -> int:
    return int(x)
"""
)

ROUND_FIXED = (
    CALC
    + """

def round_half_up(x: float) -> int:
    return int(x + 0.5) if x >= 0 else -int(-x + 0.5)
"""
)

ROUND_TESTS = (
    CALC_TESTS
    + """

class RoundTests(unittest.TestCase):
    def test_round_half_up(self) -> None:
        from calc import round_half_up

        self.assertEqual(round_half_up(2.5), 3)
        self.assertEqual(round_half_up(-2.5), -3)
"""
)


class SimClock:
    """A clock the demo moves forward itself, a millisecond per reading so order is kept."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=1)
        return self.now

    def advance(self, minutes: float) -> None:
        self.now += timedelta(minutes=minutes)


def contract(
    unit_id: str,
    objective: str,
    *,
    unit_type: str = "implement",
    tests: bool = False,
    semantic: str | None = None,
    clock: Clock = system_clock,
) -> WorkContract:
    expected: list[dict[str, Any]] = []
    if tests:
        expected.append(
            {
                "id": "tests-pass",
                "description": "the project's tests pass",
                "class": "test",
                "required": True,
            }
        )
    if semantic:
        expected.append(
            {
                "id": semantic,
                "description": "a person looked at it",
                "class": "semantic",
                "required": True,
            }
        )
    return WorkContract.from_json_dict(
        {
            "kind": "task",
            "id": f"{unit_id}-c",
            "version": 1,
            "unitId": unit_id,
            "unitType": unit_type,
            "workload": {"name": "software-development", "version": 1},
            "objective": objective,
            "constraintRefs": [],
            "fixed": [
                {
                    "id": "lang",
                    "subject": "language",
                    "decision": "Python 3, standard library only",
                    "authorityRef": "human:alice",
                }
            ],
            "delegated": [],
            "unresolved": [],
            "expectedEvidence": expected,
            "provenance": {
                "createdBy": "S3",
                "createdAt": clock().strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            },
        }
    )


TEST_EVIDENCE = [{"class": "test", "ref": "python3 -m unittest", "observation": "all tests pass"}]


# A session that does a unit's work and reports it, for driving a demo unit again from the
# room (``regulator room --demo`` offers it in the drive dialog).
FINISH_SCENARIO: dict[str, Any] = {
    "attempts": [
        {
            "steps": [
                {"edit": {"path": "NOTES.md", "content": "# notes\n\nDone by hand.\n"}},
                {"commit": "notes: what was done"},
                {"call": {"tool": "run_tests"}},
                {"usage": {"tokens": 8000, "cost": 0.04, "turns": 3}},
                {"report": {"summary": "done, and the tests pass", "evidence": TEST_EVIDENCE}},
            ]
        }
    ]
}


def write_finish_scenario(path: Path) -> Path:
    """``FINISH_SCENARIO`` as a YAML file at ``path`` (its directory made)."""
    import yaml

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(FINISH_SCENARIO, sort_keys=False), encoding="utf-8")
    return path


def _ask(kind: str, subject: str, question: str, **more: Any) -> dict[str, Any]:
    return {"ask": {"kind": kind, "subject": subject, "question": question, **more}}


@dataclass
class DemoUnit:
    contract: WorkContract
    scenario: dict[str, Any]


def story(clock: Clock) -> list[DemoUnit]:
    def c(unit_id: str, objective: str, **more: Any) -> WorkContract:
        return contract(unit_id, objective, clock=clock, **more)

    return [
        DemoUnit(
            c("fix-rounding", "add round_half_up to calc, with tests"),
            {
                "attempts": [
                    {
                        "steps": [
                            {"edit": {"path": "calc.py", "content": ROUND_BROKEN}},
                            {"edit": {"path": "tests/test_calc.py", "content": ROUND_TESTS}},
                            {"commit": "add round_half_up"},
                            {"usage": {"tokens": 42000, "cost": 0.21, "turns": 9}},
                            {"report": {"summary": "added round_half_up"}},
                        ]
                    },
                    {
                        "steps": [
                            {"edit": {"path": "calc.py", "content": ROUND_FIXED}},
                            {"commit": "round half away from zero"},
                            {"call": {"tool": "run_tests"}},
                            {"usage": {"tokens": 18000, "cost": 0.09, "turns": 4}},
                            {
                                "call": {
                                    "tool": "notify_owner",
                                    "input": {"message": "round_half_up is fixed and tested"},
                                }
                            },
                            {
                                "call": {
                                    "tool": "remember",
                                    "input": {
                                        "subject": "pip mirror",
                                        "note": "the package mirror is read-only on Fridays",
                                        "reviewBy": (clock() + timedelta(days=30)).strftime(
                                            "%Y-%m-%dT%H:%M:%S.000Z"
                                        ),
                                        "evidence": [{"class": "runtime", "ref": "pip install -v"}],
                                    },
                                }
                            },
                            {
                                "report": {
                                    "summary": "round_half_up rounds half away from zero",
                                    "evidence": TEST_EVIDENCE,
                                }
                            },
                        ]
                    },
                ]
            },
        ),
        DemoUnit(
            c("publish-release", "tag and publish release 1.2.0"),
            {
                "attempts": [
                    {
                        "steps": [
                            {"usage": {"tokens": 9000, "cost": 0.04, "turns": 3}},
                            _ask(
                                "consent",
                                "push the release tag",
                                (
                                    "May I push tag v1.2.0 to origin? "
                                    "It publishes the release to every user."
                                ),
                                action="git push origin v1.2.0",
                                evidence=[{"class": "file", "ref": "CHANGELOG.md"}],
                            ),
                        ]
                    }
                ]
            },
        ),
        DemoUnit(
            c("pick-storage", "persist calculation history"),
            {
                "attempts": [
                    {
                        "steps": [
                            {"usage": {"tokens": 12000, "cost": 0.05, "turns": 4}},
                            _ask(
                                "choice",
                                "where history is stored",
                                "History must survive restarts. Which store should I use?",
                                options=["sqlite file", "JSON lines file", "no persistence"],
                            ),
                        ]
                    }
                ]
            },
        ),
        DemoUnit(
            c("clarify-api", "expose mean() over HTTP"),
            {
                "attempts": [
                    {
                        "steps": [
                            _ask(
                                "clarification",
                                "empty input to mean()",
                                "What should mean([]) return over HTTP: 400, or 0?",
                            )
                        ]
                    }
                ]
            },
        ),
        DemoUnit(
            c("check-ui", "make the CLI output readable", semantic="output-readable"),
            {
                "attempts": [
                    {
                        "steps": [
                            {"usage": {"tokens": 30000, "cost": 0.15, "turns": 7}},
                            _ask(
                                "uat",
                                "the new CLI output",
                                "Does `python3 calc.py 2 3` print a result you find readable?",
                            ),
                        ]
                    }
                ]
            },
        ),
        DemoUnit(
            c("write-changelog", "write the changelog entry for 1.2.0"),
            {
                "attempts": [
                    {
                        "steps": [
                            {
                                "edit": {
                                    "path": "CHANGELOG.md",
                                    "content": "# 1.2.0\n\n- round_half_up\n",
                                }
                            },
                            {"commit": "changelog for 1.2.0"},
                            _ask(
                                "recap",
                                "changelog wording",
                                (
                                    "I grouped the changes under one heading and left out "
                                    "internal refactors; correct me if that is wrong."
                                ),
                            ),
                            {"report": {"summary": "changelog entry written"}},
                        ]
                    }
                ]
            },
        ),
        DemoUnit(
            c("flaky-import", "speed up the import path"),
            {
                "attempts": [
                    {
                        "steps": [
                            {"usage": {"tokens": 60000, "cost": 0.3, "turns": 12}},
                            {"end": "silent"},
                        ]
                    }
                ]
            },
        ),
        DemoUnit(
            c("build-docs", "build the HTML docs"),
            {"attempts": [{"steps": [{"fail": "command not found: mkdocs (missing dependency)"}]}]},
        ),
        DemoUnit(
            c("survey-deps", "survey what the project depends on", unit_type="research"),
            {
                "attempts": [
                    {
                        "steps": [
                            {
                                "call": {
                                    "tool": "report_intelligence",
                                    "input": {
                                        "subject": (
                                            "the HTTP framework we planned on is unmaintained"
                                        ),
                                        "claim": "its last release is two years old",
                                        "observation": (
                                            "no release since 2024; open security advisories"
                                        ),
                                        "confidence": "high",
                                        "reportedSeverity": "blocking",
                                        "evidence": [
                                            {"class": "runtime", "ref": "pip index versions"}
                                        ],
                                        "affectedUnits": ["clarify-api", "pick-storage"],
                                    },
                                }
                            },
                            {
                                "call": {
                                    "tool": "propose_policy_change",
                                    "input": {
                                        "subject": (
                                            "allow one vetted third-party dependency (INV-001)"
                                        ),
                                        "rationale": "the standard library has no HTTP router",
                                        "requestedChange": {
                                            "invariant": "INV-001",
                                            "allow": ["one vetted dependency"],
                                        },
                                    },
                                }
                            },
                            {"report": {"summary": "surveyed the dependencies; one is a risk"}},
                        ]
                    }
                ]
            },
        ),
    ]


# The shipped example people. Pinned to no OS user: the demo's files are the same on every
# machine (its screenshots show commit ids), and it is a demo, not an instance to trust.
DEMO_PEOPLE: list[dict[str, Any]] = [
    {"name": "alice", "resolveUpTo": "critical", "acceptRisk": True, "actAsS5": True},
    {"name": "bob", "resolveUpTo": "blocking", "acceptRisk": False, "actAsS5": False},
]
DEMO_PEOPLE_HEADING = (
    "The demo's interaction policy. alice and bob are examples: with no osUsers, anyone on\n"
    "this machine may act as them."
)


def build_demo(
    directory: Path,
    *,
    now: datetime | None = None,
    log: Callable[[str], None] = lambda _: None,
) -> Layout:
    """Make the demo instance in ``directory`` (new or empty); return its layout.

    The story ends at ``now`` (default: the real time), two simulated hours after it began.
    """
    directory.mkdir(parents=True, exist_ok=True)
    if any(directory.iterdir()):
        raise FileExistsError(f"{directory}: not empty; the demo makes a new repository")
    real_now = now or system_clock()
    sim = SimClock(real_now - timedelta(hours=2))
    tick: Clock = sim
    gitops.git(directory, "init", "--quiet", "--initial-branch=main")
    (directory / "calc.py").write_text(CALC, encoding="utf-8")
    (directory / "tests").mkdir()
    (directory / "tests" / "test_calc.py").write_text(CALC_TESTS, encoding="utf-8")
    (directory / "README.md").write_text(
        "# calc\n\nThe regulator demo project.\n", encoding="utf-8"
    )
    # Its own people, so that `init` (which would name only whoever runs the demo) keeps them.
    policies = directory / "regulator" / "policies"
    policies.mkdir(parents=True)
    (policies / "interaction.yaml").write_text(
        checked_interaction_policy(DEMO_PEOPLE, heading=DEMO_PEOPLE_HEADING), encoding="utf-8"
    )
    gitops.git(directory, "add", "-A")
    gitops.git(
        directory,
        *gitops.identity_args(directory),
        "commit",
        "--quiet",
        "-m",
        "calc: the demo project",
    )
    init_instance(directory, by="alice", clock=tick)
    layout = Layout(directory)
    definition = load_definition(directory)
    for unit in story(tick):
        sim.advance(9)
        log(f"driving {unit.contract.unit_id}")
        loop = Loop(
            layout,
            definition,
            adapters={"script": ScriptAdapter(unit.scenario)},
            clock=tick,
            models=MODELS,
            wait_for_person=False,
        )
        loop.drive(unit.contract)
    # A person commits straight to main and breaks the tests: the post-merge check holds
    # every unit through one obligation on the instance itself.
    sim.advance(20)
    (directory / "calc.py").write_text(
        ROUND_FIXED.replace("return a + b", "return a - b"), encoding="utf-8"
    )
    gitops.git(directory, "add", "calc.py")
    gitops.git(
        directory,
        *gitops.identity_args(directory),
        "commit",
        "--quiet",
        "-m",
        "hotfix: simplify add",
    )
    loop = Loop(layout, definition, clock=tick, models=MODELS, wait_for_person=False)
    loop.verify_base(f"after the hotfix commit {(gitops.head(directory) or '')[:7]}")
    loop._route()
    # Now, two hours after the first deliveries: the questions nobody answered are reminded.
    sim.now = max(sim.now, real_now)
    remind_due(loop.ledger, EffectJournal(layout, tick), layout, definition.interaction, tick)
    return layout


LIVE_QUESTIONS: list[tuple[str, dict[str, Any]]] = [
    (
        "consent",
        {
            "subject": "delete stale branches",
            "question": "May I delete the 4 merged branches older than 90 days?",
            "action": "git push origin --delete <4 branches>",
        },
    ),
    (
        "choice",
        {
            "subject": "log format",
            "question": "Which log format should the CLI write?",
            "options": ["plain text", "JSON lines"],
        },
    ),
    (
        "clarification",
        {"subject": "locale", "question": "Should numbers be formatted with the user's locale?"},
    ),
    ("uat", {"subject": "the help text", "question": "Does `calc --help` read well to you?"}),
]


def run_live(
    layout: Layout,
    *,
    every_s: float = 6.0,
    stop: Callable[[], bool] = lambda: False,
    log: Callable[[str], None] = lambda _: None,
) -> None:
    """Keep the demo moving on the real clock until ``stop()``."""
    definition = load_definition(layout.root)
    # Someone repairs the base the hotfix broke; S3 sees it green and lets units run again.
    root = layout.root
    (root / "calc.py").write_text(ROUND_FIXED, encoding="utf-8")
    if gitops.status_lines(root):
        gitops.git(root, "add", "calc.py")
        gitops.git(
            root, *gitops.identity_args(root), "commit", "--quiet", "-m", "revert the hotfix"
        )
    Loop(layout, definition, models=MODELS).verify_base("after the revert")
    log("live: the base is green again; every dispatch may proceed")
    counter = itertools.count(1)
    rng = random.Random(7)
    pending: dict[str, WorkContract] = {}
    last = 0.0
    while not stop():
        now = time.monotonic()
        if now - last >= every_s:
            last = now
            n = next(counter)
            kind, question = LIVE_QUESTIONS[(n - 1) % len(LIVE_QUESTIONS)]
            unit_id = f"live-{n:03d}"
            work = contract(unit_id, f"live unit {n}: {question['subject']}")
            scenario = {
                "attempts": [
                    {
                        "steps": [
                            {
                                "usage": {
                                    "tokens": rng.randint(5000, 40000),
                                    "cost": 0.05,
                                    "turns": 3,
                                }
                            },
                            {"ask": {"kind": kind, **question}},
                            {"report": {"summary": f"done after the {kind} was answered"}},
                        ]
                    },
                    {"steps": [{"report": {"summary": "done, as the person answered"}}]},
                ]
            }
            pending[unit_id] = work
            log(f"live: {unit_id} asks a {kind} question")
            loop = Loop(
                layout, definition, adapters={"script": ScriptAdapter(scenario)}, models=MODELS
            )
            _drive_quietly(loop, work)
        # Units whose question was answered (or whose obligations were dispositioned) go on.
        for unit_id, work in list(pending.items()):
            if stop():
                return
            loop = Loop(
                layout,
                definition,
                adapters={
                    "script": ScriptAdapter(
                        {
                            "attempts": [
                                {"steps": [{"report": {"summary": "done, as the person answered"}}]}
                            ]
                        }
                    )
                },
                models=MODELS,
            )
            unit = loop.store.find_unit(unit_id)
            if unit is None or unit.status in ("closed", "aborted"):
                pending.pop(unit_id, None)
                continue
            if unit.status == "blocked" and not loop.gate(work):
                log(f"live: {unit_id} may proceed; driving it again")
                _drive_quietly(loop, work)
        time.sleep(0.5)


def _drive_quietly(loop: Loop, work: WorkContract) -> None:
    try:
        loop.drive(work)
    except Exception:  # a live demo step that fails must not end the demo
        return
