"""The control room as a person meets it: ``regulator room`` under a real pseudo-terminal.

    python benchmarks/room.py b3 INSTANCE [--appends N]     an append until its row is on screen
    python benchmarks/room.py b5 INSTANCE [--presses N]     start, keys, filter, inspector, idle
    python benchmarks/room.py b7 INSTANCE [--questions N]   ask_human: key press → MCP client
    python benchmarks/room.py b8 INSTANCE…                  many instances in one room

Each prints one JSON line of figures (``run.py`` scores them). The room is started as a person
starts it (the installed command, watching and presence on, a 160×48 terminal) and observed
only through what it writes to the terminal (``screen.py``): a row counts when it is on
screen, a key when the screen has changed in answer to it. Nothing here imports the room, so
its internals can change under these figures.

A key's time is from writing it to the end of the first frame that changed the screen below the
top bar (the clock there ticks on its own). Typing in the filter is timed to the end of the
last frame before the screen stayed still for a quarter of a second: the rows filtered, not the
character echoed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from screen import Terminal  # noqa: E402

PYTHON = sys.executable
ENV = {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
COLS, ROWS = 160, 48


def regulator() -> list[str]:
    script = Path(PYTHON).parent / "regulator"
    return [str(script)] if script.exists() else [PYTHON, "-m", "regulator.cli.main"]


def room(*instances: Path, cwd: Path | None = None, keep_history: bool = False) -> Terminal:
    return Terminal(
        [*regulator(), "room", *map(str, instances), "--as", "alice"],
        cols=COLS,
        rows=ROWS,
        env=ENV,
        cwd=str(cwd) if cwd else None,
        keep_history=keep_history,
    )


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def summary(values: list[float]) -> dict[str, float]:
    """p50, p95 and max; a key the screen never answered counts as a miss (and as infinite
    in the percentiles, so that a miss can never pass)."""
    if not values:
        return {"n": 0}
    missed = sum(1 for v in values if v == float("inf"))
    values = [v if v != float("inf") else 1e9 for v in values]
    return {
        "missed": missed,
        "n": len(values),
        "p50": statistics.median(values),
        "p95": pct(values, 0.95),
        "max": max(values),
    }


def showing(token: str) -> Callable[[str], bool]:
    """Whether a screen's text shows ``token``."""
    return lambda text: token in text


def loaded(text: str) -> bool:
    """The data is on screen: the instance's units are listed and the inbox is counted."""
    return "unit-0" in text and re.search(r"Inbox \(\d", text) is not None


def useful(text: str) -> bool:
    """The room is there: its top bar and its keys, whatever is still loading."""
    return "regulator" in text and "? help" in text


def key_ms(term: Terminal, *keys: str, timeout: float = 5.0) -> float:
    """Milliseconds from writing ``keys`` to the first frame that changed the screen below its
    top bar (``inf`` when nothing changed within ``timeout``); then waits for the screen to
    rest, so that the next key starts from still."""
    settle(term)
    sent = term.press(*keys)
    done = term.wait_change(timeout, skip_rows=1)
    settle(term)
    return (done - sent) * 1000 if done else float("inf")


def settle(term: Terminal, still: float = 0.15, timeout: float = 10.0) -> None:
    term.wait_change(timeout, settle=still, skip_rows=1, quiet_ok=still)


def type_ms(term: Terminal, text: str) -> list[float]:
    out = []
    for ch in text:
        settle(term)
        sent = term.type(ch)
        done = term.wait_change(10.0, settle=0.25, skip_rows=1)
        out.append((done - sent) * 1000 if done else float("inf"))
    return out


# --- B3 -------------------------------------------------------------------------------------

WRITER = """
import sys, time
from pathlib import Path
from regulator.rules.ledger import Ledger
from regulator.store import Layout
ledger = Ledger(Layout(Path(sys.argv[1])))
for line in sys.stdin:
    n = int(line)
    ledger.open_obligation(subject=f"b3probe-{n:03d} appended by another process", unit="unit-001",
        concern="audit-finding", sources=[f"b3-{n}"], severity="blocking", consumer="human",
        blocks=True)
    print(time.monotonic(), flush=True)
"""


def b3(instance: Path, appends: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="regulator-b3-"))
    try:
        copy = work / instance.name
        shutil.copytree(instance, copy, symlinks=True)
        term = room(copy)
        try:
            if term.wait_for(loaded, 120) is None:
                raise SystemExit("B3: the room never showed the instance")
            term.press("2")  # the inbox
            settle(term)
            term.press("slash")
            settle(term)
            term.type("b3probe")
            settle(term)
            term.press("enter")
            settle(term, 0.3)
            writer = subprocess.Popen(
                [PYTHON, "-c", WRITER, str(copy)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env={**os.environ, **ENV},
            )
            assert writer.stdin and writer.stdout
            latencies: list[float] = []
            missed = 0
            for n in range(appends):
                frames = term.frames
                writer.stdin.write(f"{n}\n")
                writer.stdin.flush()
                appended = float(writer.stdout.readline())
                token = f"b3probe-{n:03d}"
                shown = term.wait_for(showing(token), 10.0, after=frames)
                if shown is None:
                    missed += 1
                else:
                    latencies.append((shown - appended) * 1000)
                settle(term, 0.05)
            writer.stdin.close()
            writer.wait(timeout=30)
        finally:
            term.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {**summary(latencies), "appends": appends, "missed": missed}


# --- B5, B6 ---------------------------------------------------------------------------------


def b5(instance: Path, presses: int, idle_seconds: float) -> dict[str, Any]:
    started = time.monotonic()
    term = room(instance)
    out: dict[str, Any] = {}
    try:
        first = term.wait_for(useful, 60)
        full = term.wait_for(loaded, 120) if first is not None else None
        out["useful_s"] = (first - started) if first else None
        out["full_s"] = (full - started) if full else None
        if full is None:
            return out
        settle(term, 0.5, timeout=30)
        # A smoke (a handful of presses) walks each key once; a measurement presses enough.
        smoke = presses < 8
        out["tab_ms"] = summary([key_ms(term, k) for k in ["2", "3", "1"] * (1 if smoke else 4)])
        term.press("2")  # the inbox, for the keys below
        jk = [key_ms(term, "j" if n % 4 != 3 else "k") for n in range(presses)]
        out["jk_ms"] = summary(jk)
        pages = 3 if smoke else max(6, presses // 4)
        out["pagedown_ms"] = summary(
            [key_ms(term, "pagedown" if n % 3 != 2 else "pageup") for n in range(pages)]
        )
        # The filter: "/" then a unit's name, one character at a time.
        key_ms(term, "slash")
        out["filter_ms"] = summary(type_ms(term, "unit" if smoke else "unit-000"))
        term.press("enter")
        settle(term, 0.3)
        # The inspector on that unit (the generator's busiest: ~5% of every record).
        settle(term)
        sent = term.press("o")
        shown = term.wait_for(
            lambda s: "Timeline" in s and ("opened" in s or "delivered" in s), 60.0
        )
        out["inspector_ms"] = ((shown - sent) * 1000) if shown else None
        term.press("escape")
        settle(term, 0.3)
        term.press("escape")  # out of the filter, back to the plain inbox
        settle(term, 1.0, timeout=30)
        cpu0 = term.cpu_seconds()
        t0 = time.monotonic()
        time.sleep(idle_seconds)  # the measurement window: nobody touches the room
        idle = term.cpu_seconds() - cpu0
        out["idle_cpu_share"] = idle / (time.monotonic() - t0)
        out["rss_mb"] = term.rss_mb()
    finally:
        term.close()
    return out


# --- B7 -------------------------------------------------------------------------------------


PER_SESSION = 2


async def _b7(instance: Path, questions: int) -> dict[str, Any]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    term = room(instance)
    latencies: list[float] = []
    missed = 0
    why: list[str] = []
    try:
        if term.wait_for(loaded, 120) is None:
            raise SystemExit("B7: the room never showed the instance")
        settle(term, 0.3)
        env = {k: v for k, v in os.environ.items() if not k.startswith("REGULATOR_")}
        params = StdioServerParameters(
            command=regulator()[0],
            args=[*regulator()[1:], "mcp"],
            env={**env, **ENV},
            cwd=str(instance),
        )
        # The policy allows two blocking questions per attempt: each MCP server (a session
        # unit of its own) asks two, as agents do.
        for first in range(0, questions, PER_SESSION):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                for n in range(first, min(questions, first + PER_SESSION)):
                    token = f"b7q-{n:03d}"
                    frames = term.frames
                    call = asyncio.ensure_future(
                        session.call_tool(
                            "ask_human",
                            {
                                "kind": "clarification",
                                "subject": f"{token} which rounding rule",
                                "question": f"{token}: half up or half to even?",
                            },
                        )
                    )
                    shown = await asyncio.to_thread(
                        term.wait_for, showing(token), 30.0, after=frames
                    )
                    if shown is None:
                        missed += 1
                        why.append(f"{token} never on screen")
                        call.cancel()
                        continue
                    # As a person does: the banner's "w goes to it", "a" answers, a note typed,
                    # then the dialog's own submit key, read from its footer ("^y answer").
                    await asyncio.to_thread(settle, term, 0.1)
                    term.press("w")
                    await asyncio.to_thread(settle, term, 0.2)
                    term.press("a")
                    await asyncio.to_thread(settle, term, 0.3)
                    term.type("half up")
                    await asyncio.to_thread(settle, term, 0.1)
                    footer = re.search(r"\^([a-z]) answer", term.text().splitlines()[-1])
                    submit = chr(ord(footer.group(1)) - 96) if footer else "\x19"
                    sent = term.type(submit)
                    try:
                        result = await asyncio.wait_for(call, 30)
                    except TimeoutError:
                        missed += 1
                        # The whole screen, less blank lines: where the person's key went.
                        screen = " | ".join(
                            line.strip() for line in term.text().splitlines() if line.strip()
                        )
                        why.append(f"{token}: no answer 30 s after the key; screen: {screen}")
                        continue
                    got = time.monotonic()
                    text = "".join(getattr(c, "text", "") for c in result.content)
                    if "half up" not in text:
                        missed += 1
                        why.append(f"{token}: answered {text[:200]!r}")
                        continue
                    latencies.append((got - sent) * 1000)
                    await asyncio.to_thread(settle, term, 0.2)
    finally:
        term.close()
    return {**summary(latencies), "questions": questions, "missed": missed, "why": why[:3]}


def b7(instance: Path, questions: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="regulator-b7-"))
    try:
        copy = work / instance.name
        shutil.copytree(instance, copy, symlinks=True)
        return asyncio.run(_b7(copy, questions))
    finally:
        shutil.rmtree(work, ignore_errors=True)


# --- B8 -------------------------------------------------------------------------------------


def b8(instances: list[Path]) -> dict[str, Any]:
    """Until the inbox counts what every instance owes: the first frame showing the count the
    room settles on (the instances table shows only some rows; the count sums them all)."""
    started = time.monotonic()
    term = room(*instances, keep_history=True)
    try:
        if term.wait_for(loaded, 180) is None:
            return {"instances": len(instances), "full_s": None, "rss_mb": term.rss_mb()}
        settle(term, 3.0, timeout=120)
        final = _inbox_count(term.text())
        assert term.history is not None
        full = next(
            (t for t, text in term.history if loaded(text) and _inbox_count(text) == final),
            None,
        )
        return {
            "instances": len(instances),
            "inbox": final,
            "full_s": (full - started) if full else None,
            "rss_mb": term.rss_mb(),
        }
    finally:
        term.close()


def _inbox_count(text: str) -> int | None:
    found = re.search(r"Inbox \((\d+)", text)
    return int(found.group(1)) if found else None


RUNNERS: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "b3": lambda a: b3(a.instance[0], a.appends),
    "b5": lambda a: b5(a.instance[0], a.presses, a.idle),
    "b7": lambda a: b7(a.instance[0], a.questions),
    "b8": lambda a: b8(a.instance),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("which", choices=sorted(RUNNERS))
    parser.add_argument("instance", nargs="+", type=Path)
    parser.add_argument("--appends", type=int, default=40)
    parser.add_argument("--presses", type=int, default=40)
    parser.add_argument("--idle", type=float, default=10.0, help="seconds of idle measured")
    parser.add_argument("--questions", type=int, default=50)
    args = parser.parse_args()
    print(json.dumps(RUNNERS[args.which](args)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
