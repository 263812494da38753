"""Test code that runs as an agent's process: the record, not a variable, says for which unit.

regulator learns which unit and attempt a call acts for from the agent process it registered
(``regulator.host.agent_process``), looked up among the caller's ancestors. A test that plays a
hook or a tool call of a unit's agent registers the test process's parent, so that the test
process and everything it starts descend from a registered agent, as a real agent's would.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from regulator.host.agent_process import register, unregister
from regulator.store import Layout


@contextmanager
def as_agent_of(
    root: Path, unit_id: str, attempt: int | None = None, *, by: str = "loop"
) -> Iterator[int]:
    """Inside the block, this process (and what it starts) runs for ``unit_id``'s agent."""
    layout = Layout(root)
    pid = os.getppid()
    register(layout, unit_id, pid, agent="test", by=by, attempt=attempt)
    try:
        yield pid
    finally:
        unregister(layout, pid)
