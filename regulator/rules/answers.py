"""What an answer to a unit's question means (docs/design.md#answers), decided before anything is
written, the same way for the CLI and the control room.

A consent or a uat is answered with a listed yes-word or a listed no-word, and nothing else:
the original recorded every other answer as ``rejected``, so ``verified`` or ``looks fine``
silently became the opposite of what the person meant. Now such an answer is refused, with the
words that are accepted. Only an explicit yes counts as consent or acceptance; silence never
reaches this module (no answer is no disposition). A reason travels beside the answer as a
note, never inside it: ``yes but only on staging`` is not a yes-word, and is refused.

A choice is answered with one of its options: the option itself, its number (1-based) or a
prefix of it that no other option shares. Every other kind is free text, recorded as ``fixed``.

Case is ignored in ASCII letters only. Unicode case folding maps lookalikes onto plain letters
(``yeſ`` with a long s, ``o\u212a`` with a Kelvin sign, ``ﬁne`` with a ligature all fold to
ASCII), so an answer a person would not read as the word, or text an agent planted for them to
paste, could count as it. A word with any other letter is neither a yes nor a no, and a
non-ASCII letter of a choice matches only itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from regulator.protocol.errors import Refused
from regulator.protocol.text import visible

# The original's yes-words: each counts as yes for a consent and for a uat.
YES_WORDS: tuple[str, ...] = (
    "y",
    "yes",
    "approve",
    "approved",
    "ok",
    "okay",
    "confirm",
    "confirmed",
    "accept",
    "accepted",
    "proceed",
)
# A uat is a check a person made: these say it passed (the room's button reads "Verified").
UAT_YES_WORDS: tuple[str, ...] = ("verified", "verify", "pass", "passed")
NO_WORDS: tuple[str, ...] = (
    "n",
    "no",
    "reject",
    "rejected",
    "deny",
    "denied",
    "decline",
    "declined",
    "refuse",
    "refused",
    "stop",
    "abort",
)
UAT_NO_WORDS: tuple[str, ...] = ("fail", "failed")

YES_NO_KINDS: tuple[str, ...] = ("consent", "uat")

# A word on both lists would make "no" a yes for someone: refuse to run at all.
# Each word is written in lower-case ASCII, as ``is_yes`` compares it.
_BOTH = set(YES_WORDS + UAT_YES_WORDS) & set(NO_WORDS + UAT_NO_WORDS)
if _BOTH:
    raise RuntimeError(f"answer words on both the yes and the no list: {sorted(_BOTH)}")
_ALL = YES_WORDS + UAT_YES_WORDS + NO_WORDS + UAT_NO_WORDS
_NOT_PLAIN = [w for w in _ALL if not w.isascii() or w != w.lower()]
if _NOT_PLAIN:
    raise RuntimeError(f"answer words not in lower-case ASCII: {_NOT_PLAIN}")

_YES_DISPOSITION = {"consent": "accepted", "uat": "verified"}


class AnswerRefused(Refused):
    """An answer that does not say what it means; nothing was written. (Not a LedgerError,
    so that ``--help`` can list the words without importing the ledger.)"""


@dataclass(frozen=True)
class Meaning:
    """What an answer will be recorded as."""

    answer: str  # the answer as recorded (a choice: the option's full text)
    disposition: str  # accepted / verified / rejected for consent and uat; fixed otherwise


def yes_words(kind: str) -> tuple[str, ...]:
    return YES_WORDS + UAT_YES_WORDS if kind == "uat" else YES_WORDS


def no_words(kind: str) -> tuple[str, ...]:
    return NO_WORDS + UAT_NO_WORDS if kind == "uat" else NO_WORDS


def accepted_words(kind: str) -> str:
    """``yes: y, yes, …; no: n, no, …`` for a consent or a uat (what a refusal lists)."""
    return f"yes: {', '.join(yes_words(kind))}; no: {', '.join(no_words(kind))}"


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def fold(text: str) -> str:
    """``text`` with its ASCII letters lowered and every other character as it is: the only
    case-insensitivity an answer gets (``str.lower`` too maps the Kelvin sign to ``k``)."""
    return text.translate(_ASCII_LOWER)


def _is_word(answer: str, words: tuple[str, ...]) -> bool:
    said = answer.strip()
    return said.isascii() and fold(said) in words


def is_yes(answer: str, kind: str = "consent") -> bool:
    """The whole answer, trimmed, is a yes-word for ``kind`` (case-insensitive in ASCII)."""
    return _is_word(answer, yes_words(kind))


def is_no(answer: str, kind: str = "consent") -> bool:
    """The whole answer, trimmed, is a no-word for ``kind`` (case-insensitive in ASCII)."""
    return _is_word(answer, no_words(kind))


def interpret(kind: str, text: str, options: Sequence[str] | None = None) -> Meaning:
    """What ``text`` means as an answer to a question of ``kind``; ``AnswerRefused`` when it
    is empty, neither a yes nor a no for a consent or a uat, or not one option of a choice."""
    said = text.strip()
    quoted = visible(said)  # a refusal quotes it: shown, never acted on, on one line
    if not said:
        raise AnswerRefused("an answer cannot be empty: silence is not an answer")
    if kind in YES_NO_KINDS:
        if is_yes(said, kind):
            return Meaning(said, _YES_DISPOSITION[kind])
        if is_no(said, kind):
            return Meaning(said, "rejected")
        raise AnswerRefused(
            f'a {kind} is answered yes or no, and "{quoted}" is neither; {accepted_words(kind)} '
            "(a reason goes in a note)"
        )
    if options:
        return Meaning(_option(said, quoted, options), "fixed")
    return Meaning(said, "fixed")


def _option(said: str, quoted: str, options: Sequence[str]) -> str:
    if said in options:
        return said
    folded = fold(said)
    exact = [o for o in options if fold(o) == folded]
    if len(exact) == 1:
        return exact[0]
    # A number and a prefix may point at different options ("2" among "1 day", "2 days", "20
    # days"): every reading counts, and more than one is ambiguous.
    found = exact or [o for o in options if fold(o).startswith(folded)]
    if said.isascii() and said.isdigit() and 1 <= int(said) <= len(options):
        found.append(options[int(said) - 1])
    distinct = list(dict.fromkeys(found))
    if len(distinct) == 1:
        return distinct[0]
    offered = " | ".join(visible(o) for o in options)
    if distinct:
        matches = " | ".join(visible(o) for o in distinct)
        raise AnswerRefused(
            f'"{quoted}" could be {matches}: give more of the option, or its number'
        )
    # The original's words; `answer --help` says a number or a unique prefix works too.
    raise AnswerRefused(f'the question offers {offered}; "{quoted}" is not one of them')


def with_note(answer: str, note: str | None) -> str:
    """The answer with a person's note beside it, as the rationale and the recorded answer."""
    reason = (note or "").strip()
    return f"{answer} — {reason}" if reason else answer


def disposition_for_answer(kind: str, answer: str) -> str | None:
    """The disposition ``answer`` would be recorded as: for a consent or a uat ``None`` when it
    is neither a yes nor a no (``answer`` refuses it); ``fixed`` for every other kind."""
    if kind in YES_NO_KINDS:
        if is_yes(answer, kind):
            return _YES_DISPOSITION[kind]
        return "rejected" if is_no(answer, kind) else None
    return "fixed"


def preview(kind: str, text: str, options: Sequence[str] | None = None) -> str:
    """One line saying what ``text`` would be recorded as, or why it would be refused: for a
    dialog to show before anything is sent. Never raises."""
    try:
        meaning = interpret(kind, text, options)
    except AnswerRefused as exc:
        return f"not an answer yet: {exc}"
    return f"will be recorded as {meaning.disposition}: {meaning.answer}"
