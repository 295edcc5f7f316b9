"""The pure mirror of docs/spec.md §12.1, one rule per test, without a server:
hub copy conditions + ManagedClusterAddOn conditions -> the conditions to write, or None; and
when a difference is written (`Repairs`)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.hub.mirror import (
    OWNED_TYPES,
    Repairs,
    cluster_state,
    from_newer_copy,
    mirror,
    standard_conditions,
)
from tests.hub.hubside import T0, T1, cond

# The two shapes a hub copy has: the seed profile's five standard types, and the acm profile's
# three, where disabled is Degraded=True with reason Disabled.
SEED_COPY = [
    cond("Available", "True", "UpdateSuccessful", "all collectors forward"),
    cond("Progressing", "False", "UpdateSuccessful"),
    cond("Degraded", "False", "UpdateSuccessful"),
    cond("Disabled", "False", "UpdateSuccessful"),
    cond("NotSupported", "False", "UpdateSuccessful"),
    cond("MetricsCollector", "True", "ForwardSuccessful"),
]
ACM_COPY = [
    cond("Available", "False", "Disabled"),
    cond("Progressing", "False", "Disabled"),
    cond("Degraded", "True", "Disabled", "metrics collection is disabled"),
    cond("MetricsCollector", "False", "Disabled"),
    cond("UwlMetricsCollector", "False", "Disabled"),
]
MANIFEST_APPLIED = cond("ManifestApplied", "True", "AddonManifestApplied", "applied")


@pytest.mark.parametrize(
    ("copy", "types"),
    [
        pytest.param(SEED_COPY, ["Degraded", "Disabled", "NotSupported"], id="seed"),
        pytest.param(ACM_COPY, ["Degraded"], id="acm"),
    ],
)
def test_only_the_types_no_ocm_or_acm_controller_writes_are_mirrored(
    copy: list[dict[str, Any]], types: list[str]
) -> None:
    written = mirror(copy, [])
    assert written is not None
    assert [c["type"] for c in written] == types
    assert written == [c for c in copy if c["type"] in types]


def test_available_and_progressing_are_never_written_whatever_the_hub_copy_says() -> None:
    ocm = [cond("Available", "False", "Unavailable"), cond("Progressing", "True", "Progressing")]
    assert mirror([*SEED_COPY[:2]], ocm) is None
    written = mirror(SEED_COPY, ocm)
    assert written is not None and written[:2] == ocm


def test_status_reason_message_and_transition_time_are_copied_verbatim() -> None:
    written = mirror(ACM_COPY, [cond("Degraded", "False", "UpdateSuccessful", at=T0)])
    assert written is not None
    assert written[0] == cond("Degraded", "True", "Disabled", "metrics collection is disabled")


def test_a_reason_change_with_the_same_status_is_mirrored() -> None:
    before = [cond("Degraded", "True", "ForwardFailed", "cannot forward", at=T0)]
    copy = [cond("Degraded", "True", "UpdateFailed", "cannot forward", at=T0)]
    assert mirror(copy, before) == copy


def test_a_message_change_with_the_same_status_is_mirrored() -> None:
    before = [cond("Degraded", "False", "UpdateSuccessful", "2 collectors", at=T0)]
    copy = [cond("Degraded", "False", "UpdateSuccessful", "3 collectors", at=T0)]
    assert mirror(copy, before) == copy


def test_a_transition_time_change_alone_is_mirrored() -> None:
    before = [cond("Degraded", "False", "UpdateSuccessful", at=T0)]
    copy = [cond("Degraded", "False", "UpdateSuccessful", at=T1)]
    assert mirror(copy, before) == copy


def test_nothing_is_written_when_the_managed_cluster_addon_already_says_the_same() -> None:
    current = [MANIFEST_APPLIED, *[c for c in SEED_COPY if c["type"] in OWNED_TYPES]]
    assert mirror(SEED_COPY, current) is None


def test_other_writers_conditions_stay_as_they_are_and_where_they_are() -> None:
    other = {**MANIFEST_APPLIED, "observedGeneration": 3}
    available = cond("Available", "False", "Unavailable")
    before = [other, cond("Degraded", "True", "ForwardFailure"), available]
    written = mirror(SEED_COPY, before)
    assert written is not None
    assert written[0] == other
    assert written[1] == SEED_COPY[2]
    assert written[2] == available
    assert [c["type"] for c in written[3:]] == ["Disabled", "NotSupported"]


def test_an_owned_type_the_hub_copy_does_not_carry_is_left_alone() -> None:
    disabled = cond("Disabled", "True", "Disabled", "left by another writer")
    written = mirror(ACM_COPY, [disabled])
    assert written is not None
    assert written[0] == disabled


def test_a_hub_copy_without_standard_conditions_writes_nothing() -> None:
    assert mirror([], [MANIFEST_APPLIED]) is None
    assert mirror([cond("MetricsCollector", "True", "ForwardSuccessful")], []) is None


def test_fields_beyond_the_five_are_not_mirrored() -> None:
    copy = [
        {
            **cond("Degraded", "True", "ForwardFailure"),
            "observedGeneration": 7,
            "severity": "Info",
        }
    ]
    assert mirror(copy, []) == [cond("Degraded", "True", "ForwardFailure")]


def test_a_missing_message_is_mirrored_as_empty_since_the_schema_requires_one() -> None:
    copy = [
        {k: v for k, v in cond("Degraded", "False", "UpdateSuccessful").items() if k != "message"}
    ]
    assert mirror(copy, []) == [cond("Degraded", "False", "UpdateSuccessful", "")]


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param({"reason": ""}, id="no-reason"),
        pytest.param({"lastTransitionTime": None}, id="no-transition-time"),
        pytest.param({"status": "Maybe"}, id="unknown-status"),
    ],
)
def test_a_condition_the_managed_cluster_addon_schema_refuses_is_not_mirrored(
    bad: dict[str, Any],
) -> None:
    copy = [
        {**cond("Degraded", "True", "UpdateFailure"), **bad},
        cond("Disabled", "False", "UpdateSuccessful"),
    ]
    assert mirror(copy, []) == [cond("Disabled", "False", "UpdateSuccessful")]


def test_the_first_condition_of_a_type_wins_as_in_a_map_list() -> None:
    copy = [cond("Available", "True", "A"), cond("Available", "False", "B")]
    assert standard_conditions(copy) == [cond("Available", "True", "A")]


@pytest.mark.parametrize(
    ("copy", "state"),
    [
        pytest.param(SEED_COPY, "Available", id="seed-available"),
        pytest.param(ACM_COPY, "Degraded", id="acm-disabled-is-degraded"),
        pytest.param([cond("Disabled", "True", "Disabled")], "Disabled", id="seed-disabled"),
        pytest.param([], "Unknown", id="not-written-yet"),
        pytest.param([cond("Available", "False", "X")], "Unknown", id="none-true"),
    ],
)
def test_a_clusters_state_is_the_standard_type_that_is_true(
    copy: list[dict[str, Any]], state: str
) -> None:
    assert cluster_state("c1", copy).type == state


DEGRADED = [cond("Degraded", "True", "ForwardFailure", at=T0)]
RECOVERED = [cond("Degraded", "False", "ForwardSuccessful", at=T1)]


def test_each_state_of_the_hub_copy_is_written_and_a_foreign_change_repaired_once() -> None:
    repairs = Repairs()
    assert repairs.due("c1", DEGRADED)
    assert repairs.wrote("c1", DEGRADED) is False  # the first write of this state
    assert repairs.due("c1", DEGRADED)  # someone changed it: one repair is allowed
    assert repairs.wrote("c1", DEGRADED) is True
    assert not repairs.due("c1", DEGRADED)  # changed again: not fought
    assert repairs.due("c1", RECOVERED)  # until the hub copy says something new
    assert repairs.due("c2", DEGRADED)  # and each cluster on its own


def test_a_failed_write_spends_no_repair() -> None:
    repairs = Repairs()
    assert repairs.due("c1", DEGRADED)  # asked, but the write failed: nothing remembered
    assert repairs.due("c1", DEGRADED)
    repairs.wrote("c1", DEGRADED)
    repairs.forget("c1")
    assert repairs.due("c1", DEGRADED) and repairs.wrote("c1", DEGRADED) is False


@pytest.mark.parametrize(
    ("addon_time", "copy_time", "newer"),
    [
        (T1, T0, True),  # the operator copied a copy the hub side has not seen yet
        (T0, T0, False),  # the same change
        (T0, T1, False),  # the hub side's copy is the newer
        ("yesterday", T0, False),  # an unreadable time proves nothing
    ],
)
def test_an_owned_condition_changed_later_than_the_copy_comes_from_a_newer_copy(
    addon_time: str, copy_time: str, newer: bool
) -> None:
    copy = [cond("Degraded", "True", "ForwardFailure", at=copy_time)]
    addon = [cond("Degraded", "False", "ForwardSuccessful", at=addon_time)]
    assert from_newer_copy(copy, addon) is newer
    # only owned types count, and only those the copy carries
    assert not from_newer_copy(copy, [cond("Available", "True", "ProbeAvailable", at=T1)])
    assert not from_newer_copy([], addon)
