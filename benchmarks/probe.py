"""What ``run.py`` runs in fresh processes: one measurement each, printed as one JSON line.

    python benchmarks/probe.py load DIR                  B1: a cold load of DIR's log
    python benchmarks/probe.py parse FILE [--discard]    the baseline: orjson on every line, kept,
                                                         the cycle collector off
    python benchmarks/probe.py append DIR [--appends N]  B2: one event appended, then folded
    python benchmarks/probe.py rss -- COMMAND …          the peak RSS of COMMAND, as a child
    python benchmarks/probe.py mcp DIR -- COMMAND …      B11: COMMAND (an MCP server on stdio)
                                                         started in DIR, until tools/list

Times are measured inside the process, after its imports, so that they are the work itself;
``rss`` runs its command as its only child and reads ``RUSAGE_CHILDREN``, which is therefore
that command's peak resident set.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def load(directory: Path) -> dict[str, Any]:
    from regulator.rules.regulatory_log import RegulatoryLog
    from regulator.store import Layout

    started = time.perf_counter()
    log = RegulatoryLog(Layout(directory))
    entries = log.refresh()
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "entries": len(entries),
        "obligations": len(log.obligations),
        "open": len(log.open_obligations()),
        "problems": len(log.problems),
        "lines": log.lines,
    }


def parse(path: Path, *, keep: bool) -> dict[str, Any]:
    """Every line through orjson, the fastest parser installed, read the way the reader reads.

    ``keep``: the parsed lines are kept, as any loader keeps what it parsed; otherwise each is
    dropped at once (a lower bound: memory is reused and the collector has nothing to walk).
    """
    import gc

    import orjson

    loads = orjson.loads
    # The collector off, as the fold runs: with it on, keeping a million parsed dicts costs
    # twice as long, and a baseline slowed that way would flatter every ratio against it.
    gc.disable()
    started = time.perf_counter()
    kept: list[Any] = []
    count = 0
    carry = b""
    with path.open("rb", buffering=0) as f:
        while chunk := f.read(1 << 20):
            lines = (carry + chunk).split(b"\n")
            carry = lines.pop()
            if keep:
                kept.extend(loads(line) for line in lines)
            else:
                for line in lines:
                    loads(line)
            count += len(lines)
    return {"seconds": time.perf_counter() - started, "lines": count}


def append(directory: Path, appends: int) -> dict[str, Any]:
    """Fold one appended event at a time into a loaded log; the time of each ``refresh``.

    The event is what ``Ledger.deliver`` writes (a reminder of an open obligation), appended
    under the log's lock as the ledger appends; the measured refresh is another reader's, as in
    the control room following a writer.
    """
    import orjson

    from regulator.protocol.obligations import ObligationDelivered
    from regulator.rules.ledger import new_id
    from regulator.rules.regulatory_log import RegulatoryLog
    from regulator.store import Layout, append_lines

    layout = Layout(directory)
    log = RegulatoryLog(layout)
    started = time.perf_counter()
    log.refresh()
    load_seconds = time.perf_counter() - started
    target = next(iter(log.open_obligations()))
    times: list[float] = []
    for n in range(appends):
        event = ObligationDelivered.from_json_dict(
            {
                "id": new_id(),
                "at": f"2026-02-01T00:00:{n % 60:02d}.000Z",
                "by": "S3",
                "obligationId": target.id,
                "channel": "outbox",
                "reminder": True,
            }
        )
        append_lines(layout.signals, [orjson.dumps(event.to_json_dict())])
        t0 = time.perf_counter()
        folded = log.refresh()
        times.append(time.perf_counter() - t0)
        if len(folded) != 1:
            raise SystemExit(f"expected one new entry, folded {len(folded)}")
    times.sort()
    return {
        "load_seconds": load_seconds,
        "lines": log.lines,
        "median_ms": statistics.median(times) * 1000,
        "p95_ms": times[int(0.95 * (len(times) - 1))] * 1000,
        "max_ms": times[-1] * 1000,
    }


def child_rss(command: list[str]) -> dict[str, Any]:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
    return {
        "returncode": done.returncode,
        "wall_seconds": seconds,
        "peak_rss_mb": peak_kib / 1024,
        "stdout": done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "",
        "stderr": done.stderr[-2000:],
    }


def mcp_ready(directory: Path, command: list[str]) -> dict[str, Any]:
    """``command`` started in ``directory`` as an MCP client starts a stdio server: the time
    until it has answered ``initialize`` and then ``tools/list``."""

    started = time.perf_counter()
    server = subprocess.Popen(
        command, cwd=directory, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    assert server.stdin is not None and server.stdout is not None

    def send(message: dict[str, Any]) -> None:
        server.stdin.write(json.dumps(message).encode() + b"\n")  # type: ignore[union-attr]
        server.stdin.flush()  # type: ignore[union-attr]

    def answer(number: int) -> dict[str, Any]:
        while line := server.stdout.readline():  # type: ignore[union-attr]
            message: dict[str, Any] = json.loads(line)
            if message.get("id") == number:
                return message
        raise SystemExit(f"the server ended: {server.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]

    hello = {"name": "bench", "version": "0"}
    params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": hello}
    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
    answer(1)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    tools = answer(2)["result"]["tools"]
    seconds = time.perf_counter() - started
    server.stdin.close()
    server.wait(timeout=30)
    return {"seconds": seconds, "tools": len(tools)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("load")
    p.add_argument("directory", type=Path)
    p = sub.add_parser("parse")
    p.add_argument("file", type=Path)
    p.add_argument("--discard", action="store_true")
    p = sub.add_parser("append")
    p.add_argument("directory", type=Path)
    p.add_argument("--appends", type=int, default=200)
    p = sub.add_parser("rss")
    p.add_argument("command", nargs=argparse.REMAINDER)
    p = sub.add_parser("mcp")
    p.add_argument("directory", type=Path)
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    if args.what == "load":
        result = load(args.directory)
    elif args.what == "parse":
        result = parse(args.file, keep=not args.discard)
    elif args.what == "append":
        result = append(args.directory, args.appends)
    elif args.what == "mcp":
        command = args.command[1:] if args.command[:1] == ["--"] else args.command
        result = mcp_ready(args.directory, command)
    else:
        command = args.command[1:] if args.command[:1] == ["--"] else args.command
        result = child_rss(command)
    result["pid"] = os.getpid()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
