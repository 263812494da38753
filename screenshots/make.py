"""Make the README's screenshots: every screen and dialog on the pinned demo instance.

    python screenshots/make.py

Uses the same list of shots and the same fixture as the snapshot tests
(tests/room_shots.py), writes one SVG per shot at 160×48 (and PNGs when cairosvg is
installed).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tests.room_fixture import FIXED_ROOT, build_fixture  # noqa: E402
from tests.room_shots import SHOTS, make_app  # noqa: E402


async def shoot(root: Path, size: tuple[int, int]) -> list[Path]:
    written = []
    for shot in SHOTS:
        app = make_app(root, shot)
        async with app.run_test(size=size) as pilot:
            await shot.setup(pilot)
            await pilot.pause()
            path = HERE / f"{shot.name}.svg"
            path.write_text(app.export_screenshot(title=f"regulator room — {shot.name}"))
            written.append(path)
    return written


def main() -> int:
    root = build_fixture(FIXED_ROOT)
    written = asyncio.run(shoot(root, (160, 48)))
    try:
        import cairosvg
    except ImportError:
        cairosvg = None
    for svg in written:
        if cairosvg is not None:
            cairosvg.svg2png(url=str(svg), write_to=str(svg.with_suffix(".png")))
    print(f"{len(written)} screenshot(s) in {HERE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
