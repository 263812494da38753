"""The control room's benchmarks: B3 (an append seen in the room) and B5 (a big instance).

    python benchmarks/room.py b3 [--appends 100]
    python benchmarks/room.py b5 INSTANCE      (an instance made by benchmarks/generate.py)

Both run the real app headless (``App.run_test``) on a real instance; nothing is mocked.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from regulator.host.demo import build_demo  # noqa: E402
from tui.app import RoomApp  # noqa: E402
from tui.widgets.rowtable import RowTable  # noqa: E402

WRITER = """
import sys, time
from pathlib import Path
from regulator.rules.ledger import Ledger
from regulator.store import Layout
ledger = Ledger(Layout(Path(sys.argv[1])))
for n in range(int(sys.argv[2])):
    ledger.open_obligation(subject=f"b3 {n} t={time.time():.6f}", unit="b3-unit",
        concern="audit-finding", sources=[f"m{n}"], severity="blocking",
        consumer="human", blocks=True)
    time.sleep(float(sys.argv[3]))
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


async def b3(appends: int, gap: float) -> dict[str, float]:
    """p95 of the time from another process's append to the row in the room's inbox."""
    with tempfile.TemporaryDirectory() as tmp:
        root = build_demo(Path(tmp) / "calc").root
        app = RoomApp([root], person="alice", presence=False, bell=False)
        latencies: dict[int, float] = {}
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause(0.5)
            writer = subprocess.Popen(
                [sys.executable, "-c", WRITER, str(root), str(appends), str(gap)]
            )
            deadline = time.monotonic() + appends * (gap + 0.5) + 10
            while len(latencies) < appends and time.monotonic() < deadline:
                await asyncio.sleep(0.002)
                now = time.time()
                for o in app.models[0].log.obligations.values():
                    if o.subject.startswith("b3 ") and int(o.subject.split()[1]) not in latencies:
                        key = f"0:{o.id}"
                        if key in app.inbox_keys:
                            sent = float(o.subject.split("t=")[1])
                            latencies[int(o.subject.split()[1])] = (now - sent) * 1000
            writer.wait(timeout=30)
    values = list(latencies.values())
    return {
        "seen": len(values),
        "median_ms": statistics.median(values),
        "p95_ms": percentile(values, 0.95),
        "max_ms": max(values),
    }


async def b5(root: Path, presses: int) -> dict[str, float]:
    """First screen on a big instance, then key presses through an inbox of every obligation."""
    started = time.monotonic()
    app = RoomApp([root], person="alice", watch=False, presence=False, bell=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        first = time.monotonic() - started
        app.main.action_tab("inbox")  # type: ignore[union-attr]
        app.preset = 2  # everything
        app._inbox()
        await pilot.pause()
        table = app.screen.query_one("#inbox-table", RowTable)
        rows = len(table.keys)
        durations = []
        work = []
        for n in range(presses):
            key = "pagedown" if n % 10 == 9 else "j"
            before = table.cursor
            t0, c0 = time.monotonic(), time.process_time()
            await pilot.press(key)
            # Until the cursor has moved and the screen has been painted with it.
            while table.cursor == before and time.monotonic() - t0 < 5:
                await asyncio.sleep(0.001)
            await pilot.wait_for_scheduled_animations()
            durations.append((time.monotonic() - t0) * 1000)
            work.append((time.process_time() - c0) * 1000)
    return {
        "first_screen_s": first,
        "inbox_rows": rows,
        "presses": presses,
        "press_median_ms": statistics.median(durations),
        "press_max_ms": max(durations),
        # CPU time the app spent per press: the work a key costs, without the harness's waits.
        "work_median_ms": statistics.median(work),
        "work_max_ms": max(work),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="which", required=True)
    p3 = sub.add_parser("b3")
    p3.add_argument("--appends", type=int, default=100)
    p3.add_argument("--gap", type=float, default=0.05, help="seconds between appends")
    p5 = sub.add_parser("b5")
    p5.add_argument("instance", type=Path)
    p5.add_argument("--presses", type=int, default=200)
    args = parser.parse_args()
    if args.which == "b3":
        r = asyncio.run(b3(args.appends, args.gap))
        ok = r["p95_ms"] <= 250 and r["seen"] == args.appends
        print(
            f"B3  {r['seen']} appends seen · median {r['median_ms']:.0f} ms · "
            f"p95 {r['p95_ms']:.0f} ms · max {r['max_ms']:.0f} ms · target p95 ≤ 250 ms · "
            + ("PASS" if ok else "FAIL")
        )
    else:
        r = asyncio.run(b5(args.instance, args.presses))
        ok = r["first_screen_s"] <= 3 and r["press_max_ms"] <= 100
        print(
            f"B5  first screen {r['first_screen_s']:.2f} s · {r['inbox_rows']:,} rows · "
            f"{r['presses']} presses: median {r['press_median_ms']:.1f} ms, "
            f"max {r['press_max_ms']:.1f} ms (CPU per press: median "
            f"{r['work_median_ms']:.1f} ms, max {r['work_max_ms']:.1f} ms) · "
            "targets ≤ 3 s, ≤ 100 ms · " + ("PASS" if ok else "FAIL")
        )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
