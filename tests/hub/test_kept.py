"""What the hub side's caches keep of each condition (`controller.hub.kept`): at 10,000 clusters
they hold a hub copy's five conditions and a ManagedClusterAddOn's eight per cluster, kept in
slots with each equal string once, read as the dicts they came from, and thawed back into dicts
for a write (docs/performance.md)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controller.hub.caches import Addon
from controller.hub.kept import KeptCondition, kept, thawed
from controller.hub.mirror import standard_conditions
from tests.hub.hubside import seed

SEED_COPY = seed()


def decoded() -> list[dict[str, Any]]:  # as each answer decodes them: new strings
    loaded: list[dict[str, Any]] = json.loads(json.dumps(SEED_COPY))
    return loaded


def test_a_kept_condition_reads_as_the_dict_it_came_from_and_thaws_back_into_it() -> None:
    for condition in SEED_COPY:
        held = kept(dict(condition))
        assert isinstance(held, KeptCondition)
        assert held == condition and condition == held and dict(held) == condition
        assert set(held) == set(condition) and len(held) == len(condition)
        assert held.get("reason") == condition["reason"] and held.get("absent") is None
        with pytest.raises(KeyError):
            held["observedGeneration" if "observedGeneration" not in condition else "spec"]
    assert thawed([kept(dict(c)) for c in SEED_COPY]) == SEED_COPY
    assert json.loads(json.dumps(thawed([kept(dict(c)) for c in SEED_COPY]))) == SEED_COPY


def test_a_kept_condition_is_read_only() -> None:
    held = kept(dict(SEED_COPY[0]))
    with pytest.raises(AttributeError):
        held.reason = "Changed"
    with pytest.raises(TypeError):
        held["reason"] = "Changed"


def test_what_is_no_plain_condition_is_kept_as_it_is_for_the_reader_to_refuse() -> None:
    odd: list[Any] = ["text", 3, None, {"type": "Available", "status": "True", "extra": 1}]
    assert [kept(value) for value in odd] == odd
    assert all(not isinstance(kept(value), KeptCondition) for value in odd)


def test_equal_strings_are_held_once_across_clusters() -> None:
    """At 10,000 clusters the caches would hold 10,000 of each status, type and reason, and an
    OCM message per cluster: kept once each instead."""
    first, second = ([kept(c) for c in standard_conditions(decoded())] for _ in range(2))
    assert first == second == standard_conditions(SEED_COPY)
    for a, b in zip(first, second, strict=True):
        assert all(a[field] is b[field] for field in a if isinstance(a[field], str))
    one, other = (Addon.of({"status": {"conditions": decoded()}}) for _ in range(2))
    assert one.conditions == other.conditions == SEED_COPY
    assert all(
        a[field] is b[field]
        for a, b in zip(one.conditions, other.conditions, strict=True)
        for field in a
        if isinstance(a[field], str)
    )
