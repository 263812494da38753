"""``regulator hook``: an agent's hook, answered.

Claude Code runs it before each tool call it matches (every tool but those that only read),
so its start is latency on every such call. It imports what the common replies need (the
definition's agent rules, the store); the session machinery (units, tools, the regulatory log)
only when a reply asks a person or records a session (``regulator.host.hooks``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from regulator.cli.context import emit_json
from regulator.host.environment import INSTANCE_ENV
from regulator.protocol.text import visible
from regulator.store import Layout, find_instance

if TYPE_CHECKING:
    import argparse


def cmd_hook(args: argparse.Namespace) -> int:
    return answer_hook(definition_dir=getattr(args, "definition", None))


def answer_hook(*, definition_dir: str | None) -> int:
    """Read the agent's payload on stdin and write its reply on stdout; never fail open.
    ``definition_dir``: ``--definition``, when given. ``regulator.cli.entry`` calls this
    directly for the command line ``agent install`` writes."""
    raw = sys.stdin.buffer.read()
    try:
        payload = orjson.loads(raw) if raw.strip() else {}
    except orjson.JSONDecodeError:
        payload = {}
    if not isinstance(payload, dict):
        payload = {}
    pre_tool = payload.get("hook_event_name") == "PreToolUse"
    if payload.get("hook_event_name") == "PostToolUse":
        # An older install's hook: the writes are counted from PreToolUse now, and nothing is
        # left to decide once a tool has run (`regulator agent install` removes it).
        emit_json({})
        return 0
    from regulator.host.hooks import claude_code, pre_tool_reply
    from regulator.policy import load_definition

    try:
        given = os.environ.get(INSTANCE_ENV)
        cwd = Path(str(payload.get("cwd") or Path.cwd()))
        root = Path(given) if given else find_instance(cwd)
        if root is None:
            emit_json({})  # not a regulator instance: nothing to say
            return 0
        layout = Layout(root.resolve())
        defn = load_definition(root, Path(definition_dir) if definition_dir else None)
        reply = claude_code(payload, layout, defn)
    except Exception as exc:  # every failure of ours, whatever it is
        # Fail closed: a hook that crashes lets the call through, so say `ask` instead.
        print(f"regulator: {visible(str(exc))}", file=sys.stderr)
        reply = pre_tool_reply("ask", f"regulator could not decide: {exc}") if pre_tool else {}
    emit_json(reply)
    return 0
