"""Leases: acquire, renew, reclaim, refuse, heartbeat and release, on an injected clock."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from regulator.host.leases import DEFAULT_LEASE_TTL_MS, LeaseError, LeaseHeld, LeaseStore
from regulator.protocol.clock import epoch_ms
from regulator.store import InvalidUnitId, Layout


class FakeClock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += timedelta(milliseconds=ms)


START = epoch_ms(datetime(2026, 12, 1, 10, 0, tzinfo=UTC))
RESOURCE = "/srv/project/.regulator/worktrees/u1"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    (tmp_path / ".regulator").mkdir()
    return Layout(tmp_path, env={})


@pytest.fixture
def leases(layout: Layout, clock: FakeClock) -> LeaseStore:
    return LeaseStore(layout, clock)


def test_an_acquired_lease_is_written_in_epoch_ms_and_lives_ten_minutes(
    leases: LeaseStore, layout: Layout, clock: FakeClock
) -> None:
    lease = leases.acquire("u1", resource=RESOURCE, branch="unit/u1", owner="alice@host")
    assert json.loads(layout.lease("u1").read_text()) == {
        "unitId": "u1",
        "owner": "alice@host",
        "resource": RESOURCE,
        "branch": "unit/u1",
        "acquiredAt": START,
        "heartbeatAt": START,
        "expiresAt": START + DEFAULT_LEASE_TTL_MS,
    }
    assert DEFAULT_LEASE_TTL_MS == 600_000
    assert leases.lease("u1") == lease
    assert leases.is_live(lease)
    clock.advance(DEFAULT_LEASE_TTL_MS)
    assert not leases.is_live(lease)  # live means expiresAt > now, strictly


def test_the_owner_defaults_to_user_at_host(leases: LeaseStore) -> None:
    lease = leases.acquire("u1", resource=RESOURCE, branch="unit/u1")
    assert "@" in lease.owner


def test_another_units_live_lease_on_the_resource_is_refused(
    leases: LeaseStore, layout: Layout
) -> None:
    leases.acquire("u1", resource=RESOURCE, branch="unit/u1", owner="alice@host")
    before = layout.lease("u1").read_bytes()
    with pytest.raises(LeaseHeld) as caught:
        leases.acquire("u2", resource=RESOURCE, branch="unit/u2", owner="bob@host")
    assert caught.value.holder.unit_id == "u1"
    assert str(caught.value) == (
        f'{RESOURCE} is leased by unit "u1" (owner alice@host) until 2026-12-01T10:10:00.000Z'
    )
    assert layout.lease("u1").read_bytes() == before
    assert leases.lease("u2") is None
    # Another resource is no conflict.
    leases.acquire("u2", resource=RESOURCE + "-other", branch="unit/u2")


def test_an_expired_lease_on_the_resource_is_reclaimed(
    leases: LeaseStore, clock: FakeClock
) -> None:
    leases.acquire("u1", resource=RESOURCE, branch="unit/u1", ttl_ms=1000)
    clock.advance(1000)
    lease = leases.acquire("u2", resource=RESOURCE, branch="unit/u2")
    assert lease.unit_id == "u2" and leases.is_live(lease)


def test_the_same_unit_acquiring_again_renews_its_lease(
    leases: LeaseStore, clock: FakeClock
) -> None:
    first = leases.acquire("u1", resource=RESOURCE, branch="unit/u1", ttl_ms=60_000)
    clock.advance(30_000)
    renewed = leases.acquire("u1", resource=RESOURCE, branch="unit/u1", ttl_ms=60_000)
    assert renewed.acquired_at == first.acquired_at
    assert renewed.heartbeat_at == START + 30_000
    assert renewed.expires_at == START + 90_000
    # Once expired, acquiring again starts a new claim.
    clock.advance(60_000)
    again = leases.acquire("u1", resource=RESOURCE, branch="unit/u1")
    assert again.acquired_at == START + 90_000


def test_a_claim_that_must_not_renew_refuses_the_units_own_live_lease(
    leases: LeaseStore, clock: FakeClock
) -> None:
    leases.acquire("u1", resource=RESOURCE, branch="unit/u1", ttl_ms=1000)
    with pytest.raises(LeaseHeld):
        leases.acquire("u1", resource=RESOURCE, branch="unit/u1", renew=False)
    clock.advance(1000)
    assert leases.acquire("u1", resource=RESOURCE, branch="unit/u1", renew=False).unit_id == "u1"


def test_a_heartbeat_renews_only_a_live_lease(leases: LeaseStore, clock: FakeClock) -> None:
    with pytest.raises(LeaseError, match='no lease for unit "u1"'):
        leases.heartbeat("u1")
    leases.acquire("u1", resource=RESOURCE, branch="unit/u1", ttl_ms=10_000)
    clock.advance(5_000)
    beat = leases.heartbeat("u1", ttl_ms=10_000)
    assert (beat.acquired_at, beat.heartbeat_at, beat.expires_at) == (
        START,
        START + 5_000,
        START + 15_000,
    )
    clock.advance(10_000)
    with pytest.raises(LeaseError, match=r"expired at 2026-12-01T10:00:15\.000Z; acquire it again"):
        leases.heartbeat("u1")
    lease = leases.lease("u1")
    assert lease is not None and lease.expires_at == START + 15_000  # unchanged


def test_release_removes_the_lease_and_says_whether_there_was_one(
    leases: LeaseStore, layout: Layout
) -> None:
    assert leases.release("u1") is False
    assert not layout.leases_dir.exists()  # releasing nothing makes nothing
    leases.acquire("u1", resource=RESOURCE, branch="unit/u1")
    assert leases.release("u1") is True
    assert leases.lease("u1") is None
    assert leases.release("u1") is False


def test_a_bad_ttl_and_a_bad_unit_id_are_refused(leases: LeaseStore, tmp_path: Path) -> None:
    with pytest.raises(LeaseError, match="positive"):
        leases.acquire("u1", resource=RESOURCE, branch="unit/u1", ttl_ms=0)
    with pytest.raises(InvalidUnitId):
        leases.acquire("../x", resource=RESOURCE, branch="unit/x")
    assert not (tmp_path / ".regulator" / "x.json").exists()


def test_leases_lists_every_lease_by_unit(leases: LeaseStore) -> None:
    leases.acquire("u2", resource=RESOURCE + "2", branch="unit/u2")
    leases.acquire("u1", resource=RESOURCE, branch="unit/u1")
    assert [lease.unit_id for lease in leases.leases()] == ["u1", "u2"]


def test_units_racing_for_one_resource_get_it_exactly_once(layout: Layout) -> None:
    winners: list[str] = []
    refused: list[str] = []
    start = threading.Barrier(8)

    def claim(unit_id: str) -> None:
        store = LeaseStore(layout)
        start.wait(timeout=10)
        try:
            store.acquire(unit_id, resource=RESOURCE, branch=f"unit/{unit_id}")
            winners.append(unit_id)
        except LeaseHeld:
            refused.append(unit_id)

    threads = [threading.Thread(target=claim, args=(f"u{i}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(winners) == 1 and len(refused) == 7
