"""What can be determined mechanically about a project: its real test command, and where.

The same discovery serves ``read_conventions`` in a session and the host checks at closeout, so
a unit that reads it runs what the host will run. The original knows JavaScript projects; we
add the common Python and make conventions, in a fixed order.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Conventions:
    test_command: list[str] | None
    test_source: str  # where the command was found, or why there is none
    source_dirs: list[str] = field(default_factory=list)
    protected_paths: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {
            "testCommand": self.test_command,
            "testSource": self.test_source,
            "sourceDirs": self.source_dirs,
            "protectedPaths": self.protected_paths,
        }


def _has_make_target(makefile: Path, target: str) -> bool:
    try:
        text = makefile.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return re.search(rf"^{re.escape(target)}\s*:", text, re.MULTILINE) is not None


def discover(root: Path) -> Conventions:
    """The test command, looked for in this order: package.json scripts.test, a `test` make
    target, ``node --test`` for a ``test/`` directory, pytest for a configured Python project,
    and the standard library's unittest for a ``tests/`` directory of ``test_*.py`` files."""
    sources = [d for d in ("src", "lib") if (root / d).is_dir()]
    protected = ["vendor/"] if (root / "vendor").is_dir() else []
    command: list[str] | None = None
    where = "no test command found"
    package = root / "package.json"
    if package.is_file():
        try:
            scripts = json.loads(package.read_text(encoding="utf-8")).get("scripts", {})
        except (OSError, ValueError, AttributeError):
            scripts = {}
        if isinstance(scripts, dict) and isinstance(scripts.get("test"), str):
            command, where = ["npm", "test", "--silent"], "package.json scripts.test"
    if (
        command is None
        and (root / "Makefile").is_file()
        and _has_make_target(root / "Makefile", "test")
    ):
        command, where = ["make", "test"], "Makefile target test"
    if command is None and (root / "test").is_dir() and package.is_file():
        command, where = ["node", "--test"], "test/ directory (node --test)"
    if command is None and (root / "pyproject.toml").is_file():
        text = (root / "pyproject.toml").read_text(encoding="utf-8", errors="replace")
        if "[tool.pytest" in text:
            command, where = ["python3", "-m", "pytest", "-q"], "pyproject.toml [tool.pytest]"
    if command is None and (root / "tests").is_dir() and any((root / "tests").glob("test_*.py")):
        command = ["python3", "-m", "unittest", "discover", "-s", "tests", "-q"]
        where = "tests/ directory (unittest)"
    return Conventions(command, where, sources, protected)
