"""SVG snapshots of every screen and dialog, at 80×24 and 160×48, and one light theme.

Regenerate after an intended change with ``pytest tests/test_room_snapshots.py
--snapshot-update``, look at the report, and run ``python screenshots/make.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .room_fixture import build_fixture
from .room_shots import SHOTS, SIZES, Shot, make_app


@pytest.fixture(scope="module")
def fixture_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Its own directory: two suites on one machine never rebuild each other's instance.
    return build_fixture(tmp_path_factory.mktemp("snapshots") / "calc")


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("shot", SHOTS, ids=[s.name for s in SHOTS])
def test_room_looks_as_recorded(
    snap_compare: Any, fixture_root: Path, shot: Shot, size: tuple[int, int]
) -> None:
    assert snap_compare(make_app(fixture_root, shot), terminal_size=size, run_before=shot.setup)
