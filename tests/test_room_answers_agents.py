"""A person in the room answers a real MCP agent's question while the agent waits."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from regulator.rules.regulatory_log import RegulatoryLog
from regulator.store import Layout
from tui.app import RoomApp
from tui.dialogs.answer import AnswerDialog

from .test_mcp_server import drive_agent, project

__all__ = ["project"]  # a fixture, used by name

CONSENT = {
    "kind": "consent",
    "subject": "clean up",
    "question": "May I delete the old release branches?",
    "action": "git push origin --delete release/1.0 release/1.1 release/1.2",
}


async def until(pilot: Any, condition: Any, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await pilot.pause(0.05)


async def answer_in_room(project: Path, keys: list[str], note: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    agent = threading.Thread(
        target=lambda: seen.update(
            drive_agent(project, "r1", [{"tool": "ask_human", "arguments": CONSENT}])
        )
    )
    app = RoomApp([project], person="alice", bell=False)  # watching and presence on
    async with app.run_test(size=(160, 48)) as pilot:
        agent.start()
        log = RegulatoryLog(Layout(project))

        def asked() -> bool:
            log.refresh()
            return any(o.concern == "interaction" for o in log.open_obligations())

        await until(pilot, asked)
        await pilot.pause(0.5)  # the room's watcher sees the append
        await pilot.press("w", "a")  # to the waiting question, and answer it
        await until(pilot, lambda: isinstance(app.screen, AnswerDialog))
        await pilot.press(*note)
        await pilot.press(*keys)
        await until(pilot, lambda: not agent.is_alive(), 120)
    agent.join()
    return seen


async def test_a_yes_typed_in_the_room_reaches_the_agent_with_its_note(project: Path) -> None:
    seen = await answer_in_room(project, ["ctrl+y"], "only the two oldest")
    result = seen["calls"][0]["structured"]
    assert (result["answered"], result["disposition"], result["by"]) == (True, "accepted", "alice")
    assert result["note"] == "only the two oldest"
    assert seen["outcome"].attempt.outcome != "paused"


async def test_a_no_given_in_the_room_tells_the_agent_not_to_act(project: Path) -> None:
    seen = await answer_in_room(project, ["ctrl+n"], "not before the release")
    result = seen["calls"][0]["structured"]
    assert result["disposition"] == "rejected"
    assert "do NOT perform the action" in result["message"]
    assert "not before the release" in result["message"]
