"""What the leading hub side keeps on its Lease for `check hub` (controller.hub.lease_notes)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from controller.hub.lease_notes import LAST_RESYNC, RESYNC_SECONDS, last_resync, resync_notes

AT = datetime(2026, 11, 29, 0, 10, 5, tzinfo=UTC)


def test_a_resync_is_read_back_as_written() -> None:
    assert resync_notes(None, 300.0) == {}
    notes = resync_notes(AT, 300.0)
    assert notes == {LAST_RESYNC: "2026-11-29T00:10:05Z", RESYNC_SECONDS: "300"}
    assert last_resync(notes) == (AT, 300.0)


@pytest.mark.parametrize(
    "annotations",
    [
        {},
        {LAST_RESYNC: "2026-11-29T00:10:05Z"},
        {LAST_RESYNC: "yesterday", RESYNC_SECONDS: "300"},
        {LAST_RESYNC: "2026-11-29T00:10:05", RESYNC_SECONDS: "300"},  # no zone: unknown instant
        {LAST_RESYNC: "2026-11-29T00:10:05Z", RESYNC_SECONDS: "0"},
        {LAST_RESYNC: "2026-11-29T00:10:05Z", RESYNC_SECONDS: "often"},
    ],
)
def test_a_lease_that_does_not_say_or_says_nonsense_has_no_resync(
    annotations: dict[str, str],
) -> None:
    assert last_resync(annotations) is None
