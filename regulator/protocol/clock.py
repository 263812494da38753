"""Time as the stores write it: ISO-8601 UTC with milliseconds and ``Z``.

Every function that stamps a record takes a ``Clock`` so that tests, benchmarks and the demo
can inject time; the default reads the system clock.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    """``2026-12-01T05:34:29.123Z``: the original's timestamp format."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def now_iso(clock: Clock = system_clock) -> str:
    return iso(clock())


def parse_iso(text: str) -> datetime:
    """Parse a stored timestamp (``Z`` or an offset); naive times are taken as UTC."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def epoch_ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)
