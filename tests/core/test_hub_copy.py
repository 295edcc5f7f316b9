"""Sections 7, 9 and 10 on the hub: what the hub copy gets of the spoke's status. `conditions`
copies every condition (Ready and ResourcesHealthy too); `status` copies the status a reader
wants (history, versions, related objects, the last known good generation) but never the
dampening bookkeeping (`collectors`, each resource's `pending`), so a window opening or closing
costs no hub write in either mode."""

from __future__ import annotations

import pytest

from statemachines.config import Config
from statemachines.core import apply, observe_object, start
from statemachines.hub_copy import CopyMode, for_hub
from statemachines.related import RelatedObject
from statemachines.reports import Report, VerdictKind
from statemachines.settings import Settings
from statemachines.stored import to_status
from statemachines.vocabulary import READY
from tests.core.conftest import MC, MIN, T0
from tests.core.health import resource
from tests.names import R
from tests.support import condition


def _status_with_everything() -> dict[str, object]:
    config = Config.create(
        collectors=[MC],
        related_objects=[RelatedObject("apps", "deployments", "metrics-collector", "ns")],
    )
    state = start(config, T0)
    for minute, report in enumerate(
        [Report(R.UPDATE_SUCCESSFUL, MC, "deployed", 1, "2.14.0"), Report(R.FORWARD_SUCCESSFUL, MC)]
    ):
        state = apply(state, report, T0 + minute * MIN, config=config).state
    return to_status(state)


def test_conditions_mode_copies_ready_and_every_other_condition() -> None:
    status = _status_with_everything()
    status["conditions"].append({"type": "ResourcesHealthy", "status": "True"})  # type: ignore[attr-defined]
    copied = for_hub(status, "conditions")
    assert copied == {"conditions": status["conditions"]}
    assert READY in {c["type"] for c in copied["conditions"]}


def test_status_mode_copies_history_versions_related_objects_and_last_known_good() -> None:
    status = _status_with_everything()
    copied = for_hub(status, "status")
    assert set(copied) == {
        "conditions",
        "history",
        "versions",
        "relatedObjects",
        "lastKnownGood",
    }
    assert copied["versions"] == [{"name": MC, "version": "2.14.0"}]


@pytest.mark.parametrize("mode", ["conditions", "status"])
def test_a_dampening_window_never_changes_the_hub_copy(mode: CopyMode) -> None:
    config = Config.create(
        collectors=[MC], settings=Settings.model_validate({"degradeAfter": "5m"})
    )
    state = apply(start(config, T0), Report(R.FORWARD_SUCCESSFUL, MC), T0, config=config).state
    before = to_status(state)
    pending = apply(state, Report(R.FORWARD_FAILURE, MC, "503"), T0 + MIN, config=config)
    assert pending.verdict is not None and pending.verdict.kind is VerdictKind.PENDING
    after = to_status(pending.state)
    assert after != before  # the spoke CR stores the window...
    assert for_hub(after, mode) == for_hub(before, mode)  # ...the hub copy does not change
    cancelled = apply(pending.state, Report(R.FORWARD_SUCCESSFUL, MC), T0 + 2 * MIN, config=config)
    assert for_hub(to_status(cancelled.state), mode) == for_hub(before, mode)


@pytest.mark.parametrize("mode", ["conditions", "status"])
def test_hub_copy_status_never_copies_resources_pending(mode: CopyMode) -> None:
    """A blip absorbed by `for` opens and closes `status.resources[].pending` on the spoke and
    changes nothing on the hub (the issue: it cost 2 hub writes with no visible change)."""
    watched = resource({"singleConditionType": "Available"}, name="mc", for_="5m")
    config = Config.create(collectors=[MC], resources=[watched])

    def deployment(available: str) -> dict[str, object]:
        return {
            "metadata": {"generation": 1},
            "status": {"conditions": [condition("Available", available)]},
        }

    state = apply(start(config, T0), Report(R.FORWARD_SUCCESSFUL, MC), T0, config=config).state
    state = observe_object(state, "mc", deployment("True"), T0, config=config).state
    before = to_status(state)
    blip = observe_object(state, "mc", deployment("False"), T0 + MIN, config=config).state
    assert to_status(blip)["resources"][0].get("pending"), "the spoke CR stores the window..."
    assert for_hub(to_status(blip), mode) == for_hub(before, mode), "...the hub copy does not"
    healed = observe_object(blip, "mc", deployment("True"), T0 + 2 * MIN, config=config).state
    assert for_hub(to_status(healed), mode) == for_hub(before, mode)
