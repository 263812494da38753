"""``regulator mcp`` and ``regulator tool``: the session tools for agents, over MCP or a shell."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import orjson

from regulator.agent_session import (
    INSTANCE_ENV,
    SessionAddress,
    SessionUnavailable,
    address_from,
    open_session,
)
from regulator.cli.context import definition, instance_root, refusals
from regulator.cli.main import CliError
from regulator.store import Layout
from regulator.tools import SessionTools, ToolRefused


def _session(args: argparse.Namespace) -> SessionTools:
    if getattr(args, "instance", None) is None and os.environ.get(INSTANCE_ENV):
        args.instance = os.environ[INSTANCE_ENV]
    root = instance_root(args)
    try:
        address = address_from(os.environ)
    except SessionUnavailable as exc:
        raise CliError(str(exc)) from None
    if address is None:
        raise CliError(
            "no unit: REGULATOR_UNIT is not set (the loop sets it for the sessions it starts)"
        )
    return _open(Layout(root), args, root, address)


def _open(
    layout: Layout, args: argparse.Namespace, root: Path, address: SessionAddress
) -> SessionTools:
    defn = definition(args, root)
    with refusals():
        try:
            return open_session(layout, defn, address)
        except SessionUnavailable as exc:
            raise CliError(str(exc)) from None


def cmd_mcp(args: argparse.Namespace) -> int:
    tools = _session(args)
    from regulator.mcp_server import serve  # the MCP SDK is imported only by this command

    serve(tools)
    return 0


def _arguments(args: argparse.Namespace) -> dict[str, Any]:
    raw: bytes
    if args.json is not None:
        raw = args.json.encode()
        where = "--json"
    elif sys.stdin.isatty():
        return {}
    else:
        raw = sys.stdin.buffer.read()
        where = "stdin"
    if not raw.strip():
        return {}
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise CliError(f"{where}: not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise CliError(f"{where}: the tool's arguments must be a JSON object")
    return value


def cmd_tool(args: argparse.Namespace) -> int:
    arguments = _arguments(args)
    tools = _session(args)
    try:
        result = tools.call(args.name, arguments)
    except ToolRefused as exc:
        # A refusal is the tool's answer too: JSON on stdout for the agent, exit 1.
        sys.stdout.buffer.write(orjson.dumps({"refused": str(exc)}) + b"\n")
        return 1
    sys.stdout.buffer.write(orjson.dumps(result) + b"\n")
    return 0
