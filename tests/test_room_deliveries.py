"""The room shows, per obligation, where it was sent to people's channels and what failed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from regulator.host.channels import ChannelDelivery, deliveries_path
from regulator.store import Layout
from tui.widgets.detail import ObligationDetail

from .room_fixture import app_for
from .test_room import built, demo, question, select

__all__ = ["built", "demo"]  # fixtures, used by name


def record(oid: str, n: int, channel: str, outcome: str, error: str | None = None) -> bytes:
    line = ChannelDelivery(
        at=f"2026-12-01T10:0{n}:00.000Z",
        key=f"channel:{oid}:{n}:alice:{channel}",
        obligation_id=oid,
        delivery=n,
        reminder=n > 1,
        person="alice",
        channel=channel,
        type=channel,
        target=f"{channel}://127.0.0.1/alice",
        outcome=outcome,
        error=error,
    ).to_json()
    return orjson.dumps(line) + b"\n"


async def test_the_detail_shows_each_channel_delivery_and_a_failure(demo: Path) -> None:
    app = app_for(demo)
    async with app.run_test(size=(160, 48)) as pilot:
        o: Any = await select(app, pilot, question("consent"))
        path = deliveries_path(Layout(demo))
        path.write_bytes(
            record(o.id, 1, "email", "sent")
            + record(o.id, 2, "ntfy", "failed", "connection refused \x1b[2K")
        )
        detail = app.screen.query_one(ObligationDetail)
        detail.version += 1
        await pilot.pause(0.2)
        shown = str(detail.render())
        assert "sent to people's channels" in shown
        assert "sent · delivery 1 to alice via email" in shown
        assert "failed · reminder 2 to alice via ntfy" in shown
        assert "connection refused \\x1b[2K" in shown  # record text stays inert
