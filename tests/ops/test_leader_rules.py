"""The Lease rules of leader election, without threads or servers: expiry, who may acquire,
transitions, release, MicroTime instants."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from controller.ops.leader import (
    LeaseRecord,
    lease_expired,
    lease_spec,
    may_acquire,
    micro_time,
    next_record,
    released_record,
)

NOW = datetime(2025, 3, 1, 12, 0, 0, 250_000, tzinfo=UTC)


# --- the Lease ----------------------------------------------------------------------------


def record(
    holder: str | None, *, renewed: float = 0.0, duration: int | None = 15, transitions: int = 0
) -> LeaseRecord:
    renew = NOW + timedelta(seconds=renewed)
    return LeaseRecord(holder, duration, NOW - timedelta(minutes=5), renew, transitions)


@pytest.mark.parametrize(
    ("lease", "expired"),
    [
        pytest.param(record("a", renewed=-10), False, id="renewed-recently"),
        pytest.param(record("a", renewed=-15), False, id="exactly-at-expiry-still-held"),
        pytest.param(record("a", renewed=-15.001), True, id="past-expiry"),
        pytest.param(record(None), True, id="released"),
        pytest.param(record(""), True, id="empty-holder"),
        pytest.param(LeaseRecord("a", 15, None, None), True, id="never-renewed"),
        pytest.param(record("a", duration=None), True, id="no-duration"),
    ],
)
def test_lease_expiry(lease: LeaseRecord, expired: bool) -> None:
    assert lease_expired(lease, NOW) is expired


def test_only_the_holder_may_take_a_live_lease() -> None:
    live = record("a", renewed=-1)
    assert may_acquire(live, "a", NOW)
    assert not may_acquire(live, "b", NOW)
    assert may_acquire(record("a", renewed=-20), "b", NOW)


def test_renewal_keeps_acquire_time_and_transitions() -> None:
    mine = record("a", renewed=-1, transitions=3)
    renewed = next_record(mine, identity="a", now=NOW, duration_seconds=15)
    assert renewed == LeaseRecord("a", 15, mine.acquire_time, NOW, 3)


def test_a_take_over_counts_one_transition() -> None:
    taken = next_record(
        record("a", renewed=-20, transitions=3), identity="b", now=NOW, duration_seconds=15
    )
    assert taken == LeaseRecord("b", 15, NOW, NOW, 4)
    assert next_record(None, identity="b", now=NOW, duration_seconds=15).transitions == 0


def test_release_frees_the_lease_at_once() -> None:
    released = released_record(record("a", renewed=-1, transitions=2), NOW)
    assert released == LeaseRecord(None, 1, NOW, NOW, 2)
    assert may_acquire(released, "b", NOW)


def test_lease_instants_always_carry_microseconds() -> None:
    whole = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)
    assert micro_time(whole) == "2025-03-01T12:00:00.000000Z"
    assert micro_time(NOW) == "2025-03-01T12:00:00.250000Z"


def test_a_lease_spec_reads_back_as_the_record_it_was_written_from() -> None:
    written = record("a", renewed=-1, transitions=2)
    assert LeaseRecord.from_spec(lease_spec(written)) == written
