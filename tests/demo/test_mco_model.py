"""The demo's model of ACM's observability operator (MCO) writes as MCO's own status code does
(controller/demo/ocm_writers.py `acm`, controller.demo.mco.py; docs/spec.md §12.1 says
what was measured against MCO's code): the placementrule copy of all three standard types, on a
True/False value change only, as a merge patch without a resourceVersion, of the hub copies MCO
labels alone; the endpoint operator's aggregation by priority with unknown reasons as Degraded,
its full status update of the spoke CR and then of the hub copy (every other condition dropped),
and its 5-minute requeue."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from controller.demo.mco import EndpointStatus, aggregate, spoke_conditions
from controller.demo.ocm_writers import OcmWriters
from controller.kube.api import ADDON, ApiResource, Kube
from tests.hub.hubside import COPY, T1, acm, cond, hub_server
from tests.support import eventually, kube_of

NOW = datetime(2026, 11, 24, 3, 0, tzinfo=UTC)


def component(kind: str, reason: str, message: str = "") -> dict[str, Any]:
    return cond(kind, "True", reason, message)


def test_the_highest_priority_reason_leads_and_an_unknown_one_is_degraded_at_the_lowest() -> None:
    forwarding = component("MetricsCollector", "ForwardSuccessful")
    stale = component("UwlMetricsCollector", "ReportsStale", "no report")
    failing = component("UwlMetricsCollector", "ForwardFailed", "503")
    # a known reason outranks any unknown one, even Available's
    assert aggregate([forwarding, stale], NOW) == {
        "type": "Available", "status": "True", "reason": "ForwardSuccessful",
        "message": "observability-controller add-on is available.",
        "lastTransitionTime": "2026-11-24T03:00:00Z",
    }  # fmt: skip
    assert aggregate([forwarding, failing], NOW)["reason"] == "ForwardFailed"  # type: ignore[index]
    alone = aggregate([stale], NOW)
    assert alone is not None and (alone["type"], alone["reason"]) == ("Degraded", "ReportsStale")
    assert alone["message"] == "UwlMetricsCollector: no report"
    assert aggregate([cond("Available", "True", "X")], NOW) is None  # no component: no write


def test_a_pass_sets_every_standard_type_false_but_the_aggregate_and_writes_only_a_change() -> None:
    before = [cond("Available", "True", "ForwardSuccessful",
                   "observability-controller add-on is available."),
              component("MetricsCollector", "ForwardFailed", "503")]  # fmt: skip
    after = spoke_conditions(before, NOW)
    assert after is not None
    assert [(c["type"], c["status"], c["reason"]) for c in after] == [
        ("Available", "False", "ForwardSuccessful"),
        ("MetricsCollector", "True", "ForwardFailed"),
        ("Degraded", "True", "ForwardFailed"),
    ]
    assert spoke_conditions(after, NOW) is None


def test_placementrule_copies_all_three_types_on_a_value_change_without_a_resource_version() -> (
    None
):
    with hub_server() as hub:
        hub.addon_name = "observability-controller"
        hub.cluster("cluster1")
        hub.cluster("unlabelled")  # a copy MCO did not make: never copied
        hub.custom.patch_namespaced_custom_object(
            ADDON.group, ADDON.version, "unlabelled", ADDON.plural, COPY,
            {"metadata": {"labels": {"owner": None}}},
        )  # fmt: skip
        hub.set_copy("cluster1", acm("Available", "ForwardSuccessful"))
        hub.set_copy("unlabelled", acm("Degraded", "ForwardFailed"))
        kube = Recorded(kube_of(hub.server, "admin"))
        ocm = OcmWriters(kube, addon_name=hub.addon_name, acm=True)  # type: ignore[arg-type]
        ocm.start()
        try:
            three = {"Available": ("True", "ForwardSuccessful"),
                     "Progressing": ("False", "ForwardSuccessful"),
                     "Degraded": ("False", "ForwardSuccessful")}  # fmt: skip
            eventually(lambda: _of(hub.conditions("cluster1")) == three, "three types copied")
            # a reason change alone: nothing written
            hub.set_copy("cluster1", acm("Available", "UpdateSuccessful", at=T1))
            assert ocm.settled(5)
            assert _of(hub.conditions("cluster1"))["Available"] == ("True", "ForwardSuccessful")
            hub.set_copy("cluster1", acm("Degraded", "ForwardFailed", at=T1))
            eventually(lambda: _of(hub.conditions("cluster1"))["Degraded"] == (
                "True", "ForwardFailed"), "a value change copied")  # fmt: skip
        finally:
            ocm.stop()
        assert "Degraded" not in _of(hub.conditions("unlabelled"))
    copied = [p for p in kube.patches if _of(p["status"]["conditions"]).get("Degraded")]
    assert copied and all("metadata" not in p for p in copied)  # no resourceVersion


def test_the_endpoint_operator_writes_the_spoke_cr_then_the_hub_copy_whole() -> None:
    with hub_server() as hub:
        hub.cluster("cluster1")
        kube = kube_of(hub.server, "admin")
        spoke_ns = "cluster1"  # the spoke CR: here the hub copy's namespace holds one too
        hub.core.create_namespace({"metadata": {"name": "spoke"}})
        kube.create(ADDON, "spoke", {"apiVersion": ADDON.api_version, "kind": ADDON.kind,
                                     "metadata": {"name": COPY}, "spec": {}})  # fmt: skip
        # the hub copy holds a condition someone else wrote: the full update drops it
        hub.set_copy(spoke_ns, [cond("ProjectOwn", "True", "Mine")])
        mco = EndpointStatus(kube, kube, namespace="spoke", hub_namespace=spoke_ns,
                             time_scale=300.0)  # its 5 minutes in a second  # fmt: skip
        mco.start()
        try:
            eventually(lambda: mco.informer.synced, "listed")  # a create is no event to MCO
            stored = kube.get(ADDON, "spoke", COPY)
            stored["status"] = {"conditions": [
                component("MetricsCollector", "ForwardSuccessful"),
                component("UwlMetricsCollector", "NoReportYet")]}  # fmt: skip
            kube.replace_status(ADDON, "spoke", COPY, stored)
            eventually(lambda: _of(_copy(kube, spoke_ns)).get("Available") == (
                "True", "ForwardSuccessful"), "the aggregate copied to the hub")  # fmt: skip
            assert "ProjectOwn" not in _of(_copy(kube, spoke_ns))
            # someone writes the hub copy over: MCO's requeue puts its own back within 5 min
            hub.set_copy(spoke_ns, [cond("ProjectOwn", "True", "Mine")])
            eventually(lambda: "ProjectOwn" not in _of(_copy(kube, spoke_ns)), "the requeue")
        finally:
            mco.stop()


class Recorded:
    """The real seam, with every status patch kept to look at."""

    def __init__(self, kube: Kube) -> None:
        self._kube = kube
        self.patches: list[dict[str, Any]] = []

    def patch_status(self, resource: ApiResource, namespace: str, name: str,
                     patch: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
        self.patches.append(patch)
        return self._kube.patch_status(resource, namespace, name, patch)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._kube, name)


def _copy(kube: Any, namespace: str) -> list[dict[str, Any]]:
    return list((kube.get(ADDON, namespace, COPY).get("status") or {}).get("conditions") or [])


def _of(conditions: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in conditions}
