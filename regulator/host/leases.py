"""Leases: a unit's claim on its worktree, with an expiry (docs/design.md#leases-and-worktrees).

A lease names the unit, its owner (``user@host``), the resource (the absolute worktree path) and
the branch, with epoch-millisecond times. It is live while ``expiresAt > now``. A holder that
stops renewing loses the claim, so a dead loop cannot hold a worktree for ever: another unit may
reclaim the resource once the lease has expired.

Every check-then-write (acquire, heartbeat) runs under an exclusive lock on the leases
directory, so two processes acquiring the same resource at once cannot both succeed.
"""

from __future__ import annotations

from datetime import UTC, datetime

from regulator.host.instance import default_actor
from regulator.protocol.clock import Clock, epoch_ms, iso, system_clock
from regulator.protocol.entry import load_record, record_to_pretty_json
from regulator.protocol.errors import HostFailure
from regulator.protocol.execution import Lease
from regulator.store import (
    CorruptRecord,
    Layout,
    RecordNotFound,
    StoreError,
    list_dir,
    locked_directory,
    read_bytes,
    remove_file,
    write_bytes_atomic,
)

DEFAULT_LEASE_TTL_MS = 10 * 60 * 1000


class LeaseError(HostFailure):
    """A lease that cannot be taken, renewed or given back now (held by another unit, expired,
    gone): the machine's shared state, not the request; nothing was written, later may
    succeed."""


class LeaseHeld(LeaseError):
    """Another unit (or, for a start, this one) holds a live lease on the resource."""

    def __init__(self, holder: Lease) -> None:
        until = iso(datetime.fromtimestamp(holder.expires_at / 1000, UTC))
        super().__init__(
            f'{holder.resource} is leased by unit "{holder.unit_id}" '
            f"(owner {holder.owner}) until {until}"
        )
        self.holder = holder


def _ms(moment: int) -> str:
    return iso(datetime.fromtimestamp(moment / 1000, UTC))


class LeaseStore:
    """``.regulator/leases/<unitId>.json``, one lease per unit."""

    def __init__(self, layout: Layout, clock: Clock = system_clock) -> None:
        self.layout = layout
        self.clock = clock

    def now_ms(self) -> int:
        return epoch_ms(self.clock())

    def is_live(self, lease: Lease) -> bool:
        return lease.is_live(self.now_ms())

    def lease(self, unit_id: str) -> Lease | None:
        """The unit's lease, live or expired; ``None`` when it holds none."""
        path = self.layout.lease(unit_id)
        try:
            raw = read_bytes(path)
        except RecordNotFound:
            return None
        try:
            return load_record(Lease, raw, label=self.layout.label(path))
        except ValueError as exc:
            raise CorruptRecord(str(exc), path) from None

    def leases(self) -> list[Lease]:
        """Every lease that reads, sorted by unit id. A bad file is ``doctor``'s to report."""
        found: list[Lease] = []
        for name in list_dir(self.layout.leases_dir, kind="file"):
            if not name.endswith(".json"):
                continue
            try:
                lease = self.lease(name[: -len(".json")])
            except (StoreError, OSError):
                continue
            if lease is not None:
                found.append(lease)
        return found

    def acquire(
        self,
        unit_id: str,
        *,
        resource: str,
        branch: str,
        owner: str | None = None,
        ttl_ms: int = DEFAULT_LEASE_TTL_MS,
        renew: bool = True,
    ) -> Lease:
        """Claim ``resource`` for ``unit_id``.

        Refused (:class:`LeaseHeld`) while another unit holds a live lease on the same
        resource; an expired one is simply outlived. The same unit acquiring again renews: a
        still-live lease keeps its ``acquiredAt``, an expired one starts afresh. With
        ``renew=False`` the unit's own live lease is refused too (a start is a claim).
        """
        _check_ttl(ttl_ms)
        path = self.layout.lease(unit_id)  # checks the unit id before anything is locked
        with locked_directory(self.layout.leases_dir):
            now = self.now_ms()
            own: Lease | None = None
            for other in self.leases():
                if other.unit_id == unit_id:
                    own = other
                    if not renew and other.is_live(now):
                        raise LeaseHeld(other)
                elif other.resource == resource and other.is_live(now):
                    raise LeaseHeld(other)
            acquired = own.acquired_at if own is not None and own.is_live(now) else now
            lease = Lease(
                unit_id=unit_id,
                owner=owner or default_actor(),
                resource=resource,
                branch=branch,
                acquired_at=acquired,
                heartbeat_at=now,
                expires_at=now + ttl_ms,
            )
            write_bytes_atomic(path, record_to_pretty_json(lease))
        return lease

    def heartbeat(self, unit_id: str, ttl_ms: int = DEFAULT_LEASE_TTL_MS) -> Lease:
        """Renew a live lease. An expired one cannot be brought back: acquire it again."""
        _check_ttl(ttl_ms)
        path = self.layout.lease(unit_id)
        with locked_directory(self.layout.leases_dir):
            lease = self.lease(unit_id)
            if lease is None:
                raise LeaseError(f'no lease for unit "{unit_id}"')
            now = self.now_ms()
            if not lease.is_live(now):
                raise LeaseError(
                    f'the lease of unit "{unit_id}" expired at {_ms(lease.expires_at)}; '
                    "acquire it again"
                )
            renewed = lease.replace(**{"heartbeat_at": now, "expires_at": now + ttl_ms})
            write_bytes_atomic(path, record_to_pretty_json(renewed))
        return renewed

    def release(self, unit_id: str) -> bool:
        """Drop the unit's lease; ``False`` if it held none."""
        path = self.layout.lease(unit_id)
        if not self.layout.leases_dir.is_dir():
            return False  # nothing to release, and no directory to make for it
        with locked_directory(self.layout.leases_dir):
            return remove_file(path)


def _check_ttl(ttl_ms: int) -> None:
    if isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int) or ttl_ms < 1:
        raise LeaseError(f"a lease's time to live must be a positive number of ms, not {ttl_ms!r}")
