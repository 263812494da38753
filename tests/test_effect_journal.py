"""The effect journal: act once, record it, and reconcile what a crash left in between."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from regulator.rules.effect_journal import EffectJournal, EffectJournalError, effect_key, js_json
from regulator.store import Layout

NOW = datetime(2026, 9, 22, 12, 0, tzinfo=UTC)


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    (tmp_path / ".regulator").mkdir()
    return Layout(tmp_path, env={})


@pytest.fixture
def journal(layout: Layout) -> EffectJournal:
    return EffectJournal(layout, lambda: NOW)


def lines(layout: Layout) -> list[dict[str, object]]:
    return [json.loads(line) for line in layout.effects.read_text().splitlines()]


def test_effect_key_is_the_sha256_of_the_compact_js_array_cut_to_24_hex() -> None:
    # Written out by hand from the definition: [unitId or null, tool, args], no spaces, keys in
    # insertion order, non-ASCII as is, quotes escaped.
    text = '["u1","notify_owner",{"message":"héllo \\"wörld\\" ✓","n":1}]'
    expected = hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]
    assert effect_key("u1", "notify_owner", {"message": 'héllo "wörld" ✓', "n": 1}) == expected
    no_unit = hashlib.sha256(b'[null,"notify_owner",{"message":"x"}]').hexdigest()[:24]
    assert effect_key(None, "notify_owner", {"message": "x"}) == no_unit
    assert len(expected) == 24


@pytest.mark.parametrize(
    ("value", "js"),
    [
        (1.0, "1"),
        (-0.0, "0"),
        (0.1, "0.1"),
        (1.5e-7, "1.5e-7"),
        (1e-6, "0.000001"),
        (1e16, "10000000000000000"),
        (1e21, "1e+21"),
        (123.456, "123.456"),
        (float("nan"), "null"),
        ("\ud800", '"\\ud800"'),
        ("tab\tnl\n\x01", '"tab\\tnl\\n\\u0001"'),
        ({"b": [1, True, None], "a": "é"}, '{"b":[1,true,null],"a":"é"}'),
    ],
)
def test_the_key_text_is_spelled_as_json_stringify_spells_it(value: object, js: str) -> None:
    assert js_json(value) == js


def test_begin_then_commit_and_a_committed_key_is_never_begun_again(
    journal: EffectJournal, layout: Layout
) -> None:
    begun = journal.begin("k1", "notify_owner", "tell the owner", "u1")
    assert begun.proceed and begun.prior is None
    state = journal.commit("k1", "sent 2026-09-22T12:00:00.000Z")
    assert (state.status, state.result) == ("committed", "sent 2026-09-22T12:00:00.000Z")
    before = layout.effects.read_bytes()
    again = journal.begin("k1", "notify_owner", "tell the owner", "u1")
    assert not again.proceed
    assert again.prior is not None and again.prior.status == "committed"
    assert layout.effects.read_bytes() == before, "a refused begin writes nothing"


def test_lines_keep_the_originals_field_order(journal: EffectJournal, layout: Layout) -> None:
    journal.begin("k1", "deliver", "deliver it", "u1")
    journal.commit("k1", "delivered x")
    first, second = layout.effects.read_text().splitlines()
    assert first == (
        '{"key":"k1","tool":"deliver","description":"deliver it","unitId":"u1",'
        '"status":"intended","at":"2026-09-22T12:00:00.000Z"}'
    )
    assert list(json.loads(second)) == [
        "key",
        "tool",
        "description",
        "status",
        "at",
        "result",
        "unitId",
    ]


def test_commit_without_an_intention_fails_and_writes_nothing(
    journal: EffectJournal, layout: Layout
) -> None:
    with pytest.raises(EffectJournalError, match="no intention recorded for effect nope"):
        journal.commit("nope", "sent")
    assert not layout.effects.exists() or layout.effects.read_bytes() == b""


def test_an_effect_interrupted_between_acting_and_recording_is_reconciled_as_confirmed(
    layout: Layout,
) -> None:
    # A first process intends, acts (the outbox line), and dies before committing.
    crashed = EffectJournal(layout, lambda: NOW)
    crashed.begin("k1", "notify_owner", "tell the owner")
    outbox = layout.outbox
    outbox.write_text("k1 2026-09-22T12:00:00.000Z - hello\n")
    # The next process finds it pending and asks the world instead of acting again.
    journal = EffectJournal(layout, lambda: NOW)
    assert [s.key for s in journal.pending()] == ["k1"]
    reconciled = journal.reconcile(lambda s: outbox.read_text().startswith(f"{s.key} "))
    assert [(s.key, s.status) for s in reconciled] == [("k1", "confirmed")]
    assert journal.pending() == []
    assert not journal.begin("k1", "notify_owner", "tell the owner").proceed, "not repeated"
    assert [line["status"] for line in lines(layout)] == ["intended", "confirmed"]


def test_an_absent_effect_may_be_intended_again(journal: EffectJournal, layout: Layout) -> None:
    journal.begin("k1", "notify_owner", "tell the owner")
    assert [s.status for s in journal.reconcile(lambda s: False)] == ["absent"]
    again = journal.begin("k1", "notify_owner", "tell the owner")
    assert again.proceed and again.prior is not None and again.prior.status == "absent"
    assert [s.status for s in journal.pending()] == ["intended"]


def test_reconcile_where_leaves_other_keys_pending(journal: EffectJournal) -> None:
    journal.begin("deliver:a:0", "deliver", "mine")
    journal.begin("n1", "notify_owner", "someone else's, maybe in flight")
    journal.reconcile(lambda s: True, where=lambda s: s.tool == "deliver")
    assert [(s.key, s.status) for s in journal.states()] == [
        ("deliver:a:0", "confirmed"),
        ("n1", "intended"),
    ]


def test_states_are_in_first_intended_order_and_the_first_line_fixes_what_the_effect_is(
    journal: EffectJournal,
) -> None:
    journal.begin("b", "deliver", "first b", "u1")
    journal.begin("a", "deliver", "first a")
    journal.commit("b", "done b")
    journal.begin("a", "deliver", "a second description")
    states = journal.states()
    assert [s.key for s in states] == ["b", "a"]
    assert states[0].to_json() == {
        "key": "b",
        "tool": "deliver",
        "description": "first b",
        "status": "committed",
        "intendedAt": "2026-09-22T12:00:00.000Z",
        "unitId": "u1",
        "result": "done b",
    }
    assert states[1].description == "first a"


def test_a_bad_line_is_a_problem_and_every_other_line_still_counts(layout: Layout) -> None:
    layout.effects.write_text(
        '{"key":"a","tool":"t","description":"d","status":"intended","at":"x"}\n'
        "not json\n"
        '{"key":"a","tool":"t","description":"d","status":"committed","at":"y","result":"r"}\n'
    )
    journal = EffectJournal(layout, lambda: NOW)
    assert [(s.key, s.status) for s in journal.states()] == [("a", "committed")]
    assert [p.line for p in journal.problems] == [2]


def test_a_second_journal_sees_the_first_ones_commit_before_it_begins(layout: Layout) -> None:
    one = EffectJournal(layout, lambda: NOW)
    two = EffectJournal(layout, lambda: NOW)
    assert two.states() == []
    one.begin("k", "deliver", "d")
    one.commit("k", "r")
    assert not two.begin("k", "deliver", "d").proceed
