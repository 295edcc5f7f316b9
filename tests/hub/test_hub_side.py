"""The hub side against an embedded hub serving the upstream `ManagedClusterAddOn` CRD, through
the real kubernetes client over HTTP (docs/spec.md §12), in both profiles' shapes
of the hub copy."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException
from prometheus_client import CollectorRegistry

from controller.hub.app import hub_side
from controller.hub.mirror import CLUSTER_LABEL
from controller.hub.mirror import MANAGED_CLUSTER_ADDON as MCA
from controller.kube.kubeconfig import kubeconfig_yaml
from kubesim import APIServer, RequestInfo
from statemachines.conditions import format_time
from tests.hub.hubside import (
    ADDON,
    COPY_CRD,
    HUB_SIDE,
    HUB_USER,
    T1,
    TOKENS,
    Hub,
    acm,
    cond,
    hub_server,
    replica,
    sample,
    seed,
    standard,
)
from tests.support import eventually

pytestmark = pytest.mark.integration

OTHER = cond("ManifestApplied", "True", "AddonManifestApplied", "manifests applied")


@pytest.fixture
def hub() -> Iterator[Hub]:
    with hub_server() as made:
        yield made


@pytest.mark.parametrize("shape", [seed, acm], ids=["seed", "acm"])
def test_the_standard_conditions_of_a_hub_copy_are_mirrored_onto_its_managed_cluster_addon(
    hub: Hub, shape: Any
) -> None:
    hub.cluster("cluster1")
    hub.set_copy("cluster1", shape())
    with replica(hub):
        eventually(lambda: hub.conditions("cluster1") == standard(shape()), "the mirror")


@pytest.mark.parametrize("shape", [seed, acm], ids=["seed", "acm"])
def test_a_change_of_the_hub_copy_is_mirrored(hub: Hub, shape: Any) -> None:
    hub.cluster("cluster1")
    hub.set_copy("cluster1", shape())
    with replica(hub) as made:
        eventually(lambda: hub.conditions("cluster1") == standard(shape()), "the first mirror")
        changed = shape(true="Available", reason="UpdateSuccessful", at=T1)
        hub.set_copy("cluster1", changed)
        eventually(lambda: hub.conditions("cluster1") == standard(changed), "the change")
        assert made.side.wait_idle(5)
    assert hub.writes("cluster1") == 2


def test_a_reason_only_change_with_the_same_status_is_mirrored(hub: Hub) -> None:
    hub.cluster("cluster1")
    hub.set_copy("cluster1", acm(true="Degraded", reason="ForwardFailed"))
    with replica(hub):
        first = standard(acm(true="Degraded", reason="ForwardFailed"))
        eventually(lambda: hub.conditions("cluster1") == first, "the first mirror")
        hub.set_copy("cluster1", acm(true="Degraded", reason="UpdateFailed", message="why"))
        eventually(
            lambda: hub.conditions("cluster1") == standard(acm("Degraded", "UpdateFailed", "why")),
            "the reason and message change",
        )


def test_other_writers_conditions_are_untouched(hub: Hub) -> None:
    hub.cluster("cluster1")
    hub.set_addon_conditions("cluster1", [OTHER])
    hub.set_copy("cluster1", seed())
    with replica(hub):
        eventually(lambda: hub.conditions("cluster1") == [OTHER, *standard(seed())], "mirror")


def test_nothing_is_written_when_the_managed_cluster_addon_already_says_the_same(
    hub: Hub,
) -> None:
    hub.cluster("cluster1")
    hub.set_addon_conditions("cluster1", standard(seed()))
    hub.set_copy("cluster1", seed())
    before = hub.writes("cluster1")
    with replica(hub, resync=0.05) as made:
        assert made.side.wait_idle(5)
        made.side.resync()
        assert made.side.wait_idle(5)
    assert hub.writes("cluster1") == before


def test_a_write_that_meets_a_newer_object_reads_it_again_and_keeps_the_other_write(
    hub: Hub,
) -> None:
    """409 Conflict, for real: another writer changes the ManagedClusterAddOn between what the
    hub side's watch last saw and its write; the write fails on the stale resourceVersion, the
    hub side reads afresh and writes again, and both writes are in the result."""
    hub.cluster("cluster1")
    hub.set_copy("cluster1", seed())
    raced: list[bool] = []

    def race(info: RequestInfo) -> bool:
        if (
            info.resource == MCA.plural
            and info.subresource == "status"
            and info.user == HUB_USER
            and not raced
        ):
            raced.append(True)  # straight to storage: this runs inside the server's request
            stored = hub.server.get_object(MCA.group, MCA.version, MCA.plural, "cluster1", ADDON)
            assert stored is not None
            stored["status"] = {"conditions": [OTHER]}
            hub.server.put_object(MCA.group, MCA.version, MCA.plural, stored)
        return False

    hub.server.faults.delay(0.001, match=race)
    registry = CollectorRegistry()
    with replica(hub, registry=registry):
        eventually(lambda: hub.conditions("cluster1") == [OTHER, *standard(seed())], "retry")
    assert raced
    assert sample(registry, "addon_status_hub_mirror_errors_total", kind="conflict") == 1
    tried = hub.server.count_requests(
        verbs=("patch",), resource=MCA.plural, subresource="status", successful=False
    )
    assert (tried, hub.writes(user=HUB_USER)) == (2, 1)


def test_a_foreign_change_of_an_owned_condition_is_repaired_once_and_then_not_fought(
    hub: Hub,
) -> None:
    hub.cluster("cluster1")
    hub.set_copy("cluster1", seed("Degraded", "ForwardFailure"))
    registry = CollectorRegistry()
    wanted = standard(seed("Degraded", "ForwardFailure"))
    with replica(hub, registry=registry, resync=0.2) as made:
        eventually(lambda: hub.conditions("cluster1") == wanted, "the mirror")
        tampered = [cond("Degraded", "False", "Tampered"), *wanted[1:]]
        hub.set_addon_conditions("cluster1", tampered)
        eventually(lambda: hub.conditions("cluster1") == wanted, "the repair")
        hub.set_addon_conditions("cluster1", tampered)
        eventually(lambda: sample(registry, "addon_status_hub_mirror_contested_total") == 1, "told")
        made.side.resync()  # and a resync does not fight either
        assert made.side.wait_idle(5)
        assert hub.conditions("cluster1") == tampered
        hub.set_copy("cluster1", seed("Available", "ForwardSuccessful", at=T1))
        recovered = standard(seed("Available", "ForwardSuccessful", at=T1))
        eventually(lambda: hub.conditions("cluster1") == recovered, "the copy's next state")
    assert sample(registry, "addon_status_hub_mirror_repairs_total") == 1
    assert hub.writes("cluster1", user=HUB_USER) == 3


def test_ocm_writes_of_available_and_progressing_are_neither_answered_nor_overwritten(
    hub: Hub,
) -> None:
    """OCM's health check owns `Available` and its addon manager `Progressing` (docs/spec.md
    §12.1): the hub side never writes them, keeps them as they are when it writes, and answers
    no change of `Progressing` and no change of `Available` shorter than the path's window (a
    rolling restart of the agent, §12.2)."""
    hub.cluster("cluster1")
    hub.set_copy("cluster1", seed("Available", "ForwardSuccessful"))
    now = format_time(datetime.now(UTC))  # each flip begins now: the 2-minute window is ahead
    ocm = [
        cond("Available", "False", "ProbeUnavailable", "the agent is not ready", at=now),
        cond("Progressing", "True", "Progressing", "applying"),
    ]
    with replica(hub) as made:
        eventually(lambda: standard(hub.conditions("cluster1")) != [], "the mirror")
        assert made.side.wait_idle(5)
        written = hub.writes("cluster1", user=HUB_USER)
        for round_ in range(5):
            mine = standard(hub.conditions("cluster1"))
            flipped = "True" if round_ % 2 else "False"
            hub.set_addon_conditions("cluster1", [{**ocm[0], "status": flipped}, ocm[1], *mine])
            assert made.side.wait_idle(5)
        assert hub.writes("cluster1", user=HUB_USER) == written == 1
        kinds = [c["type"] for c in hub.conditions("cluster1")]
        assert kinds == ["Available", "Progressing", "Degraded", "Disabled", "NotSupported"]


def test_a_namespace_ocm_did_not_make_for_a_cluster_is_not_a_cluster(hub: Hub) -> None:
    """A hub that manages itself keeps its own spoke's CR in the addon's namespace: no
    ManagedCluster, no `open-cluster-management.io/cluster-name` label, no mirror, no series."""
    hub.cluster("cluster1")
    hub.cluster("open-cluster-management-addon-observability")
    hub.core.patch_namespace(
        "open-cluster-management-addon-observability",
        {"metadata": {"labels": {CLUSTER_LABEL: None}}},
    )
    for namespace in ("cluster1", "open-cluster-management-addon-observability"):
        hub.set_copy(namespace, seed())
    registry = CollectorRegistry()
    with replica(hub, registry=registry) as made:
        eventually(lambda: hub.conditions("cluster1") == standard(seed()), "the cluster")
        assert made.side.wait_idle(5)
        assert [s.cluster for s in made.side.cluster_states()] == ["cluster1"]
    assert hub.conditions("open-cluster-management-addon-observability") == []
    assert sample(registry, "addon_status_hub_mirror_errors_total", kind="not_found") == 0


def test_a_missing_managed_cluster_addon_is_skipped_then_mirrored_when_it_appears(
    hub: Hub,
) -> None:
    hub.cluster("early", addon=False)
    hub.cluster("other")
    hub.set_copy("early", seed())
    hub.set_copy("other", acm())
    registry = CollectorRegistry()
    with replica(hub, registry=registry):
        eventually(lambda: hub.conditions("other") == standard(acm()), "the other cluster")
        eventually(
            lambda: sample(registry, "addon_status_hub_mirror_errors_total", kind="not_found") >= 2,
            "retries with backoff",
        )
        hub.create_addon("early")
        eventually(lambda: hub.conditions("early") == standard(seed()), "the late one")


def test_only_the_leader_of_two_hub_replicas_writes(hub: Hub) -> None:
    hub.cluster("cluster1")
    hub.set_copy("cluster1", seed())
    election = {
        "leader_elect": True,
        "lease_namespace": HUB_SIDE.namespace,  # where its Role lets it hold the Lease
        "lease_duration": 3.0,
        "renew_deadline": 2.0,
        "retry_period": 0.1,
    }
    with replica(hub, token="hub-a", **election) as first:
        eventually(lambda: first.leading, "the first replica leads")
        with replica(hub, token="hub-b", **election) as second:
            eventually(lambda: hub.conditions("cluster1") == standard(seed()), "the mirror")
            hub.set_copy("cluster1", seed("Degraded", "UpdateFailed"))
            eventually(
                lambda: hub.conditions("cluster1") == standard(seed("Degraded", "UpdateFailed")),
                "the change",
            )
            assert not second.leading
            # both replicas are the one ServiceAccount: two writes in all, the leader's
            assert hub.writes(user=HUB_USER) == 2
            first.stop()  # releases the Lease: the second takes over at once
            eventually(lambda: second.leading, "the second replica leads")
            hub.set_copy("cluster1", seed("Progressing", "UpdateSuccessful"))
            eventually(
                lambda: (
                    hub.conditions("cluster1") == standard(seed("Progressing", "UpdateSuccessful"))
                ),
                "the change after the failover",
            )
    assert hub.writes(user=HUB_USER) == 3  # and one of the second's, after the failover


def test_only_namespaces_the_label_selector_picks_are_mirrored(hub: Hub) -> None:
    hub.cluster("picked", labels={"fleet": "prod"})
    hub.cluster("ignored")
    for cluster in ("picked", "ignored"):
        hub.set_copy(cluster, seed())
    with replica(hub, namespace_selector="fleet=prod") as made:
        eventually(lambda: hub.conditions("picked") == standard(seed()), "the picked one")
        assert made.side.wait_idle(5)
    assert hub.conditions("ignored") == []


def test_the_metrics_count_writes_errors_by_kind_and_clusters_by_state(hub: Hub) -> None:
    registry = CollectorRegistry()
    hub.cluster("a")
    hub.cluster("b")
    hub.set_copy("a", seed())
    hub.set_copy("b", acm())
    with replica(hub, registry=registry) as made:
        for kind in ("conflict", "not_found", "unavailable", "invalid", "forbidden"):
            assert (
                registry.get_sample_value("addon_status_hub_mirror_errors_total", {"kind": kind})
                is not None
            )
        eventually(lambda: hub.conditions("b") == standard(acm()), "the mirror")
        assert made.side.wait_idle(5)
        states = {
            state: sample(registry, "addon_status_hub_mirror_clusters", state=state)
            for state in ("Available", "Degraded", "Disabled", "Unknown")
        }
    assert states == {"Available": 1, "Degraded": 1, "Disabled": 0, "Unknown": 0}
    assert sample(registry, "addon_status_hub_mirror_writes_total") == 2


def test_kubesim_prunes_a_managed_cluster_addon_status_to_the_upstream_schema(hub: Hub) -> None:
    """kube-apiserver prunes fields a structural schema does not declare (on a status write
    too) and refuses a condition without the fields the schema requires (422): the hub side's
    five fields are all declared, anything more would be dropped."""
    hub.cluster("cluster1")
    obj = hub.addon("cluster1")
    extra = {**cond("Available", "True", "UpdateSuccessful"), "severity": "Info"}
    obj["status"] = {"conditions": [extra], "surprise": 1}
    stored = hub.custom.replace_namespaced_custom_object_status(
        MCA.group, MCA.version, "cluster1", MCA.plural, ADDON, obj
    )
    assert stored["status"] == {"conditions": [cond("Available", "True", "UpdateSuccessful")]}
    obj = hub.addon("cluster1")
    obj["status"] = {"conditions": [{"type": "Available", "status": "True"}]}
    with pytest.raises(ApiException) as refused:
        hub.custom.replace_namespaced_custom_object_status(
            MCA.group, MCA.version, "cluster1", MCA.plural, ADDON, obj
        )
    assert refused.value.status == 422


def test_a_hub_without_the_managed_cluster_addon_crd_warns_once_and_keeps_retrying(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = CollectorRegistry()
    with APIServer([COPY_CRD], tokens=TOKENS) as server:
        hub = Hub(server)
        try:
            hub.cluster("cluster1", addon=False)
            hub.set_copy("cluster1", seed())
            with caplog.at_level("WARNING"), replica(hub, registry=registry) as made:
                eventually(
                    lambda: (
                        sample(registry, "addon_status_hub_mirror_errors_total", kind="not_found")
                        >= 3
                    ),
                    "retries",
                )
                assert made.side.alive
        finally:
            hub.close()
    warnings = [m for m in caplog.messages if "no ManagedClusterAddOn" in m]
    assert len(warnings) == 1
    assert "its CRD is not installed on the hub" in warnings[0]


def test_a_hub_side_refused_the_managed_cluster_addons_says_it_is_refused(
    hub: Hub, caplog: pytest.LogCaptureFixture
) -> None:
    """A 403 (a ClusterRole naming another ManagedClusterAddOn) is not "not enabled": the log
    says the hub side was refused, and what to grant."""
    hub.cluster("cluster1")
    hub.set_copy("cluster1", seed())

    def listing_addons(info: RequestInfo) -> bool:
        return info.resource == MCA.plural and info.verb in ("list", "watch")

    hub.server.faults.fail_next(1000, 403, match=listing_addons)
    with caplog.at_level("WARNING"), replica(hub):
        eventually(lambda: any("refused" in m for m in caplog.messages), "the refusal told")
    told = [m for m in caplog.messages if "ManagedClusterAddOn cluster1/" in m]
    assert told and "was refused" in told[0] and "not enabled" not in told[0]


def test_a_write_the_server_refuses_is_retried_with_backoff_and_the_others_go_on(
    hub: Hub,
) -> None:
    hub.cluster("refused")
    hub.cluster("fine")
    hub.set_copy("refused", seed())
    hub.set_copy("fine", acm())

    def refused(info: RequestInfo) -> bool:
        return info.namespace == "refused" and info.subresource == "status"

    hub.server.faults.fail_next(2, 422, match=refused, message="refused for the test")
    registry = CollectorRegistry()
    with replica(hub, registry=registry):
        eventually(lambda: hub.conditions("fine") == standard(acm()), "the other cluster")
        eventually(lambda: hub.conditions("refused") == standard(seed()), "after the refusals")
    assert sample(registry, "addon_status_hub_mirror_errors_total", kind="invalid") == 2


def test_hub_side_runs_the_hub_side_in_process_from_a_kubeconfig(hub: Hub, tmp_path: Path) -> None:
    """The demo's one call: the hub side on the hub a kubeconfig names, stopped with the block."""
    kubeconfig = tmp_path / "hub.kubeconfig"
    kubeconfig.write_text(kubeconfig_yaml(server=hub.server.url, token="hub-a"), encoding="utf-8")
    hub.cluster("cluster1")
    hub.set_copy("cluster1", acm())
    with hub_side(kubeconfig) as running:
        eventually(lambda: hub.conditions("cluster1") == standard(acm()), "the mirror")
        assert running.leading
    assert not running.side.alive


def _store_as_is(hub: Hub, cluster: str, status: object) -> None:
    """A hub copy stored under a laxer schema than ours (another CRD version, an edit of
    etcd): kubesim's storage takes it as given, as etcd would."""
    from controller.kube.api import ADDON as COPY

    stored = hub.server.get_object(
        COPY.group, COPY.version, COPY.plural, cluster, "observability-addon"
    )
    assert stored is not None
    hub.server.put_object(COPY.group, COPY.version, COPY.plural, {**stored, "status": status})


@pytest.mark.parametrize(
    "status",
    [
        pytest.param({"conditions": [{"type": "Available", "status": ["True"]}]}, id="status-list"),
        pytest.param({"conditions": "Available"}, id="conditions-string"),
        pytest.param("Available", id="status-string"),
        pytest.param({"conditions": [["Available"], 7]}, id="conditions-not-objects"),
    ],
)
def test_the_hub_side_skips_a_malformed_copy_and_mirrors_the_rest(hub: Hub, status: object) -> None:
    """One copy no cluster's controller could have written does not crash the watch or keep
    any other cluster from being mirrored; it is counted, and told once."""
    for cluster in ("broken", "fine"):
        hub.cluster(cluster)
    hub.set_copy("fine", seed())
    _store_as_is(hub, "broken", status)
    registry = CollectorRegistry()
    with replica(hub, registry=registry) as made:
        eventually(lambda: hub.conditions("fine") == standard(seed()), "the other cluster")
        assert made.side.alive and made.side.synced
        hub.set_copy("fine", seed(true="Degraded", reason="ForwardFailure"))
        eventually(
            lambda: (
                hub.conditions("fine") == standard(seed(true="Degraded", reason="ForwardFailure"))
            ),
            "a later change of the other cluster",
        )
    assert sample(registry, "addon_status_hub_mirror_malformed_copies_total") == 1


def test_a_condition_the_managed_cluster_addon_would_refuse_is_left_out_never_blocking(
    hub: Hub,
) -> None:
    """A bad reason is left out; a message over the schema's 32,768 characters is cut: the
    cluster's other conditions are mirrored, and no write is refused with 422."""
    hub.cluster("cluster1")
    conditions = seed(true="Degraded", reason="ForwardFailure")
    conditions[3] = {**conditions[3], "reason": "not a reason!"}
    conditions[2] = {**conditions[2], "message": "m" * 40_000}
    _store_as_is(hub, "cluster1", {"conditions": conditions})
    registry = CollectorRegistry()
    with replica(hub, registry=registry):
        eventually(lambda: len(hub.conditions("cluster1")) == 2, "the mirror")
    mirrored = {c["type"]: c for c in hub.conditions("cluster1")}
    assert "Disabled" not in mirrored
    assert len(mirrored["Degraded"]["message"]) == 32768
    assert mirrored["Degraded"]["message"].endswith("…")
    assert sample(registry, "addon_status_hub_mirror_errors_total", kind="invalid") == 0
    assert sample(registry, "addon_status_hub_mirror_malformed_copies_total") == 1


def test_each_cluster_state_is_a_series_named_after_its_cluster_and_goes_with_its_copy(
    hub: Hub,
) -> None:
    """`addon_status_hub_cluster_state{cluster, type, reason}` and its since-timestamp, one of
    each per cluster (an alert names the cluster and says why); a cluster whose state moves
    keeps one series, and one whose copy is deleted has none left."""
    registry = CollectorRegistry()
    hub.cluster("a")
    hub.cluster("b")
    hub.set_copy("a", seed("Degraded", "ForwardFailure", at=T1))
    hub.set_copy("b", acm("Available", "ForwardSuccessful"))
    with replica(hub, registry=registry) as made:
        eventually(
            lambda: hub.conditions("a") == standard(seed("Degraded", "ForwardFailure", at=T1))
        )
        assert made.side.wait_idle(5)
        states = _cluster_states(registry)
        assert states == {
            ("a", "Degraded", "ForwardFailure"): 1.0,
            ("b", "Available", "ForwardSuccessful"): 1.0,
        }
        since = registry.get_sample_value(
            "addon_status_hub_cluster_state_since_timestamp_seconds", {"cluster": "a"}
        )
        assert since == datetime(2026, 11, 24, 2, tzinfo=UTC).timestamp()
        hub.set_copy("a", seed("Available", "ForwardSuccessful", at=T1))
        eventually(lambda: ("a", "Available", "ForwardSuccessful") in _cluster_states(registry))
        assert len([k for k in _cluster_states(registry) if k[0] == "a"]) == 1
        hub.delete_copy("b")
        eventually(lambda: all(k[0] != "b" for k in _cluster_states(registry)), "b's series gone")


def _cluster_states(registry: CollectorRegistry) -> dict[tuple[str, str, str], float]:
    return {
        (s.labels["cluster"], s.labels["type"], s.labels["reason"]): s.value
        for family in registry.collect()
        if family.name == "addon_status_hub_cluster_state"
        for s in family.samples
    }


def test_a_managed_cluster_addon_a_list_map_could_not_hold_is_mirrored_as_one(
    hub: Hub, caplog: pytest.LogCaptureFixture
) -> None:
    """Stored under a laxer schema (or by a server that is not kube-apiserver): an entry that is
    no object and a second `Degraded`. kube-apiserver's list map keeps one entry a type, so the
    hub side writes it back as one, and mirrors the copy; no traceback, no endless retry."""
    hub.cluster("cluster1")
    hub.set_copy("cluster1", seed("Degraded", "ForwardFailure"))
    broken = hub.addon("cluster1")
    degraded = cond("Degraded", "False", "Old")
    broken["status"] = {"conditions": ["junk", degraded, OTHER, {**degraded, "reason": "Older"}]}
    hub.server.put_object(MCA.group, MCA.version, MCA.plural, broken)  # no validation
    registry = CollectorRegistry()
    with replica(hub, registry=registry) as made:
        eventually(
            lambda: (
                hub.conditions("cluster1")[0] == standard(seed("Degraded", "ForwardFailure"))[0]
            ),
            "the mirror",
        )
        assert made.side.wait_idle(5)
    assert [c["type"] for c in hub.conditions("cluster1")] == [
        "Degraded", "ManifestApplied", "Disabled", "NotSupported",
    ]  # fmt: skip
    assert sample(registry, "addon_status_hub_mirror_errors_total", kind="invalid") == 0
    assert "Traceback" not in caplog.text


def test_another_writers_burst_is_retried_quietly_and_a_lasting_conflict_is_told(
    hub: Hub, caplog: pytest.LogCaptureFixture
) -> None:
    """OCM's addon manager writes a new ManagedClusterAddOn six or seven times in its first half
    second (seen on OCM v1.3): a first write it outruns is retried after backoff with no
    warning; conflicts that outlast a second round of attempts are told once. A round is the
    write, and after its 409 one read and at most one write. Each 409 is counted either way, as
    lost to another writer."""
    for cluster in ("burst", "lasting"):
        hub.cluster(cluster)
        hub.set_copy(cluster, seed())

    def status_of(cluster: str) -> Callable[[RequestInfo], bool]:
        return lambda info: info.namespace == cluster and info.subresource == "status"

    hub.server.faults.fail_next(2, 409, match=status_of("burst"))  # one round of attempts
    hub.server.faults.fail_next(4, 409, match=status_of("lasting"))  # two rounds
    registry = CollectorRegistry()
    with caplog.at_level(logging.INFO, logger="controller.hub"), replica(hub, registry=registry):
        eventually(lambda: hub.conditions("burst") == standard(seed()), "after the burst")
        eventually(lambda: hub.conditions("lasting") == standard(seed()), "after the conflicts")
    told = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert not any("burst" in line for line in told)
    assert [line for line in told if "lasting" in line and "conflict" in line] != []
    assert len([line for line in told if "lasting" in line]) == 1
    assert sample(registry, "addon_status_hub_mirror_errors_total", kind="conflict") == 6
    assert sample(registry, "addon_status_hub_mirror_conflicts_lost_total") == 6
