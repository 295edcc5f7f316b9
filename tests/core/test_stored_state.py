"""docs/spec.md §6, what is read back is checked: a stored status with a field outside the rules'
bounds — a time before 1970 or too late to add the longest window to, a generation of 2^63 or
more, a list longer than the CRD keeps, a value of the wrong kind — is read as if that field
were absent, and named for the shell to log once and count. Never a crash at start (the
`pendingSince: 9999-12-31T23:59:59Z` that made `run` crash at every start), and never a status
the next write could not store (the `0001-01-01T00:00:00Z` that made it write
`1-01-01T00:10:00Z`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from statemachines import Config, resume, start
from statemachines.conditions import parse_time
from statemachines.stored import to_status

NOW = datetime(2025, 1, 1, tzinfo=UTC)
WINDOW = {"state": "Available", "reason": "ForwardSuccessful", "pendingReason": "ForwardFailure"}


def collector(**fields: Any) -> dict[str, Any]:
    return {"collectors": [{"name": "metrics-collector", **fields}]}


@pytest.mark.parametrize(
    ("status", "field"),
    [
        pytest.param(collector(state="Sleeping"), "status.collectors[0]", id="unknown-state"),
        pytest.param(
            collector(state="Available", reason="Forward"),
            "status.collectors[0]",
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
            collector(**WINDOW, pendingSince="yesterday"),
            "status.collectors[0].pendingSince",
            id="unreadable-window-start",
        ),
        pytest.param(
            collector(**WINDOW, pendingSince="9999-12-31T23:59:59Z"),
            "status.collectors[0].pendingSince",
            id="pending-since-too-late-to-add-the-window",
        ),
        pytest.param(
            collector(**WINDOW, pendingSince="0001-01-01T00:00:00Z"),
            "status.collectors[0].pendingSince",
            id="pending-since-before-1970",
        ),
        pytest.param(
            collector(state="Available", observedGeneration=2**63),
            "status.collectors[0].observedGeneration",
            id="generation-beyond-int64",
        ),
        pytest.param(
            collector(state="Available", version="2.15\x1b[2J"),
            "status.collectors[0].version",
            id="version-with-a-control-character",
        ),
        pytest.param(
            {"collectors": ["metrics-collector"]}, "status.collectors[0]", id="not-an-object"
        ),
        pytest.param(
            {"collectors": [{"name": f"c{i}", "state": "Available"} for i in range(9)]},
            "status.collectors",
            id="more-collectors-than-the-crd-keeps",
        ),
        pytest.param(
            {"conditions": [{"type": "Available"}]},
            "status.conditions[0]",
            id="incomplete-condition",
        ),
        pytest.param(
            {
                "conditions": [
                    {
                        "type": "Available",
                        "status": ["True"],
                        "reason": "R",
                        "lastTransitionTime": "2025-01-01T00:00:00Z",
                    }
                ]
            },
            "status.conditions[0]",
            id="condition-status-of-the-wrong-kind",
        ),
        pytest.param(
            {
                "history": [
                    {
                        "type": "Available",
                        "reason": "R",
                        "lastTransitionTime": "2025-01-01T00:00:00Z",
                    }
                ]
                * 1001
            },
            "status.history",
            id="more-history-than-the-crd-keeps",
        ),
        pytest.param(
            {"lastKnownGood": {"generation": 1, "since": "0001-01-01T00:00:00Z"}},
            "status.lastKnownGood.since",
            id="last-known-good-before-1970",
        ),
        pytest.param(["a", "list"], "status", id="status-not-an-object"),
    ],
)
def test_a_stored_field_out_of_bounds_is_taken_as_absent_and_named(status: Any, field: str) -> None:
    config = Config.create()
    resumed = resume(config, NOW, status=status)
    assert field in [problem.field for problem in resumed.ignored]
    # What the controller writes next is a status the API server stores.
    written = to_status(resumed.state)
    for text in _times(written):
        assert 1970 <= parse_time(text).year <= 9999
    json.dumps(written)


def _times(status: dict[str, Any]) -> list[str]:
    found = [c["lastTransitionTime"] for c in status["conditions"]]
    found += [c["lastTransitionTime"] for c in status["collectors"]]
    found += [c["pendingSince"] for c in status["collectors"] if "pendingSince" in c]
    return found


def test_a_window_read_back_out_of_bounds_is_closed_and_the_collector_kept() -> None:
    config = Config.create(collectors=["metrics-collector"])
    stored = collector(**WINDOW, pendingSince="9999-12-31T23:59:59Z")
    state = start(config, NOW, status=stored)
    [c] = state.collectors
    assert (c.state.value, c.reason and c.reason.value, c.pending) == (
        "Available",
        "ForwardSuccessful",
        None,
    )


def test_a_long_stored_message_is_cut_not_ignored() -> None:
    config = Config.create(collectors=["metrics-collector"])
    stored = collector(state="Available", reason="ForwardSuccessful", message="m" * 5000)
    resumed = resume(config, NOW, status=stored)
    assert resumed.ignored == ()
    assert resumed.state.collectors[0].message == "m" * 1023 + "…"


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
