"""The router, the veto and the fold, against the obligations seed, statement by statement.

Each test is named after what the seed (003, "Obligations") says, and observes it on a real
instance's files.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from regulator.policy import load_definition
from regulator.protocol.entry import validate_entry
from regulator.rules.ledger import Ledger, LedgerError
from regulator.rules.regulatory_log import RegulatoryLog
from regulator.rules.router import effective_severity, route_messages
from regulator.rules.veto import progression_veto
from regulator.store import Layout

from .factory import append, message

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
POLICY = load_definition(None).routing


@pytest.fixture
def ledger(instance: Path) -> Ledger:
    return Ledger(Layout(instance), clock=lambda: NOW)


def route(ledger: Ledger, *messages: dict[str, object]):  # type: ignore[no-untyped-def]
    append(ledger.layout.signals, *messages)
    return route_messages(ledger, POLICY)


# --- where they come from ----------------------------------------------------------------


def test_a_routed_message_at_or_above_its_rules_line_opens_one_obligation(ledger: Ledger) -> None:
    m = message("operational-signal", "deviation", unit="u1", severity="blocking")
    result = route(ledger, m)
    assert len(result.opened) == 1 and not result.noted
    o = result.opened[0]
    assert (o.concern, o.consumer, o.severity, o.unit, o.sources) == (
        "operational-signal",
        "S3",
        "blocking",
        "u1",
        [m["id"]],
    )
    assert o.blocks and o.opened_by == "S3"


def test_below_the_line_a_message_is_noted_with_the_reason_and_stays_in_the_trace(
    ledger: Ledger,
) -> None:
    m = message("operational-signal", "minor", unit="u1", severity="advisory")
    result = route(ledger, m)
    assert not result.opened
    assert result.noted[0].reason == (
        "advisory is below blocking, the routing v1 line for operational-signal"
    )
    assert m["id"] in ledger.refresh().messages  # the message stays in the log


def test_a_message_kind_without_a_rule_is_noted_never_an_obligation(ledger: Ledger) -> None:
    result = route(ledger, message("constraint", "never push", severity="critical"))
    assert not result.opened
    assert result.noted[0].reason == "routing v1 has no rule for constraint"


def test_routing_is_idempotent_a_second_pass_finds_nothing_unrouted(ledger: Ledger) -> None:
    route(ledger, message("audit-finding", "red", unit="u1"), message("constraint", "c"))
    lines = ledger.layout.signals.read_bytes()
    again = route_messages(ledger, POLICY)
    assert not again.opened and not again.noted
    assert ledger.layout.signals.read_bytes() == lines
    assert ledger.refresh().unrouted() == []


def test_messages_and_events_share_one_log(ledger: Ledger) -> None:
    # Four messages, two openings, two notes: eight lines (the original's own count).
    route(
        ledger,
        message("audit-finding", "a", unit="u1"),
        message("audit-finding", "b", unit="u1", severity="advisory"),
        message("policy-proposal", "c"),
        message("constraint", "d"),
    )
    assert len(ledger.layout.signals.read_bytes().splitlines()) == 8


# --- severity ----------------------------------------------------------------------------


def test_the_router_assigns_severity_an_uncertaintys_impact_is_only_an_input(
    ledger: Ledger,
) -> None:
    for impact, expected in [("low", "info"), ("medium", "advisory"), ("high", "blocking")]:
        m = validate_entry(message("uncertainty-signal", f"u {impact}", unit="u1", impact=impact))
        assert effective_severity(m, POLICY) == expected  # type: ignore[arg-type]
    result = route(ledger, message("uncertainty-signal", "crit", unit="u1", impact="critical"))
    assert result.opened[0].severity == "critical"


def test_a_proposal_naming_INV_001_is_raised_to_blocking(ledger: Ledger) -> None:
    m = message("policy-proposal", "relax INV-001 for tests", severity="info")
    result = route(ledger, m)
    assert result.opened[0].severity == "blocking"
    assert result.opened[0].consumer == "S5"


def test_a_finding_that_only_cites_invariant_INV_003_is_not_raised(ledger: Ledger) -> None:
    m = message("audit-finding", "closeout refused", unit="u1", severity="advisory")
    m["invariant"] = "INV-003"
    result = route(ledger, m)
    # advisory stays advisory, which is below the audit-finding line: only noted.
    assert not result.opened
    assert result.noted[0].reason.startswith("advisory is below blocking")


def test_a_finding_whose_observation_names_the_identity_path_is_raised(ledger: Ledger) -> None:
    m = message(
        "audit-finding",
        "edited",
        unit="u1",
        severity="advisory",
        observation="touched regulator/identity/INVARIANTS.md",
    )
    assert route(ledger, m).opened[0].severity == "blocking"


def test_floors_only_raise_never_lower(ledger: Ledger) -> None:
    m = validate_entry(message("operational-signal", "INV-002 hot", unit="u1", severity="critical"))
    assert effective_severity(m, POLICY) == "critical"  # type: ignore[arg-type]


# --- intelligence -------------------------------------------------------------------------


def test_an_intelligence_signal_past_its_expiry_is_noted_and_never_an_obligation(
    ledger: Ledger,
) -> None:
    m = message(
        "intelligence-signal",
        "mirror down",
        expiresAt="2026-11-30T00:00:00.000Z",
        affectedUnits=["u1"],
    )
    result = route(ledger, m)
    assert not result.opened
    assert result.noted[0].reason == (
        "intelligence expired at 2026-11-30T00:00:00.000Z; stale evidence cannot raise an "
        "obligation"
    )


def test_expired_intelligence_below_the_line_gets_the_below_the_line_reason(
    ledger: Ledger,
) -> None:
    m = message("intelligence-signal", "x", severity="info", expiresAt="2026-11-30T00:00:00.000Z")
    assert route(ledger, m).noted[0].reason.startswith("info is below advisory")


def test_intelligence_naming_affected_units_opens_one_obligation_per_unit(ledger: Ledger) -> None:
    m = message(
        "intelligence-signal",
        "api changed",
        severity="blocking",
        affectedUnits=["u1", "u2", "u1"],
    )
    result = route(ledger, m)
    assert [o.unit for o in result.opened] == ["u1", "u2"]
    assert all(o.blocks and o.sources == [m["id"]] for o in result.opened)
    log = ledger.refresh()
    assert progression_veto(log, "u1") and progression_veto(log, "u2")
    assert not progression_veto(log, "u3")


# --- the veto -----------------------------------------------------------------------------


def test_an_open_blocking_obligation_that_names_a_unit_vetoes_that_unit(ledger: Ledger) -> None:
    route(ledger, message("audit-finding", "red", unit="u1"))
    log = ledger.refresh()
    problems = progression_veto(log, "u1", before="close")
    assert len(problems) == 1 and problems[0].path == "obligations"
    assert problems[0].message.endswith("must be dispositioned before close")
    assert progression_veto(log, "u2") == []


def test_an_advisory_obligation_is_owed_but_holds_nothing(ledger: Ledger) -> None:
    result = route(ledger, message("coordination-signal", "thrash", unit="u1"))
    assert result.opened[0].severity == "advisory" and not result.opened[0].blocks
    assert progression_veto(ledger.refresh(), "u1") == []


def test_a_unit_less_audit_finding_holds_every_unit(ledger: Ledger) -> None:
    result = route(ledger, message("audit-finding", "base is red after merge"))
    assert result.opened[0].unit is None and result.opened[0].blocks
    log = ledger.refresh()
    assert progression_veto(log, "any-unit") and progression_veto(log, "another")


def test_any_other_unit_less_obligation_never_blocks(ledger: Ledger) -> None:
    result = route(ledger, message("operational-signal", "instance thing", severity="critical"))
    assert result.opened[0].unit is None and not result.opened[0].blocks
    assert progression_veto(ledger.refresh(), "u1") == []


def test_an_acknowledgement_is_not_a_disposition_the_veto_stands(ledger: Ledger) -> None:
    o = route(ledger, message("audit-finding", "red", unit="u1")).opened[0]
    ledger.acknowledge(o.id, "alice", "looking")
    log = ledger.refresh()
    assert log.obligations[o.id].status == "acknowledged"
    assert log.obligations[o.id].acknowledged_by == ["alice"]
    assert progression_veto(log, "u1")


def test_a_disposition_ends_the_veto(ledger: Ledger) -> None:
    o = route(ledger, message("audit-finding", "red", unit="u1")).opened[0]
    ledger.resolve(o.id, "alice", "fixed", "done")
    assert progression_veto(ledger.refresh(), "u1") == []


# --- the lifecycle ------------------------------------------------------------------------


def test_records_never_reopen_terminal_records_refuse_every_transition(ledger: Ledger) -> None:
    o = route(ledger, message("audit-finding", "red", unit="u1")).opened[0]
    ledger.resolve(o.id, "alice", "no-action", "fine")
    before = ledger.layout.signals.read_bytes()
    refusal = f"obligation {o.id} is resolved; terminal records do not reopen — open a successor"
    acts: tuple[Callable[[], object], ...] = (
        lambda: ledger.acknowledge(o.id, "alice"),
        lambda: ledger.resolve(o.id, "alice", "fixed", "again"),
        lambda: ledger.escalate(o.id, "alice", "r", to="human"),
        lambda: ledger.deliver(o.id, "S3", "outbox"),
    )
    for act in acts:
        with pytest.raises(LedgerError) as caught:
            act()
        assert str(caught.value) == refusal
    assert ledger.layout.signals.read_bytes() == before


def test_escalation_opens_a_successor_for_another_consumer_and_the_veto_moves_with_it(
    ledger: Ledger,
) -> None:
    o = route(ledger, message("audit-finding", "red", unit="u1")).opened[0]
    successor = ledger.escalate(o.id, "bob", "S3 cannot", to="human")
    log = ledger.refresh()
    old, new = log.obligations[o.id], log.obligations[successor.id]
    assert old.status == "escalated" and old.successor == new.id
    assert new.sources == [o.id, *o.sources]
    assert (new.consumer, new.severity, new.blocks, new.unit) == ("human", "blocking", True, "u1")
    assert [p.obligation.id for p in progression_veto(log, "u1")] == [new.id]


def test_escalation_to_an_existing_open_successor_links_it(ledger: Ledger) -> None:
    a = route(ledger, message("audit-finding", "a", unit="u1")).opened[0]
    b = route(ledger, message("audit-finding", "b", unit="u1")).opened[0]
    ledger.escalate(a.id, "S3", "merged into b", successor=b.id)
    log = ledger.refresh()
    assert log.obligations[a.id].successor == b.id
    assert len(log.obligations) == 2


def test_supersede_closes_one_obligation_for_its_successor(ledger: Ledger) -> None:
    a = route(ledger, message("audit-finding", "a", unit="u1")).opened[0]
    b = route(ledger, message("audit-finding", "b", unit="u1")).opened[0]
    ledger.supersede(a.id, "S3", b.id, "newer evidence")
    log = ledger.refresh()
    assert log.obligations[a.id].status == "superseded"
    assert [h.type for h in log.obligations[a.id].history] == [
        "obligation-opened",
        "obligation-superseded",
    ]


def test_the_lifecycle_ack_escalate_supersede_resolve_is_the_obligations_history(
    ledger: Ledger,
) -> None:
    a = route(ledger, message("audit-finding", "a", unit="u1")).opened[0]
    ledger.acknowledge(a.id, "bob")
    b = ledger.escalate(a.id, "bob", "not mine", to="human")
    c = route(ledger, message("audit-finding", "c", unit="u1")).opened[0]
    ledger.supersede(b.id, "S3", c.id, "replaced")
    ledger.resolve(c.id, "alice", "fixed", "done")
    log = ledger.refresh()
    assert [h.type for h in log.obligations[a.id].history] == [
        "obligation-opened",
        "obligation-acknowledged",
        "obligation-escalated",
    ]
    assert log.obligations[c.id].disposition == "fixed"
    assert log.open_obligations() == []


def test_every_disposition_closes_the_record_as_resolved(ledger: Ledger) -> None:
    from regulator.protocol.vocab import DISPOSITIONS

    for disposition in DISPOSITIONS:
        o = route(ledger, message("audit-finding", disposition, unit="u1")).opened[0]
        ledger.resolve(o.id, "S3", disposition, "r")
        state = ledger.refresh().obligations[o.id]
        assert (state.status, state.disposition) == ("resolved", disposition)


def opened_line(obligation_id: str, unit: str = "u1") -> dict[str, object]:
    """An ``obligation-opened`` line as the original writes it, with a chosen id."""
    return {
        "type": "obligation-opened",
        "id": f"ev-{obligation_id}",
        "at": "2026-12-01T09:00:00.000Z",
        "by": "S3",
        "obligation": {
            "id": obligation_id,
            "subject": f"subject {obligation_id}",
            "unit": unit,
            "concern": "audit-finding",
            "sources": [f"m-{obligation_id}"],
            "severity": "blocking",
            "consumer": "S3",
            "blocks": True,
            "openedAt": "2026-12-01T09:00:00.000Z",
            "openedBy": "S3",
        },
    }


def test_an_id_prefix_finds_one_obligation_and_an_ambiguous_one_is_refused(
    ledger: Ledger,
) -> None:
    append(ledger.layout.signals, opened_line("abc1-x"), opened_line("abc2-y"))
    assert ledger.acknowledge("abc1", "alice").id == "abc1-x"
    with pytest.raises(LedgerError) as caught:
        ledger.acknowledge("abc", "alice")
    assert str(caught.value) == '"abc" matches 2 obligations; give more of the id'
    with pytest.raises(LedgerError) as caught:
        ledger.acknowledge("zzz", "alice")
    assert str(caught.value) == 'no obligation "zzz"'


def test_an_event_for_an_unknown_obligation_is_a_problem_not_an_unreadable_log(
    instance: Path,
) -> None:
    layout = Layout(instance)
    append(
        layout.signals,
        {
            "type": "obligation-resolved",
            "id": "e1",
            "at": "2026-12-01T00:00:00.000Z",
            "by": "alice",
            "obligationId": "nope",
            "disposition": "fixed",
            "rationale": "x",
        },
        message("audit-finding", "still read", unit="u1"),
    )
    log = RegulatoryLog(layout)
    log.refresh()
    assert [str(p) for p in log.problems] == [
        ".regulator/signals.ndjson:1: obligation-resolved for an unknown obligation nope"
    ]
    assert len(log.messages) == 1
