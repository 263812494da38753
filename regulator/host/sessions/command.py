"""Command sessions: any agent CLI, run in the unit's worktree.

The loop renders the prompt to a file and writes an MCP configuration that points the agent at
``regulator mcp`` for this unit and attempt; the configured command line is run with those paths
substituted (``{prompt}``, ``{prompt_file}``, ``{mcp_config}``, ``{model}``, ``{worktree}``,
``{instance}``) and with ``REGULATOR_INSTANCE``, ``REGULATOR_UNIT`` and ``REGULATOR_ATTEMPT`` in
its environment. The budget guard meters what the agent prints of its usage (Claude Code's
``--output-format json``, Codex's ``--json`` event lines) and stops the process at the
wall-clock ceiling or the moment another ceiling is crossed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from regulator.host.agent_process import spawn, unregister
from regulator.host.sessions import SessionAdapter, SessionResult, SessionRun
from regulator.policy.workload import SessionSpec
from regulator.store import Layout


def usage_from_line(line: str, fmt: str) -> dict[str, Any] | None:
    """Tokens, cost and turns from one line of the agent's JSON output, if it carries usage."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    if fmt == "claude-json":
        usage = data.get("usage")
        if not isinstance(usage, dict):
            return None
        tokens = sum(
            int(usage.get(k) or 0)
            for k in (
                "input_tokens",
                "output_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
            )
        )
        return {
            "tokens": tokens,
            "cost": float(data.get("total_cost_usd") or 0),
            "turns": int(data.get("num_turns") or 0),
            "total": True,  # the final result carries totals, not increments
        }
    if fmt == "codex-jsonl":
        nested = data.get("msg")
        msg: dict[str, Any] = nested if isinstance(nested, dict) else data
        if msg.get("type") in ("token_count", "turn.completed"):
            info = msg.get("info") or msg.get("usage") or {}
            total = info.get("total_token_usage", info) if isinstance(info, dict) else {}
            tokens = int(total.get("total_tokens") or 0) or sum(
                int(total.get(k) or 0) for k in ("input_tokens", "output_tokens")
            )
            return {"tokens": tokens, "cost": 0.0, "turns": 1, "total": "total_token_usage" in info}
    return None


def mcp_config(run: SessionRun) -> dict[str, Any]:
    env = {
        "REGULATOR_INSTANCE": str(run.instance_root),
        "REGULATOR_UNIT": run.contract.unit_id,
        "REGULATOR_ATTEMPT": str(run.attempt),
    }
    # This interpreter, not whatever `regulator` is first on the agent's PATH: the server must be
    # the same installation as the loop that started the session. -P: the agent's client starts
    # it in the worktree, whose `regulator/` (the definition) must not become the package run.
    server = {"command": sys.executable, "args": ["-P", "-m", "regulator", "mcp"], "env": env}
    return {"mcpServers": {"regulator": server}}


class CommandAdapter(SessionAdapter):
    name = "command"

    def __init__(self, spec: SessionSpec) -> None:
        if not spec.command:
            raise ValueError("a command session needs `command`, the agent CLI's argv")
        self.spec = spec

    def run(self, run: SessionRun) -> SessionResult:
        session_id = f"command-{uuid.uuid4()}"
        config_path = run.prompt_path.with_name(f"mcp.a{run.attempt}.json")
        config_path.write_text(json.dumps(mcp_config(run), indent=2) + "\n", encoding="utf-8")
        values = {
            "prompt": run.prompt,
            "prompt_file": str(run.prompt_path),
            "mcp_config": str(config_path),
            "model": run.model.split("/", 1)[-1],
            "worktree": str(run.worktree),
            "instance": str(run.instance_root),
        }
        argv = [part.format(**values) for part in self.spec.command or []]
        env = {**os.environ, **mcp_config(run)["mcpServers"]["regulator"]["env"]}
        layout = Layout(run.instance_root)
        try:
            # Registered as this unit's attempt before it runs: which unit every process it
            # starts acts for comes from that record, not from the variables above.
            proc = spawn(
                layout,
                argv,
                unit_id=run.contract.unit_id,
                attempt=run.attempt,
                agent=Path(argv[0]).name,
                by="loop",
                cwd=run.worktree,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
        except OSError as exc:
            return SessionResult(session_id, error=f"command not found: {argv[0]} ({exc.strerror})")
        try:
            return self._watch(run, proc, argv, session_id)
        finally:
            unregister(layout, proc.pid)

    def _watch(
        self, run: SessionRun, proc: subprocess.Popen[str], argv: list[str], session_id: str
    ) -> SessionResult:
        stderr: list[str] = []
        drain = threading.Thread(target=lambda: stderr.extend(proc.stderr or []), daemon=True)
        drain.start()
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(proc.stdout or []), daemon=True)
        reader.start()
        seen = 0
        totals = {"tokens": 0, "cost": 0.0, "turns": 0}
        while proc.poll() is None or reader.is_alive():
            for line in lines[seen:]:
                usage = usage_from_line(line, self.spec.usage_format)
                if usage is not None:
                    self._meter(run, usage, totals)
            seen = len(lines)
            run.guard.tick()
            if run.guard.halted:
                _stop(proc)
                break
            time.sleep(0.05)
        for line in lines[seen:]:
            usage = usage_from_line(line, self.spec.usage_format)
            if usage is not None:
                self._meter(run, usage, totals)
        code = proc.wait()
        if run.guard.halted:
            return SessionResult(session_id)
        if code != 0:
            tail = " ".join("".join(stderr[-5:]).split())[-300:]
            return SessionResult(session_id, error=f"{Path(argv[0]).name} exited {code}: {tail}")
        return SessionResult(session_id)

    @staticmethod
    def _meter(run: SessionRun, usage: dict[str, Any], totals: dict[str, Any]) -> None:
        if usage.get("total"):
            # A running total: meter what it adds to what was already metered.
            delta = {k: max(0, usage[k] - totals[k]) for k in ("tokens", "cost", "turns")}
            for k in delta:
                totals[k] = max(totals[k], usage[k])
        else:
            delta = {k: usage[k] for k in ("tokens", "cost", "turns")}
            for k in delta:
                totals[k] += usage[k]
        run.guard.record_usage(
            tokens=int(delta["tokens"]), cost=float(delta["cost"]), turns=int(delta["turns"])
        )


def _stop(proc: subprocess.Popen[str]) -> None:
    """Stop the agent and everything it started: it ran in a session of its own."""
    import signal

    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=5)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
