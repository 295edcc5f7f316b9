"""When the path from a spoke breaks (docs/spec.md §12.2): the hub side's `Degraded` from OCM's
view of the cluster (controller/hub/path.py), one row per rule of the table and per rule of its
window, on a clock the test sets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controller.hub.path import OcmView, effective
from statemachines.conditions import format_time
from tests.hub.hubside import seed
from tests.support import condition

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
WINDOW, GRACE = timedelta(minutes=2), timedelta(minutes=10)
LONG_AGO = format_time(NOW - timedelta(hours=1))
JUST_NOW = format_time(NOW - timedelta(seconds=30))
COPY = seed("Available", "ForwardSuccessful", "metrics sent", at="2026-11-28T09:00:00Z")

LEASE = "ManagedClusterLeaseUpdateStopped"
LOST = condition("ManagedClusterConditionAvailable", "Unknown", reason=LEASE,
                 message="Registration agent stopped updating its lease.", at=LONG_AGO)  # fmt: skip
DOWN = condition("Available", "False", reason="ProbeUnavailable",
                 message="Probe addon unavailable with err no ready pod", at=LONG_AGO)  # fmt: skip
UP = condition("Available", "True", reason="ProbeAvailable", message="", at=LONG_AGO)
REFUSED = condition("RegistrationApplied", "False", reason="SetPermissionFailed",
                    message="rolebindings is forbidden", at=LONG_AGO)  # fmt: skip
DEPLOYED = condition("ManifestApplied", "True", reason="AddonManifestApplied", at=LONG_AGO)


def degraded(view: OcmView, copy: list[dict[str, Any]] | None = COPY, **kwargs: Any) -> Any:
    conditions, again = effective("edge-1", copy, view, NOW, window=WINDOW, grace=GRACE, **kwargs)
    found = next((c for c in conditions if c["type"] == "Degraded"), None)
    return found, again


@pytest.mark.parametrize(
    ("view", "status", "reason", "words"),
    [
        pytest.param(OcmView(cluster=LOST, available=DOWN), "Unknown", "ClusterLost",
                     "Registration agent stopped", id="a-lost-cluster-is-unknown-first"),
        pytest.param(OcmView(available=DOWN, registered=REFUSED), "True", "AgentUnavailable",
                     "no ready pod", id="an-agent-not-running-is-degraded"),
        pytest.param(OcmView(available=UP, registered=REFUSED), "True", "AgentNotRegistered",
                     "SetPermissionFailed", id="an-agent-not-registered-is-degraded"),
        pytest.param(OcmView(available=UP, denied=(NOW - timedelta(hours=1), "may not update")),
                     "True", "StatusNotReplicated", "may not update",
                     id="an-agent-that-may-not-write-its-copy-is-degraded"),
    ],
)  # fmt: skip
def test_ocms_view_decides_degraded_in_the_tables_order(
    view: OcmView, status: str, reason: str, words: str
) -> None:
    found, again = degraded(view)
    assert (found["status"], found["reason"], again) == (status, reason, None)
    assert words in found["message"] and "edge-1" in found["message"]
    # the copy's last verdict, with its time, is in the message: it is not current
    assert "Available (ForwardSuccessful) since 2026-11-28T09:00:00Z" in found["message"]


def test_the_copys_degraded_stands_while_the_path_holds() -> None:
    found, again = degraded(OcmView(available=UP, deployed=DEPLOYED))
    assert (found["status"], found["reason"], again) == ("False", "ForwardSuccessful", None)


def test_no_copy_a_grace_period_after_the_agent_was_deployed_names_the_command_to_run() -> None:
    found, _ = degraded(OcmView(available=UP, deployed=DEPLOYED, has_copy=False), copy=None)
    assert (found["status"], found["reason"]) == ("True", "StatusNotReplicated")
    assert "addon-status check spoke" in found["message"]


def test_no_copy_within_the_grace_period_writes_nothing_yet() -> None:
    deployed = {**DEPLOYED, "lastTransitionTime": JUST_NOW}
    found, again = degraded(OcmView(deployed=deployed, has_copy=False), copy=None)
    assert found is None and again == NOW - timedelta(seconds=30) + GRACE  # no window on it


def test_a_break_shorter_than_the_window_is_not_written_and_is_looked_at_when_it_ends() -> None:
    """A rolling restart of a one-replica agent: OCM's Available is False for seconds."""
    found, again = degraded(OcmView(available={**DOWN, "lastTransitionTime": JUST_NOW}))
    assert found["reason"] == "ForwardSuccessful"  # the copy's, for now
    assert again == NOW - timedelta(seconds=30) + WINDOW


def test_a_break_counts_at_the_windows_end_its_transition_time() -> None:
    started = NOW - WINDOW
    found, _ = degraded(OcmView(available={**DOWN, "lastTransitionTime": format_time(started)}))
    assert (found["reason"], found["lastTransitionTime"]) == ("AgentUnavailable", format_time(NOW))


def test_a_copy_changed_after_the_break_began_is_the_newer_word() -> None:
    """The spoke wrote its copy after OCM's view broke: the path works, the copy stands."""
    found, again = degraded(OcmView(cluster=LOST), copy_changed=NOW - timedelta(minutes=5))
    assert (found["reason"], again) == ("ForwardSuccessful", None)


def test_a_lost_cluster_without_a_copy_is_unknown_too() -> None:
    found, _ = degraded(OcmView(cluster=LOST, has_copy=False), copy=None)
    assert (found["status"], found["reason"]) == ("Unknown", "ClusterLost")
    assert "the last status that reached the hub, not current: none" in found["message"]


def test_the_copys_other_owned_conditions_stay_beside_a_broken_paths_degraded() -> None:
    disabled = seed("Disabled", "DisabledMetrics", at="2026-11-28T09:00:00Z")
    conditions, _ = effective("edge-1", disabled, OcmView(available=DOWN), NOW,
                              window=WINDOW, grace=GRACE)  # fmt: skip
    by_type = {c["type"]: c for c in conditions}
    assert by_type["Disabled"]["status"] == "True" and by_type["Degraded"]["status"] == "True"


def test_ocms_words_are_cut_and_the_message_fits_a_condition() -> None:
    wordy = {**DOWN, "message": "x" * 100_000}
    found, _ = degraded(OcmView(available=wordy))
    assert len(found["message"]) < 2_000 and "…" in found["message"]


def test_registration_refused_while_the_api_server_says_the_agent_may_write_is_no_break() -> None:
    """OCM leaves RegistrationApplied False when a rollout switched the agent's hub role, while
    the older binding still lets it write: the API server's answer wins."""
    found, _ = degraded(OcmView(available=UP, registered=REFUSED, may_write=True))
    assert found["reason"] == "ForwardSuccessful"
