"""The wall clocks of the shell: the worker's default clock (the machines' `now`, hence every
condition's and window's time) and the Lease clock read UTC wall time, to the microsecond.
freezegun pins the wall clock here; the monotonic clocks are tested by injection elsewhere."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from freezegun import freeze_time

from controller.ops.clocks import SystemClock
from controller.spoke.worker import utc_now

FROZEN = datetime(2026, 11, 24, 3, 0, 0, 123456, tzinfo=UTC)
# freezegun reads every loaded module's attributes; the kubernetes client's lazy ones would
# build its models while `datetime` is faked.
IGNORE = ["kubernetes"]


def test_the_worker_clock_is_utc_wall_time_with_microseconds() -> None:
    """The machines see UTC to the microsecond (a dampening window stored on the CR keeps
    them, so a restored one ends on time)."""
    with freeze_time(FROZEN, ignore=IGNORE):
        now = utc_now()
    assert now == FROZEN
    assert now.utcoffset() == timedelta(0)


def test_the_io_clock_is_utc_wall_time() -> None:
    """Other replicas compare a Lease's renewTime with their own clock: it must be UTC."""
    with freeze_time(FROZEN, ignore=IGNORE):
        now = SystemClock().now()
    assert now == FROZEN
    assert now.utcoffset() == timedelta(0)
