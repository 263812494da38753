"""Where a unit may write, checked at closeout over everything its work changed.

A profile's ``writablePaths`` (ours, optional, or the original's) and the manifest's
``writablePaths``/``protectedPaths`` are one check, ``writable_paths``: evidence in the audit
log and, when broken, a failing verdict naming the paths.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from regulator.host.demo import contract
from regulator.policy import PolicyError, load_definition, shipped_policies_dir
from regulator.policy.workload import load_workload
from regulator.rules.audit_log import AuditLog
from regulator.rules.writes import WriteBounds, under, write_problems
from regulator.store import Layout

from .conftest import git
from .test_loop import loop_for, project

__all__ = ["project"]

REPORT = {"report": {"summary": "done"}}


def _edit(path: str, content: str = "def add(a, b):\n    return b + a\n") -> dict[str, Any]:
    return {"edit": {"path": path, "content": content}}


def _verdict(root: Path, unit_id: str) -> Any:
    verdict = AuditLog(Layout(root)).audit_for(unit_id).latest_verdict
    assert verdict is not None
    return verdict


def _writes(root: Path, unit_id: str) -> list[Any]:
    return [
        e for e in AuditLog(Layout(root)).audit_for(unit_id).evidence if e.check == "writable_paths"
    ]


def _our_workload(root: Path, writable: list[str] | None) -> Path:
    """The shipped workload as the repository's own, its `implement` profile limited to
    ``writable``; committed, as a definition is."""
    data = yaml.safe_load((shipped_policies_dir() / "workload.yaml").read_text())
    if writable is not None:
        data["profiles"]["implement"]["writablePaths"] = writable
    (root / "regulator" / "policies").mkdir(parents=True, exist_ok=True)
    shutil.copy(shipped_policies_dir() / "routing.yaml", root / "regulator" / "policies")
    path = root / "regulator" / "workload.yaml"
    path.write_text(yaml.safe_dump(data))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "our workload")
    return path


def _manifest(root: Path, **fields: Any) -> None:
    path = Layout(root).manifest
    data = json.loads(path.read_text())
    data.update(fields)
    path.write_text(json.dumps(data))


# --- the rule ------------------------------------------------------------------------------


def test_a_prefix_matches_by_whole_path_segments() -> None:
    assert under("src/a.py", "src/") and under("src/d/a.py", "src/")
    assert not under("src", "src/") and not under("srcx/a.py", "src/")
    assert under("README.md", "README.md") and under("docs/a.md", "docs")
    assert not under("README.md.bak", "README.md") and not under("docsx/a", "docs")


def test_every_bound_broken_is_one_reason_naming_its_paths() -> None:
    bounds = [
        WriteBounds("profile implement", ("src/", "test/")),
        WriteBounds("the instance manifest", None, ("src/vendor/",)),
        WriteBounds("profile research", ()),
    ]
    paths = ["README.md", "src/a.py", "src/vendor/x.js"]
    assert write_problems(paths, bounds) == [
        "wrote outside profile implement's writablePaths (src/, test/): README.md",
        "wrote under the instance manifest's protectedPaths (src/vendor/): src/vendor/x.js",
        "wrote outside profile research's writablePaths (none): README.md, src/a.py, "
        "src/vendor/x.js",
    ]
    assert write_problems([], bounds) == []
    many = [f"f{i}" for i in range(12)]
    (line,) = write_problems(many, [WriteBounds("profile p", ())])
    assert line.endswith("f8, f9, +2 more")


# --- our workload format ---------------------------------------------------------------------


@pytest.mark.slow
def test_our_workloads_profile_may_state_writable_paths_and_a_write_outside_them_fails(
    project: Path,
) -> None:
    _our_workload(project, ["tests/"])
    assert load_workload(load_definition(project)).writable_paths("implement") == ["tests/"]
    loop = loop_for(project, {"attempts": [{"steps": [_edit("calc.py"), REPORT]}]})
    outcome = loop.dispatch(contract("w1", "change calc"))
    assert outcome.status == "blocked"
    assert outcome.attempt is not None and outcome.attempt.outcome == "check-failure"
    verdict = _verdict(project, "w1")
    assert verdict.verdict == "fail"
    assert verdict.reasons == ["wrote outside profile implement's writablePaths (tests/): calc.py"]
    assert verdict.failed == ["writable_paths"]

    inside = _edit("tests/test_more.py", "import unittest\n")
    loop = loop_for(project, {"attempts": [{"steps": [inside, {"commit": "more"}, REPORT]}]})
    assert loop.dispatch(contract("w2", "add a test")).status == "closed"
    (evidence,) = _writes(project, "w2")
    assert evidence.verdict == "pass"
    assert evidence.observation.splitlines()[0] == (
        "1 path(s) changed, within profile implement's writablePaths (tests/)"
    )


@pytest.mark.slow
def test_without_writable_paths_our_workload_limits_nothing_and_records_no_write_check(
    project: Path,
) -> None:
    loop = loop_for(project, {"attempts": [{"steps": [_edit("calc.py"), {"commit": "c"}, REPORT]}]})
    assert loop.dispatch(contract("w3", "change calc")).status == "closed"
    assert _writes(project, "w3") == []


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("../outside/", "'../outside/' must name a path in the repository"),
        ("/etc/", "'/etc/' must be relative to the repository (no leading '/')"),
        ("src//a", "'src//a' must name a path in the repository"),
        ("", "'' must name a path in the repository"),
    ],
)
def test_a_writable_path_that_could_not_be_in_the_repository_is_refused_at_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str, said: str
) -> None:
    monkeypatch.chdir(tmp_path)
    git(tmp_path, "init", "-q")
    _our_workload(tmp_path, [given])
    with pytest.raises(PolicyError) as refused:
        load_workload(load_definition(tmp_path))
    (problem,) = refused.value.problems
    assert problem.startswith("regulator/workload.yaml:")
    assert f"profiles.implement.writablePaths[0]: {said}" in problem


# --- the instance manifest --------------------------------------------------------------------


@pytest.mark.slow
def test_the_manifests_protected_and_writable_paths_are_enforced_at_closeout(
    project: Path,
) -> None:
    _manifest(project, protectedPaths=["tests/"])
    steps = [_edit("tests/test_calc.py", "import unittest\n"), {"commit": "t"}, REPORT]
    loop_for(project, {"attempts": [{"steps": steps}]}).dispatch(contract("m1", "edit tests"))
    assert _verdict(project, "m1").reasons == [
        "wrote under the instance manifest's protectedPaths (tests/): tests/test_calc.py"
    ]

    _manifest(project, writablePaths=["lib/"], protectedPaths=None)
    steps = [_edit("calc.py"), REPORT]
    loop_for(project, {"attempts": [{"steps": steps}]}).dispatch(contract("m2", "edit calc"))
    assert _verdict(project, "m2").reasons == [
        "wrote outside the instance manifest's writablePaths (lib/): calc.py"
    ]


@pytest.mark.slow
def test_a_manifest_that_does_not_load_fails_the_write_check_closed(project: Path) -> None:
    Layout(project).manifest.unlink()
    steps = [_edit("calc.py"), {"commit": "c"}, REPORT]
    outcome = loop_for(project, {"attempts": [{"steps": steps}]}).dispatch(contract("m3", "x"))
    assert outcome.status == "blocked"
    assert _verdict(project, "m3").reasons == [
        "where the unit wrote cannot be checked: the instance manifest does not load "
        "(.regulator/instance.json: missing)"
    ]
