"""The environment variables through which regulator tells an agent's processes where they run.

Kept apart from the session machinery that sets them, so that a process that only reads one
(``regulator hook``, on every tool call an agent makes) need not import that machinery.
"""

from __future__ import annotations

#: The instance an agent's session belongs to: its commands use it instead of looking upward.
INSTANCE_ENV = "REGULATOR_INSTANCE"
#: The unit the loop started the agent for (``unit drive``).
UNIT_ENV = "REGULATOR_UNIT"
#: That unit's attempt.
ATTEMPT_ENV = "REGULATOR_ATTEMPT"
#: The key of an agent's session unit (``regulator session start``, ``ask``, ``tool``, ``mcp``).
SESSION_ENV = "REGULATOR_SESSION"
#: Set (to 1) by Claude Code in the environment of the commands it runs.
CLAUDE_CODE_ENV = "CLAUDECODE"
#: Set by Codex CLI (0.171) in the environment of the commands it runs and of its MCP servers.
#: Its shell commands run in a sandbox with a pid namespace of their own, where no process of
#: Codex's is an ancestor: these say who runs them.
CODEX_THREAD_ENV = "CODEX_THREAD_ID"
CODEX_SESSION_ENV = "CODEX_SESSION_ID"
