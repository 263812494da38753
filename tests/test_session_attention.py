"""The attention budget of a session unit: a rate over any hour, where a contracted unit keeps its
cap per attempt; the host's questions count against neither; ``attention`` counts as the gate.

The questions before the one under test are written to the regulatory log at chosen times (the
gate reads the log and nothing else); the question under test goes through the real gate, with
a clock the test sets.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from regulator.host.agent_session import SessionAddress, open_session
from regulator.host.session_definition import candidates, unit_id_for
from regulator.host.session_units import end_session_unit, start_session_unit
from regulator.host.tools import SessionTools, ToolRefused
from regulator.policy import PolicyError, load_definition, load_policy_file
from regulator.policy.original import original_differences
from regulator.policy.workload import load_workload
from regulator.protocol.execution import WorkContract
from regulator.protocol.policies import (
    DEFAULT_SESSION_ATTENTION,
    InteractionPolicy,
    fields_of_ours,
)
from regulator.rules.attention_budget import most_in_an_hour, session_of
from regulator.rules.execution import ExecutionStore
from regulator.rules.regulatory_log import RegulatoryLog
from regulator.store import Layout
from regulator.views.attention import attention_report, render_attention

from .conftest import cli, git
from .test_attention import Asker

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
M = timedelta(minutes=1)
H = timedelta(hours=1)
CLARIFY = {"kind": "clarification", "subject": "naming", "question": "which name?"}


class Clock:
    def __init__(self) -> None:
        self.moment = T0

    def __call__(self) -> datetime:
        return self.moment


def session_tools(root: Path, clock: Clock, key: str = "k1") -> SessionTools:
    """The tools of the session unit for ``key``, as an agent's first call makes it."""
    layout = Layout(root)
    definition = load_definition(root)
    made = start_session_unit(layout, definition, key, agent="test", cwd=root, clock=clock)
    return open_session(layout, definition, SessionAddress(made.unit_id, None), clock=clock)


def contracted_tools(root: Path, clock: Clock, unit_id: str = "u1") -> SessionTools:
    """The tools of a dispatched `implement` unit's first attempt."""
    layout = Layout(root)
    definition = load_definition(root)
    store = ExecutionStore(layout, clock)
    contract = WorkContract.from_json_dict(
        {
            "kind": "task",
            "id": f"{unit_id}-c",
            "version": 1,
            "unitId": unit_id,
            "unitType": "implement",
            "workload": {"name": "software-development", "version": 1},
            "objective": "name the function",
            "constraintRefs": [],
            "fixed": [],
            "delegated": [],
            "unresolved": [],
            "expectedEvidence": [],
            "provenance": {"createdBy": "S3", "createdAt": "2026-03-02T08:00:00.000Z"},
        }
    )
    store.create_unit(contract, load_workload(definition))
    store.set_status(unit_id, "dispatched")
    return open_session(layout, definition, SessionAddress(unit_id, None), clock=clock)


def answered(asker: Asker, kind: str, unit: str, at: datetime, raised_by: str = "S1") -> None:
    ids = asker.ask(kind, unit, 1, at, raised_by=raised_by)
    asker.answer(ids, "alice", at + 30 * timedelta(seconds=1))


def session_budget(root: Path, per_hour: int) -> None:
    """The repository's interaction policy with ``attention.session.blockingPerHour``."""
    path = root / "regulator" / "policies" / "interaction.yaml"
    data = yaml.safe_load(path.read_text())
    data["attention"]["session"] = {"blockingPerHour": per_hour}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    git(root, "commit", "--quiet", "-am", "a session budget of our own")


def report_for(root: Path, now: datetime, *, per_hour: int = 4) -> list[str]:
    log = RegulatoryLog(Layout(root))
    log.refresh()
    sessions = {u.unit_id for u in ExecutionStore(Layout(root)).units() if u.unit_type == "session"}
    report = attention_report(
        log, now, blocking_per_attempt=2, session_units=sessions, blocking_per_hour=per_hour
    )
    return render_attention(report)


# --- the budget of a session ------------------------------------------------------------------


def test_a_session_asks_past_the_per_attempt_cap_and_is_refused_the_fifth_in_an_hour(
    instance: Path,
) -> None:
    clock = Clock()
    tools = session_tools(instance, clock)
    asker = Asker(instance)
    for n in range(4):  # the shipped budget: four in any hour
        answered(asker, "clarification", tools.unit_id, T0 + n * 10 * M)

    clock.moment = T0 + 40 * M
    with pytest.raises(ToolRefused) as refused:
        tools.call("ask_human", CLARIFY)
    assert str(refused.value) == (
        "the attention budget is spent: 4 blocking question(s) in the last hour, and a session "
        "may ask 4 in any hour. Decide it yourself where it is reversible and offer it as a "
        "recap, or ask after 10:00:00 UTC, when the hour holds fewer"
    )
    # A recap still goes: it stops nobody.
    recap = tools.call("ask_human", {**CLARIFY, "kind": "recap"})
    assert recap["continue"] is True

    # Once the first question is more than an hour old, the next may be asked.
    clock.moment = T0 + H + 1 * M
    asked = tools.call("ask_human", CLARIFY)
    assert (asked["answered"], asked["paused"]) == (False, True)  # nobody is in the room


def test_a_session_under_a_budget_of_its_own_is_held_to_it(instance: Path) -> None:
    session_budget(instance, 1)
    clock = Clock()
    tools = session_tools(instance, clock)
    answered(Asker(instance), "choice", tools.unit_id, T0)
    clock.moment = T0 + 59 * M
    with pytest.raises(ToolRefused, match=r"1 blocking question\(s\) in the last hour, and a "):
        tools.call("ask_human", CLARIFY)


def test_a_session_budget_of_zero_refuses_every_blocking_question(instance: Path) -> None:
    session_budget(instance, 0)
    tools = session_tools(instance, Clock())
    with pytest.raises(ToolRefused, match=r"allows a session no blocking question"):
        tools.call("ask_human", CLARIFY)


def test_a_later_run_of_the_session_keeps_the_hour_of_the_run_before(instance: Path) -> None:
    clock = Clock()
    first = session_tools(instance, clock)
    asker = Asker(instance)
    for n in range(4):
        answered(asker, "consent", first.unit_id, T0 + n * M)
    end_session_unit(Layout(instance), first.unit_id, clock=clock)  # resumed, or ended and begun

    clock.moment = T0 + 30 * M
    again = session_tools(instance, clock)
    assert again.unit_id == first.unit_id + "-2"
    with pytest.raises(ToolRefused, match="4 blocking question"):
        again.call("ask_human", CLARIFY)
    # Another session is another person's conversation: its hour is its own.
    other = session_tools(instance, clock, key="k2")
    assert other.call("ask_human", CLARIFY)["paused"] is True


def test_a_contracted_unit_keeps_its_cap_per_attempt_however_long_ago_it_asked(
    instance: Path,
) -> None:
    clock = Clock()
    tools = contracted_tools(instance, clock)
    asker = Asker(instance)
    answered(asker, "choice", "u1", T0)
    answered(asker, "clarification", "u1", T0 + 2 * H)

    clock.moment = T0 + 5 * H
    with pytest.raises(ToolRefused) as refused:
        tools.call("ask_human", CLARIFY)
    assert str(refused.value) == (
        "the attention budget is spent: 2 blocking question(s) per attempt. Record the decision "
        "as residualUncertainty in your report, where the routing policy decides what it "
        "costs, or offer it as a recap"
    )


# --- the host's questions, and `attention` counting as the gate --------------------------------


def test_the_hooks_consents_count_against_no_budget_and_attention_agrees_with_the_gate(
    instance: Path,
) -> None:
    clock = Clock()
    session = session_tools(instance, clock)
    unit = contracted_tools(instance, clock)
    asker = Asker(instance)
    # The session: three questions of its own and six consents a hook asked, in one hour.
    for n in range(3):
        answered(asker, "clarification", session.unit_id, T0 + n * M)
    for n in range(6):
        answered(asker, "consent", session.unit_id, T0 + (10 + n) * M, raised_by="S3")
    # The contracted unit: one question of its own and three consents a hook asked.
    answered(asker, "choice", "u1", T0 + 20 * M)
    for n in range(3):
        answered(asker, "consent", "u1", T0 + (21 + n) * M, raised_by="S3")

    now = T0 + 30 * M
    clock.moment = now
    lines = report_for(instance, now)
    assert lines[1].startswith("blocking questions: 13 asked; 13 answered")
    assert lines[2].startswith(
        "  of them the host's (hooks' consents, the loop's clarifications; on no unit's "
        "budget): 9; 9 answered"
    )
    assert (
        "per attempt: 1.0 over 1 attempt(s), at most 1 (unit u1 attempt 1); the policy allows 2"
        in lines
    )
    assert (
        f"per session: 3 over 1 session(s), at most 3 in an hour ({session.unit_id}, to "
        "2026-03-02T09:02); the policy allows 4 in any hour"
    ) in lines
    assert not any(line.startswith("  over the") for line in lines)

    # The gate counts the same: one more each, then the budget is spent.
    assert session.call("ask_human", CLARIFY)["paused"] is True
    assert unit.call("ask_human", CLARIFY)["paused"] is True
    lines = report_for(instance, now)
    assert (
        f"per session: 4 over 1 session(s), at most 4 in an hour ({session.unit_id}, to "
        "2026-03-02T09:30); the policy allows 4 in any hour"
    ) in lines
    assert (
        "per attempt: 2.0 over 1 attempt(s), at most 2 (unit u1 attempt 1); the policy allows 2"
        in lines
    )


def test_attention_names_a_session_that_asked_more_in_an_hour_than_the_budget(
    instance: Path,
) -> None:
    clock = Clock()
    tools = session_tools(instance, clock)
    asker = Asker(instance)
    # Written past the gate (as a session under an older, larger budget could have): five in
    # forty minutes, then two more an hour later.
    for n in range(5):
        answered(asker, "clarification", tools.unit_id, T0 + n * 10 * M)
    for n in range(2):
        answered(asker, "clarification", tools.unit_id, T0 + 2 * H + n * M)
    lines = report_for(instance, T0 + 3 * H)
    assert (
        f"per session: 7 over 1 session(s), at most 5 in an hour ({tools.unit_id}, to "
        "2026-03-02T09:40); the policy allows 4 in any hour"
    ) in lines
    assert (
        f"  over the budget: session {tools.unit_id} asked 5 in the hour, to 2026-03-02T09:40"
        in (lines)
    )


def test_attention_json_holds_the_session_figures_and_the_hosts_questions(instance: Path) -> None:
    clock = Clock()
    clock.moment = datetime.now(UTC) - 2 * H
    tools = session_tools(instance, clock)
    asker = Asker(instance)
    answered(asker, "uat", tools.unit_id, clock.moment)
    answered(asker, "consent", tools.unit_id, clock.moment + M, raised_by="S3")
    done = cli("attention", "--json", cwd=instance)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert (data["asked"], data["host"]["asked"], data["perAttempt"]) == (2, 1, [])
    assert data["blockingPerHour"] == DEFAULT_SESSION_ATTENTION.blocking_per_hour
    (load,) = data["perSession"]
    assert (load["session"], load["runs"], load["asked"], load["mostInAnHour"]) == (
        tools.unit_id,
        1,
        1,
        1,
    )
    assert data["overBudget"] == []


# --- the hour, and the runs of a session --------------------------------------------------------


def test_every_run_of_a_session_is_counted_as_that_session() -> None:
    for key in ("claude-3f1c2a9e-8d7b-4c55-9e0f-1234567890ab", "mcp-p42-1700000"):
        base = unit_id_for(key)
        assert {session_of(run) for run in candidates(base)} == {base}, key
    # A key that ends as a later run's name does is one session with the shorter key's runs:
    # its runs are never split, whatever it shares.
    for key in ("k-7", "k-7-2", "k"):
        assert {session_of(run) for run in candidates(unit_id_for(key))} == {"session-k"}, key
    assert session_of("session-k1-1000") == "session-k1-1000"  # no such run
    assert session_of("session-k1-02") == "session-k1-02"


def test_the_busiest_hour_holds_what_the_gate_would_have_counted() -> None:
    times = [T0, T0 + 30 * M, T0 + 59 * M, T0 + 60 * M, T0 + 61 * M]
    # At T0+60 the first is an hour old and no longer counts; T0+30, +59, +60, +61 are one hour.
    assert most_in_an_hour(times) == (4, T0 + 61 * M)
    assert most_in_an_hour([]) == (0, None)


# --- the policy field -------------------------------------------------------------------------


def _interaction(tmp_path: Path, attention: str) -> Path:
    path = tmp_path / "interaction.yaml"
    path.write_text(
        "name: interaction\nversion: 2\ndescription: x\n"
        "timeoutsMs: {recap: 30000, choice: 120000, clarification: 300000, consent: 300000, "
        "uat: 600000}\n"
        f"attention: {attention}\n"
        "reminderAfterMs: 3600000\npeople: []\n"
    )
    return path


def test_the_session_budget_is_read_from_the_policy_and_defaults_without_it(
    tmp_path: Path,
) -> None:
    own = _interaction(tmp_path, "{blockingPerAttempt: 2, session: {blockingPerHour: 6}}")
    policy = load_policy_file("interaction", own, InteractionPolicy)
    assert policy.attention.for_sessions.blocking_per_hour == 6
    assert fields_of_ours(policy) == ["attention.session"]
    plain = _interaction(tmp_path, "{blockingPerAttempt: 2}")
    policy = load_policy_file("interaction", plain, InteractionPolicy)
    assert policy.attention.for_sessions == DEFAULT_SESSION_ATTENTION
    assert fields_of_ours(policy) == []


@pytest.mark.parametrize(
    ("attention", "problem"),
    [
        (
            "{blockingPerAttempt: 2, session: {blockingPerHour: -1}}",
            "interaction.yaml:5: attention.session.blockingPerHour: expected `int` >= 0 (got -1)",
        ),
        (
            "{blockingPerAttempt: 2, session: {blockingPerHour: '3'}}",
            "interaction.yaml:5: attention.session.blockingPerHour: expected `int`, got `str`",
        ),
        (
            "{blockingPerAttempt: 2, session: {perHour: 3}}",
            "interaction.yaml:5: attention.session.perHour: not a field of this record (the "
            "record is closed)",
        ),
        (
            "{blockingPerAttempt: 2, session: {}}",
            "interaction.yaml:5: attention.session.blockingPerHour: required, and missing",
        ),
    ],
)
def test_a_bad_session_budget_is_refused_naming_the_field(
    tmp_path: Path, attention: str, problem: str
) -> None:
    path = _interaction(tmp_path, attention)
    with pytest.raises(PolicyError) as caught:
        load_policy_file("interaction", path, InteractionPolicy)
    assert any(line.endswith(problem) for line in caught.value.problems), caught.value.problems


def test_the_originals_interaction_policy_loads_and_a_session_budget_in_it_is_ours() -> None:
    original = Path(__file__).parent / "fixtures" / "original" / "regulator" / "policies"
    data = json.loads((original / "interaction.json").read_text())
    assert original_differences("interaction", data).ours == []
    policy = InteractionPolicy.from_json_dict(data)
    assert policy.attention.for_sessions == DEFAULT_SESSION_ATTENTION
    data["attention"]["session"] = {"blockingPerHour": 3}
    found = original_differences("interaction", data)
    assert (found.refused, found.ours) == ([], ["attention.session"])
