"""The words a newcomer meets, each explained in one line where it is met (the room's dialogs,
the CLI's help): the dispositions and the consumers an obligation can be owed to.

The dispositions' lines say what docs/triage.md's table says, shorter.
"""

from __future__ import annotations

from regulator.protocol.vocab import CONSUMERS, DISPOSITIONS

DISPOSITION_MEANS: dict[str, str] = {
    "no-action": "noted; nothing needs to change",
    "accepted-risk": "the concern stands and you accept it (needs acceptRisk)",
    "rework": "the unit runs again under the same contract",
    "replan": "the contract is wrong; a new version will follow",
    "fixed": "the concern was addressed",
    "verified": "independently confirmed",
    "rejected": "the claim, proposal or request is declined",
    "accepted": "accepted, as S5 decides (into identity or policy)",
    "research-requested": "a research unit should answer it first",
    "audit-requested": "an S3* check should look before anyone decides",
    "policy-clarification-requested": "the policy is unclear here; S5 is asked",
}

# The consumers, as roles a person recognizes (after Beer's Viable System Model).
CONSUMER_ROLE: dict[str, str] = {
    "S1": "the units doing the work",
    "S2": "coordination between units",
    "S3": "operations: the loop's recovery and triage",
    "S3*": "audit: independent checks",
    "S4": "intelligence: what changes outside",
    "S5": "identity and policy: what the project is for",
    "human": "a person, through the inbox and people's channels",
}

assert set(DISPOSITION_MEANS) == set(DISPOSITIONS), "every disposition is explained"
assert set(CONSUMER_ROLE) == set(CONSUMERS), "every consumer is explained"

__all__ = ["CONSUMER_ROLE", "DISPOSITION_MEANS"]
