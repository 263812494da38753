"""``regulator hook claude-code``: Claude Code's hooks answered by regulator.

``SessionStart`` and ``SessionEnd`` open and settle the session unit of an agent a person runs
by hand (keyed by Claude Code's ``session_id``). ``PreToolUse`` gives the agent's own tools the
verdict the definition's ``agents.yaml`` asks for: a read-only tool is allowed; a tool whose
declared effect needs consent becomes a consent question in the control room when someone is
there (yes → ``allow``, no → ``deny`` with the person's note as the reason); nobody there →
what the definition says (by default ``ask``: Claude Code's own prompt takes over). A hook
that fails must fail closed, so every error of ours becomes ``ask``, never a crash (a crashed
hook lets the call through).
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


def pre_tool_reply(decision: str, reason: str) -> dict[str, Any]:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": reason,
        }
    }


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
            end_session_unit(layout, unit.unit_id, clock=clock)
        return {}
    if event == "PreToolUse":
        runs_under = _session_definition(layout, definition, registered, key)
        return _pre_tool_use(payload, layout, definition, runs_under, env, key, cwd, clock)
    if event == "PostToolUse":  # S2's thrash detector counts the agent's own writes
        from regulator.host.thrash import post_tool_use

        return post_tool_use(payload, layout, definition, env=env, key=key, cwd=cwd, clock=clock)
    return {}


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
) -> dict[str, Any]:
    tool = str(payload.get("tool_name") or "")
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
    if verdict.effect is None or verdict.action is None:
        return {}  # no declared effect: the agent's own permission rules decide
    from regulator.host.presence import present
    from regulator.host.reach import reachable

    if not present(layout, clock) and not reachable(
        layout, runs_under.interaction, "consent", clock
    ):
        reason = "regulator: nobody is in the control room to ask"
        if verdict.governs or verdict.person_act:  # built in: never allowed unasked
            reason = f"{reason}; this call {visible(verdict.effect or '')}"
            return pre_tool_reply("deny" if rules.nobody_present == "deny" else "ask", reason)
        return pre_tool_reply(rules.nobody_present, reason)
    from regulator.host.agent_session import find_session
    from regulator.host.tools import ToolRefused

    session = find_session(layout, definition, agent=AGENT, env=env, key=key)
    session.cwd = cwd
    tools = session.tools()
    paused = tools.paused
    if paused is not None:
        return pre_tool_reply("ask", f"regulator: this session is paused ({paused}); decide here")
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
        return pre_tool_reply("ask", f"regulator: {exc}")
    note = f" — {result['note']}" if result.get("note") else ""
    if result.get("answered"):
        by = result.get("by", "a person")
        if result.get("disposition") == "accepted":
            return pre_tool_reply("allow", f"regulator: {by} consented{note}")
        return pre_tool_reply("deny", f"regulator: {by} refused consent{note}")
    # Silence is never consent: the question stays owed, and the terminal decides for now.
    return pre_tool_reply("ask", f"regulator: {result.get('message', 'no answer')}")
