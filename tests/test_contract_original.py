"""A contract is written so the original can read it: an ``inherited-tests`` check (in the
original's newest docs, in none of its stored schemas) would make its ``status`` throw for the
whole instance, and regulator does not run it, so creating or replanning one is refused and
nothing is written. One an older regulator wrote still reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from regulator.policy import load_definition
from regulator.policy.workload import load_workload
from regulator.protocol.execution import WorkContract
from regulator.rules.execution import ExecutionError, ExecutionStore
from regulator.store import Layout

CHECK = {"kind": "inherited-tests", "exempt": ["tests/test_old.py"]}


def contract(version: int = 1, check: dict[str, Any] | None = None) -> WorkContract:
    expectation: dict[str, Any] = {
        "id": "e1",
        "description": "the inherited tests still pass",
        "class": "test",
        "required": True,
    }
    if check is not None:
        expectation["check"] = check
    return WorkContract.from_json_dict(
        {
            "kind": "task",
            "id": "c1",
            "version": version,
            "unitId": "u1",
            "unitType": "implement",
            "workload": {"name": "software-development", "version": 1},
            "objective": "keep the old tests green",
            "constraintRefs": [],
            "fixed": [],
            "delegated": [],
            "unresolved": [],
            "expectedEvidence": [expectation],
            "provenance": {"createdBy": "S3", "createdAt": "2026-03-02T08:00:00.000Z"},
        }
    )


def test_a_new_unit_whose_contract_has_an_inherited_tests_check_is_refused_unwritten(
    instance: Path,
) -> None:
    layout = Layout(instance)
    store = ExecutionStore(layout)
    workload = load_workload(load_definition(instance))
    with pytest.raises(ExecutionError, match=r"expectedEvidence\[0\]\.check: kind inherited-tests"):
        store.create_unit(contract(check=CHECK), workload)
    assert not layout.unit_dir("u1").exists()


def test_a_replan_that_adds_an_inherited_tests_check_is_refused_unwritten(instance: Path) -> None:
    layout = Layout(instance)
    store = ExecutionStore(layout)
    store.create_unit(contract(), load_workload(load_definition(instance)))
    with pytest.raises(ExecutionError, match="the original's schema has no such check"):
        store.add_contract_version(contract(version=2, check=CHECK))
    assert not layout.contract("u1", 2).exists()
    assert store.unit("u1").contract.version == 1
