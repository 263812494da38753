"""What an answer means: only listed words answer a consent or a uat, a choice by its option,
number or unique prefix, and an unclear answer is refused with nothing written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from regulator.host.instance import os_user
from regulator.policy import load_definition
from regulator.rules import answers
from regulator.rules.answers import AnswerRefused, interpret
from regulator.rules.asking import ask
from regulator.rules.dispositions import Refusal
from regulator.rules.dispositions import answer as answer_obligation
from regulator.rules.ledger import Actor, Ledger
from regulator.rules.regulatory_log import RegulatoryLog
from regulator.store import Layout

from .conftest import cli

POLICY = load_definition(None).interaction
ACTOR = Actor("cli", os_user())
OPTIONS = ["sqlite file", "JSON lines file", "no persistence"]


def ask_one(root: Path, kind: str, **fields: Any) -> str:
    if kind == "consent":
        fields.setdefault("action", "git push origin v1.2.0")
    if kind == "choice":
        fields.setdefault("options", OPTIONS)
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


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in (root / ".regulator").rglob("*") if p.is_file()}


def recorded(root: Path, oid: str) -> tuple[Any, Any]:
    """The obligation as folded and the answer recorded on its interaction."""
    log = RegulatoryLog(Layout(root))
    log.refresh()
    interaction = log.interaction_for(oid)
    assert interaction is not None
    said = [a for a in interaction.answers if a.outcome == "answered"]
    return log.obligations[oid], (said[-1] if said else None)


# --- the words, without a ledger -----------------------------------------------------------


@pytest.mark.parametrize("kind", ["consent", "uat"])
@pytest.mark.parametrize("word", answers.NO_WORDS)
def test_every_no_word_refuses_a_consent_or_a_uat(kind: str, word: str) -> None:
    for spelled in (word, word.upper(), f"  {word.capitalize()} "):
        assert interpret(kind, spelled).disposition == "rejected", spelled


def test_no_is_never_a_yes_for_any_kind_that_asks_for_one() -> None:
    # The mutation this pins: "no" (or any no-word) slipped into the yes-words.
    for kind in ("consent", "uat"):
        assert not any(answers.is_yes(w, kind) for w in answers.no_words(kind))
        assert not any(answers.is_no(w, kind) for w in answers.yes_words(kind))
        assert answers.disposition_for_answer(kind, "no") == "rejected"


@pytest.mark.parametrize("word", answers.YES_WORDS)
def test_every_yes_word_authorizes_a_consent_and_verifies_a_uat(word: str) -> None:
    assert interpret("consent", word).disposition == "accepted"
    assert interpret("uat", word.upper()).disposition == "verified"


@pytest.mark.parametrize("word", ["verified", "Verify", "pass", "PASSED"])
def test_verified_and_passed_are_yes_for_a_uat_but_not_for_a_consent(word: str) -> None:
    assert interpret("uat", word).disposition == "verified"
    with pytest.raises(AnswerRefused, match="neither"):
        interpret("consent", word)


@pytest.mark.parametrize(
    "said",
    ["looks fine", "yes but only on staging", "no, go ahead", "yess", "sure", "nah", "y es", "."],
)
@pytest.mark.parametrize("kind", ["consent", "uat"])
def test_an_answer_that_is_neither_a_yes_nor_a_no_word_is_refused(kind: str, said: str) -> None:
    with pytest.raises(AnswerRefused) as refused:
        interpret(kind, said)
    message = str(refused.value)
    assert "\n" not in message and f'"{said.strip()}" is neither' in message
    assert all(w in message for w in answers.yes_words(kind) + answers.no_words(kind))
    assert answers.disposition_for_answer(kind, said) is None


@pytest.mark.parametrize("kind", ["consent", "uat", "choice", "clarification", "recap"])
def test_silence_is_not_an_answer_for_any_kind(kind: str) -> None:
    for said in ("", "   ", "\n\t"):
        with pytest.raises(AnswerRefused, match="silence is not an answer"):
            interpret(kind, said, OPTIONS if kind == "choice" else None)


@pytest.mark.parametrize(
    ("said", "option"),
    [
        ("JSON lines file", "JSON lines file"),
        ("json LINES file", "JSON lines file"),
        ("2", "JSON lines file"),
        ("3", "no persistence"),
        ("sq", "sqlite file"),
        ("Json", "JSON lines file"),
        (" no ", "no persistence"),
    ],
)
def test_a_choice_is_answered_by_its_option_its_number_or_a_unique_prefix(
    said: str, option: str
) -> None:
    assert interpret("choice", said, OPTIONS) == answers.Meaning(option, "fixed")


@pytest.mark.parametrize("said", ["0", "4", "-1", "²", "postgres", "file"])
def test_a_choice_answered_with_nothing_it_offers_is_refused(said: str) -> None:
    with pytest.raises(AnswerRefused, match="is not one of them"):
        interpret("choice", said, OPTIONS)


def test_an_ambiguous_prefix_or_number_is_refused() -> None:
    with pytest.raises(AnswerRefused, match="could be"):
        interpret("choice", "s", ["staging", "Production", "sandbox"])
    # "2" is both the second option's number and the start of the third: ambiguous.
    with pytest.raises(AnswerRefused, match="could be"):
        interpret("choice", "2", ["1 day", "2 days", "20 days"])
    # The whole option wins over any reading as a prefix or a number.
    assert interpret("choice", "2", ["1", "2", "20"]).answer == "2"


def test_a_clarification_takes_any_text_as_fixed() -> None:
    assert interpret("clarification", "  return 400  ") == answers.Meaning("return 400", "fixed")


def test_the_room_preview_says_what_an_answer_becomes_and_never_raises() -> None:
    assert answers.preview("uat", "Verified") == "will be recorded as verified: Verified"
    assert answers.preview("consent", "looks fine").startswith("not an answer yet:")
    assert answers.preview("choice", "2", OPTIONS).endswith(": JSON lines file")


# --- through the core function the CLI and the room share ------------------------------------


def test_a_refused_word_writes_nothing(instance: Path) -> None:
    oid = ask_one(instance, "consent")
    before = snapshot(instance)
    with pytest.raises(Refusal, match="neither"):
        answer_obligation(Ledger(Layout(instance)), POLICY, oid, "alice", ACTOR, "looks fine")
    assert snapshot(instance) == before


def test_a_note_travels_with_the_answer_into_the_rationale_and_the_answer_record(
    instance: Path,
) -> None:
    oid = ask_one(instance, "consent")
    done = answer_obligation(
        Ledger(Layout(instance)), POLICY, oid, "alice", ACTOR, "No", note="after the freeze"
    )
    assert done.disposition == "rejected" and done.answer == "No — after the freeze"
    state, said = recorded(instance, oid)
    assert state.disposition == "rejected" and state.rationale == "No — after the freeze"
    assert said.answer == "No — after the freeze" and said.by == "alice"


def test_a_choice_answered_by_number_records_the_option_itself(instance: Path) -> None:
    oid = ask_one(instance, "choice")
    answer_obligation(Ledger(Layout(instance)), POLICY, oid, "alice", ACTOR, "2")
    state, said = recorded(instance, oid)
    assert said.answer == "JSON lines file" == state.rationale and state.disposition == "fixed"


# --- from the shell ------------------------------------------------------------------------


def test_answer_verified_on_a_uat_is_recorded_verified_from_the_cli(instance: Path) -> None:
    oid = ask_one(instance, "uat")
    result = cli("answer", oid[:8], "--by", "alice", "--answer", "verified", cwd=instance)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("uat answered by alice (verified): verified")
    assert recorded(instance, oid)[0].disposition == "verified"


def test_answer_looks_fine_on_a_uat_is_refused_in_one_line_listing_the_words(
    instance: Path,
) -> None:
    oid = ask_one(instance, "uat")
    before = snapshot(instance)
    result = cli("answer", oid[:8], "--by", "alice", "--answer", "looks fine", cwd=instance)
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("regulator: a uat is answered yes or no")
    assert "verified" in lines[0] and "failed" in lines[0]
    assert snapshot(instance) == before
    assert recorded(instance, oid)[0].status == "open"


def test_answer_no_with_a_note_from_the_cli_is_rejected_and_keeps_the_reason(
    instance: Path,
) -> None:
    oid = ask_one(instance, "consent")
    result = cli(
        "answer", oid, "--by", "alice", "--answer", "no", "--note", "tag after QA", cwd=instance
    )
    assert result.returncode == 0, result.stderr
    assert "(rejected): no — tag after QA" in result.stdout
    listed = json.loads(cli("obligations", "--all", "--json", cwd=instance).stdout)
    assert next(o for o in listed if o["id"] == oid)["rationale"] == "no — tag after QA"


def test_a_choice_answered_by_an_ambiguous_prefix_from_the_cli_writes_nothing(
    instance: Path,
) -> None:
    oid = ask_one(instance, "choice", options=["staging", "sandbox", "production"])
    before = snapshot(instance)
    result = cli("answer", oid[:8], "--by", "alice", "--answer", "s", cwd=instance)
    assert result.returncode == 1 and '"s" could be staging | sandbox' in result.stderr
    assert snapshot(instance) == before
    ok = cli("answer", oid[:8], "--by", "alice", "--answer", "3", cwd=instance)
    assert ok.returncode == 0 and "(fixed): production" in ok.stdout


def test_answer_help_lists_every_accepted_word(tmp_path: Path) -> None:
    result = cli("answer", "--help", cwd=tmp_path)
    assert result.returncode == 0
    words = {w.strip(",") for w in result.stdout.split()}
    for kind in ("consent", "uat"):
        missing = set(answers.yes_words(kind) + answers.no_words(kind)) - words
        assert not missing, missing
    assert "--note" in result.stdout and "number" in result.stdout


# --- lookalikes: case is ignored in ASCII letters only ---------------------------------------

# Each folds (str.casefold, and for some str.lower) onto a listed word; none is that word.
LOOKALIKES = [
    "yeſ",  # long s: casefolds to "yes"
    "YEſ",
    "o\u212a",  # Kelvin sign: lowers and casefolds to "k"
    "\u212aO",
    "acceptеd",  # Cyrillic e
    "уes",  # Cyrillic u
    "ｙｅｓ",  # fullwidth
    "y\u200bes",  # a zero-width space inside
    "proceed\u200d",
    "\u0131",  # dotless i, nothing like it listed but its upper is "I"
]


@pytest.mark.parametrize("kind", ["consent", "uat"])
@pytest.mark.parametrize("said", [*LOOKALIKES, "ſtop", "abort\u200b", "o\u212aay"])
def test_a_lookalike_of_a_listed_word_is_neither_a_yes_nor_a_no(kind: str, said: str) -> None:
    assert not answers.is_yes(said, kind) and not answers.is_no(said, kind)
    assert answers.disposition_for_answer(kind, said) is None
    with pytest.raises(AnswerRefused, match="is neither") as refused:
        interpret(kind, said)
    assert all(w in str(refused.value) for w in answers.yes_words(kind))


def test_a_lookalike_yes_from_the_cli_is_refused_and_writes_nothing(instance: Path) -> None:
    oid = ask_one(instance, "consent")
    before = snapshot(instance)
    result = cli("answer", oid[:8], "--by", "alice", "--answer", "yeſ", cwd=instance)
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and '"yeſ" is neither' in lines[0], result.stderr
    assert snapshot(instance) == before
    assert recorded(instance, oid)[0].status == "open"


@pytest.mark.parametrize(
    ("said", "options"),
    [
        # Typed plain letters never pick an option spelled with a lookalike…
        ("ship", ["ſhip it", "wait"]),
        ("ok", ["o\u212a to drop the table", "keep it"]),
        ("fine", ["ﬁne", "not fine"]),
        # …and a lookalike typed never picks the plain option.
        ("ſ", ["ship", "stay"]),
        ("\u212aeep", ["keep", "drop"]),
    ],
)
def test_a_choice_matches_lookalike_letters_only_as_themselves(
    said: str, options: list[str]
) -> None:
    with pytest.raises(AnswerRefused, match="is not one of them"):
        interpret("choice", said, options)


def test_a_choice_still_takes_its_own_non_ascii_option_and_ascii_case() -> None:
    options = ["ſhip it", "Straße", "wait"]
    assert interpret("choice", "ſhip it", options).answer == "ſhip it"
    assert interpret("choice", "ſh", options).answer == "ſhip it"
    assert interpret("choice", "strAße", options).answer == "Straße"
    assert interpret("choice", "WAIT", options).answer == "wait"
    # A number counts only in ASCII digits: "２" (fullwidth) is no number.
    with pytest.raises(AnswerRefused, match="is not one of them"):
        interpret("choice", "２", options)
