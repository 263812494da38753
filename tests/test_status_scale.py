"""``regulator status --json`` at scale: each obligation once, the same redaction and inert text
as before, written in pieces by orjson.

The benchmarks (``benchmarks/run.py``, B4) measure the time and memory on large instances;
these tests pin what those optimisations must not change.
"""

from __future__ import annotations

import copy
import io
import json
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regulator.cli.context import print_json
from regulator.cli.main import main
from regulator.protocol.text import inert_json
from regulator.rules.ledger import Ledger
from regulator.store import Layout
from regulator.views.redaction import Redactor
from regulator.views.status import build_status, redacted_view, write_status_json

from .conftest import git

CANARY = "canary-7f3a9c2e51"
HOSTILE = "\x1b[2K\r\u202eRLO\u2066iso\u2069\x7f\u200b\u2028 — ünïcode"


def unsafe_in(text: str) -> list[str]:
    return sorted(
        {
            f"U+{ord(ch):04X}"
            for ch in text
            if ch not in "\n\t" and unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Cn", "Zl", "Zp")
        }
    )


@pytest.fixture
def busy(tmp_path: Path) -> Path:
    """An instance with two units and obligations for each, one holding hostile text and a
    canary."""
    from regulator.host.demo import contract
    from regulator.host.instance import init_instance
    from regulator.rules.execution import ExecutionStore

    root = tmp_path / "busy"
    root.mkdir()
    git(root, "init", "-q")
    (root / ".env").write_text(f"API_TOKEN={CANARY}\n")
    init_instance(root, by="alice")
    layout = Layout(root)
    store = ExecutionStore(layout)
    for unit_id in ("u1", "u2"):
        store.create_unit(contract(unit_id, f"work of {unit_id}"))
    ledger = Ledger(layout)
    for n, unit in enumerate(["u1", "u1", "u2", None]):
        ledger.open_obligation(
            subject=f"finding {n} {HOSTILE} {CANARY}" if n == 1 else f"finding {n}",
            unit=unit,
            concern="audit-finding",
            sources=[f"m{n}"],
            severity="blocking",
            consumer="S3",
            blocks=True,
        )
    return root


def status_json(root: Path) -> str:
    out = io.StringIO()
    stdout, sys.stdout = sys.stdout, out
    try:
        assert main(["status", "--json", "--instance", str(root)]) == 0
    finally:
        sys.stdout = stdout
    return out.getvalue()


def test_status_json_lists_each_obligation_once_and_units_name_theirs_by_id(busy: Path) -> None:
    text = status_json(busy)
    view = json.loads(text)
    inst = view["instance"]
    ids = [o["id"] for o in inst["obligations"]]
    assert len(ids) == 4
    units = {u["unit"]["unitId"]: u for u in inst["units"]}
    assert "obligations" not in units["u1"]
    by_unit = {o["id"]: o.get("unit") for o in inst["obligations"]}
    assert units["u1"]["obligationIds"] == [i for i in ids if by_unit[i] == "u1"]
    assert units["u2"]["obligationIds"] == [i for i in ids if by_unit[i] == "u2"]
    # Each obligation's JSON appears once in the text, not again under its unit.
    assert text.count('"history": [') == 4


def test_status_json_is_the_old_redacted_inert_view_written_in_pieces(busy: Path) -> None:
    text = status_json(busy)
    assert unsafe_in(text) == []
    assert CANARY not in text
    # What the stdlib path of before printed for the whole view, redacted by the redactor.
    whole = build_status(busy, _definition(busy))
    before = json.loads(inert_json(Redactor.for_layout(Layout(busy)).redact_json(whole.view)))
    after = json.loads(text)
    before.pop("generatedAt"), after.pop("generatedAt")
    for unit in before["instance"]["units"]:
        unit.pop("obligationIds")
    for unit in after["instance"]["units"]:
        unit.pop("obligationIds")
    assert after == before
    assert "\\u202e" in text and "ünïcode" in text  # escaped, and plain non-ASCII kept


def test_streaming_the_obligations_writes_the_bytes_encoding_the_whole_view_gives(
    busy: Path,
) -> None:
    redactor = Redactor.for_layout(Layout(busy))
    pieces: list[bytes | memoryview] = []
    lazy = build_status(busy, _definition(busy), obligations=False)
    write_status_json(lazy, redactor, pieces.append)
    whole = build_status(busy, _definition(busy))
    whole.view["generatedAt"] = lazy.view["generatedAt"]
    out = io.StringIO()
    stdout, sys.stdout = sys.stdout, out
    try:
        print_json(redacted_view(whole.view, redactor))
    finally:
        sys.stdout = stdout
    assert b"".join(pieces).decode() == out.getvalue()


@pytest.fixture
def busier(busy: Path) -> Path:
    """``busy`` with questions asked and answered, and secrets in notes, rationales, answers."""
    from regulator.policy import load_definition
    from regulator.rules.asking import ask_in

    ledger = Ledger(Layout(busy))
    policy = load_definition(busy).interaction
    with ledger.transaction() as txn:
        asked = [
            ask_in(
                txn,
                policy,
                kind="choice",
                subject=f"store {n}",
                question=f"Which store? {CANARY}" if n == 1 else "Which store?",
                options=["sqlite", "json"],
                unit="u1",
                attempt=1,
            )
            for n in range(5)
        ]
    with ledger.transaction() as txn:
        for n, a in enumerate(asked):
            txn.answer_interaction(
                a.request.id,
                outcome="answered",
                by="alice",
                channel="cli",
                answer=f"sqlite {CANARY}" if n == 3 else "sqlite",
            )
    opened = list(ledger.refresh().obligations)
    ledger.acknowledge(opened[0], "alice", note=f"looking {HOSTILE}")
    ledger.resolve(opened[2], "alice", "fixed", "done with Authorization: Bearer abc123456789xyz")
    ledger.acknowledge(opened[3], "bob", note="the key: " + "é" * 2500)
    return busy


@pytest.mark.parametrize("batch", [1, 2, 1000])
def test_streamed_in_batches_the_records_are_redacted_as_the_whole_view_is(
    busier: Path, batch: int
) -> None:
    redactor = Redactor.for_layout(Layout(busier))
    pieces: list[bytes | memoryview] = []
    lazy = build_status(busier, _definition(busier), obligations=False)
    write_status_json(lazy, redactor, pieces.append, batch=batch)
    whole = build_status(busier, _definition(busier))
    whole.view["generatedAt"] = lazy.view["generatedAt"]
    out = io.StringIO()
    stdout, sys.stdout = sys.stdout, out
    try:
        print_json(redacted_view(whole.view, redactor))
    finally:
        sys.stdout = stdout
    text = b"".join(pieces).decode()
    assert text == out.getvalue()
    assert CANARY not in text and "abc123456789xyz" not in text
    assert unsafe_in(text) == []
    assert len(json.loads(text)["instance"]["interactions"]) == 5


def test_a_canary_that_is_a_field_name_is_redacted_as_the_whole_view_redacts_it(
    busier: Path,
) -> None:
    # Every key of a record type is looked at once per type: here one of them is a secret.
    redactor = Redactor([CANARY, "obligationId"])
    pieces: list[bytes | memoryview] = []
    lazy = build_status(busier, _definition(busier), obligations=False)
    write_status_json(lazy, redactor, pieces.append)
    whole = build_status(busier, _definition(busier))
    whole.view["generatedAt"] = lazy.view["generatedAt"]
    out = io.StringIO()
    stdout, sys.stdout = sys.stdout, out
    try:
        print_json(redacted_view(whole.view, redactor))
    finally:
        sys.stdout = stdout
    assert b"".join(pieces).decode() == out.getvalue()
    assert '"obligationId"' not in out.getvalue()


_PIECES = ["token", "KEY: ", "sk-", "ghp_", "Bearer ", "://u:p@", "\n", "İ", "\u212a", "é", "x" * 9]


@settings(max_examples=200, deadline=None)
@given(
    texts=st.lists(
        st.lists(st.sampled_from([*_PIECES, CANARY, CANARY[:5], "1234567890"]), max_size=6).map(
            "".join
        )
        | st.text(max_size=12),
        max_size=8,
    ),
    long=st.booleans(),
)
def test_the_texts_a_redactor_would_change_are_all_among_its_suspects(
    texts: list[str], long: bool
) -> None:
    redactor = Redactor([CANARY, "second-canary\nwith a newline"])
    if long:
        texts = [*texts, "a" * 2001]
    changed = {t for t in texts if redactor.scrub(t)[0] != t}
    assert changed <= redactor.suspects(texts)


def test_an_instance_without_obligations_streams_an_empty_list(tmp_path: Path) -> None:
    from regulator.host.instance import init_instance

    git(tmp_path, "init", "-q")
    init_instance(tmp_path, by="alice")
    view = json.loads(status_json(tmp_path))
    assert view["instance"]["obligations"] == []


@pytest.mark.parametrize(
    "value",
    [
        {"token": "plain words", "nested": [{"apiKey": "x"}, ("tuple", CANARY)]},
        {CANARY: "a canary as a key", "k": "x" * 3000, "short": "abc", 1: "int key"},
        [f"Bearer abcdef123456 and {CANARY}", {"password": ""}, {"password": 3}],
        {"sub": type("S", (str,), {})(f"a str subclass {CANARY}"), "n": None, "b": True},
    ],
)
def test_the_in_place_redaction_is_redact_json(value: Any) -> None:
    redactor = Redactor([CANARY])
    expected = redactor.redact_json(value)
    assert redacted_view(copy.deepcopy(value), redactor) == expected


def test_print_json_escapes_what_a_terminal_acts_on_and_falls_back_for_what_orjson_refuses() -> (
    None
):
    for value in ({"s": HOSTILE, "emoji": "🙂", "del": "\x7f"}, {"lone": "\ud800x"}, {1: "k"}):
        out = io.StringIO()
        stdout, sys.stdout = sys.stdout, out
        try:
            print_json(value)
        finally:
            sys.stdout = stdout
        assert unsafe_in(out.getvalue()) == []
        assert json.loads(out.getvalue()) == json.loads(json.dumps(value))
        assert out.getvalue() == inert_json(value) + "\n"


def _definition(root: Path) -> Any:
    from regulator.policy import load_definition

    return load_definition(root)


def test_obligations_json_does_not_load_the_policy_loader(busy: Path) -> None:
    # The policies are not read to list obligations: their loader (and YAML) stay unimported.
    import subprocess

    probe = (
        "import sys\n"
        "from regulator.cli.main import main\n"
        f"assert main(['obligations', '--json', '--instance', {str(busy)!r}]) == 0\n"
        "print(sorted(m for m in ('regulator.policy.loader', 'yaml') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=busy, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"
