"""The status writer: the merge keeps other writers' conditions and fields in their place, an
unchanged status costs no write, a 409 starts over from a fresh read, retries are bounded."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from controller.kube.api import ConflictError, NotFoundError
from controller.spoke.status_writer import StatusWriter, merged_status, needs_write, owned_types
from statemachines.vocabulary import SEED
from tests.spoke.fakes import FakeAddonStore, addon_object
from tests.support import condition

OWNED = owned_types(SEED)


cond = partial(condition, reason="R", message="")


DESIRED = {
    "conditions": [cond("Available"), cond("Degraded", "False"), cond("MetricsCollectorStatus")],
    "collectors": [{"name": "metrics-collector", "state": "Available"}],
}


@pytest.mark.parametrize(
    ("current", "expected_types"),
    [
        pytest.param({}, ["Available", "Degraded", "MetricsCollectorStatus"], id="add-to-empty"),
        pytest.param(
            {"conditions": [cond("Foreign")]},
            ["Foreign", "Available", "Degraded", "MetricsCollectorStatus"],
            id="add-beside-a-foreign-one",
        ),
        pytest.param(
            {"conditions": [cond("Degraded"), cond("Foreign"), cond("Available", "False")]},
            ["Degraded", "Foreign", "Available", "MetricsCollectorStatus"],
            id="ours-replaced-in-place-foreign-kept-in-place",
        ),
        pytest.param(
            {"conditions": [cond("Available"), cond("UwlMetricsCollectorStatus")]},
            ["Available", "Degraded", "MetricsCollectorStatus"],
            id="a-collector-no-longer-configured-is-dropped",
        ),
    ],
)
def test_merge_rows(current: dict[str, Any], expected_types: list[str]) -> None:
    merged = merged_status(current, DESIRED, owned=OWNED)
    assert [c["type"] for c in merged["conditions"]] == expected_types
    ours = {c["type"]: c for c in DESIRED["conditions"]}
    assert all(c == ours[c["type"]] for c in merged["conditions"] if c["type"] in ours)
    assert merged["collectors"] == DESIRED["collectors"]


def test_merge_keeps_other_fields_of_the_status() -> None:
    merged = merged_status({"someoneElses": {"x": 1}}, DESIRED, owned=OWNED)
    assert merged["someoneElses"] == {"x": 1}


def test_merge_replaces_our_own_fields_and_drops_one_no_longer_written() -> None:
    current = {"history": [{"type": "Available"}], "lastKnownGood": {"generation": 1}}
    desired = {**DESIRED, "lastKnownGood": {"generation": 2}}  # the history was switched off
    merged = merged_status(current, desired, owned=OWNED)
    assert "history" not in merged
    assert merged["lastKnownGood"] == {"generation": 2}


def test_merge_ignores_foreign_types_in_the_desired_status() -> None:
    desired = {**DESIRED, "conditions": [*DESIRED["conditions"], cond("Stale")]}
    assert "Stale" not in [c["type"] for c in merged_status({}, desired, owned=OWNED)["conditions"]]


def test_needs_write_only_when_our_part_differs() -> None:
    obj = addon_object(status=merged_status({"conditions": [cond("X")]}, DESIRED, owned=OWNED))
    assert not needs_write(obj, DESIRED, owned=OWNED)
    obj["status"]["conditions"][1]["status"] = "False"
    assert needs_write(obj, DESIRED, owned=OWNED)


def test_an_unchanged_status_is_read_not_written() -> None:
    store = FakeAddonStore(obj=addon_object(status=merged_status({}, DESIRED, owned=OWNED)))
    result = StatusWriter(store, owned=OWNED).write(DESIRED)
    assert not result.written and store.puts == []


def test_a_write_carries_the_read_resource_version() -> None:
    store = FakeAddonStore()
    result = StatusWriter(store, owned=OWNED).write(DESIRED)
    assert result.written and result.obj["metadata"]["resourceVersion"] == "2"
    assert store.status["collectors"] == DESIRED["collectors"]


def test_a_conflict_starts_over_from_a_fresh_read() -> None:
    store = FakeAddonStore()
    conflicts: list[None] = []
    races = iter([True, True])

    def racer(s: FakeAddonStore) -> None:
        if next(races, False):
            s.change_status(lambda st: st.setdefault("conditions", []).append(cond("Foreign")))

    store.before_replace = racer
    StatusWriter(store, owned=OWNED, on_conflict=lambda: conflicts.append(None)).write(DESIRED)
    assert len(conflicts) == store.conflicts == 2
    assert [c["type"] for c in store.status["conditions"]][:2] == ["Foreign", "Foreign"]
    assert len(store.puts) == 1


def test_retries_are_bounded() -> None:
    store = FakeAddonStore()
    store.before_replace = lambda s: s.change_spec({"again": True}) and None
    with pytest.raises(ConflictError, match="after 3 attempts"):
        StatusWriter(store, owned=OWNED, attempts=3).write(DESIRED)
    assert store.conflicts == 3 and store.puts == []


def test_a_missing_cr_is_reported_not_created() -> None:
    with pytest.raises(NotFoundError):
        StatusWriter(FakeAddonStore(obj=None), owned=OWNED).write(DESIRED)


def test_a_known_cr_saves_the_read() -> None:
    store = FakeAddonStore()
    known = store.get()
    reads = store.gets
    assert StatusWriter(store, owned=OWNED).write(DESIRED, known=known).written
    assert store.gets == reads and store.conflicts == 0


def test_a_stale_known_cr_costs_one_conflict_then_a_fresh_read() -> None:
    store = FakeAddonStore()
    stale = store.get()
    store.change_status(lambda st: st.setdefault("conditions", []).append(cond("Foreign")))
    assert StatusWriter(store, owned=OWNED).write(DESIRED, known=stale).written
    assert store.conflicts == 1
    assert store.status["conditions"][0]["type"] == "Foreign"
