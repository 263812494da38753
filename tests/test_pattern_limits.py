"""Routing floors run under a time limit: an agent's text cannot hold routing by being slow to
match, nor slip past a floor that way."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from regulator.policy import load_definition
from regulator.policy.loader import PolicyError, load_policy_file
from regulator.protocol.entry import validate_entry
from regulator.protocol.policies import RoutingPolicy
from regulator.rules.router import FLOOR_TIMEOUT_S, effective_severity

from .conftest import cli, git
from .factory import append, message

# Backtracks exponentially on a run of `a`s followed by something that is not the end.
HOSTILE = ["(a+)+$", "(a|a)*$", "(a|aa)*$"]
SHIPPED_ROUTING = Path(load_definition(None).source("routing"))


def _routing_with_floors(patterns: list[str]) -> str:
    text = SHIPPED_ROUTING.read_text(encoding="utf-8")
    floors = "".join(
        f"  - pattern: '{p}'\n    severity: blocking\n    reason: hostile floor {i}\n"
        for i, p in enumerate(patterns)
    )
    head, _, _ = text.partition("floors:\n")
    return f"{head}floors:\n{floors}"


@pytest.fixture
def hostile_instance(repo: Path) -> Path:
    policies = repo / "regulator" / "policies"
    policies.mkdir(parents=True)
    (policies / "routing.yaml").write_text(_routing_with_floors(HOSTILE), encoding="utf-8")
    git(repo, "add", "regulator")
    git(repo, "commit", "--quiet", "-m", "a hostile routing policy")
    result = cli("init", "--by", "alice", cwd=repo)
    assert result.returncode == 0, result.stderr
    return repo


def test_a_backtracking_floor_on_forty_as_does_not_hang_signals_route_and_is_applied_and_named(
    hostile_instance: Path,
) -> None:
    # Advisory is below the operational-signal line: only a floor can open an obligation.
    m = message("operational-signal", "a" * 40, unit="u1", severity="advisory")
    append(hostile_instance / ".regulator" / "signals.ndjson", m)
    started = time.monotonic()
    result = cli("signals", "route", cwd=hostile_instance)
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    # Unbounded, (a|a)*$ on forty a's takes 2**40 steps; bounded, three floors take a second.
    assert elapsed < 60
    assert "1 obligation(s) opened" in result.stdout, result.stdout
    assert "blocking" in result.stdout
    assert "floors[1].pattern ran over" in result.stderr, result.stderr
    assert "applied (blocking) as if it matched" in result.stderr


def test_a_floor_that_runs_out_of_time_raises_the_severity_rather_than_letting_the_text_pass() -> (
    None
):
    policy = RoutingPolicy.from_json_dict({**_policy_dict(), "floors": [_floor("(a|a)*$")]})
    m = validate_entry(message("operational-signal", "a" * 40, unit="u1", severity="advisory"))
    problems: list[str] = []
    started = time.monotonic()
    assert effective_severity(m, policy, problems) == "blocking"  # type: ignore[arg-type]
    assert time.monotonic() - started < 30 * FLOOR_TIMEOUT_S + 10
    assert len(problems) == 1 and "floors[0].pattern" in problems[0]


def test_a_floor_that_matches_quickly_reports_nothing() -> None:
    policy = RoutingPolicy.from_json_dict({**_policy_dict(), "floors": [_floor(r"\bINV-\d{3}\b")]})
    problems: list[str] = []
    hit = validate_entry(message("operational-signal", "breaks INV-001", severity="advisory"))
    miss = validate_entry(message("operational-signal", "a" * 40, severity="advisory"))
    assert effective_severity(hit, policy, problems) == "blocking"  # type: ignore[arg-type]
    assert effective_severity(miss, policy, problems) == "advisory"  # type: ignore[arg-type]
    assert problems == []


def test_a_floor_that_is_not_a_regular_expression_is_refused_at_load_naming_file_line_and_field(
    tmp_path: Path,
) -> None:
    path = tmp_path / "routing.yaml"
    path.write_text(_routing_with_floors(["(INV-"]), encoding="utf-8")
    with pytest.raises(PolicyError) as refused:
        load_policy_file("routing", path, RoutingPolicy)
    (problem,) = refused.value.problems
    line = path.read_text().splitlines().index("  - pattern: '(INV-'") + 1
    assert problem.startswith(f"{path}:{line}: floors[0].pattern: not a regular expression")


def _policy_dict() -> dict[str, object]:
    return load_definition(None).routing.to_json_dict()


def _floor(pattern: str) -> dict[str, str]:
    return {"pattern": pattern, "severity": "blocking", "reason": "test"}
