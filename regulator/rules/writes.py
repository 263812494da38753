"""Where a unit may write: its profile's ``writablePaths`` and the manifest's declared paths.

Pure matching over repository-relative paths (``/``-separated, as git names them); which paths
a unit changed is the host's to find (:mod:`regulator.host.writes`). A prefix ending in ``/``
names a directory and everything under it; one without names that path and, if it is a
directory, everything under it. ``writable`` ``None`` limits nothing; an empty list allows no
path at all (the original's read-only profiles say ``"writablePaths": []``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# How many offending paths a reason names before it says how many more there are.
SHOWN = 10


@dataclass(frozen=True)
class WriteBounds:
    # Whose bounds these are, as a reason names them: "profile implement", "the instance manifest".
    owner: str
    writable: tuple[str, ...] | None = None
    protected: tuple[str, ...] = ()


def under(path: str, prefix: str) -> bool:
    """``path`` is ``prefix`` or inside it, by whole path segments."""
    if prefix.endswith("/"):
        return path.startswith(prefix)
    return path == prefix or path.startswith(prefix + "/")


def listing(paths: Sequence[str]) -> str:
    shown = ", ".join(paths[:SHOWN])
    return shown + (f", +{len(paths) - SHOWN} more" if len(paths) > SHOWN else "")


def _named(prefixes: Sequence[str]) -> str:
    return ", ".join(prefixes) or "none"


def write_problems(paths: Sequence[str], bounds: Sequence[WriteBounds]) -> list[str]:
    """One line per bound the paths break, naming the bound and the paths (empty: none broken)."""
    problems = []
    for b in bounds:
        if b.writable is not None:
            writable = b.writable
            outside = [p for p in paths if not any(under(p, w) for w in writable)]
            if outside:
                problems.append(
                    f"wrote outside {b.owner}'s writablePaths ({_named(writable)}): "
                    f"{listing(outside)}"
                )
        inside = [p for p in paths if any(under(p, x) for x in b.protected)]
        if inside:
            problems.append(
                f"wrote under {b.owner}'s protectedPaths ({_named(b.protected)}): {listing(inside)}"
            )
    return problems


def describe_bounds(bounds: Sequence[WriteBounds]) -> str:
    """``within profile implement's writablePaths (src/, test/)``, and so on: what was kept."""
    parts = []
    for b in bounds:
        if b.writable is not None:
            parts.append(f"within {b.owner}'s writablePaths ({_named(b.writable)})")
        if b.protected:
            parts.append(f"outside {b.owner}'s protectedPaths ({_named(b.protected)})")
    return "; ".join(parts)
