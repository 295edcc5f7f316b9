"""Reading the state back from the CR: a status that cannot be a state is an error naming the
field, never a crash inside the core."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from statemachines import Config, StoredStateError, start

NOW = datetime(2025, 1, 1, tzinfo=UTC)


def collector(**fields: Any) -> dict[str, Any]:
    return {"collectors": [{"name": "metrics-collector", **fields}]}


@pytest.mark.parametrize(
    ("status", "field"),
    [
        pytest.param(collector(state="Sleeping"), "status.collectors[0].state", id="unknown-state"),
        pytest.param(
            collector(state="Available", reason="Forward"),
            "status.collectors[0].reason",
            id="unknown-reason",
        ),
        pytest.param(
            collector(
                state="Degraded",
                reason="UpdateFailure",
                pendingReason="ForwardFailure",
                pendingSince="2025-01-01T00:00:00Z",
            ),
            "status.collectors[0].pendingReason",
            id="window-that-cannot-be-open",
        ),
        pytest.param(
            collector(
                state="Available",
                reason="ForwardSuccessful",
                pendingReason="ForwardFailure",
                pendingSince="yesterday",
            ),
            "status.collectors[0].pendingSince",
            id="unreadable-window-start",
        ),
        pytest.param(
            {"collectors": ["metrics-collector"]}, "status.collectors[0]", id="not-an-object"
        ),
        pytest.param(
            {"conditions": [{"type": "Available"}]},
            "status.conditions[0]",
            id="incomplete-condition",
        ),
    ],
)
def test_unreadable_status_names_the_field(status: dict[str, Any], field: str) -> None:
    with pytest.raises(StoredStateError) as caught:
        start(Config.create(), NOW, status=status)
    assert caught.value.field == field


def test_stale_message_does_not_change_across_a_restart() -> None:
    config = Config.create(collectors=["metrics-collector"])
    stored = collector(
        state="Available",
        reason="ForwardSuccessful",
        stale=True,
        lastTransitionTime="2025-01-01T00:15:00Z",
    )
    first = start(config, NOW, status=stored)
    again = start(
        config,
        NOW.replace(hour=5),
        status={**stored, "conditions": [c.to_api() for c in first.conditions]},
    )
    assert first.conditions == again.conditions
