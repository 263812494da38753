"""Secrets: canaries (nested and overlapping ones whole) and credential-shaped strings never
reach ``status``, as text or as JSON."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from regulator.rules.asking import ask
from regulator.rules.ledger import Ledger
from regulator.store import Layout, append_lines
from regulator.views.redaction import REDACTED, Redactor

from .conftest import cli, git
from .factory import append, message

# Built from parts, so that no credential-shaped literal sits in the repository.
GITHUB = "ghp_" + "16C7e42F292c6912E7710c838347Ae178B4a"
AWS = "AKIA" + "IOSFODNN7EXAMPLE"
INNER = "CANARY-inner-5e1f0c9a"
OUTER = f"outer-{INNER}-tail-77d2"  # a canary holding another one


# --- nested and overlapping canaries -------------------------------------------------------


def test_a_canary_containing_another_canary_is_redacted_whole() -> None:
    # The containing one must win wherever the two start together or apart: as a prefix, in
    # the middle, as a suffix.
    cases = {
        f"{INNER}-and-more-secret": INNER,
        OUTER: INNER,
        f"leading-{INNER}": INNER,
    }
    for outer, inner in cases.items():
        for redactor in (Redactor([inner, outer]), Redactor([outer, inner])):
            out = redactor.redact(f"see {outer} now")
            assert out == f"see {REDACTED} now", (outer, out)


def test_overlapping_canaries_are_both_covered_and_nothing_of_either_shows() -> None:
    first, second = "ALPHA-1234-BETA", "BETA-5678-GAMMA"  # "BETA" is shared
    out = Redactor([first, second]).redact(f"x ALPHA-1234-BETA-5678-GAMMA y {second} z")
    assert out == f"x {REDACTED} y {REDACTED} z"


def test_nesting_holds_with_many_canaries_too() -> None:
    # Past a handful of canaries the redactor scans with one pattern instead of substring
    # tests first: the same answer.
    many = [f"filler-canary-{i:04d}" for i in range(40)]
    redactor = Redactor([*many, INNER, OUTER])
    assert redactor.redact(f"[{OUTER}]") == f"[{REDACTED}]"
    assert redactor.redact(f"[{INNER}-and-more]") == f"[{REDACTED}-and-more]"


@settings(max_examples=200, deadline=None)
@given(
    inner=st.text("ABCDEFGH0123456789", min_size=8, max_size=16),
    before=st.text("ABCDEFGH0123456789", max_size=8),
    after=st.text("ABCDEFGH0123456789", max_size=8),
    left=st.text("abc xyz.", max_size=20),
    right=st.text("abc xyz.", max_size=20),
)
def test_any_canary_nested_in_another_leaves_only_the_surrounding_text(
    inner: str, before: str, after: str, left: str, right: str
) -> None:
    outer = before + inner + after
    for order in ((inner, outer), (outer, inner)):
        assert Redactor(order).redact(left + outer + right) == left + REDACTED + right


# --- status over an instance full of secrets ------------------------------------------------


def test_canaries_and_credentials_never_appear_in_status_text_or_json(
    repo: Path,
) -> None:
    (repo / ".env").write_text(f"API_TOKEN={OUTER}\nINNER_SECRET={INNER}\n", encoding="utf-8")
    git(repo, "add", ".env")
    git(repo, "commit", "--quiet", "-m", "env")
    assert cli("init", "--by", "alice", cwd=repo).returncode == 0
    layout = Layout(repo)
    ledger = Ledger(layout)
    # Everywhere a record carries text an agent wrote: a signal still unrouted, an obligation's
    # subject and question, a question and its answer, and a bad line the problems list quotes.
    append(
        layout.signals,
        message("operational-signal", f"token {OUTER} leaked", observation=f"saw {GITHUB}"),
    )
    ledger.open_obligation(
        subject=f"rotate {AWS} and {INNER}",
        concern="operational-signal",
        sources=["m-secret"],
        severity="blocking",
        consumer="human",
        blocks=True,
        question=f"is {GITHUB} still live? password={INNER}x",
    )
    asked = ask(
        ledger,
        None,
        kind="clarification",
        subject=f"about {OUTER}",
        question=f"Authorization: Bearer {GITHUB}",
    )
    with ledger.transaction() as txn:
        txn.answer_interaction(
            asked.request.id, outcome="answered", by="alice", channel="cli", answer=OUTER
        )
    append_lines(layout.signals, [f'{{"kind": "broken", "subject": "{OUTER}"'.encode()])

    secrets = [OUTER, INNER, GITHUB, AWS, OUTER[-12:]]
    for args in (("status",), ("status", "--json")):
        result = cli(*args, cwd=repo)
        assert result.returncode in (0, 1), result.stderr
        shown = result.stdout + result.stderr
        assert "rotate" in shown or "about" in shown  # the records are there, their secrets not
        for secret in secrets:
            assert secret not in shown, f"{' '.join(args)} shows {secret}"
