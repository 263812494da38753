"""A person's act is never run from inside an agent's session.

An agent regulator supervises runs as the same OS user as the person, so it can type
``regulator answer <id> --by carol --answer yes`` as well as carol can: the policy's people
and their ``osUsers`` cannot tell the two apart. What can is where the command runs. A person's
act (an answer, ``obligation ack|resolve|escalate``, ``identity``, ``unit
replan|remediate|accept``, a memory decision, any act in the control room) is refused, before
anything is written, when the process that would perform it is inside an agent's session:

- its environment is an agent session's: ``REGULATOR_UNIT`` or ``REGULATOR_ATTEMPT`` (set by
  the loop for the agent it starts), ``REGULATOR_SESSION`` (the key of an agent's session unit),
  ``CLAUDECODE`` (set by Claude Code for every command it runs), ``CODEX_THREAD_ID`` or
  ``CODEX_SESSION_ID`` (set by Codex for every command it runs, in a sandbox whose own pid
  namespace hides Codex from the process tree);
- it descends from an agent process this instance registered (``agent_process``): the agent
  cannot shed its ancestry by unsetting the variables;
- it descends from an agent's executable regulator knows (``claude``, ``codex``), registered
  or not.

The first found is said, in one line naming what was found. The person answers from the
control room or from a terminal of their own, which is none of these.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from regulator.host.agent_process import known_agent_ancestor, registered_ancestor
from regulator.host.environment import (
    ATTEMPT_ENV,
    CLAUDE_CODE_ENV,
    CODEX_SESSION_ENV,
    CODEX_THREAD_ENV,
    SESSION_ENV,
    UNIT_ENV,
)
from regulator.protocol.errors import Refused
from regulator.protocol.text import visible
from regulator.store import Layout

#: What the CLI tells the person to do instead.
FROM_CLI = "act from the control room or from a terminal of your own"
#: What the control room tells the person to do instead.
FROM_ROOM = "act from a room started in a terminal of your own"

# The variables that say a process runs in an agent's session, and what each says.
_ENV_MARKERS = (
    (UNIT_ENV, "its environment names the unit an agent runs for"),
    (ATTEMPT_ENV, "its environment names an agent's attempt"),
    (SESSION_ENV, "its environment names an agent's session"),
    (CLAUDE_CODE_ENV, "its environment says Claude Code runs it"),
    (CODEX_THREAD_ENV, "its environment says Codex runs it"),
    (CODEX_SESSION_ENV, "its environment says Codex runs it"),
)
#: Every variable that says so.
ENV_MARKERS = frozenset(name for name, _ in _ENV_MARKERS)
_SHOWN = 60  # characters of a variable's value shown in the reason


class InsideAgent(Refused):
    """A person's act run from inside an agent's session: refused, nothing was written."""


def _shown(value: str) -> str:
    return value if len(value) <= _SHOWN else value[: _SHOWN - 1] + "…"


def inside_agent(
    layouts: Iterable[Layout] = (),
    *,
    env: Mapping[str, str] | None = None,
    pid: int | None = None,
) -> str | None:
    """Why process ``pid`` (default: this one) runs inside an agent's session, in one line;
    ``None`` when it does not. ``layouts``: the instances whose registered agents count."""
    environ = os.environ if env is None else env
    for layout in layouts:
        found = registered_ancestor(layout, pid)
        if found is not None:
            return visible(
                f"this process descends from agent process {found.pid} "
                f"({found.agent}, unit {found.unit_id})"
            )
    for name, meaning in _ENV_MARKERS:
        # Set at all, even empty: a person's terminal has none of them.
        if name in environ:
            return visible(f"{meaning} ({name}={_shown(environ[name])})")
    known = known_agent_ancestor(pid)
    if known is not None:
        agent_pid, name = known
        return visible(f"this process descends from agent process {agent_pid} ({name})")
    return None


def refusal(why: str, instead: str = FROM_CLI) -> str:
    """The one line a refused person's act says."""
    return f"a person's act is refused here: {why}; {instead}"


def refuse_inside_agent(
    layouts: Iterable[Layout] = (),
    *,
    env: Mapping[str, str] | None = None,
    instead: str = FROM_CLI,
) -> None:
    """Raise :class:`InsideAgent` when this process runs inside an agent's session."""
    why = inside_agent(layouts, env=env)
    if why is not None:
        raise InsideAgent(refusal(why, instead))
