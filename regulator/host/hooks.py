"""``regulator hook claude-code``: Claude Code's hooks answered by regulator.

``SessionStart`` and ``SessionEnd`` open and settle the session unit of an agent a person runs
by hand (keyed by Claude Code's ``session_id``). ``PreToolUse`` gives the agent's own tools the
verdict the definition's ``agents.yaml`` asks for: a read-only tool is allowed; while the
session's attempt is paused every other tool is refused (``deny``); a tool whose declared
effect needs consent becomes a consent question in the control room when someone is there (yes
→ ``allow``, with the person's note in ``additionalContext``, the one field of an ``allow`` the
model reads; no → ``deny`` with the note as the reason, which the model reads); nobody there →
what the definition says (by default ``ask``: Claude Code's own prompt takes over). The same
hook counts the agent's own writes for the thrash detector (:mod:`regulator.host.thrash`) and
tells the model, in ``additionalContext``, when a file is past the oscillation threshold.
Regulator's own MCP tools are left to their own gate. A hook that fails must fail closed, so
every error of ours becomes ``ask``, never a crash (a crashed hook lets the call through).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from regulator.host.agent_process import Registration, registered_ancestor
from regulator.host.environment import UNIT_ENV
from regulator.host.session_definition import latest_session_unit, session_definition
from regulator.policy import Definition
from regulator.policy.agent_effects import AgentRules, classify, load_agent_effects
from regulator.policy.agent_guard import GuardedPlaces
from regulator.protocol.clock import Clock, system_clock
from regulator.protocol.text import visible
from regulator.store import Layout

AGENT = "claude-code"


#: The prefix of regulator's own MCP tools, as Claude Code names them: their own gate (the
#: session tools' pause and budget) holds for them, and the hook never decides them.
OWN_TOOLS = "mcp__regulator__"


def pre_tool_reply(decision: str | None, reason: str, context: str = "") -> dict[str, Any]:
    """A ``PreToolUse`` reply. Claude Code shows ``permissionDecisionReason`` to the model for a
    ``deny`` only (to the person for ``allow`` and ``ask``); ``additionalContext`` reaches the
    model whatever the decision, so what the model must read of an ``allow`` goes there."""
    output: dict[str, Any] = {"hookEventName": "PreToolUse"}
    if decision is not None:
        output["permissionDecision"] = decision
        output["permissionDecisionReason"] = reason
    if context:
        output["additionalContext"] = context
    return {"hookSpecificOutput": output} if len(output) > 1 else {}


def _key(payload: Mapping[str, Any]) -> str | None:
    session_id = payload.get("session_id")
    return f"claude-{session_id}" if isinstance(session_id, str) and session_id else None


def claude_code(
    payload: Mapping[str, Any],
    layout: Layout,
    definition: Definition,
    *,
    env: Mapping[str, str] | None = None,
    clock: Clock = system_clock,
) -> dict[str, Any]:
    """The reply to one hook event (the JSON Claude Code reads from the hook's stdout)."""
    env = os.environ if env is None else env
    event = payload.get("hook_event_name")
    key = _key(payload)
    cwd = Path(str(payload.get("cwd") or Path.cwd()))
    registered = registered_ancestor(layout)
    # `unit drive` started the agent: the loop owns its unit, and the hooks leave it alone.
    driven = (registered is not None and registered.by == "loop") or bool(env.get(UNIT_ENV))
    # The session machinery (units, tools, presence, the regulatory log) is imported by the
    # branch that uses it: a read-only tool call, most of an agent's, is answered without it.
    if event == "SessionStart":
        if driven or key is None:
            return {}
        from regulator.host.agent_process import agent_pid, register
        from regulator.host.session_units import session_grants, start_session_unit
        from regulator.host.tool_catalog import guidance

        made = start_session_unit(layout, definition, key, agent=AGENT, cwd=cwd, clock=clock)
        register(layout, made.unit_id, agent_pid(), agent=AGENT, by="hook")
        tools = guidance(session_grants(definition), lambda name: f"mcp__regulator__{name}")
        return {
            "hookSpecificOutput": {
                "hookEventName": "SessionStart",
                "additionalContext": (
                    f"This session runs under regulator as unit {made.unit_id}, through the "
                    f"regulator MCP server's tools. {tools}"
                ).strip(),
            }
        }
    if event == "SessionEnd":
        if driven or key is None:
            return {}
        from regulator.host.agent_process import agent_pid, unregister
        from regulator.host.session_units import current_unit, end_session_unit

        unregister(layout, agent_pid())
        unit = current_unit(layout, key, clock)
        if unit is not None:
            # The session's last writes are settled before it is: nothing follows to settle them.
            # A count that cannot be made must not keep the session from being settled (the
            # error is still reported, by the command, after the session is).
            try:
                _settle_writes(layout, definition, (unit.unit_id, 1), clock, final=True)
            finally:
                end_session_unit(layout, unit.unit_id, clock=clock)
        return {}
    if event == "PreToolUse":
        runs_under = _session_definition(layout, definition, registered, key)
        return _pre_tool_use(
            payload, layout, definition, runs_under, env, key, cwd, clock, registered
        )
    # `PostToolUse` (an install older than the count from PreToolUse) and the rest: nothing.
    return {}


def _sessions(
    layout: Layout, registered: Registration | None, key: str | None
) -> list[tuple[str, int]]:
    """The unit and attempt a call acts for, as regulator's records say, found without the
    session machinery: the agent process regulator registered, and the newest session unit of
    the hook's session key. Both when they disagree: a check that must hold for the session
    (its pause) then holds for either."""
    found: list[tuple[str, int]] = []
    if registered is not None:
        found.append((registered.unit_id, registered.attempt or 1))
    latest = latest_session_unit(layout, key) if key is not None else None
    if latest is not None and (latest, 1) not in found:
        found.append((latest, 1))
    return found


def _paused(layout: Layout, sessions: list[tuple[str, int]]) -> str | None:
    """Why the session's attempt is paused (the pause gate's own reading of the log), or None."""
    if not sessions:
        return None
    from regulator.rules.pause import attempt_questions

    for unit_id, attempt in sessions:
        paused = attempt_questions(layout.signals, unit_id, attempt).paused
        if paused is not None:
            return paused
    return None


def _settle_writes(
    layout: Layout,
    definition: Definition,
    session: tuple[str, int],
    clock: Clock,
    *,
    final: bool = False,
    expected: tuple[str, Path] | None = None,
    cwd: Path | None = None,
) -> str:
    """Settle the writes the hook let through for ``session`` (and record ``expected``, the
    tool and the file of a write about to be let through); what the model must be told of a
    signal this wrote ("" when none). A session unit's signal is routed at once."""
    from regulator.host.thrash import Expected, ThrashDetector, relative_to_unit, route_now

    unit_id, attempt = session
    detector = ThrashDetector(layout, definition, clock=clock)
    if expected is None:
        signals = detector.settle(unit_id, attempt, final=final)
    else:
        tool, file = expected
        worktree = layout.worktree(unit_id)
        name = relative_to_unit(
            str(file),
            worktree=worktree if worktree.is_dir() else None,
            root=layout.root,
            cwd=cwd or layout.root,
        )
        signals = detector.expect(unit_id, attempt, Expected.of(name, file, tool))
    if not signals:
        return ""
    route_now(layout, definition, unit_id, clock=clock)
    return " ".join(told.text() for told in detector.told)


def _session_definition(
    layout: Layout, definition: Definition, registered: Registration | None, key: str | None
) -> Definition:
    """The definition the agent's session started under (its snapshot), found without the
    session machinery: from the agent process regulator registered, else the hook's session
    key. A session regulator knows nothing of runs under the definition in force."""
    if registered is not None:
        unit_id, attempt = registered.unit_id, registered.attempt or 1
    elif key is not None and (latest := latest_session_unit(layout, key)) is not None:
        unit_id, attempt = latest, 1
    else:
        return definition
    return session_definition(layout, unit_id, attempt, definition)


def _subject(text: str, most: int = 200) -> str:
    """A question's subject names it in a list; the whole call is in its question and action."""
    return text if len(text) <= most else text[: most - 1] + "…"


def _pre_tool_use(
    payload: Mapping[str, Any],
    layout: Layout,
    definition: Definition,
    runs_under: Definition,
    env: Mapping[str, str],
    key: str | None,
    cwd: Path,
    clock: Clock,
    registered: Registration | None,
) -> dict[str, Any]:
    tool = str(payload.get("tool_name") or "")
    if tool.startswith(OWN_TOOLS):
        return {}  # regulator's own tools: their own gate decides, paused or not
    raw_input = payload.get("tool_input")
    tool_input: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
    # No rules for the agent still leaves the built-in guard (what governs it, a person's act).
    rules = load_agent_effects(runs_under).agents.get(AGENT) or AgentRules()

    def guard() -> GuardedPlaces:  # asks git: only for a call that may write
        from regulator.host.guarded_places import guarded_places

        # The definition in force, not the session's copy: its files govern the next session.
        return guarded_places(layout, definition, cwd, env)

    verdict = classify(rules, tool, tool_input, layout.root, cwd=cwd, guard=guard)
    if verdict.read_only:
        return pre_tool_reply("allow", f"regulator: {tool} only reads")
    # Every other tool has an effect, declared or not: the session's pause holds for all of them
    # (Claude Code's own Write under acceptEdits, another server's MCP tool, a subagent).
    sessions = _sessions(layout, registered, key)
    paused = _paused(layout, sessions)
    # The thrash detector: this call settles the session's earlier writes, and a write let
    # through is expected, to be settled by the next call.
    written = _written(tool, tool_input, cwd)
    told = ""
    if sessions:
        told = _settle_writes(layout, definition, sessions[0], clock, cwd=cwd)
    if paused is not None:
        return pre_tool_reply(
            "deny",
            f"regulator: this session is paused ({paused}). No tool with an effect runs until "
            "a person answers that question: only reads remain. Do not try another way to do "
            "this; stop here and say what you are waiting for. The person answers in the "
            "control room or with `regulator answer`.",
            told,
        )

    def let_through(reply: dict[str, Any]) -> dict[str, Any]:
        """``reply`` lets the call run (or leaves it to Claude Code): a write is expected."""
        context = told
        if written is not None and sessions:
            more = _settle_writes(layout, definition, sessions[0], clock, expected=written, cwd=cwd)
            context = f"{context} {more}".strip()
        if not context:
            return reply
        output = dict(reply.get("hookSpecificOutput") or {"hookEventName": "PreToolUse"})
        said = output.get("additionalContext")
        output["additionalContext"] = f"{said}\n\n{context}" if said else context
        return {"hookSpecificOutput": output}

    if verdict.effect is None or verdict.action is None:
        return let_through({})  # no declared effect: the agent's own permission rules decide
    from regulator.host.presence import present
    from regulator.host.reach import reachable

    if not present(layout, clock) and not reachable(
        layout, runs_under.interaction, "consent", clock
    ):
        reason = "regulator: nobody is in the control room to ask"
        if verdict.governs or verdict.person_act:  # built in: never allowed unasked
            reason = f"{reason}; this call {visible(verdict.effect or '')}"
            decision = "deny" if rules.nobody_present == "deny" else "ask"
            return let_through(pre_tool_reply(decision, reason, told))
        return let_through(pre_tool_reply(rules.nobody_present, reason, told))
    from regulator.host.agent_session import find_session
    from regulator.host.tools import ToolRefused

    session = find_session(layout, definition, agent=AGENT, env=env, key=key)
    session.cwd = cwd
    tools = session.tools()
    paused = tools.paused  # the gate's own word, for the unit the session machinery found
    if paused is not None:
        return pre_tool_reply("deny", f"regulator: this session is paused ({paused})", told)
    try:
        result = tools.call(
            "ask_human",
            {
                "kind": "consent",
                "subject": _subject(f"{tool} {verdict.effect}"),
                "question": f"The agent wants to run {visible(verdict.action)}. May it?",
                "action": verdict.action,
            },
            host_asked=True,
        )
    except ToolRefused as exc:  # the attention budget, most often: the terminal decides
        return let_through(pre_tool_reply("ask", f"regulator: {exc}", told))
    note = visible(str(result.get("note") or ""))
    by = visible(str(result.get("by", "a person")))
    if result.get("answered"):
        said = f" — {note}" if note else ""
        if result.get("disposition") == "accepted":
            # The reason of an allow is shown to the person, not the model: the model reads
            # the yes, and the note beside it, in additionalContext.
            context = f"regulator: {by} consented to {visible(verdict.action)}."
            if note:
                context += f" They said: {note}"
            reply = pre_tool_reply("allow", f"regulator: {by} consented{said}", context)
            return let_through(reply)
        return pre_tool_reply("deny", f"regulator: {by} refused consent{said}", told)
    # Silence is never consent: the question stays owed, and the terminal decides for now.
    message = visible(str(result.get("message", "no answer")))
    return let_through(pre_tool_reply("ask", f"regulator: {message}", told))


def _written(tool: str, tool_input: Mapping[str, Any], cwd: Path) -> tuple[str, Path] | None:
    """The file one of Claude Code's own writing tools is about to write (absolute)."""
    from regulator.host.thrash import WRITE_TOOLS, absolute

    field_name = WRITE_TOOLS.get(tool)
    target = tool_input.get(field_name) if field_name is not None else None
    if not isinstance(target, str) or not target:
        return None
    return tool, absolute(target, cwd)
