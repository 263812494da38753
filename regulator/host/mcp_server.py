"""``regulator mcp``: the session tools as an MCP server on stdio, for any MCP-capable agent.

It lists exactly the tools the unit's capability profile grants (``report_result`` always, for a
contracted unit), and hands every call to the one :class:`SessionTools`, so no gate exists twice.
A refusal is a tool result with ``isError`` and the refusal's words, which the model reads; a
host failure or corrupt state says so before its words ("host failure: …"), and the structured
result names the root (``{"hostFailure": "…"}``, docs/agents.md), so an agent tells "not like
this" from "not now" from "a file needs mending".

``ask_human`` can wait minutes for a person. The call runs in a worker thread while the server
sends progress notifications every few seconds, so a client that asked for progress keeps the
call alive; a client that cancels stops the wait, and the silence is recorded as ``cancelled``.
Nothing but JSON-RPC is written to stdout.

The server ends when the client closes its stdin, or on SIGTERM, which is how Codex CLI stops
its MCP servers (a signal to their process group; it never closes the pipe). Either way the
session unit it made is settled.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from types import FrameType
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
import orjson
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

from regulator import __version__
from regulator.host.agent_install import default_program
from regulator.host.agent_session import AgentSession
from regulator.host.person_acts import ENV_MARKERS
from regulator.host.tool_catalog import CATALOG, guidance
from regulator.host.tools import EFFECTS
from regulator.protocol.errors import ErrorKind, RegulatorError, error_json, kind_of, message_of

PROGRESS_EVERY_S = 5.0

#: How the text of an error result begins, by root: a refusal is the tool's own answer.
SAID: dict[ErrorKind, str] = {
    "refused": "refused",
    "corruptState": "corrupt state",
    "hostFailure": "host failure",
}


def instructions(grants: set[str]) -> str:
    """The server's instructions: what regulator is, and the tools this session has (a
    session unit a person started has no contract, so no report_result)."""
    return (
        "These tools connect you to regulator, the control plane your work runs under. "
        + guidance(grants)
    ).strip()


def _text(value: Any) -> list[types.TextContent]:
    body = value if isinstance(value, str) else orjson.dumps(value).decode()
    return [types.TextContent(type="text", text=body)]


def tool_list(grants: set[str]) -> list[types.Tool]:
    listed = []
    for name, spec in CATALOG.items():
        if name not in grants:
            continue
        effect = EFFECTS[name]
        listed.append(
            types.Tool(
                name=name,
                description=spec.description,
                input_schema=spec.input_schema,
                annotations=types.ToolAnnotations(
                    read_only_hint=effect == "read-only",
                    destructive_hint=effect == "irreversible",
                    open_world_hint=name == "notify_owner",
                ),
            )
        )
    return listed


def build_server(session: AgentSession) -> Server[Any]:
    # One call at a time: a call that arrives while a question waits (or while its silence is
    # being recorded) must see the pause that question leaves behind.
    serial = anyio.Lock()

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_list(session.grants))

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        async with serial:
            return await _call(ctx, params)

    async def _call(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        name = params.name
        args = dict(params.arguments or {})
        outcome: dict[str, Any] = {}
        cancel = threading.Event()
        finished = threading.Event()

        def run() -> None:
            try:
                # An agent a person started becomes a session unit on its first call.
                outcome["result"] = session.tools().call(name, args, cancel=cancel)
            except RegulatorError as exc:  # refused, corrupt state, a host failure: its words
                outcome["error"] = exc
            except Exception as exc:  # a tool that breaks must still answer the agent
                outcome["broke"] = f"{name} failed: {type(exc).__name__}: {exc}"
            finally:
                finished.set()

        started = time.monotonic()
        async with anyio.create_task_group() as group:

            async def heartbeat() -> None:
                while True:
                    await anyio.sleep(PROGRESS_EVERY_S)
                    waited = int(time.monotonic() - started)
                    await ctx.session.report_progress(
                        waited, None, f"waiting for a person ({waited} s)"
                    )

            group.start_soon(heartbeat)
            try:
                # Abandoned on cancel: the thread sees ``cancel`` within one poll and records
                # the silence as cancelled, which pauses the attempt like any silence.
                await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
            except anyio.get_cancelled_exc_class():
                cancel.set()
                # Let the silence be recorded (and the pause with it) before the next call can
                # arrive: otherwise an effect could slip in between the cancel and the pause.
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(finished.wait, 5.0)
                raise
            finally:
                group.cancel_scope.cancel()
        if "error" in outcome:
            error: RegulatorError = outcome["error"]
            said = message_of(error)
            if kind_of(error) != "refused":
                said = f"{SAID[kind_of(error)]}: {said}"
            return types.CallToolResult(
                content=_text(said), structured_content=error_json(error), is_error=True
            )
        if "broke" in outcome:
            return types.CallToolResult(content=_text(outcome["broke"]), is_error=True)
        result = outcome["result"]
        return types.CallToolResult(content=_text(result), structured_content=result)

    return Server(
        "regulator",
        version=__version__,
        instructions=instructions(session.grants),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def settle_apart(session: AgentSession) -> None:
    """Settle the session unit this server made in a process of its own, and return at once.

    Codex CLI follows its SIGTERM with a SIGKILL to the server some 20 ms later (codex-cli
    0.171), too soon to settle here, and the threads reading stdin could not be interrupted
    anyway. ``regulator session end``, in a session of its own, outlives both. A question still
    waiting stays owed, and its silence pauses the session as any unanswered question does.

    From inside an agent, ``session end`` ends only the unit the agent's registration names,
    so the registration stays (the next look forgets it once the agent has ended), and the
    variables that say "inside an agent" are left out of the child's environment: orphaned, it
    has no ancestry left to prove the unit its own by.
    """
    if not session.owned or session.unit_id is None:
        return
    session.owned = False
    session.registered_pid = None
    env = {k: v for k, v in os.environ.items() if k not in ENV_MARKERS}
    subprocess.Popen(
        [*default_program(), "session", "end", session.unit_id],
        cwd=session.layout.root,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,  # stdout is the client's JSON-RPC
        start_new_session=True,  # out of the process group the client signals
    )


def serve(session: AgentSession) -> None:
    """Serve on stdin/stdout until the client closes the connection or sends SIGTERM.

    A session unit this server made ends with it: the agent that started it has gone.
    """
    server = build_server(session)

    def terminated(signum: int, frame: FrameType | None) -> None:
        try:
            settle_apart(session)
        finally:
            os._exit(128 + signum)

    signal.signal(signal.SIGTERM, terminated)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        # Settling here, a SIGTERM must not end the process halfway (nor start a second one).
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        session.end()
