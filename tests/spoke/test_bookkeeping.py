"""The acm profile's bookkeeping ConfigMap (`controller.spoke.bookkeeping`) on the in-memory
seam: created owned by the CR, replaced only when it changes, a 409 read again, a ConfigMap of
an earlier CR of the same name not resumed from, a document that is not JSON named as bad
stored state, nothing kept (a rolled-back first change) as no document."""

from __future__ import annotations

import json

import pytest

from controller.kube.fake import FakeKube
from controller.spoke.addon import AddonRef
from controller.spoke.bookkeeping import CONFIG_MAP, KEY, ConfigMapBookkeeping
from statemachines.errors import StoredStateError

REF = AddonRef("open-cluster-management-addon-observability", "observability-addon")
OWNER = {"metadata": {"name": REF.name, "uid": "uid-1"}}
DATA = {"collectors": [{"name": "metrics-collector", "state": "Available"}], "conditions": []}


def stored(kube: FakeKube) -> dict[str, object]:
    found = kube.stored(CONFIG_MAP, REF.namespace, "observability-addon-status")
    assert found is not None
    return found


def test_the_first_write_creates_the_configmap_owned_by_the_cr() -> None:
    kube = FakeKube()
    kept = ConfigMapBookkeeping(kube, REF)
    assert kept.read(OWNER) is None
    assert kept.write(DATA, OWNER)
    config_map = stored(kube)
    (owner,) = config_map["metadata"]["ownerReferences"]  # type: ignore[index]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "ObservabilityAddon",
        REF.name,
        "uid-1",
        True,
    )
    assert json.loads(config_map["data"][KEY]) == DATA  # type: ignore[index]
    assert kept.read(OWNER) == DATA


def test_an_unchanged_bookkeeping_costs_no_call() -> None:
    kube = FakeKube()
    kept = ConfigMapBookkeeping(kube, REF)
    kept.write(DATA, OWNER)
    calls = len(kube.calls)
    assert not kept.write(DATA, OWNER)
    assert len(kube.calls) == calls


def test_a_conflict_reads_again_and_writes_the_leaders_state() -> None:
    kube = FakeKube()
    kept = ConfigMapBookkeeping(kube, REF)
    kept.write(DATA, OWNER)
    kube.fail_next("replace", 409)
    newer = {**DATA, "conditions": [{"type": "Available"}]}
    assert kept.write(newer, OWNER)
    assert json.loads(stored(kube)["data"][KEY]) == newer  # type: ignore[index]


def test_the_configmap_of_an_earlier_cr_is_not_resumed_from_and_is_taken_over() -> None:
    kube = FakeKube()
    ConfigMapBookkeeping(kube, REF).write(DATA, OWNER)
    anew = {"metadata": {"name": REF.name, "uid": "uid-2"}}
    kept = ConfigMapBookkeeping(kube, REF)
    assert kept.read(anew) is None
    kept.write({"collectors": []}, anew)
    (owner,) = stored(kube)["metadata"]["ownerReferences"]  # type: ignore[index]
    assert owner["uid"] == "uid-2"


def test_a_document_that_is_not_json_is_bad_stored_state_naming_the_key() -> None:
    kube = FakeKube()
    kept = ConfigMapBookkeeping(kube, REF)
    kept.write(DATA, OWNER)
    config_map = stored(kube)
    config_map["data"] = {KEY: "{not json"}
    kube.put(CONFIG_MAP, config_map)
    with pytest.raises(StoredStateError) as error:
        ConfigMapBookkeeping(kube, REF).read(OWNER)
    assert f"data.{KEY}" in str(error.value)


def test_keeping_nothing_removes_the_document_and_creates_no_configmap() -> None:
    kube = FakeKube()
    kept = ConfigMapBookkeeping(kube, REF)
    assert not kept.write(None, OWNER)
    assert [c.op for c in kube.calls] == ["get"]
    kept.write(DATA, OWNER)
    assert kept.write(None, OWNER)  # a rolled-back first change: as if never written
    assert KEY not in stored(kube)["data"]  # type: ignore[operator]
    assert ConfigMapBookkeeping(kube, REF).read(OWNER) is None
