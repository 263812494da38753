"""What each session tool tells an agent: its description and the JSON Schema of its input.

The MCP server lists these, ``regulator tool --list`` prints them, and both hand the call to
the one :class:`regulator.host.tools.SessionTools`. The descriptions are addressed to the model and
say the rules it is held to (silence is not consent, the attention budget, the preflight), so
it learns them before it is refused by them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
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


def _schema(model: type[Any]) -> dict[str, Any]:
    """The JSON Schema of a record, its own definition at the top, the ones it uses in
    ``$defs``."""
    import msgspec

    (ref,), defs = msgspec.json.schema_components([model], ref_template="#/$defs/{name}")
    out: dict[str, Any] = dict(defs.pop(ref["$ref"].rsplit("/", 1)[-1]))
    if defs:
        out["$defs"] = defs
    return out


def _evidence() -> dict[str, Any]:
    return {"type": "array", "items": _schema(EvidenceRef), "maxItems": 50}


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _text(most: int) -> dict[str, Any]:
    """A string of 1 to ``most`` characters, not all blank."""
    return {"type": "string", "minLength": 1, "maxLength": most, "pattern": r"\S"}


# A question or an action may quote a whole command a person must read before a yes; a subject
# is the line that names it in a list.
_TEXT = _text(16000)
_SUBJECT = _text(200)


def _specs() -> dict[str, ToolSpec]:
    report = _schema(ResultReportInput)
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
            "Run the project's checks (its test command, as read_conventions names it) in the "
            "working tree; a bounded summary comes back, with the output when they fail. It "
            "needs no person's consent, so it works with nobody in the room: check your work "
            "with it rather than running the tests in your shell, which may need consent. The "
            "result is stamped with the revision and whether the tree was dirty; a report may "
            "cite only passing runs made on a committed tree at the current revision.",
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
            "questions per attempt (in an interactive session, per hour); past that, record "
            "the decision as residualUncertainty in your report, or decide what is reversible "
            "and offer it as a recap. Waiting can take minutes: raise your client's "
            "tool timeout (Claude Code: MCP_TOOL_TIMEOUT) accordingly.",
            _object(
                {
                    "kind": {
                        "type": "string",
                        "enum": ["recap", "choice", "clarification", "consent", "uat"],
                    },
                    "subject": {**_SUBJECT, "description": "what the question is about"},
                    "question": {
                        **_TEXT,
                        "description": "the question, with what you would do under each answer",
                    },
                    "options": {
                        "type": "array",
                        "items": _SUBJECT,
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
            _object({"message": _text(500)}, ["message"]),
        ),
        ToolSpec(
            "remember",
            "Record a fact about the environment for later units (operational memory, never "
            "identity). reviewBy is required, in the future and at most 90 days out.",
            _object(
                {
                    "subject": _SUBJECT,
                    "note": _TEXT,
                    "evidence": _evidence(),
                    "reviewBy": {**_text(40), "description": "ISO date, at most 90 days out"},
                    "scope": {
                        "type": "array",
                        "items": _text(64),
                        "maxItems": 50,
                        "description": "unit types",
                    },
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
                    "subject": _SUBJECT,
                    "claim": _TEXT,
                    "observation": _TEXT,
                    "confidence": {"type": "string", "enum": list(get_args(Confidence))},
                    "reportedSeverity": {"type": "string", "enum": list(SEVERITIES)},
                    "evidence": {**_evidence(), "minItems": 1},
                    "affectedUnits": {"type": "array", "items": _text(200), "maxItems": 100},
                    "observedAt": _text(40),
                    "expiresAt": _text(40),
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
                    "subject": {
                        **_SUBJECT,
                        "description": "a path, an invariant or a policy field",
                    },
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


def guidance(grants: Collection[str], named: Callable[[str], str] = str) -> str:
    """What an agent is told of its session's tools when it joins (the MCP server's
    instructions, Claude Code's ``SessionStart`` context): only the tools it has, each by the
    name it sees (``named``: Claude Code's ``mcp__regulator__ask_human``)."""
    said = []
    if "ask_human" in grants:
        said.append(f"Ask a person with {named('ask_human')}; silence is never consent.")
    if "run_checks" in grants:
        said.append(
            f"Check your work with {named('run_checks')}: it runs the project's checks and "
            "needs no person's consent, where running the tests in your shell may."
        )
    if "report_result" in grants:
        said.append(
            f"Answer your contract with {named('report_result')}, once, as your last action."
        )
    return " ".join(said)


# The whole of one call's arguments, encoded: far above any honest call, far below what would
# burden the log and every reader of it.
MAX_ARGUMENTS_BYTES = 256 * 1024

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
    "null": (type(None),),
}


def _describe(value: Any) -> str:
    if isinstance(value, str):
        return f"a string of {len(value)} characters"
    if isinstance(value, bool) or value is None:
        return "true" if value is True else "false" if value is False else "null"
    if isinstance(value, int | float):
        return repr(value)
    return f"an {type(value).__name__}" if isinstance(value, dict | list) else "a value"


def _problem(schema: dict[str, Any], value: Any, where: str, root: dict[str, Any]) -> str | None:
    """The first way ``value`` breaks ``schema`` (the subset of JSON Schema the catalog uses)."""
    if "$ref" in schema:
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        return _problem(root.get("$defs", {})[name], value, where, root)
    if "anyOf" in schema:
        problems = [_problem(s, value, where, root) for s in schema["anyOf"]]
        return None if None in problems else problems[0]
    kind = schema.get("type")
    if isinstance(kind, str):
        wanted = _TYPES[kind]
        is_bool = isinstance(value, bool)
        if not isinstance(value, wanted) or (is_bool and kind in ("integer", "number")):
            article = "an" if kind[0] in "aeio" else "a"
            return f"{where}: must be {article} {kind}, not {_describe(value)}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{where}: must be one of {', '.join(map(str, schema['enum']))}"
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            return f"{where}: must not be empty"
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            return f"{where}: at most {schema['maxLength']} characters, not {len(value)}"
        if "pattern" in schema and not re.search(schema["pattern"], value):
            return (
                f"{where}: must not be blank"
                if schema["pattern"] == r"\S"
                else f"{where}: must match {schema['pattern']}"
            )
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            return f"{where}: at least {schema['minItems']} item(s), not {len(value)}"
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            return f"{where}: at most {schema['maxItems']} item(s), not {len(value)}"
        items = schema.get("items")
        for i, item in enumerate(value if isinstance(items, dict) else []):
            found = _problem(items, item, f"{where}[{i}]", root)  # type: ignore[arg-type]
            if found:
                return found
    if isinstance(value, dict):
        properties: dict[str, Any] = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                return f"{where}.{name}: required" if where else f"{name}: required"
        for name, item in value.items():
            place = f"{where}.{name}" if where else str(name)
            if name not in properties:
                if schema.get("additionalProperties") is False:
                    return f"{place}: not an argument of this tool"
                continue
            found = _problem(properties[name], item, place, root)
            if found:
                return found
    return None


def input_problem(name: str, arguments: dict[str, Any], encoded_size: int) -> str | None:
    """Why ``arguments`` are not what tool ``name`` takes (its input schema), or ``None``."""
    if encoded_size > MAX_ARGUMENTS_BYTES:
        return f"the arguments are {encoded_size} bytes; at most {MAX_ARGUMENTS_BYTES} are taken"
    if name == "report_result":
        return None  # the report's own model checks it, naming every field (validate_record)
    schema = CATALOG[name].input_schema
    return _problem(schema, arguments, "", schema)
