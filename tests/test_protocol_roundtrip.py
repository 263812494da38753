"""Every record the original writes reads into our models and writes back unchanged.

Each case is a line (or file) composed from the original's field lists (docs/design.md,
docs/instance-format.md) the way the TypeScript regulator writes it: camelCase keys, compact JSON,
optional fields present in some cases and absent in others. Reading it and writing it back must give
the same keys with the same values and the same JSON types (an integer stays an integer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regulator.protocol.audit import parse_audit_line
from regulator.protocol.base import Record
from regulator.protocol.effects import EffectJournalEntry, parse_effect_line
from regulator.protocol.entry import (
    entry_to_json_line,
    is_interaction_event,
    is_message,
    is_obligation_event,
    load_record,
    parse_signal_line,
    record_to_json_line,
    record_to_pretty_json,
)
from regulator.protocol.evidence import EvidenceRef
from regulator.protocol.execution import (
    AttemptRecord,
    BudgetLedger,
    FailureObservation,
    Lease,
    RecoveryDecision,
    ResultReport,
    ResultReportInput,
    UnitRecord,
    WorkContract,
)
from regulator.protocol.interaction import (
    CONTINUES_WITHOUT_ANSWER,
    InteractionRequest,
    severity_for_kind,
)
from regulator.protocol.manifest import InstanceManifest
from regulator.protocol.memory import parse_memory_line
from regulator.protocol.messages import AuditFinding, PolicyProposal, UncertaintySignal
from regulator.protocol.obligations import (
    Delivery,
    Obligation,
    ObligationDelivered,
    ObligationOpened,
    ObligationResolved,
    ObligationState,
)

T0 = "2026-03-01T09:15:02.118Z"
T1 = "2026-03-01T09:16:40.007Z"
T2 = "2026-03-01T10:02:11.950Z"
MSG = "5b0f1c9e-3d4a-4f7b-9a61-0c2e8d7f4a13"
OBL = "c3a9e2d1-7b64-4e0f-8a25-91d6f0b3e7c4"
OBL2 = "0e4f7a12-95cb-4d38-b6e1-2a7c9d5f8b30"
EVT = "9f8e7d6c-5b4a-4392-8170-fedcba987654"
ASK = "ask:6a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
REQ = "6a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
DEC = "d1e2f3a4-b5c6-4d7e-8f90-a1b2c3d4e5f6"

EVIDENCE_FULL = {
    "class": "test",
    "ref": "pnpm test --filter core",
    "observation": "41 passed, 1 failed",
    "sourceRevision": "3f2a9c1",
}
EVIDENCE_BARE = {"class": "file", "ref": "src/ledger.ts"}


def typed(value: Any) -> Any:
    """``value`` with every scalar paired with its JSON type, so 2 and 2.0 compare unequal."""
    if isinstance(value, dict):
        return {key: typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [typed(item) for item in value]
    return (type(value).__name__, value)


def line(data: dict[str, Any]) -> bytes:
    """The line the original writes: ``JSON.stringify(entry)`` + newline."""
    return orjson.dumps(data) + b"\n"


def assert_round_trip(parse: Callable[[bytes], Record], original: dict[str, Any]) -> Record:
    record = parse(line(original))
    written = record_to_json_line(record)
    assert written.endswith(b"\n") and written.count(b"\n") == 1
    assert typed(orjson.loads(written)) == typed(original)
    return record


# --- signals.ndjson: the eight message kinds ---------------------------------------------------

MESSAGES: dict[str, dict[str, Any]] = {
    "audit-finding with every optional": {
        "id": MSG,
        "timestamp": T0,
        "source": "S3*",
        "subject": "unit u1: closeout refused (fail)",
        "unit": "u1",
        "kind": "audit-finding",
        "channel": "audit",
        "destination": "S3",
        "severity": "blocking",
        "invariant": "INV-003",
        "observation": "required criterion e1 has failing evidence at 3f2a9c1",
        "evidence": [EVIDENCE_FULL, EVIDENCE_BARE],
        "suggestedAction": "repair the failing test",
    },
    "audit-finding without a unit (post-merge check)": {
        "id": MSG,
        "timestamp": T0,
        "source": "S3*",
        "subject": "post-merge check failed on main",
        "kind": "audit-finding",
        "channel": "audit",
        "destination": "S3",
        "severity": "critical",
        "observation": "pnpm test exited 1",
        "evidence": [],
    },
    "policy-proposal": {
        "id": MSG,
        "timestamp": T0,
        "source": "S4",
        "subject": "raise the research token ceiling",
        "unit": "r7",
        "kind": "policy-proposal",
        "channel": "proposal",
        "destination": "S5",
        "severity": "advisory",
        "rationale": "three research units hit the token ceiling this week (INV-001)",
        "requestedChange": {"budgets": {"byUnitType": {"research": {"tokens": 200000}}}},
        "evidence": [EVIDENCE_BARE],
    },
    "constraint with a rationale": {
        "id": MSG,
        "timestamp": T0,
        "source": "S5",
        "subject": "no network in unit sessions",
        "kind": "constraint",
        "channel": "constraint",
        "destination": "S1",
        "severity": "blocking",
        "rule": "units never call the network",
        "rationale": "INV-002",
    },
    "constraint without a rationale": {
        "id": MSG,
        "timestamp": T0,
        "source": "S5",
        "subject": "freeze the public API",
        "unit": "u2",
        "kind": "constraint",
        "channel": "constraint",
        "destination": "S3",
        "severity": "info",
        "rule": "no export changes its arity",
    },
    "operational-signal": {
        "id": MSG,
        "timestamp": T0,
        "source": "S1",
        "subject": "contract-u1 v1: emergent decision — cache the parsed policy",
        "unit": "u1",
        "kind": "operational-signal",
        "channel": "signal",
        "destination": "S3",
        "severity": "advisory",
        "observation": "cached in memory; invalidated on file change",
        "evidence": [EVIDENCE_FULL],
    },
    "coordination-signal with a resource": {
        "id": MSG,
        "timestamp": T0,
        "source": "S2",
        "subject": "unit/u3",
        "unit": "u3",
        "kind": "coordination-signal",
        "channel": "signal",
        "destination": "S3",
        "severity": "blocking",
        "coordination": "conflict",
        "observation": "merge of unit/u3 into main conflicts in 2 files",
        "evidence": [{"class": "file", "ref": "src/a.ts"}, {"class": "file", "ref": "src/b.ts"}],
        "resource": "main",
    },
    "coordination-signal without a resource": {
        "id": MSG,
        "timestamp": T0,
        "source": "S2",
        "subject": "edit/revert loop on src/a.ts",
        "unit": "u3",
        "kind": "coordination-signal",
        "channel": "signal",
        "destination": "S3",
        "severity": "advisory",
        "coordination": "oscillation",
        "observation": "the same hunk was written and reverted 4 times",
        "evidence": [],
    },
    "intelligence-signal with every optional": {
        "id": MSG,
        "timestamp": T0,
        "source": "S4",
        "subject": "upstream deprecates the v2 API",
        "unit": "r7",
        "kind": "intelligence-signal",
        "channel": "intelligence",
        "destination": "S5",
        "severity": "blocking",
        "observation": "the changelog of 4.0 removes v2",
        "evidence": [{"class": "semantic", "ref": "https://example.org/changelog"}],
        "expiresAt": "2026-04-01T00:00:00.000Z",
        "claim": "v2 calls fail after 4.0",
        "confidence": "high",
        "observedAt": T0,
        "affectedUnits": ["u1", "u2"],
    },
    "intelligence-signal with no optional": {
        "id": MSG,
        "timestamp": T0,
        "source": "S4",
        "subject": "a faster JSON parser exists",
        "kind": "intelligence-signal",
        "channel": "intelligence",
        "destination": "S3",
        "severity": "info",
        "observation": "orjson parses 5x faster",
        "evidence": [],
    },
    "algedonic-signal (the escalate recovery action)": {
        "id": DEC,
        "timestamp": T0,
        "source": "S3",
        "subject": "unit u1: recovery policy exhausted",
        "unit": "u1",
        "kind": "algedonic-signal",
        "channel": "algedonic",
        "destination": "S5",
        "severity": "blocking",
        "observation": "recovery v1 rule for no-report, occurrence 3 → escalate",
        "evidence": [{"class": "file", "ref": ".regulator/units/u1/decisions.ndjson"}],
        "requiresHumanAttention": True,
    },
    "uncertainty-signal with a follow-up": {
        "id": MSG,
        "timestamp": T0,
        "source": "S1",
        "subject": "which timezone the report uses",
        "unit": "u4",
        "kind": "uncertainty-signal",
        "channel": "signal",
        "destination": "S3",
        "decision": "left as reported",
        "reason": "the contract does not say",
        "alternatives": ["UTC", "the user's locale"],
        "consequence": "consequence if wrong: high",
        "impact": "high",
        "recommendedFollowUp": "clarification",
        "evidence": [EVIDENCE_BARE],
    },
    "uncertainty-signal without a follow-up": {
        "id": MSG,
        "timestamp": T0,
        "source": "S1",
        "subject": "rounding of totals",
        "kind": "uncertainty-signal",
        "channel": "signal",
        "destination": "S3",
        "decision": "left as reported",
        "reason": "no rule given",
        "alternatives": [],
        "consequence": "consequence if wrong: low",
        "impact": "low",
        "evidence": [],
    },
}


@pytest.mark.parametrize("original", MESSAGES.values(), ids=MESSAGES.keys())
def test_every_message_kind_reads_and_writes_back_unchanged(original: dict[str, Any]) -> None:
    entry = assert_round_trip(parse_signal_line, original)
    assert is_message(entry)
    assert not is_obligation_event(entry) and not is_interaction_event(entry)


def test_all_eight_message_kinds_are_covered() -> None:
    assert {case["kind"] for case in MESSAGES.values()} == {
        "audit-finding",
        "policy-proposal",
        "constraint",
        "operational-signal",
        "coordination-signal",
        "intelligence-signal",
        "algedonic-signal",
        "uncertainty-signal",
    }


@pytest.mark.parametrize(
    "change",
    [
        {"budgets": {"default": {"tokens": 1, "cost": 0.5}}, "note": None, "flags": [True, 1]},
        "raise the research ceiling to 200000 tokens",
        ["routing.json", {"rules": []}, 3, 2.5, None],
        None,
        42,
    ],
    ids=["an object", "a string", "a list", "null", "a number"],
)
def test_a_requested_change_of_any_json_shape_round_trips(change: Any) -> None:
    original = {**MESSAGES["policy-proposal"], "requestedChange": change}
    proposal = assert_round_trip(parse_signal_line, original)
    assert isinstance(proposal, PolicyProposal)
    assert proposal.requested_change == change
    # The key stays even when the change is null: it is a required field.
    assert b'"requestedChange":' in entry_to_json_line(proposal)


# --- signals.ndjson: obligation and routing events ---------------------------------------------

OBLIGATION_FULL = {
    "id": OBL,
    "subject": "unit u1: clarify (oscillation)",
    "unit": "u1",
    "concern": "recovery-decision",
    "sources": [DEC, MSG, OBL2],
    "severity": "blocking",
    "consumer": "human",
    "blocks": True,
    "question": "Which behaviour is wanted?",
    "openedAt": T0,
    "openedBy": "S3",
}
OBLIGATION_BARE = {
    "id": OBL2,
    "subject": "post-merge check failed on main",
    "concern": "audit-finding",
    "sources": [MSG],
    "severity": "critical",
    "consumer": "S3",
    "blocks": True,
    "openedAt": T0,
    "openedBy": "S3",
}

EVENTS: dict[str, dict[str, Any]] = {
    "obligation-opened with a unit and a question": {
        "type": "obligation-opened",
        "id": EVT,
        "at": T0,
        "by": "S3",
        "obligation": OBLIGATION_FULL,
    },
    "obligation-opened on the instance itself": {
        "type": "obligation-opened",
        "id": EVT,
        "at": T0,
        "by": "S1",
        "obligation": {**OBLIGATION_BARE, "openedBy": "S1"},
    },
    "obligation-acknowledged with a note": {
        "type": "obligation-acknowledged",
        "id": EVT,
        "at": T1,
        "by": "alice",
        "obligationId": OBL,
        "note": "looking at it after lunch",
    },
    "obligation-acknowledged without a note": {
        "type": "obligation-acknowledged",
        "id": EVT,
        "at": T1,
        "by": "bob",
        "obligationId": OBL,
    },
    "obligation-resolved": {
        "type": "obligation-resolved",
        "id": EVT,
        "at": T2,
        "by": "alice",
        "obligationId": OBL,
        "disposition": "accepted-risk",
        "rationale": "staging only; reverted tomorrow",
    },
    "obligation-escalated": {
        "type": "obligation-escalated",
        "id": EVT,
        "at": T2,
        "by": "S3",
        "obligationId": OBL2,
        "successor": OBL,
        "rationale": "recovery v1: oscillation (occurrence 1) → clarify; S3 cannot resolve this",
    },
    "obligation-superseded": {
        "type": "obligation-superseded",
        "id": EVT,
        "at": T2,
        "by": "alice",
        "obligationId": OBL2,
        "successor": OBL,
        "rationale": "the same question, asked better",
    },
    "message-noted": {
        "type": "message-noted",
        "id": EVT,
        "at": T0,
        "by": "S3",
        "message": MSG,
        "reason": "advisory is below blocking, the routing v1 line for operational-signal",
    },
    "obligation-delivered with a target": {
        "type": "obligation-delivered",
        "id": EVT,
        "at": T1,
        "by": "S3",
        "obligationId": OBL,
        "channel": "outbox",
        "reminder": False,
        "target": "outbox",
    },
    "obligation-delivered as a reminder without a target": {
        "type": "obligation-delivered",
        "id": EVT,
        "at": T2,
        "by": "S3",
        "obligationId": OBL,
        "channel": "tui",
        "reminder": True,
    },
}


@pytest.mark.parametrize("original", EVENTS.values(), ids=EVENTS.keys())
def test_every_obligation_event_reads_and_writes_back_unchanged(original: dict[str, Any]) -> None:
    entry = assert_round_trip(parse_signal_line, original)
    assert is_obligation_event(entry) and not is_message(entry)


def test_all_seven_obligation_event_types_are_covered() -> None:
    assert {case["type"] for case in EVENTS.values()} == {
        "obligation-opened",
        "obligation-acknowledged",
        "obligation-resolved",
        "obligation-escalated",
        "obligation-superseded",
        "message-noted",
        "obligation-delivered",
    }


# --- signals.ndjson: interaction events --------------------------------------------------------

INTERACTIONS: dict[str, dict[str, Any]] = {
    "interaction-requested with options, a unit and an attempt": {
        "type": "interaction-requested",
        "id": EVT,
        "at": T0,
        "by": "S1",
        "request": {
            "id": REQ,
            "kind": "choice",
            "subject": "storage backend",
            "question": "Which store should the cache use?",
            "options": ["sqlite", "files"],
            "severity": "blocking",
            "unit": "u1",
            "attempt": 2,
            "obligationId": OBL,
            "evidence": [{"class": "file", "ref": "src/cache.ts", "sourceRevision": "3f2a9c1"}],
            "raisedBy": "S1",
            "raisedAt": T0,
            "timeoutMs": 120000,
            "channel": "tui",
        },
    },
    "interaction-requested for consent, headless": {
        "type": "interaction-requested",
        "id": EVT,
        "at": T0,
        "by": "S1",
        "request": {
            "id": REQ,
            "kind": "consent",
            "subject": "force-push the release branch",
            "question": "May I force-push release/1.2?",
            "action": "git push --force origin release/1.2",
            "severity": "blocking",
            "obligationId": OBL,
            "evidence": [],
            "raisedBy": "S1",
            "raisedAt": T0,
            "timeoutMs": 0,
            "channel": "none",
        },
    },
    "interaction-answered with an answer": {
        "type": "interaction-answered",
        "id": EVT,
        "at": T1,
        "by": "alice",
        "requestId": REQ,
        "outcome": "answered",
        "answer": "sqlite",
        "channel": "cli",
    },
    "interaction-answered without an answer": {
        "type": "interaction-answered",
        "id": EVT,
        "at": T1,
        "by": "S1",
        "requestId": REQ,
        "outcome": "timed-out",
        "channel": "none",
    },
}


@pytest.mark.parametrize("original", INTERACTIONS.values(), ids=INTERACTIONS.keys())
def test_every_interaction_event_reads_and_writes_back_unchanged(original: dict[str, Any]) -> None:
    entry = assert_round_trip(parse_signal_line, original)
    assert is_interaction_event(entry) and not is_obligation_event(entry)


# --- the execution store -----------------------------------------------------------------------


def loader(model: type[Record]) -> Callable[[bytes], Record]:
    return lambda raw: load_record(model, raw)


CONTRACT_FULL = {
    "kind": "task",
    "id": "contract-u1",
    "version": 2,
    "unitId": "u1",
    "unitType": "implement",
    "workload": {"name": "software-development", "version": 1},
    "objective": "Add a fold snapshot to the ledger",
    "contribution": "cold start under 3 s",
    "constraintRefs": ["INV-001", "reg.store.snapshot.v1"],
    "fixed": [
        {
            "id": "f1",
            "subject": "log format",
            "decision": "signals.ndjson keeps its shape",
            "authorityRef": "INV-001",
            "rationale": "interoperability",
        },
        {"id": "f2", "subject": "language", "decision": "Python", "authorityRef": "human:alice"},
    ],
    "delegated": [
        {"id": "d1", "subject": "snapshot file name", "bounds": "under .regulator/"},
        {
            "id": "d2",
            "subject": "snapshot cadence",
            "bounds": "every 10k to 100k lines",
            "requiredReport": False,
        },
    ],
    "unresolved": [
        {
            "id": "u.1",
            "subject": "snapshot format",
            "reason": "needs a benchmark",
            "handling": "research",
            "obligationRef": "obligation:" + OBL,
        },
        {"id": "u_2", "subject": "migration", "reason": "no decision yet", "handling": "defer"},
    ],
    "expectedEvidence": [
        {"id": "e1", "description": "the suite passes", "class": "test", "required": True},
        {
            "id": "e2",
            "description": "fold keeps its signature",
            "class": "test",
            "required": True,
            "check": {
                "kind": "export-signature",
                "module": "src/fold.ts",
                "export": "fold",
                "arity": 2,
            },
        },
        {
            "id": "e3",
            "description": "inherited tests still pass",
            "class": "test",
            "required": False,
            "check": {"kind": "inherited-tests", "exempt": ["test/old.test.ts"]},
        },
    ],
    "provenance": {
        "createdBy": "S3",
        "createdAt": T0,
        "sourceRevision": "3f2a9c1",
        "predecessor": {"version": 1, "reason": "replan: budget-exhausted"},
    },
}
CONTRACT_BARE = {
    "kind": "task",
    "id": "c2",
    "version": 1,
    "unitId": "u2",
    "unitType": "plan",
    "workload": {"name": "software-development", "version": 1},
    "objective": "Plan the snapshot work",
    "constraintRefs": [],
    "fixed": [],
    "delegated": [],
    "unresolved": [],
    "expectedEvidence": [],
    "provenance": {"createdBy": "S3", "createdAt": T0},
}
REPORT_FIELDS = {
    "summary": "snapshot written every 50k lines",
    "evidence": [EVIDENCE_FULL],
    "delegatedResults": [
        {"decisionId": "d1", "choice": ".regulator/snapshot.json", "rationale": "one file"},
        {"decisionId": "d2", "choice": "50k"},
    ],
    "unresolvedOutcomes": [
        {"decisionId": "u.1", "outcome": "surfaced", "note": "benchmark attached"},
        {"decisionId": "u_2", "outcome": "preserved", "note": "not touched"},
    ],
    "emergentDecisions": [
        {
            "subject": "fsync policy",
            "choiceOrQuestion": "fsync per batch",
            "consequenceIfWrong": "medium",
        }
    ],
    "deviations": [
        {"kind": "fixed-decision", "ref": "f1", "description": "added a header line"},
        {"kind": "scope", "description": "also touched the reader"},
    ],
    "residualUncertainty": [
        {"subject": "NFS", "reason": "flock semantics untested", "consequenceIfWrong": "high"}
    ],
}

EXECUTION: dict[str, tuple[type[Record], dict[str, Any]]] = {
    "unit record, blocked with a reason": (
        UnitRecord,
        {
            "unitId": "u1",
            "unitType": "implement",
            "workload": {"name": "software-development", "version": 1},
            "contract": {"id": "contract-u1", "version": 2},
            "status": "blocked",
            "attempts": 2,
            "createdAt": T0,
            "updatedAt": T2,
            "reason": "paused: awaiting a person — storage backend (obligation c3a9e2d1)",
        },
    ),
    "unit record, just contracted": (
        UnitRecord,
        {
            "unitId": "u-2.b_x",
            "unitType": "plan",
            "workload": {"name": "personal-finance", "version": 3},
            "contract": {"id": "c2", "version": 1},
            "status": "contracted",
            "attempts": 0,
            "createdAt": T0,
            "updatedAt": T0,
        },
    ),
    "attempt with a session and a detail": (
        AttemptRecord,
        {
            "unitId": "u1",
            "attempt": 2,
            "contractVersion": 2,
            "startedAt": T0,
            "endedAt": T1,
            "outcome": "paused",
            "sessionId": "sess-81f2",
            "detail": "storage backend — Which store? (obligation c3a9e2d1)",
        },
    ),
    "attempt with neither": (
        AttemptRecord,
        {
            "unitId": "u1",
            "attempt": 1,
            "contractVersion": 1,
            "startedAt": T0,
            "endedAt": T1,
            "outcome": "no-report",
        },
    ),
    "budget ledger, exhausted, with a cost ceiling and compactions": (
        BudgetLedger,
        {
            "unitId": "u1",
            "attempt": 1,
            "ceiling": {"tokens": 400000, "cost": 2, "wallClockMs": 1200000, "turns": 60},
            "consumed": {"tokens": 400211, "cost": 1.8734, "wallClockMs": 611020, "turns": 37},
            "startedAt": T0,
            "updatedAt": T1,
            "models": ["anthropic/claude-sonnet-4-5", "openai/gpt-5"],
            "exhausted": {"dimension": "tokens", "at": T1},
            "compactions": [
                {"at": T0, "reason": "context window", "preserved": True},
                {"at": T1, "reason": "manual", "preserved": False},
            ],
        },
    ),
    "budget ledger, running, no cost ceiling": (
        BudgetLedger,
        {
            "unitId": "u1",
            "attempt": 2,
            "ceiling": {"tokens": 150000, "wallClockMs": 1200000, "turns": 20},
            "consumed": {"tokens": 0, "cost": 0, "wallClockMs": 0, "turns": 0},
            "startedAt": T0,
            "updatedAt": T0,
            "models": [],
            "compactions": [],
        },
    ),
    "work contract with every optional and both check kinds": (WorkContract, CONTRACT_FULL),
    "work contract with none": (WorkContract, CONTRACT_BARE),
    "result report input": (ResultReportInput, REPORT_FIELDS),
    "result report": (
        ResultReport,
        {
            "contractId": "contract-u1",
            "contractVersion": 2,
            "unitId": "u1",
            "attempt": 3,
            "reportedAt": T2,
            **REPORT_FIELDS,
        },
    ),
    "empty result report": (
        ResultReport,
        {
            "contractId": "c2",
            "contractVersion": 1,
            "unitId": "u2",
            "attempt": 1,
            "reportedAt": T2,
            "summary": "planned",
            "evidence": [],
            "delegatedResults": [],
            "unresolvedOutcomes": [],
            "emergentDecisions": [],
            "deviations": [],
            "residualUncertainty": [],
        },
    ),
    "lease": (
        Lease,
        {
            "unitId": "u1",
            "owner": "alice@build-01",
            "resource": "/srv/repo/.regulator/worktrees/u1",
            "branch": "unit/u1",
            "acquiredAt": 1772356502118,
            "heartbeatAt": 1772356562118,
            "expiresAt": 1772357102118,
        },
    ),
    "failure observation from a tool": (
        FailureObservation,
        {
            "unitId": "u1",
            "attempt": 1,
            "at": T0,
            "source": "tool",
            "toolName": "report_result",
            "cause": "invalid-report",
            "message": "delegated decision d1 has no reported choice",
        },
    ),
    "failure observation from the provider": (
        FailureObservation,
        {
            "unitId": "u1",
            "attempt": 2,
            "at": T1,
            "source": "provider",
            "cause": "timeout",
            "message": "request timed out after 600s",
        },
    ),
    "recovery decision to repair, with a hint": (
        RecoveryDecision,
        {
            "id": DEC,
            "unitId": "u1",
            "attempt": 1,
            "cause": "check-failure",
            "occurrence": 1,
            "evidence": ["attempt 1: check-failure — e1 failing", "unit: audit refused closeout"],
            "action": "repair",
            "policy": {"name": "recovery", "version": 1},
            "rationale": "recovery v1 rule for check-failure, occurrence 1 → repair",
            "hint": "The host check failed: fix e1 before reporting.",
            "decidedAt": T1,
            "decidedBy": "S3",
        },
    ),
    "recovery decision to clarify, with a question": (
        RecoveryDecision,
        {
            "id": DEC,
            "unitId": "u3",
            "attempt": 4,
            "cause": "oscillation",
            "occurrence": 2,
            "evidence": [],
            "action": "clarify",
            "policy": {"name": "recovery", "version": 1},
            "rationale": (
                "recovery v1 rule for oscillation, occurrence 2 → clarify (last action repeats)"
            ),
            "question": "Which behaviour is wanted?",
            "decidedAt": T1,
            "decidedBy": "S3",
        },
    ),
}


@pytest.mark.parametrize(("model", "original"), EXECUTION.values(), ids=EXECUTION.keys())
def test_every_execution_record_reads_and_writes_back_unchanged(
    model: type[Record], original: dict[str, Any]
) -> None:
    record = assert_round_trip(loader(model), original)
    assert type(record) is model
    # The original writes these as pretty JSON files: that form reads back the same too.
    assert typed(orjson.loads(record_to_pretty_json(record))) == typed(original)


def test_an_integral_cost_stays_an_integer_and_a_fraction_stays_a_fraction() -> None:
    ledger = load_record(
        BudgetLedger, line(EXECUTION["budget ledger, running, no cost ceiling"][1])
    )
    assert b'"cost":0,' in record_to_json_line(ledger)
    full = EXECUTION["budget ledger, exhausted, with a cost ceiling and compactions"][1]
    ledger = load_record(BudgetLedger, line(full))
    assert b'"cost":2,' in record_to_json_line(ledger)
    assert b'"cost":1.8734,' in record_to_json_line(ledger)


def test_a_delegated_decision_without_required_report_requires_one_and_stays_absent() -> None:
    contract = load_record(WorkContract, line(CONTRACT_FULL))
    first, second = contract.delegated
    assert first.report_required and not second.report_required
    assert "requiredReport" not in contract.to_json_dict()["delegated"][0]


def test_a_lease_is_live_until_it_expires() -> None:
    lease = load_record(Lease, line(EXECUTION["lease"][1]))
    assert lease.is_live(lease.expires_at - 1)
    assert not lease.is_live(lease.expires_at)


def test_a_report_is_its_input_bound_to_the_contract() -> None:
    report_input = load_record(ResultReportInput, line(REPORT_FIELDS))
    report = ResultReport.bind(
        report_input,
        contract_id="contract-u1",
        contract_version=2,
        unit_id="u1",
        attempt=3,
        reported_at=T2,
    )
    assert report.to_json_dict() == EXECUTION["result report"][1]
    assert report.as_input() == report_input


# --- audit.ndjson ------------------------------------------------------------------------------

CONTRACT_REF = {"id": "contract-u1", "version": 2}
AUDIT: dict[str, dict[str, Any]] = {
    "evidence with a command": {
        "type": "evidence",
        "record": {
            "id": EVT,
            "unitId": "u1",
            "attempt": 2,
            "contract": CONTRACT_REF,
            "check": "run_tests",
            "class": "test",
            "criteria": ["e1"],
            "verdict": "fail",
            "command": ["pnpm", "test"],
            "observation": "1 failed",
            "revision": "3f2a9c1",
            "environment": {"node": "v22.11.0", "platform": "linux", "arch": "x64"},
            "producedBy": "S3*",
            "at": T1,
        },
    },
    "evidence without a command, bound to no criterion": {
        "type": "evidence",
        "record": {
            "id": EVT,
            "unitId": "u1",
            "attempt": 1,
            "contract": CONTRACT_REF,
            "check": "file:src/fold.ts",
            "class": "file",
            "criteria": [],
            "verdict": "inconclusive",
            "observation": "",
            "revision": "3f2a9c1",
            "environment": {"node": "v22.11.0", "platform": "darwin", "arch": "arm64"},
            "producedBy": "S3*",
            "at": T1,
        },
    },
    "verdict": {
        "type": "verdict",
        "verdict": {
            "id": EVT,
            "unitId": "u1",
            "attempt": 2,
            "contract": CONTRACT_REF,
            "revision": "3f2a9c1",
            "verdict": "fail",
            "evidence": [EVT, MSG],
            "satisfied": ["e2"],
            "failed": ["e1"],
            "missing": [],
            "stale": ["e4"],
            "contradicted": [],
            "awaitingAcceptance": ["e5"],
            "reasons": ["e1: fresh failing evidence"],
            "decidedBy": "S3*",
            "at": T1,
        },
    },
    "acceptance with a note": {
        "type": "acceptance",
        "acceptance": {
            "id": EVT,
            "unitId": "u1",
            "contract": CONTRACT_REF,
            "criterion": "e5",
            "revision": "3f2a9c1",
            "disposition": "accepted",
            "by": "alice",
            "note": "looks right on staging",
            "at": T2,
        },
    },
    "acceptance without a note": {
        "type": "acceptance",
        "acceptance": {
            "id": EVT,
            "unitId": "u1",
            "contract": CONTRACT_REF,
            "criterion": "e5",
            "revision": "3f2a9c1",
            "disposition": "rejected",
            "by": "bob",
            "at": T2,
        },
    },
}


@pytest.mark.parametrize("original", AUDIT.values(), ids=AUDIT.keys())
def test_every_audit_line_reads_and_writes_back_unchanged(original: dict[str, Any]) -> None:
    assert_round_trip(parse_audit_line, original)


# --- effects.ndjson and memory.ndjson ----------------------------------------------------------

EFFECTS: dict[str, dict[str, Any]] = {
    "intended, for a unit": {
        "key": "deliver:" + OBL + ":0",
        "unitId": "u1",
        "tool": "deliver",
        "description": "deliver obligation c3a9e2d1 to the owner's outbox",
        "status": "intended",
        "at": T0,
    },
    "committed with a result": {
        "key": "0f3a9b2c4d5e6f708192a3b4",
        "unitId": "u1",
        "tool": "notify_owner",
        "description": "tell the owner the build is green",
        "status": "committed",
        "at": T1,
        "result": "sent " + T1,
    },
    "confirmed, for no unit": {
        "key": "deliver:" + OBL2 + ":1",
        "tool": "deliver",
        "description": "remind obligation 0e4f7a12 to the owner's outbox",
        "status": "confirmed",
        "at": T2,
    },
}


@pytest.mark.parametrize("original", EFFECTS.values(), ids=EFFECTS.keys())
def test_every_effect_journal_line_reads_and_writes_back_unchanged(
    original: dict[str, Any],
) -> None:
    record = assert_round_trip(parse_effect_line, original)
    assert isinstance(record, EffectJournalEntry)


MEMORY: dict[str, dict[str, Any]] = {
    "recorded by a unit, scoped": {
        "type": "memory-recorded",
        "entry": {
            "id": EVT,
            "subject": "tests need FOO=1",
            "note": "the integration suite reads FOO and fails without it",
            "evidence": [
                {"class": "command", "ref": "FOO=1 pnpm test", "sourceRevision": "3f2a9c1"}
            ],
            "unit": "u1",
            "revision": "3f2a9c1",
            "recordedBy": "S1",
            "recordedAt": T0,
            "reviewBy": "2026-05-01T00:00:00.000Z",
            "scope": ["implement", "verify"],
        },
    },
    "recorded by a person, unscoped": {
        "type": "memory-recorded",
        "entry": {
            "id": EVT,
            "subject": "the CI runner lacks Docker",
            "note": "skip container tests on CI",
            "evidence": [],
            "recordedBy": "alice",
            "recordedAt": T0,
            "reviewBy": "2026-04-01T00:00:00.000Z",
        },
    },
    "retracted": {
        "type": "memory-retracted",
        "id": MSG,
        "memoryId": EVT,
        "by": "alice",
        "at": T2,
        "reason": "Docker was installed",
    },
}


@pytest.mark.parametrize("original", MEMORY.values(), ids=MEMORY.keys())
def test_every_memory_line_reads_and_writes_back_unchanged(original: dict[str, Any]) -> None:
    assert_round_trip(parse_memory_line, original)


# --- instance.json -----------------------------------------------------------------------------

MANIFEST_FULL = {
    "version": 1,
    "definition": {
        "root": "/opt/regulator/packages/regulator",
        "name": "regulator",
        "registry": 41,
        "harnessRevision": "d42bfb17",
        "pi": "0.4.2",
    },
    "writablePaths": ["src/", "packages/core/src/"],
    "protectedPaths": ["infra/"],
    "initializedAt": T0,
    "initializedBy": "alice@build-01",
}
MANIFEST_BARE = {
    "version": 1,
    "definition": {
        "root": "/opt/regulator/packages/regulator",
        "name": "regulator",
        "registry": 0,
        "harnessRevision": "unknown",
        "pi": "none",
    },
    "initializedAt": T0,
    "initializedBy": "ci@runner",
}


@pytest.mark.parametrize("original", [MANIFEST_FULL, MANIFEST_BARE], ids=["with paths", "without"])
def test_the_manifest_reads_and_writes_back_unchanged(original: dict[str, Any]) -> None:
    assert_round_trip(loader(InstanceManifest), original)


def test_the_manifest_is_written_as_the_original_pretty_prints_it() -> None:
    manifest = load_record(
        InstanceManifest, orjson.dumps(MANIFEST_BARE, option=orjson.OPT_INDENT_2)
    )
    assert record_to_pretty_json(manifest) == (
        b"{\n"
        b'  "version": 1,\n'
        b'  "definition": {\n'
        b'    "root": "/opt/regulator/packages/regulator",\n'
        b'    "name": "regulator",\n'
        b'    "registry": 0,\n'
        b'    "harnessRevision": "unknown",\n'
        b'    "pi": "none"\n'
        b"  },\n"
        b'  "initializedAt": "2026-03-01T09:15:02.118Z",\n'
        b'  "initializedBy": "ci@runner"\n'
        b"}\n"
    )


@pytest.mark.parametrize(
    ("prefix", "complaint"),
    [
        ("src", "must end with '/'"),
        ("/etc/", "must be relative"),
        ("a\\b/", "must not contain a backslash"),
        ("../outside/", "must not contain '..'"),
        ("a/../b/", "must not contain '..'"),
    ],
)
def test_a_manifest_path_prefix_outside_the_rules_is_refused(prefix: str, complaint: str) -> None:
    raw = line({**MANIFEST_FULL, "protectedPaths": ["ok/", prefix]})
    with pytest.raises(ValueError, match="protectedPaths\\[1\\]") as refusal:
        load_record(InstanceManifest, raw)
    assert complaint in str(refusal.value)


def test_a_manifest_version_other_than_the_number_one_is_refused() -> None:
    for version in (2, True, "1"):
        with pytest.raises(ValueError, match="version"):
            load_record(InstanceManifest, line({**MANIFEST_BARE, "version": version}))


# --- writing: the line the original would write ------------------------------------------------


def test_a_written_line_is_compact_in_field_order_with_absent_optionals_left_out() -> None:
    # The tag (``kind``) first, as msgspec writes a tagged record; then the fields in order.
    finding = AuditFinding(
        id=MSG,
        timestamp=T0,
        source="S3*",
        subject="post-merge check failed on main",
        channel="audit",
        destination="S3",
        severity="critical",
        observation="pnpm test exited 1",
        evidence=[EvidenceRef(class_="command", ref="pnpm test")],
    )
    assert entry_to_json_line(finding) == (
        b'{"kind":"audit-finding","id":"5b0f1c9e-3d4a-4f7b-9a61-0c2e8d7f4a13",'
        b'"timestamp":"2026-03-01T09:15:02.118Z","source":"S3*",'
        b'"subject":"post-merge check failed on main",'
        b'"channel":"audit","destination":"S3","severity":"critical",'
        b'"observation":"pnpm test exited 1","evidence":[{"class":"command","ref":"pnpm test"}]}\n'
    )


def test_a_written_line_reads_back_as_the_same_record() -> None:
    for original in [*MESSAGES.values(), *EVENTS.values(), *INTERACTIONS.values()]:
        entry = parse_signal_line(line(original))
        assert parse_signal_line(entry_to_json_line(entry)) == entry


def test_a_line_reads_from_text_or_bytes_with_or_without_its_newline() -> None:
    raw = line(EVENTS["obligation-resolved"])
    entries = {
        parse_signal_line(raw),
        parse_signal_line(raw.rstrip()),
        parse_signal_line(raw.decode()),
    }
    assert len(entries) == 1


def test_a_message_without_a_unit_is_written_without_one() -> None:
    entry = parse_signal_line(line(MESSAGES["audit-finding without a unit (post-merge check)"]))
    assert b'"unit"' not in entry_to_json_line(entry)


# --- refusals ----------------------------------------------------------------------------------


def refusal(parse: Callable[[bytes], object], data: dict[str, Any] | bytes) -> str:
    raw = data if isinstance(data, bytes) else line(data)
    with pytest.raises(ValueError) as caught:
        parse(raw)
    return str(caught.value)


def test_a_bad_enum_value_names_the_field_and_the_allowed_values() -> None:
    bad = {**EVENTS["obligation-resolved"], "disposition": "foo"}
    assert refusal(parse_signal_line, bad) == (
        "obligation-resolved: disposition: 'foo' is not one of no-action, accepted-risk, rework, "
        "replan, fixed, verified, rejected, accepted, research-requested, audit-requested, "
        "policy-clarification-requested"
    )


def test_a_bad_enum_value_deep_in_a_record_names_its_whole_path() -> None:
    bad = {
        **MESSAGES["operational-signal"],
        "evidence": [EVIDENCE_BARE, {"class": "hunch", "ref": "x"}],
    }
    assert refusal(parse_signal_line, bad) == (
        "operational-signal: evidence[1].class: 'hunch' is not one of "
        "file, command, test, runtime, semantic, model"
    )
    opened = {**EVENTS["obligation-opened on the instance itself"]}
    opened["obligation"] = {**opened["obligation"], "consumer": "S6"}
    assert refusal(parse_signal_line, opened) == (
        "obligation-opened: obligation.consumer: 'S6' is not one of S1, S2, S3, S3*, S4, S5, human"
    )


def test_an_audit_verdict_error_names_the_verdict_path_once() -> None:
    bad = {"type": "verdict", "verdict": {**AUDIT["verdict"]["verdict"], "verdict": "maybe"}}
    assert refusal(parse_audit_line, bad) == (
        "verdict: verdict.verdict: 'maybe' is not one of pass, fail, inconclusive"
    )


def test_a_bad_check_kind_in_a_contract_names_the_allowed_kinds() -> None:
    contract = {**CONTRACT_FULL}
    contract["expectedEvidence"] = [
        {
            "id": "e9",
            "description": "d",
            "class": "test",
            "required": True,
            "check": {"kind": "lint"},
        }
    ]
    assert refusal(loader(WorkContract), contract) == (
        "expectedEvidence[0].check.kind: 'lint' is not one of export-signature, inherited-tests"
    )


def test_a_message_from_a_system_its_kind_does_not_allow_is_refused() -> None:
    bad = {**MESSAGES["audit-finding with every optional"], "source": "S3"}
    assert refusal(parse_signal_line, bad) == "audit-finding: source: 'S3' is not one of S3*"
    weak = {**MESSAGES["algedonic-signal (the escalate recovery action)"], "severity": "advisory"}
    assert refusal(parse_signal_line, weak) == (
        "algedonic-signal: severity: 'advisory' is not one of blocking, critical"
    )


@pytest.mark.parametrize(
    ("parse", "data", "path"),
    [
        (parse_signal_line, {**EVENTS["obligation-resolved"], "colour": "red"}, "colour"),
        (
            parse_signal_line,
            {**MESSAGES["constraint with a rationale"], "evidence": []},
            "evidence",
        ),
        (
            parse_signal_line,
            {**MESSAGES["uncertainty-signal with a follow-up"], "severity": "blocking"},
            "severity",
        ),
        (
            parse_signal_line,
            {**MESSAGES["operational-signal"], "evidence": [{**EVIDENCE_BARE, "hash": "x"}]},
            "evidence[0].hash",
        ),
        (
            parse_signal_line,
            {**EVENTS["obligation-opened with a unit and a question"]}
            | {"obligation": {**OBLIGATION_FULL, "status": "open"}},
            "obligation.status",
        ),
        (
            loader(UnitRecord),
            {**EXECUTION["unit record, just contracted"][1], "owner": "x"},
            "owner",
        ),
        (
            parse_audit_line,
            {
                "type": "acceptance",
                "acceptance": {**AUDIT["acceptance with a note"]["acceptance"], "s5": True},
            },
            "acceptance.s5",
        ),
        (parse_memory_line, {**MEMORY["retracted"], "note": "n"}, "note"),
        (loader(InstanceManifest), {**MANIFEST_BARE, "migratedAt": T1}, "migratedAt"),
    ],
    ids=[
        "obligation event",
        "message",
        "severity on an uncertainty signal",
        "nested evidence",
        "the opened obligation",
        "unit record",
        "audit acceptance",
        "memory retraction",
        "manifest",
    ],
)
def test_an_unknown_field_on_a_closed_record_is_refused(
    parse: Callable[[bytes], object], data: dict[str, Any], path: str
) -> None:
    message = refusal(parse, data)
    assert f"{path}: " in message
    assert "closed" in message


def test_a_line_that_is_not_json_is_refused_as_such() -> None:
    assert refusal(parse_signal_line, b'{"type":"obligation-resolved",').startswith("not JSON: ")
    assert refusal(parse_signal_line, b"\xff\xfe").startswith("not JSON: ")


def test_a_line_of_an_unknown_type_or_kind_is_refused_by_name() -> None:
    assert refusal(parse_signal_line, {"type": "x", "id": EVT}) == "unknown line type 'x'"
    assert refusal(parse_signal_line, {"type": "obligation-reopened"}) == (
        "unknown line type 'obligation-reopened'"
    )
    assert refusal(parse_signal_line, {"kind": "gossip", "type": "obligation-opened"}) == (
        "unknown message kind 'gossip'"
    )
    assert refusal(parse_signal_line, {"id": EVT}) == "no 'kind' or 'type' field"
    assert refusal(parse_signal_line, b"[1, 2]") == "expected a JSON object, got a list"
    assert refusal(parse_audit_line, {"type": "opinion"}) == "unknown line type 'opinion'"
    assert (
        refusal(parse_memory_line, {"type": "memory-edited"}) == "unknown line type 'memory-edited'"
    )


def test_a_line_with_a_kind_is_read_as_a_message_even_if_it_has_a_type() -> None:
    data = {**MESSAGES["operational-signal"], "type": "obligation-opened"}
    assert refusal(parse_signal_line, data).startswith("operational-signal: type: ")


def test_a_missing_required_field_is_named() -> None:
    data = {**EVENTS["obligation-escalated"]}
    del data["successor"]
    assert refusal(parse_signal_line, data).startswith("obligation-escalated: successor: required")


def test_numbers_and_booleans_are_not_read_from_strings_or_each_other() -> None:
    attempt = EXECUTION["attempt with neither"][1]
    assert "attempt: " in refusal(loader(AttemptRecord), {**attempt, "attempt": "1"})
    assert "attempt: " in refusal(loader(AttemptRecord), {**attempt, "attempt": True})
    assert "attempt: " in refusal(loader(AttemptRecord), {**attempt, "attempt": 0})
    delivered = {**EVENTS["obligation-delivered with a target"], "reminder": "false"}
    assert "reminder: " in refusal(parse_signal_line, delivered)


def test_an_empty_id_or_an_empty_source_list_is_refused() -> None:
    assert "id: " in refusal(parse_signal_line, {**EVENTS["message-noted"], "id": ""})
    opened = {**EVENTS["obligation-opened with a unit and a question"]}
    opened["obligation"] = {**OBLIGATION_FULL, "sources": []}
    assert "obligation.sources: " in refusal(parse_signal_line, opened)


def test_a_choice_offering_a_single_option_is_refused() -> None:
    requested = INTERACTIONS["interaction-requested with options, a unit and an attempt"]
    data = {**requested, "request": {**requested["request"], "options": ["sqlite"]}}
    assert "request.options: " in refusal(parse_signal_line, data)


def test_a_unit_id_that_could_leave_its_directory_is_refused() -> None:
    unit = EXECUTION["unit record, just contracted"][1]
    # A trailing newline too: Python's `$` would let it through, the original's `$` does not.
    for unit_id in ("../x", "a/b", "", "u1\n"):
        assert "unitId: " in refusal(loader(UnitRecord), {**unit, "unitId": unit_id})


def test_a_record_with_many_problems_is_refused_naming_the_first_in_one_line() -> None:
    message = refusal(loader(UnitRecord), {"unitId": "u1"})
    assert message == "unitType: required, and missing"


# --- protocol constants and Python-side construction -------------------------------------------


def test_only_a_recap_continues_without_an_answer() -> None:
    assert [kind for kind, goes_on in CONTINUES_WITHOUT_ANSWER.items() if goes_on] == ["recap"]
    assert set(CONTINUES_WITHOUT_ANSWER) == {"recap", "choice", "clarification", "consent", "uat"}


def test_the_continues_without_answer_rule_cannot_be_changed_at_run_time() -> None:
    with pytest.raises(TypeError):
        CONTINUES_WITHOUT_ANSWER["consent"] = True  # type: ignore[index]
    assert CONTINUES_WITHOUT_ANSWER["consent"] is False


def test_a_recap_is_advisory_and_every_other_kind_is_blocking() -> None:
    assert severity_for_kind("recap") == "advisory"
    for kind in ("choice", "clarification", "consent", "uat"):
        assert severity_for_kind(kind) == "blocking"


def test_records_are_frozen_and_built_by_python_names() -> None:
    request = InteractionRequest(
        id=REQ,
        kind="recap",
        subject="decisions so far",
        question="I chose sqlite; object?",
        severity="advisory",
        obligation_id=OBL,
        evidence=[],
        raised_by="S1",
        raised_at=T0,
        timeout_ms=30000,
        channel="tui",
    )
    assert request.to_json_dict()["obligationId"] == OBL
    with pytest.raises(AttributeError):
        request.subject = "changed"  # type: ignore[misc]


def test_the_folded_state_starts_open_and_serializes_in_camel_case() -> None:
    opened = parse_signal_line(line(EVENTS["obligation-opened with a unit and a question"]))
    assert isinstance(opened, ObligationOpened)
    state = ObligationState.from_opened(opened)
    delivered = parse_signal_line(line(EVENTS["obligation-delivered with a target"]))
    assert isinstance(delivered, ObligationDelivered)
    state.deliveries.append(Delivery.from_event(delivered))
    state.history.append(delivered)
    resolved = parse_signal_line(line(EVENTS["obligation-resolved"]))
    assert isinstance(resolved, ObligationResolved)
    state.status = "resolved"
    state.disposition = resolved.disposition
    state.rationale = resolved.rationale
    state.closed_at = resolved.at
    state.closed_by = resolved.by
    state.history.append(resolved)

    assert state.to_json_dict() == {
        **OBLIGATION_FULL,
        "status": "resolved",
        "acknowledgedBy": [],
        "deliveries": [{"at": T1, "channel": "outbox", "reminder": False, "target": "outbox"}],
        "disposition": "accepted-risk",
        "rationale": "staging only; reverted tomorrow",
        "closedAt": T2,
        "closedBy": "alice",
        "history": [
            EVENTS["obligation-opened with a unit and a question"],
            EVENTS["obligation-delivered with a target"],
            EVENTS["obligation-resolved"],
        ],
    }
    assert state.as_obligation() == opened.obligation
    assert isinstance(state.as_obligation(), Obligation)


def test_an_uncertainty_signal_has_no_severity_of_its_own() -> None:
    signal = parse_signal_line(line(MESSAGES["uncertainty-signal with a follow-up"]))
    assert isinstance(signal, UncertaintySignal)
    assert "severity" not in UncertaintySignal.__struct_fields__
    assert signal.impact == "high"


def test_the_protocol_package_exports_nothing_each_name_lives_in_its_module() -> None:
    import regulator.protocol as protocol

    assert not hasattr(protocol, "__all__") and not hasattr(protocol, "Obligation")
    assert all(
        issubclass(model, msgspec.Struct)
        for model in (UnitRecord, AttemptRecord, BudgetLedger, Lease, FailureObservation)
    )


# --- byte for byte ------------------------------------------------------------------------------


def _every_case() -> list[tuple[Callable[[bytes], Record], dict[str, Any]]]:
    cases: list[tuple[Callable[[bytes], Record], dict[str, Any]]] = []
    cases += [(parse_signal_line, d) for d in (*MESSAGES.values(), *EVENTS.values())]
    cases += [(parse_signal_line, d) for d in INTERACTIONS.values()]
    cases += [(loader(model), d) for model, d in EXECUTION.values()]
    cases += [(parse_audit_line, d) for d in AUDIT.values()]
    cases += [(parse_effect_line, d) for d in EFFECTS.values()]
    cases += [(parse_memory_line, d) for d in MEMORY.values()]
    cases += [(loader(InstanceManifest), d) for d in (MANIFEST_FULL, MANIFEST_BARE)]
    return cases


_CASES = _every_case()
# Text a writer may be given: any character (controls, quotes, backslashes, beyond the BMP)
# but the lone surrogates UTF-8 cannot hold.
_TEXT = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=40)


def _with_text(data: Any, text: str, at: int) -> tuple[Any, int]:
    """``data`` with the ``at``-th free-text value (a ``subject``, ``observation``, ``note``,
    …: a key outside the closed vocabularies) replaced by ``text``; the count of such values."""
    free = {"subject", "observation", "rationale", "note", "reason", "summary", "question"}
    if isinstance(data, dict):
        out = {}
        for key, value in data.items():
            if key in free and isinstance(value, str):
                value, at = (text if at == 0 else value), at - 1
            else:
                value, at = _with_text(value, text, at)
            out[key] = value
        return out, at
    if isinstance(data, list):
        items = []
        for value in data:
            value, at = _with_text(value, text, at)
            items.append(value)
        return items, at
    return data, at


@settings(max_examples=300, deadline=None)
@given(case=st.sampled_from(_CASES), text=_TEXT, at=st.integers(0, 3))
def test_every_record_written_reads_back_and_writes_the_same_bytes(
    case: tuple[Callable[[bytes], Record], dict[str, Any]], text: str, at: int
) -> None:
    parse, original = case
    data, _ = _with_text(original, text, at)
    record = parse(line(data))
    written = record_to_json_line(record)
    again = parse(written)
    assert again == record
    assert record_to_json_line(again) == written
