"""The core never imports Textual: ``--help`` and every non-room command stay fast and headless."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = """
import sys
from regulator.cli.main import main
try:
    main({args!r})
except SystemExit:
    pass
bad = sorted(m for m in sys.modules if m == "textual" or m.startswith("textual."))
print("TEXTUAL" if bad else "CLEAN")
"""


def _imports_textual(args: list[str], cwd: Path) -> str:
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(args=args)], capture_output=True, text=True, cwd=cwd
    )
    return result.stdout.strip().splitlines()[-1]


def test_regulator_help_imports_no_textual(tmp_path: Path) -> None:
    assert _imports_textual(["--help"], tmp_path) == "CLEAN"


def test_init_doctor_and_status_import_no_textual(instance: Path) -> None:
    for args in (["doctor"], ["status", "--json"], ["status"]):
        assert _imports_textual(args, instance) == "CLEAN", args


def test_no_module_of_the_core_imports_textual() -> None:
    root = Path(__file__).resolve().parent.parent / "regulator"
    offenders = [
        str(p)
        for p in root.rglob("*.py")
        if any(
            line.lstrip().startswith(("import textual", "from textual"))
            for line in p.read_text().splitlines()
        )
    ]
    assert offenders == []
