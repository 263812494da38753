"""What an answer to a unit's question means (upstream-core §6.3).

Only an explicit yes counts as consent or acceptance: the whole answer, trimmed, must be one of
the yes-words. ``yes but only on staging`` is not yes. Every other kind of question records its
answer as ``fixed``. Silence never reaches this function: no answer is no disposition.
"""

from __future__ import annotations

import re

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
_YES = re.compile(r"^(?:" + "|".join(YES_WORDS) + r")$", re.IGNORECASE)


def is_yes(answer: str) -> bool:
    return _YES.match(answer.strip()) is not None


def disposition_for_answer(kind: str, answer: str) -> str:
    if kind == "consent":
        return "accepted" if is_yes(answer) else "rejected"
    if kind == "uat":
        return "verified" if is_yes(answer) else "rejected"
    return "fixed"
