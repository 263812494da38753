"""Agents' commands: ``mcp``, ``tool``, ``ask`` and ``session start|end`` (``hook`` has a module
of its own: it runs on every tool call an agent makes, and imports as little as it can).

They all reach the one :class:`SessionTools` of the session the process serves (the loop's
unit, or a session unit for an agent a person started by hand), so no gate exists twice.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import orjson

from regulator.cli.context import definition, emit_json, instance_root
from regulator.cli.errors import CliError, exit_status
from regulator.host.agent_process import agent_pid, process_start, registered_ancestor
from regulator.host.agent_session import AgentSession, find_session
from regulator.host.environment import INSTANCE_ENV
from regulator.host.person_acts import inside_agent
from regulator.host.session_definition import unit_id_for
from regulator.host.session_units import end_session_unit, start_session_unit
from regulator.protocol.errors import RegulatorError, error_json
from regulator.protocol.text import visible
from regulator.rules.execution import UnitNotFound
from regulator.store import Layout

# `regulator ask` exit statuses beyond 0 (yes, or an answer) and 1 (no, or a refusal).
NOBODY_ANSWERED = 3


def _layout(args: argparse.Namespace) -> tuple[Layout, Path]:
    if getattr(args, "instance", None) is None and os.environ.get(INSTANCE_ENV):
        args.instance = os.environ[INSTANCE_ENV]
    root = instance_root(args)
    return Layout(root), root


def _session(args: argparse.Namespace, agent: str, key: str | None = None) -> AgentSession:
    layout, root = _layout(args)
    defn = definition(args, root)
    return find_session(layout, defn, agent=agent, key=key)


def _process_key() -> str:
    """One session per agent process: every call from the same agent joins the same unit."""
    pid = agent_pid()
    return f"p{pid}-{process_start(pid) or 0}"


def _tools(session: AgentSession) -> Any:
    return session.tools()


def cmd_mcp(args: argparse.Namespace) -> int:
    session = _session(args, "mcp")
    session.grants  # noqa: B018 - refuse a bad unit before the client connects
    from regulator.host.mcp_server import serve  # the MCP SDK is imported only by this command

    serve(session)
    return 0


def _json_arguments(text: str | None, where: str) -> dict[str, Any]:
    raw = text.encode() if text is not None else b""
    if text is None and not sys.stdin.isatty():
        raw = sys.stdin.buffer.read()
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
    arguments = _json_arguments(args.json, "--json" if args.json is not None else "stdin")
    needs_key = not os.environ.get("REGULATOR_UNIT") and not os.environ.get("REGULATOR_SESSION")
    session = _session(args, "tool", key=None)
    if needs_key and session.address is None:
        session.key = _process_key()
    tools = _tools(session)
    try:
        result = tools.call(args.name, arguments)
    except RegulatorError as exc:
        # A refusal is the tool's answer too: JSON on stdout for the agent, naming its root
        # ({"refused": …}, {"hostFailure": …}, {"corruptState": …}), and the root's exit status.
        emit_json(error_json(exc))
        return exit_status(exc)
    emit_json(result)
    return 0


def cmd_ask(args: argparse.Namespace) -> int:
    question: dict[str, Any] = {
        "kind": args.kind,
        "subject": args.subject,
        "question": args.question,
    }
    if args.action is not None:
        question["action"] = args.action
    if args.option:
        question["options"] = args.option
    if args.timeout is not None and args.timeout <= 0:
        raise CliError(f"--timeout {args.timeout}: a number of seconds above 0")
    session = _session(args, "ask")
    tools = _tools(session)
    try:
        result = tools.call("ask_human", question, max_wait_s=args.timeout)
    finally:
        session.end()  # a question asked from a plain script is a session of its own
    if args.json:
        emit_json(result)
    elif result.get("answered"):
        print(visible(str(result.get("answer", ""))))
        if result.get("note"):
            print(visible(str(result["note"])))
    else:
        print(visible(str(result.get("message", ""))), file=sys.stderr)
    # Whoever waits on `ask` waits for it to exit: keep the collector from walking every
    # object the process made on the way out (100-200 ms on a busy 2-core machine, ~20 without).
    import gc

    gc.freeze()
    if not result.get("answered"):
        return 0 if args.kind == "recap" else NOBODY_ANSWERED
    return 1 if result.get("disposition") == "rejected" else 0


def cmd_session_start(args: argparse.Namespace) -> int:
    layout, root = _layout(args)
    defn = definition(args, root)
    key = args.key or os.environ.get("REGULATOR_SESSION") or _process_key()
    made = start_session_unit(layout, defn, key, agent=args.agent, cwd=Path.cwd())
    print(visible(made.unit_id))
    return 0


def cmd_session_end(args: argparse.Namespace) -> int:
    layout, _ = _layout(args)
    key = args.key or os.environ.get("REGULATOR_SESSION") or _process_key()
    unit_id = args.unit or unit_id_for(key)
    _own_session_only(layout, unit_id)
    try:
        became = end_session_unit(layout, unit_id)
    except UnitNotFound:
        raise CliError(f"no session unit {unit_id}") from None
    print(visible(f"{unit_id}: {became}"))
    return 0


def _own_session_only(layout: Layout, unit_id: str) -> None:
    """From inside an agent's session, only that session's own unit may be ended: an agent
    must not end another agent's session (nor a script's)."""
    why = inside_agent([layout])
    if why is None:
        return  # a person's terminal
    own = registered_ancestor(layout)
    if own is not None and own.unit_id == unit_id:
        return
    mine = f"its own is {own.unit_id}" if own is not None else "it has no session unit of its own"
    raise CliError(
        visible(
            f"session end {unit_id} is refused here: {why}, and an agent may end only its own "
            f"session ({mine}); end it from a terminal of your own"
        )
    )


def cmd_agent_install(args: argparse.Namespace) -> int:
    from regulator.host import agent_install

    _, root = _layout(args)
    if args.agent == "claude-code":
        changes = agent_install.claude_code(root, args.command)
    else:
        changes = agent_install.codex(root, args.command)
    for change in changes:
        name = change.path.relative_to(root).as_posix()
        if not change.changed:
            print(visible(f"{name}: already set up, unchanged"))
        elif args.dry_run:
            # The files may already hold anything (a cloned repository's settings).
            sys.stdout.write(visible(change.diff(root), newlines=True))
        else:
            print(visible(f"{name}: {'updated' if change.before else 'written'}"))
        for note in change.notes:
            print(visible(f"{name}: {note}"))
    if not args.dry_run:
        agent_install.apply(root, changes)
        if any(change.changed for change in changes):
            print("next: `regulator doctor` checks the wiring by running it")
    return 0
