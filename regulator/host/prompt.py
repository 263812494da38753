"""What a session is told: the prompt, and the block that survives compaction.

Both are rendered deterministically from records, so two renderings of the same state are
byte-for-byte equal and a test can pin them. The contract section is regenerated for every
attempt; the compaction block carries the unit's progress, never the only copy of the contract.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from regulator.protocol.execution import BudgetLedger, WorkContract


@dataclass(frozen=True)
class Fact:
    """A current operational-memory entry, as a unit is shown it."""

    subject: str
    note: str
    review_by: str


def _decisions(contract: WorkContract) -> list[str]:
    lines: list[str] = []
    if contract.fixed:
        lines.append("Fixed decisions (do not revisit; a deviation must be reported):")
        lines += [
            f"- {d.id}: {d.subject} — {d.decision} (authority {d.authority_ref})"
            for d in contract.fixed
        ]
    if contract.delegated:
        lines.append("Delegated decisions (yours to make; report each choice):")
        lines += [f"- {d.id}: {d.subject} — within: {d.bounds}" for d in contract.delegated]
    if contract.unresolved:
        lines.append("Unresolved decisions (preserve or surface; do not settle them):")
        lines += [
            f"- {d.id}: {d.subject} — {d.reason} (handling: {d.handling})"
            for d in contract.unresolved
        ]
    return lines


def render_prompt(
    contract: WorkContract,
    *,
    attempt: int,
    hint: str | None,
    facts: Sequence[Fact] = (),
    identity: str | None = None,
    tools: Sequence[str] = (),
) -> str:
    out = [
        f"# Unit {contract.unit_id}, attempt {attempt}",
        "",
        f"You work under contract {contract.id} v{contract.version} "
        f"({contract.workload.name} v{contract.workload.version}, unit type {contract.unit_type}).",
        "",
        "## Objective",
        contract.objective,
    ]
    if contract.contribution:
        out += ["", f"Contribution: {contract.contribution}"]
    decisions = _decisions(contract)
    if decisions:
        out += ["", "## Decisions", *decisions]
    if contract.expected_evidence:
        out += ["", "## Expected evidence"]
        out += [
            f"- {e.id} ({e.class_}{', required' if e.required else ''}): {e.description}"
            for e in contract.expected_evidence
        ]
    if hint:
        out += ["", "## What happened before", hint]
    if facts:
        out += ["", "## Operational memory (facts with an expiry, not identity)"]
        out += [f"- {f.subject}: {f.note} (review by {f.review_by[:10]})" for f in facts]
    if identity:
        out += ["", "## Identity", identity]
    if tools:
        out += ["", "## Tools", "Beyond your own: " + ", ".join(tools) + "."]
    out += [
        "",
        "## How to finish",
        "Run the checks, then call report_result once, as your last action. A question for a "
        "person goes through ask_human; silence is never consent.",
    ]
    return "\n".join(out) + "\n"


def compaction_block(
    contract: WorkContract,
    *,
    attempt: int,
    evidence: Sequence[str],
    files_modified: Sequence[str],
    budget: BudgetLedger | None,
    summary: str | None = None,
) -> str:
    """The deterministic block that replaces a model's summary when the context is compacted."""
    out = [
        "# Contract-preserving compaction",
        f"unit {contract.unit_id}, attempt {attempt}; contract {contract.id} v{contract.version}",
        f"objective: {contract.objective}",
    ]
    decisions = _decisions(contract)
    out += decisions or ["no fixed, delegated or unresolved decisions"]
    out.append("evidence so far (run_tests, run_checks):")
    out += [f"- {e}" for e in evidence] or ["- none yet"]
    out.append("files modified:")
    out += [f"- {f}" for f in files_modified] or ["- none"]
    if budget is not None:
        c, limit = budget.consumed, budget.ceiling
        out.append(
            f"budget used: {c.tokens}/{limit.tokens} tokens, {c.turns}/{limit.turns} turns, "
            f"{c.wall_clock_ms // 1000}/{limit.wall_clock_ms // 1000} s"
        )
    out.append("")
    out.append(summary if summary else "No model summary is available: this block stands alone.")
    return "\n".join(out) + "\n"
