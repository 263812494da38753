"""The documentation that must not drift from the code."""

from __future__ import annotations

from pathlib import Path

from regulator.cli.reference import render

ROOT = Path(__file__).resolve().parent.parent


def test_the_cli_reference_is_what_help_prints() -> None:
    # Regenerate with: python -m regulator.cli.reference > docs/cli.md
    assert (ROOT / "docs" / "cli.md").read_text() == render()


def test_every_doc_the_readme_links_to_exists() -> None:
    import re

    readme = (ROOT / "README.md").read_text()
    for target in re.findall(r"\]\(((?:docs|policies)/[^)#]*)\)", readme):
        assert (ROOT / target).exists(), target
