"""What each session tool tells an agent: its description and the JSON Schema of its input.

The MCP server lists these, ``regulator tool --list`` prints them, and both hand the call to
the one :class:`regulator.host.tools.SessionTools`. The descriptions are addressed to the model and
say the rules it is held to (silence is not consent, the attention budget, the preflight), so
it learns them before it is refused by them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, get_args

from regulator.protocol.evidence import EvidenceRef
from regulator.protocol.execution import ResultReportInput
from regulator.protocol.vocab import SEVERITIES, Confidence


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]


def _evidence() -> dict[str, Any]:
    return {"type": "array", "items": EvidenceRef.model_json_schema(by_alias=True)}


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


_TEXT = {"type": "string", "minLength": 1}


def _specs() -> dict[str, ToolSpec]:
    report = ResultReportInput.model_json_schema(by_alias=True)
    specs = [
        ToolSpec(
            "read_conventions",
            "What can be determined mechanically about the project: the real test command and "
            "where it was found, the source directories, the protected paths and the checks. "
            "The host runs the same command at closeout. Takes no input.",
            _object({}, []),
        ),
        ToolSpec(
            "run_checks",
            "Run the project's deterministic checks in the worktree. The result is stamped "
            "with the revision and whether the tree was dirty; a report may cite only passing "
            "runs made on a committed tree at the current revision.",
            _object({}, []),
        ),
        ToolSpec(
            "run_tests",
            "Run the project's test command in the worktree; a bounded summary comes back, "
            "with output when something failed. Commit first: only a passing run on a "
            "committed tree at the current revision can be cited as evidence in the report.",
            _object({"filter": {"type": "string", "description": "a test-name pattern"}}, []),
        ),
        ToolSpec(
            "report_result",
            "Answer the contract, once, as your last action, after the checks have run. "
            "Evidence of class test or command must rest on a passing run_tests or run_checks "
            "of this session at the committed revision, or the report is refused before "
            "anything is written. Every delegated decision and required expectation must be "
            "addressed. A report is never revised.",
            report,
        ),
        ToolSpec(
            "ask_human",
            "Ask a person, under one of five kinds. recap: decisions offered for correction; "
            "the work continues. choice (2-6 options), clarification, consent (state the "
            "irreversible action a yes authorizes in `action`) and uat: the work waits for the "
            "answer. Silence is never consent: only an explicit yes authorizes a consent, and "
            "without an answer this attempt pauses and every tool with an effect is refused. "
            "A consent answered no means: do not perform the action. At most a few blocking "
            "questions per attempt; past that, record the decision as residualUncertainty in "
            "your report or offer it as a recap. Waiting can take minutes: raise your client's "
            "tool timeout (Claude Code: MCP_TOOL_TIMEOUT) accordingly.",
            _object(
                {
                    "kind": {
                        "type": "string",
                        "enum": ["recap", "choice", "clarification", "consent", "uat"],
                    },
                    "subject": {**_TEXT, "description": "what the question is about"},
                    "question": {
                        **_TEXT,
                        "description": "the question, with what you would do under each answer",
                    },
                    "options": {
                        "type": "array",
                        "items": _TEXT,
                        "minItems": 2,
                        "maxItems": 6,
                        "description": "for a choice: two to six options",
                    },
                    "action": {
                        **_TEXT,
                        "description": "for consent: the irreversible action a yes authorizes",
                    },
                    "evidence": _evidence(),
                },
                ["kind", "subject", "question"],
            ),
        ),
        ToolSpec(
            "notify_owner",
            "Send one message to the unit's owner, outside the repository. The same message "
            "is sent once: sending it again on purpose needs different words.",
            _object({"message": {"type": "string", "minLength": 1, "maxLength": 500}}, ["message"]),
        ),
        ToolSpec(
            "remember",
            "Record a fact about the environment for later units (operational memory, never "
            "identity). reviewBy is required, in the future and at most 90 days out.",
            _object(
                {
                    "subject": _TEXT,
                    "note": _TEXT,
                    "evidence": _evidence(),
                    "reviewBy": {**_TEXT, "description": "ISO date, at most 90 days out"},
                    "scope": {"type": "array", "items": _TEXT, "description": "unit types"},
                },
                ["subject", "note", "reviewBy"],
            ),
        ),
        ToolSpec(
            "report_intelligence",
            "Record what you found out about the environment: advice for S3, never a decision. "
            "At least one piece of evidence; the router opens one obligation per affected unit.",
            _object(
                {
                    "subject": _TEXT,
                    "claim": _TEXT,
                    "observation": _TEXT,
                    "confidence": {"type": "string", "enum": list(get_args(Confidence))},
                    "reportedSeverity": {"type": "string", "enum": list(SEVERITIES)},
                    "evidence": {**_evidence(), "minItems": 1},
                    "affectedUnits": {"type": "array", "items": _TEXT},
                    "observedAt": _TEXT,
                    "expiresAt": _TEXT,
                },
                ["subject", "observation", "evidence"],
            ),
        ),
        ToolSpec(
            "propose_policy_change",
            "Ask for a change to identity or policy. A proposal is not policy: it is owed to "
            "S5, and a person who may act as S5 decides it.",
            _object(
                {
                    "subject": {**_TEXT, "description": "a path, an invariant or a policy field"},
                    "rationale": _TEXT,
                    "requestedChange": {"description": "any JSON value"},
                    "evidence": _evidence(),
                },
                ["subject", "rationale", "requestedChange"],
            ),
        ),
    ]
    return {spec.name: spec for spec in specs}


CATALOG: dict[str, ToolSpec] = _specs()
