"""What the ACM console shows (docs/spec.md §12.3): the project's `console_view` agrees with the
console's mapping restated on its own (tests/hub/console.py) for any set of conditions, and the
spec's table — what the console shows for each state of the addon beside OCM's writers — is
computed here from that mapping, row by row: the hub copy of that state (or OCM's view of a
broken path), mirrored by the hub side's own rules onto a ManagedClusterAddOn that OCM's writers
keep."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.hub.console import console_view
from controller.hub.mirror import mirror
from controller.hub.path import OcmView, effective
from statemachines.conditions import format_time
from tests.hub.console import shown
from tests.hub.hubside import acm, cond, seed

SPEC = Path(__file__).resolve().parents[2] / "docs" / "spec.md"
NOW = datetime(2026, 11, 28, 12, tzinfo=UTC)
AGO = format_time(NOW - timedelta(hours=1))
RUNNING = cond("Available", "True", "ProbeAvailable", "Addon is available", at=AGO)
BOOTING = cond("Available", "Unknown", "NoProbeResult", "Probe results are not returned", at=AGO)
DOWN = cond("Available", "False", "ProbeUnavailable", "Probe addon unavailable with err x", at=AGO)
LEASE = "Registration agent stopped updating its lease."
LOST = cond("Available", "Unknown", "ManagedClusterLeaseUpdateStopped", LEASE, at=AGO)
DONE = cond("Progressing", "False", "Completed", "completed with no errors.", at=AGO)
DEPLOYED = cond("ManifestApplied", "True", "AddonManifestApplied", "", at=AGO)
REFUSED = cond("RegistrationApplied", "False", "SetPermissionFailed", "forbidden", at=AGO)
LOST_CLUSTER = cond("ManagedClusterConditionAvailable", "Unknown", "LeaseStopped", LEASE, at=AGO)


def degraded(reason: str) -> list[dict[str, Any]]:
    return seed("Degraded", reason, f"{reason} here")


# each row of the table: the hub copy (None: none), OCM's conditions on the addon, its view
ROWS: dict[str, tuple[list[dict[str, Any]] | None, list[dict[str, Any]], OcmView]] = {
    "Available": (seed("Available", "ForwardSuccessful"), [RUNNING, DONE], OcmView()),
    "Degraded (ForwardFailure)": (degraded("ForwardFailure"), [RUNNING, DONE], OcmView()),
    "Degraded (UpdateFailure)": (degraded("UpdateFailure"), [RUNNING, DONE], OcmView()),
    "Degraded (ReportsStale)": (degraded("ReportsStale"), [RUNNING, DONE], OcmView()),
    "Degraded (ResourceUnhealthy)": (degraded("ResourceUnhealthy"), [RUNNING, DONE], OcmView()),
    "Progressing, while the agent boots (OCM: `NoProbeResult`)": (
        seed("Progressing", "UpdateSuccessful"), [BOOTING, DONE], OcmView()),
    "Progressing, the agent running": (
        seed("Progressing", "UpdateSuccessful"), [RUNNING, DONE], OcmView()),
    "Disabled": (seed("Disabled", "DisabledMetrics"), [RUNNING, DONE], OcmView()),
    "NotSupported": (seed("NotSupported", "NotSupported"), [RUNNING, DONE], OcmView()),
    "the agent not running": (
        seed("Available", "ForwardSuccessful"), [DOWN, DONE], OcmView(available=DOWN)),
    "the cluster lost": (
        seed("Degraded", "ForwardFailure"), [LOST, DONE], OcmView(cluster=LOST_CLUSTER)),
    "the agent not registered": (
        seed("Available", "ForwardSuccessful"), [RUNNING, DONE, REFUSED],
        OcmView(available=RUNNING, registered=REFUSED)),
    "no status reached the hub": (
        None, [RUNNING, DONE, DEPLOYED], OcmView(deployed=DEPLOYED, has_copy=False)),
}  # fmt: skip


def table() -> list[tuple[str, str, str]]:
    """(the addon, the console shows, with the message) of §12.3's table."""
    text = SPEC.read_text(encoding="utf-8")
    section = text[text.index("### 12.3") : text.index("### 12.4")]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    return [tuple(cell.strip() for cell in row.strip("|").split("|")) for row in rows[1:]]  # type: ignore[misc]


def console_of(state: str) -> tuple[str, str, list[dict[str, Any]]]:
    copy, ocm, view = ROWS[state]
    wanted, _ = effective("edge-1", copy, view, NOW, window=timedelta(minutes=2),
                          grace=timedelta(minutes=10))  # fmt: skip
    conditions = mirror(wanted, ocm) or ocm
    return *shown(conditions), conditions


def test_every_state_of_the_addon_has_a_row_and_every_row_a_state() -> None:
    assert [row[0] for row in table()] == list(ROWS)


@pytest.mark.parametrize(("state", "word", "message"), table())
def test_the_console_shows_what_the_spec_says_for_each_state(
    state: str, word: str, message: str
) -> None:
    shows, says, conditions = console_of(state)
    assert shows == word
    by_type = {c["type"]: c for c in conditions}
    if message.startswith("OCM's `Available` message"):
        assert says == by_type["Available"]["message"]
    elif message.startswith("the copy's `Degraded` message"):
        assert says == by_type["Degraded"]["message"] and says.endswith("here")
    elif quoted := re.search(r'"([^"]+)"', message):
        assert says == quoted.group(1)
    else:
        reason = message.split("`")[1]  # the path's reason, then what it says
        assert by_type["Degraded"]["reason"] == reason and "edge-1" in says


def test_acms_disabled_and_not_supported_are_degraded_on_the_console() -> None:
    for reason in ("Disabled", "NotSupported"):
        conditions = mirror(acm("Degraded", reason), [RUNNING, DONE]) or []
        assert shown(conditions)[0] == "Degraded"


CONDITION = st.fixed_dictionaries(
    {"type": st.sampled_from(["Available", "Progressing", "Degraded", "Disabled", "Other"]),
     "status": st.sampled_from(["True", "False", "Unknown", "Maybe"])},
    optional={"message": st.text(max_size=8)},
)  # fmt: skip


@given(st.none() | st.lists(CONDITION, max_size=6))
def test_console_view_is_the_consoles_mapping(conditions: list[dict[str, Any]] | None) -> None:
    assert console_view(conditions) == shown(conditions)
