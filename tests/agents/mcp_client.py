"""An MCP agent for the tests: it starts `regulator mcp` from the config file the loop wrote.

Usage: python mcp_client.py CONFIG PLAN OUT — PLAN is a JSON list of {"tool", "arguments"};
every call's result (or error) is written to OUT as JSON, with the listed tools.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client
from mcp.shared.dispatcher import ProgressFnT


def counter(seen: list[float]) -> ProgressFnT:
    """A progress callback that keeps each progress value in ``seen``."""

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    return on_progress


async def main(config_path: str, plan_path: str, out_path: str) -> None:
    server = json.loads(Path(config_path).read_text())["mcpServers"]["regulator"]
    # The SDK gives a server a few variables only: the checkout the suite runs (PYTHONPATH) is
    # passed on, or the server would be the installed regulator, not the code under test.
    env = {**get_default_environment(), **(server.get("env") or {})}
    if "PYTHONPATH" in os.environ:
        env.setdefault("PYTHONPATH", os.environ["PYTHONPATH"])
    params = StdioServerParameters(command=server["command"], args=server["args"], env=env)
    plan = json.loads(Path(plan_path).read_text())
    out: dict[str, Any] = {"calls": []}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        started = await session.initialize()
        out["instructions"] = started.instructions
        listed = await session.list_tools()
        out["tools"] = {t.name: t.input_schema for t in listed.tools}
        for step in plan:
            progress: list[float] = []
            result = await session.call_tool(
                step["tool"], step.get("arguments", {}), progress_callback=counter(progress)
            )
            text = "".join(getattr(c, "text", "") for c in result.content)
            out["calls"].append(
                {
                    "tool": step["tool"],
                    "isError": result.is_error,
                    "text": text,
                    "structured": result.structured_content,
                    "progress": len(progress),
                }
            )
    Path(out_path).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3])
