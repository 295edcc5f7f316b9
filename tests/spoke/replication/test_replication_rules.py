"""The pure decisions of hub replication, without threads or servers: backoff with full
jitter and its bounds, `Retry-After` as a floor, what each copy mode copies and keeps, when a
hub copy counts as current (including a hub that prunes what we send).
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

import pytest

from controller.spoke.replication import (
    RETRY_AFTER_CEILING,
    Echo,
    backoff_delay,
    hub_status_for,
    in_sync,
    projection,
)

NOW = datetime(2025, 3, 1, 12, 0, 0, 250_000, tzinfo=UTC)
AVAILABLE = {
    "type": "Available",
    "status": "True",
    "reason": "ForwardSuccessful",
    "message": "ok",
    "lastTransitionTime": "2025-03-01T12:00:00Z",
}
DEGRADED = {**AVAILABLE, "type": "Degraded", "status": "False"}
COLLECTORS = [{"name": "metrics-collector", "state": "Available"}]
HISTORY = [
    {
        "type": "Available",
        "reason": "ForwardSuccessful",
        "message": "ok",
        "lastTransitionTime": "2025-03-01T12:00:00Z",
    }
]
SPOKE = {"conditions": [AVAILABLE, DEGRADED], "collectors": COLLECTORS, "history": HISTORY}


# --- backoff ------------------------------------------------------------------------------


@pytest.mark.parametrize("failures", [1, 2, 3, 5, 8, 20, 200])
def test_backoff_stays_within_the_full_jitter_range(failures: int) -> None:
    rng = random.Random(failures)
    ceiling = min(30.0, 0.5 * 2 ** (failures - 1))
    delays = [backoff_delay(failures, base=0.5, cap=30.0, rng=rng) for _ in range(2000)]
    assert all(0.0 <= d <= ceiling for d in delays)
    # full jitter: the whole range is used, not just the top of it
    assert min(delays) < 0.05 * ceiling
    assert max(delays) > 0.95 * ceiling


def test_backoff_ceiling_doubles_until_the_cap() -> None:
    rng = random.Random(7)
    tops = [
        max(backoff_delay(n, base=1.0, cap=16.0, rng=rng) for _ in range(500)) for n in (1, 3, 5, 9)
    ]
    assert tops[0] <= 1.0 < tops[1] <= 4.0 < tops[2] <= 16.0
    assert tops[3] <= 16.0


@pytest.mark.parametrize("retry_after", [0.0, 2.0, 45.0])
def test_retry_after_is_a_floor_of_the_backoff(retry_after: float) -> None:
    rng = random.Random(1)
    delays = [
        backoff_delay(1, base=0.5, cap=1.0, rng=rng, retry_after=retry_after) for _ in range(200)
    ]
    assert all(d >= retry_after for d in delays)
    assert all(d <= max(retry_after, 1.0) for d in delays)


def test_an_absurd_retry_after_is_capped() -> None:
    delay = backoff_delay(1, base=0.5, cap=1.0, rng=random.Random(1), retry_after=86_400.0)
    assert delay == RETRY_AFTER_CEILING


# --- what is copied -------------------------------------------------------------------------


def test_conditions_mode_copies_conditions_and_keeps_the_hubs_other_fields() -> None:
    hub = {"conditions": [], "hubOnly": {"x": 1}, "collectors": []}
    written = hub_status_for(SPOKE, hub, "conditions")
    assert written == {"conditions": [AVAILABLE, DEGRADED], "hubOnly": {"x": 1}, "collectors": []}


def test_status_mode_replaces_the_status_but_never_copies_the_bookkeeping() -> None:
    hub = {"conditions": [], "hubOnly": {"x": 1}}
    wanted = {"conditions": SPOKE["conditions"], "history": HISTORY}
    assert hub_status_for(SPOKE, hub, "status") == wanted


def test_the_copy_is_independent_of_the_published_status() -> None:
    status: dict[str, Any] = {"conditions": [dict(AVAILABLE)]}
    written = hub_status_for(status, {}, "conditions")
    status["conditions"][0]["status"] = "False"
    assert written["conditions"][0]["status"] == "True"


@pytest.mark.parametrize(
    ("hub", "mode", "current"),
    [
        pytest.param(SPOKE, "status", True, id="status-equal"),
        pytest.param(
            {**SPOKE, "collectors": []}, "status", True, id="status-mode-ignores-the-bookkeeping"
        ),
        pytest.param({**SPOKE, "history": []}, "status", False, id="status-history-differs"),
        pytest.param(
            {**SPOKE, "collectors": []},
            "conditions",
            True,
            id="conditions-mode-ignores-other-fields",
        ),
        pytest.param(
            {"conditions": [DEGRADED, AVAILABLE]}, "conditions", False, id="condition-order-matters"
        ),
        pytest.param({}, "conditions", False, id="empty-hub-copy"),
        pytest.param(
            {"conditions": [{**AVAILABLE, "message": "old"}, DEGRADED]},
            "conditions",
            False,
            id="message-differs",
        ),
    ],
)
def test_when_the_hub_copy_is_current(hub: dict[str, Any], mode: Any, current: bool) -> None:
    assert in_sync(SPOKE, hub, mode) is current


def test_an_empty_spoke_status_matches_an_empty_hub_copy() -> None:
    assert in_sync({}, {}, "conditions")
    assert in_sync({"conditions": []}, {}, "conditions")


def test_a_hub_that_prunes_what_we_sent_is_current_after_our_write() -> None:
    pruned = {"conditions": SPOKE["conditions"]}  # the hub's schema has no `history`
    echo = Echo(sent=projection(SPOKE, "status"), stored=projection(pruned, "status"))
    assert not in_sync(SPOKE, pruned, "status")
    assert in_sync(SPOKE, pruned, "status", echo=echo)
    # ... but not once the spoke moved on, nor when someone changed the hub copy since
    moved = {**SPOKE, "conditions": [DEGRADED]}
    assert not in_sync(moved, pruned, "status", echo=echo)
    assert not in_sync(SPOKE, {"conditions": []}, "status", echo=echo)
