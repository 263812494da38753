"""The inbox filter: free text plus qualifiers, as a person types it into ``/``.

``consent unit:u-42 is:blocking !is:acknowledged`` keeps obligations whose text holds
"consent", on unit u-42, at blocking or above, and not acknowledged. Qualifiers: ``is:`` a
severity (at or above), a status, ``veto`` or ``new``; ``kind:`` the question's kind;
``concern:``, ``unit:``, ``owed:`` (consumer) and ``instance:``. ``!`` negates a term.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from regulator.protocol.obligations import ObligationState
from regulator.protocol.vocab import (
    OBLIGATION_STATUSES,
    SEVERITIES,
    SEVERITY_ORDER,
    TERMINAL_STATUSES,
)


@dataclass(frozen=True, slots=True)
class Context:
    instance: str
    kind: str | None
    new: bool
    # The row's searchable text, lowercased (kept by the caller between keystrokes).
    text: str = ""


def haystack(o: ObligationState, instance: str) -> str:
    """What free text matches against: an obligation's words, lowercased, once."""
    parts = [o.id, o.subject, o.question or "", o.concern, o.unit or "", o.consumer]
    return " ".join([*parts, o.status, o.severity, instance]).lower()


Predicate = Callable[[ObligationState, Context], bool]


def _qualifier(term: str) -> Predicate | None:
    """The test a qualifier (``is:``, ``kind:``, …) makes; None when ``term`` is free text."""
    key, sep, value = term.partition(":")
    value = value.lower()
    if sep and key == "is":
        if value in SEVERITIES:
            return lambda o, c: SEVERITY_ORDER[o.severity] >= SEVERITY_ORDER[value]
        if value in OBLIGATION_STATUSES:
            return lambda o, c: o.status == value
        if value == "veto":
            return lambda o, c: o.blocks and o.status not in TERMINAL_STATUSES
        if value == "new":
            return lambda o, c: c.new
    if sep and key == "kind":
        return lambda o, c: (c.kind or "") == value
    if sep and key == "concern":
        return lambda o, c: o.concern == value
    if sep and key == "unit":
        return lambda o, c: (o.unit or "").lower().startswith(value)
    if sep and key == "owed":
        return lambda o, c: o.consumer.lower() == value
    if sep and key == "instance":
        return lambda o, c: c.instance.lower().startswith(value)
    return None


def _term(term: str) -> Predicate:
    test = _qualifier(term)
    if test is not None:
        return test
    needle = term.lower()
    return lambda o, c: needle in (c.text or haystack(o, c.instance))


def split_free_text(query: str) -> tuple[list[str], str]:
    """(the words free text looks for, lowercased; the rest of the query): the words are a
    substring test each, the cheap part, so a caller can narrow by them first."""
    words: list[str] = []
    rest: list[str] = []
    for term in query.split():
        negated = term.startswith("!") and len(term) > 1
        if negated or _qualifier(term) is not None:
            rest.append(term)
        else:
            words.append(term.lower())
    return words, " ".join(rest)


def needs_new(query: str) -> bool:
    return any(t.lstrip("!").lower() == "is:new" for t in query.split())


def plain_terms(query: str) -> bool:
    """Only free text, nothing negated: typing more onto such a query only narrows it."""
    return all(":" not in t and not t.startswith("!") for t in query.split())


def narrows(old: str, new: str) -> bool:
    """``new`` keeps a subset of what ``old`` keeps, so it can filter ``old``'s rows."""
    return new.startswith(old) and plain_terms(new)


def needs_kind(query: str) -> bool:
    return any(t.lstrip("!").startswith("kind:") for t in query.split())


def compile_filter(query: str) -> Predicate:
    terms: list[tuple[bool, Predicate]] = []
    for raw in query.split():
        negate = raw.startswith("!") and len(raw) > 1
        terms.append((negate, _term(raw[1:] if negate else raw)))

    def keep(o: ObligationState, c: Context) -> bool:
        return all(pred(o, c) != negate for negate, pred in terms)

    return keep
