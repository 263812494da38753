"""The benchmarks of quality.md, each beside its baseline: ``python benchmarks/run.py``.

Prints one table: benchmark, figure, baseline, ratio, target, pass/fail. Every figure is
measured in fresh processes in the same run as its baseline, so that a ratio holds on a noisy
machine; absolute targets are the ones quality.md sets for a 2-core machine. The load average
before and after is printed with the table, since other work on the machine moves the figures.

Instances are generated once with the real write path (``generate.py``) and kept under
``--work`` (default: ``$TMPDIR/regulator-bench``), keyed by their size and the generator's
version; delete the directory to start over.

    python benchmarks/run.py                    # B1, B2, B4, then B3 and B5 (benchmarks/room.py)
    python benchmarks/run.py --only B1 B2       # some of them
    python benchmarks/run.py --lines 200000     # a smaller "large" instance, for a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import generate  # noqa: E402  (benchmarks/ is on sys.path when this file runs)

PYTHON = sys.executable
PROBE = str(HERE / "probe.py")
ROOM = HERE / "room.py"


@dataclass
class Row:
    name: str
    figure: str
    baseline: str = "—"
    ratio: str = "—"
    target: str = "—"
    verdict: str = "info"  # PASS | FAIL | info | error | skipped
    note: str = ""  # printed below the table (a line too long for a cell)


@dataclass
class Context:
    work: Path
    lines: int
    small_lines: int
    repeat: int
    rows: list[Row]

    def instance(self, lines: int, *, close: float = 0.75) -> Path:
        """A generated instance of ``lines`` lines, made on first use and kept."""
        tag = f"v{generate.GENERATOR_VERSION}-lines{lines}-close{close:g}"
        directory = self.work / tag
        done = directory / ".generated"
        if not done.exists():
            if directory.exists():
                subprocess.run(["rm", "-rf", str(directory)], check=True)
            print(f"generating {lines:,} lines in {directory} …", file=sys.stderr, flush=True)
            started = time.monotonic()
            generate.generate(directory, lines, close=close)
            done.write_text(f"{time.monotonic() - started:.1f} s\n", encoding="utf-8")
        return directory


def probe(*args: str) -> dict[str, Any]:
    done = subprocess.run([PYTHON, PROBE, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"probe {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def probe_rss(*args: str) -> tuple[dict[str, Any], float]:
    """``probe(*args)`` run as the only child of a fresh process, and its peak RSS in MB."""
    outer = probe("rss", "--", PYTHON, PROBE, *args)
    if outer["returncode"] != 0:
        raise RuntimeError(f"probe {' '.join(args)} failed:\n{outer['stderr']}")
    inner: dict[str, Any] = json.loads(outer["stdout"])
    return inner, float(outer["peak_rss_mb"])


def median_of(repeat: int, run: Callable[[], float]) -> float:
    return statistics.median(run() for _ in range(repeat))


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


# --- B1: cold load ------------------------------------------------------------------------------


def _drop_snapshot(directory: Path) -> bool:
    """Remove the instance's fold snapshot (this user's), if the code in use writes one."""
    cache = directory / ".regulator" / "cache" / f"fold-{os.geteuid()}" / "signals.fold"
    existed = cache.exists()
    cache.unlink(missing_ok=True)
    return existed


def b1(ctx: Context) -> None:
    directory = ctx.instance(ctx.lines)
    signals = directory / ".regulator" / "signals.ndjson"
    # A first start: no snapshot yet, so it reads the whole log and writes one. The cold loads
    # measured after it are the ones every later start makes.
    _drop_snapshot(directory)
    first, first_rss = probe_rss("load", str(directory))
    loads = [probe_rss("load", str(directory)) for _ in range(ctx.repeat)]
    seconds = statistics.median(r["seconds"] for r, _ in loads)
    rss = max(peak for _, peak in loads)
    keep = median_of(ctx.repeat, lambda: probe("parse", str(signals))["seconds"])
    discard = median_of(ctx.repeat, lambda: probe("parse", str(signals), "--discard")["seconds"])
    full = median_of(1, lambda: probe("load", str(directory), "--no-snapshot")["seconds"])
    lines = loads[0][0]["lines"]
    ok_time = seconds <= 3.0 and seconds <= 3 * keep
    ctx.rows += [
        Row(
            f"B1 cold load, {lines:,} lines",
            f"{seconds:.2f} s",
            f"{keep:.2f} s parse",
            f"{seconds / keep:.2f}×",
            "≤ 3 s, ≤ 3× parse",
            verdict(ok_time),
        ),
        Row(
            "B1 peak RSS of that load",
            f"{rss:,.0f} MB",
            target="≤ 1,500 MB",
            verdict=verdict(rss <= 1500),
        ),
        Row(
            "  B1 vs parse, each line dropped",
            f"{seconds:.2f} s",
            f"{discard:.2f} s",
            f"{seconds / discard:.2f}×",
            "(a stricter baseline)",
        ),
        Row(
            "  B1 with no snapshot to use",
            f"{full:.2f} s",
            f"{keep:.2f} s parse",
            f"{full / keep:.2f}×",
            "(none yet, or stale)",
        ),
        Row(
            "  B1 first start (reads all, writes one)",
            f"{first['seconds']:.2f} s",
            target=f"{first_rss:,.0f} MB peak",
        ),
    ]


# --- B2: one appended event ---------------------------------------------------------------------


def b2(ctx: Context) -> None:
    large = ctx.instance(ctx.lines)
    small = ctx.instance(ctx.small_lines)
    results = {}
    for name, directory in (("large", large), ("small", small)):
        signals = directory / ".regulator" / "signals.ndjson"
        size = signals.stat().st_size
        try:
            results[name] = probe("append", str(directory))
        finally:
            # Put the instance back as generated: the appends are the benchmark's own.
            os.truncate(signals, size)
    big, little = results["large"], results["small"]
    full = probe("load", str(large), "--no-snapshot")["seconds"] * 1000
    ok = big["p95_ms"] <= 5 and big["median_ms"] <= 2 * little["median_ms"]
    ctx.rows += [
        Row(
            f"B2 append folded, {big['lines']:,} lines",
            f"p50 {big['median_ms']:.2f} ms, p95 {big['p95_ms']:.2f}",
            f"{little['median_ms']:.2f} ms at {little['lines']:,}",
            f"{big['median_ms'] / little['median_ms']:.2f}×",
            "p95 ≤ 5 ms, ≤ 2× small",
            verdict(ok),
        ),
        Row(
            "B2 vs re-reading the whole log",
            f"{big['median_ms']:.2f} ms",
            f"{full / 1000:.2f} s re-fold",
            f"{full / big['median_ms']:,.0f}× faster",
            "≥ 1000× faster",
            verdict(full >= 1000 * big["median_ms"]),
        ),
    ]


# --- B4: the CLI as a whole process -------------------------------------------------------------


def _wall(command: list[str]) -> float:
    # This tree's ``regulator``, whatever the environment has installed.
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    started = time.perf_counter()
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stderr.decode()[-2000:]}")
    return seconds


def _regulator() -> list[str]:
    # The installed command, as a person runs it; else the module.
    script = Path(PYTHON).parent / "regulator"
    return [str(script)] if script.exists() else [PYTHON, "-m", "regulator.cli.main"]


def b4(ctx: Context) -> None:
    directory = ctx.instance(100_000)
    command = [*_regulator(), "obligations", "--instance", str(directory)]
    _drop_snapshot(directory)
    first = _wall(command)  # reads the whole log and writes the snapshot
    seconds = median_of(ctx.repeat, lambda: _wall(command))
    help_s = median_of(ctx.repeat, lambda: _wall([*_regulator(), "--help"]))
    bare = median_of(ctx.repeat, lambda: _wall([PYTHON, "-c", "pass"]))
    ctx.rows += [
        Row(
            "B4 regulator obligations, 100,000 lines",
            f"{seconds:.2f} s",
            f"{bare:.2f} s bare python",
            f"{seconds / bare:.1f}×",
            "≤ 1 s",
            verdict(seconds <= 1.0),
        ),
        Row("  B4 the same, first run (writes the snapshot)", f"{first:.2f} s"),
        Row(
            "B4 regulator --help",
            f"{help_s:.2f} s",
            f"{bare:.2f} s bare python",
            f"{help_s / bare:.1f}×",
            "≤ 0.3 s",
            verdict(help_s <= 0.3),
        ),
    ]


# --- B3, B5: the control room's -----------------------------------------------------------------
#
# Hook for the control room's benchmarks. They live in ``benchmarks/room.py`` (which imports
# Textual, so it runs in its own process) and print one line each, exiting non-zero on a miss.
# This section runs them and carries their line into the table; nothing else here knows the
# room.


def room(ctx: Context, which: str) -> None:
    if not ROOM.exists():
        ctx.rows.append(
            Row(which, "not measured: benchmarks/room.py is missing", verdict="skipped")
        )
        return
    args = ["b3"]
    if which == "B5":
        directory = ctx.instance(ctx.lines, close=0.0)
        # As for B1: the start measured is a later one, with the fold's snapshot in place.
        probe("load", str(directory))
        args = ["b5", str(directory)]
    done = subprocess.run([PYTHON, str(ROOM), *args], capture_output=True, text=True)
    line = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-300:]
    outcome = "PASS" if done.returncode == 0 else ("FAIL" if line.startswith(which) else "error")
    detail = line.removeprefix(which).strip(" ·")
    ctx.rows.append(
        Row(which, "see below", target="benchmarks/room.py", verdict=outcome, note=detail)
    )


# --- the table ----------------------------------------------------------------------------------

BENCHMARKS: dict[str, Callable[[Context], None]] = {
    "B1": b1,
    "B2": b2,
    "B3": lambda ctx: room(ctx, "B3"),
    "B4": b4,
    "B5": lambda ctx: room(ctx, "B5"),
}


def render(rows: list[Row]) -> str:
    header = Row("benchmark", "figure", "baseline", "ratio", "target", "pass/fail")
    table = [header, *rows]
    columns = ["name", "figure", "baseline", "ratio", "target", "verdict"]
    widths = {c: max(len(str(getattr(r, c))) for r in table) for c in columns}
    out = []
    for index, row in enumerate(table):
        out.append("  ".join(str(getattr(row, c)).ljust(widths[c]) for c in columns).rstrip())
        if index == 0:
            out.append("  ".join("-" * widths[c] for c in columns))
    notes = [f"{row.name}: {row.note}" for row in rows if row.note]
    return "\n".join([*out, *([""] if notes else []), *notes])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--only", nargs="+", choices=sorted(BENCHMARKS), metavar="B")
    parser.add_argument("--skip", nargs="+", choices=sorted(BENCHMARKS), default=[], metavar="B")
    parser.add_argument("--lines", type=int, default=1_000_000, help="the large instance")
    parser.add_argument("--small-lines", type=int, default=1_000, help="B2's small instance")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    parser.add_argument(
        "--work", type=Path, default=Path(tempfile.gettempdir()) / "regulator-bench"
    )
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    ctx = Context(args.work, args.lines, args.small_lines, args.repeat, [])
    chosen = [b for b in (args.only or sorted(BENCHMARKS)) if b not in args.skip]
    load_before = os.getloadavg()
    for name in chosen:
        try:
            BENCHMARKS[name](ctx)
        except Exception as exc:  # one broken benchmark must not hide the others' figures
            ctx.rows.append(Row(name, f"error: {str(exc).splitlines()[0][:80]}", verdict="error"))
    load_after = os.getloadavg()
    print(render(ctx.rows))
    print(
        f"\n{os.cpu_count()} CPUs; load average {load_before[0]:.2f} before, "
        f"{load_after[0]:.2f} after; python {sys.version.split()[0]}"
    )
    return 1 if any(r.verdict in ("FAIL", "error") for r in ctx.rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
