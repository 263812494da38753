"""The wheel: the room ships inside regulator, and nothing installs a top-level `tui`."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


@pytest.mark.slow
def test_the_wheel_installs_the_room_as_regulator_room_and_no_top_level_tui(
    tmp_path: Path,
) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("regulator-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/", 1)[0] for name in names}
    assert "tui" not in tops
    assert {"regulator", f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info"} <= tops
    assert "regulator/room/app.py" in names and "regulator/room/room.tcss" in names
    # The room's own imports must not name `tui`, which the wheel does not have.
    for name in names:
        if name.startswith("regulator/room/") and name.endswith(".py"):
            text = zipfile.ZipFile(wheel).read(name).decode()
            assert "from tui" not in text and "import tui" not in text, name
