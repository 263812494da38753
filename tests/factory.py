"""Lines in the original's shape, composed from the original's field lists (docs/design.md), for
tests."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

_ids = itertools.count(1)


def next_id(prefix: str) -> str:
    return f"{prefix}-{next(_ids):04d}"


def message(kind: str, subject: str, **fields: Any) -> dict[str, Any]:
    """A message of ``kind`` with the envelope and the kind's required fields filled in."""
    base: dict[str, Any] = {
        "id": fields.pop("id", next_id("m")),
        "timestamp": fields.pop("timestamp", "2026-12-01T10:00:00.000Z"),
        "subject": subject,
        "kind": kind,
    }
    shapes: dict[str, dict[str, Any]] = {
        "audit-finding": {
            "source": "S3*",
            "channel": "audit",
            "destination": "S3",
            "severity": "blocking",
            "observation": "observed",
            "evidence": [],
        },
        "policy-proposal": {
            "source": "S1",
            "channel": "proposal",
            "destination": "S5",
            "severity": "info",
            "rationale": "because",
            "requestedChange": {"field": "x"},
            "evidence": [],
        },
        "constraint": {
            "source": "S5",
            "channel": "constraint",
            "destination": "S1",
            "severity": "blocking",
            "rule": "do not",
        },
        "operational-signal": {
            "source": "S1",
            "channel": "signal",
            "destination": "S3",
            "severity": "blocking",
            "observation": "observed",
            "evidence": [],
        },
        "coordination-signal": {
            "source": "S2",
            "channel": "signal",
            "destination": "S3",
            "severity": "advisory",
            "coordination": "oscillation",
            "observation": "observed",
            "evidence": [],
        },
        "intelligence-signal": {
            "source": "S4",
            "channel": "intelligence",
            "destination": "S3",
            "severity": "advisory",
            "observation": "observed",
            "evidence": [{"class": "runtime", "ref": "probe"}],
        },
        "algedonic-signal": {
            "source": "S3",
            "channel": "algedonic",
            "destination": "S5",
            "severity": "blocking",
            "observation": "observed",
            "evidence": [],
            "requiresHumanAttention": True,
        },
        "uncertainty-signal": {
            "source": "S1",
            "channel": "signal",
            "destination": "S3",
            "decision": "left as reported",
            "reason": "unclear",
            "alternatives": [],
            "consequence": "consequence if wrong: high",
            "impact": "high",
            "evidence": [],
        },
    }
    return {**base, **shapes[kind], **fields}


def append(path: Path, *records: dict[str, Any]) -> None:
    with path.open("a") as f:
        for record in records:
            f.write(json.dumps(record, separators=(",", ":")) + "\n")
