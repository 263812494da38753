"""``signals route --json`` and ``remind --json``: what one routing or delivery tick did, as
one JSON object a remote room or a script reads (the obligation acts' shape: ``act`` first)."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import cli
from .factory import append, message


def _one_object(stdout: str) -> dict[str, object]:
    value = json.loads(stdout)
    assert isinstance(value, dict), value
    return value


def test_signals_route_json_names_what_it_opened_what_it_noted_and_what_it_delivered(
    instance: Path,
) -> None:
    signals = instance / ".regulator" / "signals.ndjson"
    append(
        signals,
        message("operational-signal", "the build is red", unit="u1", severity="blocking"),
        message("operational-signal", "a lint warning", unit="u1", severity="advisory"),
    )
    result = cli("signals", "route", "--json", cwd=instance)
    assert result.returncode == 0, result.stderr
    done = _one_object(result.stdout)
    assert done["act"] == "route"
    opened = done["opened"]
    assert isinstance(opened, list) and len(opened) == 1
    assert opened[0]["subject"] == "the build is red"
    assert opened[0]["severity"] == "blocking"
    assert "obligationId" not in opened[0] and "id" in opened[0]  # on-disk camelCase shape
    noted = done["noted"]
    assert isinstance(noted, list) and len(noted) == 1
    assert noted[0]["message"]["subject"] == "a lint warning"
    assert noted[0]["reason"]
    # Owed to S3, not a person: nothing went to the outbox in this tick.
    assert opened[0]["consumer"] == "S3"
    assert done["delivered"] == 0
    assert done["sent"] == [] and done["failed"] == []  # nobody here has channels
    # Human output is unchanged without --json, and a second tick has nothing left to route.
    again = cli("signals", "route", cwd=instance)
    assert again.stdout.splitlines()[-1] == (
        "0 obligation(s) opened, 0 message(s) noted, 0 delivered to the outbox"
    )


def test_remind_json_lists_each_delivery_then_an_empty_tick(instance: Path) -> None:
    from regulator.rules.ledger import Ledger
    from regulator.store import Layout

    owed = Ledger(Layout(instance)).open_obligation(
        subject="a finding",
        unit="u1",
        concern="audit-finding",
        sources=["m1"],
        severity="blocking",
        consumer="human",
        blocks=True,
    )
    first = cli("remind", "--json", cwd=instance)
    assert first.returncode == 0, first.stderr
    done = _one_object(first.stdout)
    assert done["act"] == "remind"
    delivered = done["delivered"]
    assert isinstance(delivered, list) and len(delivered) == 1
    assert delivered[0]["obligation"]["id"] == owed.id
    assert delivered[0]["reminder"] is False
    assert done["sent"] == [] and done["failed"] == []
    second = _one_object(cli("remind", "--json", cwd=instance).stdout)
    assert second["delivered"] == []  # delivered once; a reminder is not due yet


def test_a_refused_tick_says_so_on_stderr_and_prints_no_json(tmp_path: Path) -> None:
    for command in (["remind", "--json"], ["signals", "route", "--json"]):
        result = cli(*command, cwd=tmp_path)  # not an instance
        assert result.returncode != 0
        assert result.stdout == ""
        assert result.stderr.startswith("regulator: "), result.stderr
        assert len(result.stderr.splitlines()) == 1
