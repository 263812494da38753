"""Silence is not consent: no path — a timeout, a cancel, an empty answer, a crash, an unclear
word — records consent or acceptance without an explicit yes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from regulator.host.tools import answer_result
from regulator.policy import load_definition
from regulator.protocol.interaction import InteractionRequest
from regulator.rules.answers import NO_WORDS, UAT_NO_WORDS, UAT_YES_WORDS, YES_WORDS
from regulator.rules.asking import Asked, ask
from regulator.rules.dispositions import Refusal, answer
from regulator.rules.ledger import Actor, Ledger, Transaction
from regulator.store import Layout

REPO = Path(__file__).resolve().parents[1]
POLICY = load_definition(None).interaction
assert POLICY is not None
ACTOR = Actor(via="cli")
YES = {"consent": "accepted", "uat": "verified"}
# Written out here, not read from the module: a word slipped into its list must fail this test.
EXPLICIT_YES = frozenset(
    {"y", "yes", "approve", "approved", "ok", "okay", "confirm", "confirmed", "accept"}
    | {"accepted", "proceed"}
)
UAT_EXPLICIT_YES = EXPLICIT_YES | {"verified", "verify", "pass", "passed"}


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    (tmp_path / ".regulator").mkdir()
    return Layout(tmp_path, env={})


def ask_kind(ledger: Ledger, kind: str) -> Asked:
    extra = {"action": "git push origin v1.2.0"} if kind == "consent" else {}
    return ask(ledger, POLICY, kind=kind, subject=f"a {kind}", question="may I?", **extra)


def acceptances(layout: Layout) -> list[str]:
    """Every resolution that says yes (consent given, a check verified), from the file."""
    if not layout.signals.exists():
        return []
    return [
        line["disposition"]
        for line in map(orjson.loads, layout.signals.read_bytes().splitlines())
        if line["type"] == "obligation-resolved" and line["disposition"] in YES.values()
    ]


@pytest.mark.parametrize("kind", ["consent", "uat"])
@pytest.mark.parametrize("outcome", ["timed-out", "cancelled", "unavailable"])
def test_a_question_left_unanswered_stays_open_and_records_no_yes(
    layout: Layout, kind: str, outcome: str
) -> None:
    ledger = Ledger(layout)
    asked = ask_kind(ledger, kind)
    with ledger.transaction() as txn:
        txn.answer_interaction(asked.request.id, outcome=outcome, by="S1", channel="none")
    ledger.refresh()
    state = ledger.log.obligations[asked.obligation.id]
    assert state.status == "open" and state.disposition is None
    interaction = ledger.log.interaction_for(state.id)
    assert interaction is not None and not interaction.answered
    assert acceptances(layout) == []


@pytest.mark.parametrize("kind", ["consent", "uat"])
@pytest.mark.parametrize("text", ["", " ", "\n", "\t \r\n", "\u3000"])
def test_an_empty_answer_is_refused_and_writes_nothing(
    layout: Layout, kind: str, text: str
) -> None:
    ledger = Ledger(layout)
    asked = ask_kind(ledger, kind)
    before = layout.signals.read_bytes()
    with pytest.raises(Refusal, match="silence is not an answer"):
        answer(ledger, POLICY, asked.obligation.id, "alice", ACTOR, text)
    assert layout.signals.read_bytes() == before
    assert not layout.provenance.exists() or b"alice" not in layout.provenance.read_bytes()


ALMOST_YES = [
    "yes but only on staging",
    "yes!",
    "yess",
    "not yes",
    "y e s",
    "y\u0435s",  # a Cyrillic е
    "ye\u200bs",
    "yes\x00",
    "sure",
    "go ahead",
    "looks fine",
    "👍",
    "1",
    "true",
]


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    kind=st.sampled_from(["consent", "uat"]),
    text=st.one_of(
        st.sampled_from(ALMOST_YES),
        st.sampled_from([*YES_WORDS, *UAT_YES_WORDS, *NO_WORDS, *UAT_NO_WORDS]).flatmap(
            lambda w: st.sampled_from([w, w.upper(), f" {w} ", f"{w}.", f"{w} {w}", f"no {w}"])
        ),
        st.text(max_size=12),
    ),
)
def test_only_a_listed_yes_word_is_recorded_as_consent_or_acceptance(
    tmp_path_factory: pytest.TempPathFactory, kind: str, text: str
) -> None:
    root = tmp_path_factory.mktemp("silence")
    (root / ".regulator").mkdir()
    layout = Layout(root, env={})
    ledger = Ledger(layout)
    asked = ask_kind(ledger, kind)
    before = layout.signals.read_bytes()
    explicit_yes = text.strip().casefold() in (UAT_EXPLICIT_YES if kind == "uat" else EXPLICIT_YES)
    try:
        done = answer(ledger, POLICY, asked.obligation.id, "alice", ACTOR, text)
    except Refusal:
        assert not explicit_yes, f"a yes-word refused: {text!r}"
        assert layout.signals.read_bytes() == before, "a refusal writes nothing"
        return
    assert (done.disposition == YES[kind]) == explicit_yes, (text, done.disposition)
    assert acceptances(layout) == ([YES[kind]] if explicit_yes else [])


def test_an_answer_whose_resolution_fails_midway_records_nothing(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = Ledger(layout)
    asked = ask_kind(ledger, "consent")
    before = layout.signals.read_bytes()

    def crash(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt  # between recording the answer and resolving by it

    monkeypatch.setattr(Transaction, "resolve", crash)
    with pytest.raises(KeyboardInterrupt):
        answer(ledger, POLICY, asked.obligation.id, "alice", ACTOR, "yes")
    assert layout.signals.read_bytes() == before, "no answer without its resolution"


KILLED_ANSWER = """
    import os, signal, sys
    from pathlib import Path
    from regulator.rules.dispositions import answer
    from regulator.rules.ledger import Actor, Ledger, Transaction
    from regulator.policy import load_definition
    from regulator.store import Layout

    Transaction.resolve = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
    ledger = Ledger(Layout(Path(sys.argv[1]), env={}))
    answer(ledger, load_definition(None).interaction, sys.argv[2], "alice", Actor(via="cli"),
           "yes")
"""


def test_a_process_killed_while_answering_yes_leaves_the_question_open(layout: Layout) -> None:
    ledger = Ledger(layout)
    asked = ask_kind(ledger, "consent")
    before = layout.signals.read_bytes()
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(KILLED_ANSWER),
            str(layout.root),
            asked.obligation.id,
        ],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        timeout=120,
    )
    assert child.returncode == -9, child.stderr
    assert layout.signals.read_bytes() == before
    ledger.refresh()
    assert ledger.log.obligations[asked.obligation.id].status == "open"


def _request(kind: str) -> InteractionRequest:
    return InteractionRequest.from_json_dict(
        {
            "id": "rq-1",
            "kind": kind,
            "subject": "s",
            "question": "q?",
            "action": "git push" if kind == "consent" else None,
            "severity": "blocking",
            "obligationId": "ob-1",
            "evidence": [],
            "raisedBy": "S1",
            "raisedAt": "2026-12-01T10:00:00.000Z",
            "timeoutMs": 1000,
            "channel": "tui",
        }
    )


@pytest.mark.parametrize("resolution", [None, "rejected", "fixed", "accepted-risk", "verified"])
@pytest.mark.parametrize("said", ["yes", "approve", ""])
def test_the_agent_is_told_consent_only_when_the_resolution_says_accepted(
    resolution: str | None, said: str
) -> None:
    # Even an answer reading "yes" gives no consent without a resolution that accepted it.
    resolved = None if resolution is None else {"disposition": resolution}
    told = answer_result(_request("consent"), {"by": "alice", "answer": said}, resolved)
    assert "may perform" not in told["message"] and "do NOT perform" in told["message"]
    accepted = answer_result(
        _request("consent"), {"by": "alice", "answer": said}, {"disposition": "accepted"}
    )
    assert "may perform" in accepted["message"]
