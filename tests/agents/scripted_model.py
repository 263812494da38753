"""A scripted model on localhost, for the real Claude Code and Codex CLI in the tests.

The model's every move is written in advance by the test: a list of turns, each a tool call
(:class:`Call`) or a text that ends the conversation (:class:`Say`). Each request that belongs to
the conversation takes the next turn; the server answers it in the wire API the client speaks,
streamed as server-sent events, and keeps every request, so the test can read what the client
sent back: the tool results that the hooks and regulator's MCP server produced.

Two wire APIs, each only as far as the clients need it:

- **Anthropic Messages** (Claude Code, ``ANTHROPIC_BASE_URL``): ``POST /v1/messages`` streamed as
  ``message_start``, ``content_block_start`` / ``content_block_delta`` (``text_delta`` or
  ``input_json_delta``) / ``content_block_stop``, ``message_delta`` with the ``stop_reason``
  (``tool_use`` or ``end_turn``), ``message_stop``; ``POST /v1/messages/count_tokens`` too.
- **OpenAI Responses** (Codex, a ``[model_providers.<id>]`` with ``wire_api = "responses"``):
  ``POST /v1/responses`` streamed as ``response.created``, ``response.output_item.done`` (a
  ``function_call`` or an assistant ``message``), ``response.completed``.

Tool names are the flat names the model sees: Claude Code's own (``Read``, ``Bash``), and an MCP
server's tool as ``mcp__SERVER__TOOL`` (:func:`mcp`), which is Claude Code's name for it. Codex
offers an MCP server's tools as a *namespace* (``{"type": "namespace", "name":
"mcp__regulator", "tools": [...]}``) and takes a call as a ``function_call`` naming the tool and
its ``namespace``: the flat name is split that way when the request offers the namespace.

A client may send requests besides the conversation's (a title, a warm-up, a quota probe): a
request that offers the model no tools is answered with a short text and takes no turn. A
conversation request that comes once the script is spent is answered with a text too, and
counted in :attr:`ScriptedModel.overruns`.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# What a request outside the script is told: any short text will do.
SIDE_REPLY = "ok"


@dataclass(frozen=True)
class Call:
    """Call the tool ``name`` (its flat name, see the module's doc) with ``input``."""

    name: str
    input: dict[str, Any]


@dataclass(frozen=True)
class Say:
    """Say ``text`` and end the turn."""

    text: str


Turn = Call | Say


def mcp(server: str, tool: str) -> str:
    """The flat name of an MCP server's tool."""
    return f"mcp__{server}__{tool}"


@dataclass(frozen=True)
class ToolResult:
    """A tool's result as the client sent it back to the model."""

    call_id: str
    text: str
    is_error: bool | None  # the Messages API says; the Responses API does not


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


@dataclass
class Request:
    path: str
    body: dict[str, Any]
    turn: Turn | None = None  # the script's turn it was answered with; None outside the script

    @property
    def offered(self) -> dict[str, tuple[str | None, str]]:
        """The tools the request offers, by flat name: ``(namespace, name)`` each."""
        found: dict[str, tuple[str | None, str]] = {}
        for tool in self.body.get("tools") or []:
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                continue
            if tool.get("type") == "namespace":
                for inner in tool.get("tools") or []:
                    if isinstance(inner, dict) and isinstance(inner.get("name"), str):
                        found[f"{tool['name']}__{inner['name']}"] = (tool["name"], inner["name"])
            else:
                found[tool["name"]] = (None, tool["name"])
        return found

    def tool_results(self) -> list[ToolResult]:
        """The tool results the request carries back to the model, in order."""
        results = []
        if "messages" in self.body:  # Messages API: tool_result blocks of the last user turn
            messages = list(self.body["messages"])
            # Claude Code may add a reminder of its own after the results ("The user hasn't
            # heard from you in a while"), as a system message: the results are before it.
            while messages and messages[-1].get("role") == "system":
                messages.pop()
            last = messages[-1] if messages else {}
            for block in last.get("content") or [] if last.get("role") == "user" else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    results.append(
                        ToolResult(
                            str(block.get("tool_use_id")),
                            _text_of(block.get("content")),
                            bool(block.get("is_error", False)),
                        )
                    )
        else:  # Responses API: the function_call_output items after the last function_call
            items = self.body.get("input") or []
            calls = [i for i, item in enumerate(items) if item.get("type") == "function_call"]
            for item in items[calls[-1] + 1 if calls else 0 :]:
                if item.get("type") == "function_call_output":
                    results.append(
                        ToolResult(str(item.get("call_id")), _text_of(item.get("output")), None)
                    )
        return results


@dataclass
class ScriptedModel:
    """The script, and every request the server answered."""

    script: list[Turn]
    requests: list[Request] = field(default_factory=list)
    overruns: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def turns(self) -> list[Request]:
        """The conversation's requests, in order: the n-th was answered with the n-th turn."""
        return [r for r in self.requests if r.turn is not None]

    def reply_to(self, index: int) -> Request:
        """The conversation request that followed turn ``index``: it carries that turn's
        results (a tool's output, as the client gives it to the model)."""
        turns = self.turns
        if len(turns) <= index + 1:
            raise AssertionError(
                f"the client sent {len(turns)} conversation request(s), none after turn {index} "
                f"({self.script[index]!r}); requests: {[r.path for r in self.requests]}"
            )
        return turns[index + 1]

    def result_of(self, index: int) -> ToolResult:
        """The one tool result that answered turn ``index``."""
        results = self.reply_to(index).tool_results()
        assert len(results) == 1, results
        return results[0]

    def take(self, path: str, body: dict[str, Any], conversation: bool) -> tuple[Request, int]:
        with self._lock:
            request = Request(path, body)
            self.requests.append(request)
            if conversation:
                taken = sum(1 for r in self.requests if r.turn is not None)
                if taken < len(self.script):
                    request.turn = self.script[taken]
                else:
                    self.overruns += 1
            return request, next(self._ids)


# --- the wire APIs ---------------------------------------------------------------------------


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _reply_text(turn: Turn | None) -> str:
    return turn.text if isinstance(turn, Say) else SIDE_REPLY


def anthropic_stream(request: Request, n: int) -> list[bytes]:
    """The Messages API's events answering ``request``."""
    turn = request.turn
    message = {
        "id": f"msg_scripted_{n}",
        "type": "message",
        "role": "assistant",
        "model": request.body.get("model", "scripted"),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    block: dict[str, Any]
    if isinstance(turn, Call):
        block = {"type": "tool_use", "id": f"toolu_scripted_{n}", "name": turn.name, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(turn.input)}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": _reply_text(turn)}
        stop = "end_turn"
    return [
        _sse("message_start", {"type": "message_start", "message": message}),
        _sse(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": block},
        ),
        _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        ),
        _sse("message_stop", {"type": "message_stop"}),
    ]


def anthropic_message(request: Request, n: int) -> dict[str, Any]:
    """A whole message, for a request that does not stream (only side requests do)."""
    return {
        "id": f"msg_scripted_{n}",
        "type": "message",
        "role": "assistant",
        "model": request.body.get("model", "scripted"),
        "content": [{"type": "text", "text": _reply_text(request.turn)}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }


def responses_stream(request: Request, n: int) -> list[bytes]:
    """The Responses API's events answering ``request``."""
    response: dict[str, Any] = {"id": f"resp_scripted_{n}", "object": "response"}
    turn = request.turn
    item: dict[str, Any]
    if isinstance(turn, Call):
        namespace, name = request.offered.get(turn.name, (None, turn.name))
        item = {
            "type": "function_call",
            "id": f"fc_scripted_{n}",
            "call_id": f"call_scripted_{n}",
            "name": name,
            "arguments": json.dumps(turn.input),
            "status": "completed",
        }
        if namespace is not None:
            item["namespace"] = namespace
    else:
        item = {
            "type": "message",
            "id": f"msg_scripted_{n}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": _reply_text(turn), "annotations": []}],
        }
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    done = {**response, "status": "completed", "output": [item], "usage": usage}
    return [
        _sse(
            "response.created",
            {"type": "response.created", "response": {**response, "status": "in_progress"}},
        ),
        _sse(
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        ),
        _sse("response.completed", {"type": "response.completed", "response": done}),
    ]


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the requests are kept, not printed

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else {}
        return body if isinstance(body, dict) else {"_": body}

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, events: list[bytes]) -> None:
        # No length: the stream ends when the connection closes, as SSE allows.
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for event in events:
            self.wfile.write(event)
        self.wfile.flush()
        self.close_connection = True

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        self.server.model.take(f"GET {path}", {}, conversation=False)
        self._json(404, {"error": {"type": "not_found_error", "message": path}})

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        body = self._body()
        model = self.server.model
        if path.endswith("/messages/count_tokens"):
            model.take(path, body, conversation=False)
            self._json(200, {"input_tokens": 10})
        elif path.endswith("/messages"):
            # The conversation's requests offer the model tools; a side request offers none.
            request, n = model.take(path, body, conversation=bool(body.get("tools")))
            if body.get("stream"):
                self._stream(anthropic_stream(request, n))
            else:
                self._json(200, anthropic_message(request, n))
        elif path.endswith("/responses"):
            request, n = model.take(path, body, conversation=bool(body.get("tools")))
            self._stream(responses_stream(request, n))
        else:
            model.take(f"POST {path}", body, conversation=False)
            self._json(404, {"error": {"type": "not_found_error", "message": path}})


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, model: ScriptedModel) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.model = model


class ModelServer:
    """The scripted model served on 127.0.0.1, on a free port, until :meth:`close`."""

    def __init__(self, script: Sequence[Turn]) -> None:
        self.model = ScriptedModel(list(script))
        self._server = _Server(self.model)
        host, port = self._server.server_address[:2]
        self.url = f"http://{host!s}:{port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
