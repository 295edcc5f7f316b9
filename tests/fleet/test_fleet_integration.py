"""`addon-status fleet` over HTTP against an embedded hub serving the addon CRD (the hub
copies written with the official `kubernetes` client), with a hub copy in each of several
cluster namespaces: the rows come from ONE list call across all namespaces (a page per call
on a larger hub); the filters and the JSON shape end to end; a bad
kubeconfig is a one-line start-up error and an unreachable hub a one-line read error; `--watch`
draws the fleet, then sees a change, and lists again after 410 Gone."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from controller.cli import main
from controller.fleet.command import watch_fleet
from controller.fleet.copies import list_hub_copies
from controller.fleet.view import NAME_KIND, Filters, Output, Row, render_rows
from controller.hub.mirror import cluster_namespace
from controller.hub.ocm import MANAGED_CLUSTER
from controller.kube.connection import Connection
from controller.kube.kubeconfig import KubeconfigSource, kubeconfig_yaml
from controller.kube.rest import RestKube
from controller.spoke.addon import GROUP, PLURAL, VERSION
from kubesim import APIServer
from tests.spoke.replication.conftest import ADMIN, CRD, TOKENS, addon, api_client
from tests.support import eventually

pytestmark = pytest.mark.integration
MANAGED_CLUSTER_CRD = (
    Path(__file__).resolve().parents[1]
    / "data"
    / "crds"
    / "managedclusters.cluster.open-cluster-management.io.yaml"
)
CLUSTERS = ("edge-1", "edge-2", "prod-1")
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def write_status(hub: APIServer, cluster: str, state: str, reason: str) -> None:
    """The hub copy's status as replication writes it: through the status subresource."""
    types = ("Available", "Progressing", "Degraded", "Disabled", "NotSupported")
    conditions = [
        {"type": t, "status": "True" if t == state else "False", "reason": reason,
         "message": f"{cluster}: {reason}", "lastTransitionTime": "2026-03-01T11:00:00Z"}
        for t in types
    ]  # fmt: skip
    with api_client(hub) as admin:
        api = client.CustomObjectsApi(admin)
        obj: Any = api.get_namespaced_custom_object(GROUP, VERSION, cluster, PLURAL, addon("")
                                                    ["metadata"]["name"])  # fmt: skip
        obj["status"] = {"conditions": conditions}
        api.replace_namespaced_custom_object_status(
            GROUP, VERSION, cluster, PLURAL, obj["metadata"]["name"], obj
        )


@pytest.fixture
def hub() -> Iterator[APIServer]:
    with APIServer([CRD, MANAGED_CLUSTER_CRD], tokens=TOKENS,
                   namespaces=["default", "hub-own"]) as server:  # fmt: skip
        for cluster in CLUSTERS:  # as OCM's registration makes them
            server.put_object("", "v1", "namespaces", cluster_namespace(cluster))
            labels = {"env": cluster.split("-")[0]}  # edge or prod
            managed = {"apiVersion": MANAGED_CLUSTER.api_version, "kind": MANAGED_CLUSTER.kind,
                       "metadata": {"name": cluster, "labels": labels}, "spec": {}}  # fmt: skip
            group, version, plural = (
                MANAGED_CLUSTER.group,
                MANAGED_CLUSTER.version,
                "managedclusters",
            )
            server.put_object(group, version, plural, managed)
        with api_client(server) as admin:
            api = client.CustomObjectsApi(admin)
            for cluster in (*CLUSTERS, "hub-own"):  # hub-own: a hub that manages itself
                api.create_namespaced_custom_object(GROUP, VERSION, cluster, PLURAL,
                                                    addon(cluster))  # fmt: skip
        write_status(server, "edge-1", "Available", "ForwardSuccessful")
        write_status(server, "edge-2", "Degraded", "ForwardFailure")
        write_status(server, "prod-1", "Available", "ForwardSuccessful")
        yield server


@pytest.fixture
def kubeconfig(hub: APIServer, tmp_path: Path) -> Path:
    path = tmp_path / "hub-kubeconfig"
    path.write_text(kubeconfig_yaml(server=hub.url, token=ADMIN), encoding="utf-8")
    return path


def fleet_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["fleet", "--format", "json", *args]) == 0, capsys.readouterr().err
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


def test_fleet_lists_every_cluster_in_one_call_and_no_namespace_that_is_no_cluster(
    hub: APIServer, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One list of the copies and one of the namespaces OCM made for clusters (docs/spec.md
    docs/spec.md §12): `hub-own`, a hub's own namespace holding a copy, is no row."""
    hub.clear_audit()
    document = fleet_json(capsys, "--kubeconfig", str(kubeconfig))
    assert [(c["cluster"], c["state"]) for c in document["clusters"]] == [
        ("edge-1", "Available"), ("edge-2", "Degraded"), ("prod-1", "Available")]  # fmt: skip
    assert hub.count_requests(verbs=["list"], resource=PLURAL) == 1
    assert hub.count_requests(verbs=["list"], resource="namespaces") == 1
    # and one GET /version, for its Date: the ages are on the hub's clock (clock.py)
    assert [r.path for r in hub.audit if r.verb == "get"] == ["/version"]
    assert hub.count_requests(verbs=["get", "list", "watch"]) == 3


def test_fleet_reads_the_hub_a_page_at_a_time(hub: APIServer) -> None:
    """As `kubectl get --chunk-size`: `limit`, then each `continue` token, one call a page."""
    hub.clear_audit()
    with Connection(hub.url, token=ADMIN) as connection:
        listing = list_hub_copies(RestKube(connection), page=2)
    assert [r.cluster for r in listing.rows] == sorted([*CLUSTERS, "hub-own"])
    assert listing.calls == 2 == hub.count_requests(verbs=["list"], resource=PLURAL)


def test_fleet_filters_end_to_end(kubeconfig: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = fleet_json(capsys, "--kubeconfig", str(kubeconfig), "--not", "Available",
                          "--cluster", "edge-*")  # fmt: skip
    assert [c["cluster"] for c in document["clusters"]] == ["edge-2"]
    assert document["total"] == 3 and document["summary"]["states"] == {"Degraded": 1}


def test_a_label_selector_on_the_managed_clusters_slices_the_fleet(
    hub: APIServer, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = fleet_json(capsys, "--kubeconfig", str(kubeconfig), "-l", "env=edge")
    assert [c["cluster"] for c in document["clusters"]] == ["edge-1", "edge-2"]
    assert hub.count_requests(verbs=["list"], resource="managedclusters") == 1
    assert main(["fleet", "--kubeconfig", str(kubeconfig), "-o", "name", "-l", "env!=edge"]) == 0
    assert capsys.readouterr().out.split() == [f"{NAME_KIND}/prod-1"]


@pytest.mark.parametrize("selector", ["env in (", "a=b=c", "env=prod,"])
def test_a_malformed_selector_is_a_bad_flag_exit_2(
    hub: APIServer, kubeconfig: Path, capsys: pytest.CaptureFixture[str], selector: str
) -> None:
    """`fleet --help`: 2 for a bad flag. The hub parses the selector, as kube-apiserver does
    for kubectl, and refuses it with 400."""
    for watch in ([], ["--watch"]):
        assert main(["fleet", "--kubeconfig", str(kubeconfig), "-l", selector, *watch]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("addon-status fleet: -l/--selector: ")
        assert "unable to parse requirement" in err


@pytest.mark.parametrize("written", ["degraded", "DEGRADED", "Degraded"])
def test_a_state_is_read_in_any_case(
    kubeconfig: Path, capsys: pytest.CaptureFixture[str], written: str
) -> None:
    document = fleet_json(capsys, "--kubeconfig", str(kubeconfig), "--state", written)
    assert [c["cluster"] for c in document["clusters"]] == ["edge-2"]
    not_available = fleet_json(capsys, "--kubeconfig", str(kubeconfig), "--not", "available")
    assert [c["cluster"] for c in not_available["clusters"]] == ["edge-2"]


def test_fleet_table_reads_the_kubeconfig_from_the_environment(
    kubeconfig: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", f"{kubeconfig.parent / 'gone'}:{kubeconfig}")  # kubectl's list
    assert main(["fleet", "--state", "Degraded"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[:3] == ["edge-2", "Degraded", "ForwardFailure"]
    assert lines[-1].startswith("1 cluster: 1 Degraded; longest Degraded: edge-2 for ")


def test_fleet_with_a_bad_kubeconfig_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "broken"
    path.write_text("clusters: [", encoding="utf-8")
    assert main(["fleet", "--kubeconfig", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}: kubeconfig is not valid YAML" in err


def test_fleet_with_an_unreachable_hub_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with APIServer([CRD]) as gone:
        url = gone.url
    path = tmp_path / "hub-kubeconfig"
    path.write_text(kubeconfig_yaml(server=url, token=ADMIN), encoding="utf-8")
    assert main(["fleet", "--kubeconfig", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "list ObservabilityAddon in every namespace" in err


class Screen(io.StringIO):
    """What `--watch` wrote, readable from the test's thread while it writes."""

    def frames(self) -> list[str]:
        return [f for f in self.getvalue().split("\n\n") if f.strip()]


@contextmanager
def watching(kubeconfig: Path) -> Iterator[Screen]:
    """`watch_fleet` on a thread of its own, JSON frames on a Screen, stopped on exit."""

    def show(rows: Iterable[Row], now: datetime) -> str:
        return render_rows(list(rows), now, filters=Filters(), output=Output("json"))

    screen, stop = Screen(), threading.Event()
    api = RestKube(KubeconfigSource(kubeconfig).current())
    thread = threading.Thread(
        target=watch_fleet, args=(api, show),
        kwargs={"out": screen, "interval": 0.05, "stop": stop, "watch_seconds": 2,
                "now": lambda: NOW},
        daemon=True,
    )  # fmt: skip
    thread.start()
    try:
        yield screen
    finally:
        stop.set()
        thread.join(5)


def states(frame: str) -> dict[str, str]:
    return {c["cluster"]: c["state"] for c in json.loads(frame)["clusters"]}


def test_watch_sees_a_change(hub: APIServer, kubeconfig: Path) -> None:
    with watching(kubeconfig) as screen:
        eventually(lambda: bool(screen.frames()), what="the first frame")
        assert states(screen.frames()[0])["prod-1"] == "Available"
        write_status(hub, "prod-1", "Degraded", "UpdateFailure")
        eventually(lambda: states(screen.frames()[-1])["prod-1"] == "Degraded",
                   what="the change on the screen")  # fmt: skip
    assert hub.count_requests(verbs=["list"], resource=PLURAL) == 1


def test_watch_lists_again_after_410_gone(hub: APIServer, kubeconfig: Path) -> None:
    # The first watch is told 410 Gone, as when its resourceVersion left the hub's history.
    hub.faults.fail_next(
        1, 410, match=lambda info: info.verb == "watch" and info.resource == PLURAL
    )
    with watching(kubeconfig) as screen:
        eventually(lambda: hub.count_requests(verbs=["watch"], resource=PLURAL) == 1,
                   what="a watch after the 410")  # fmt: skip
        write_status(hub, "edge-1", "Progressing", "UpdateSuccessful")
        eventually(lambda: states(screen.frames()[-1])["edge-1"] == "Progressing",
                   what="the change after a fresh list")  # fmt: skip
    assert hub.count_requests(verbs=["list"], resource=PLURAL) == 2


def test_fleet_counts_only_copies_named_as_configured(
    hub: APIServer, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Anyone allowed to create an ObservabilityAddon in a namespace could add a row; only the
    copy of the configured name (`--copy-name`) is a cluster's."""
    hub.put_object(GROUP, VERSION, PLURAL, {**addon("edge-1"), "metadata": {
        "name": "spoofed", "namespace": "edge-1"}})  # fmt: skip
    document = fleet_json(capsys, "--kubeconfig", str(kubeconfig))
    assert document["total"] == 3
    other = fleet_json(capsys, "--kubeconfig", str(kubeconfig), "--copy-name", "spoofed")
    assert [c["cluster"] for c in other["clusters"]] == ["edge-1"]


def test_context_chooses_the_kubeconfigs_context_as_kubectl_does(
    hub: APIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two contexts: the current one points nowhere, `--context hub` at the hub."""
    with APIServer([CRD]) as gone:
        nowhere = gone.url
    document = yaml.safe_load(kubeconfig_yaml(server=hub.url, token=ADMIN))
    document["clusters"].append({"name": "gone", "cluster": {"server": nowhere}})
    document["contexts"].append(
        {"name": "gone", "context": {"cluster": "gone", "user": document["users"][0]["name"]}}
    )
    hub_context, document["current-context"] = document["current-context"], "gone"
    path = tmp_path / "two-contexts"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    assert main(["fleet", "--kubeconfig", str(path), "-o", "name"]) == 1  # the current: gone
    capsys.readouterr()
    assert main(["fleet", "--kubeconfig", str(path), "--context", hub_context, "-o", "name"]) == 0
    assert capsys.readouterr().out.split() == [f"{NAME_KIND}/{c}" for c in CLUSTERS]
    assert main(["fleet", "--kubeconfig", str(path), "--context", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "kubeconfig has no context 'nope'" in err


def test_one_cluster_is_described_and_its_document_read(
    kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["fleet", "--kubeconfig", str(kubeconfig), "edge-2"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("Cluster:   edge-2\nState:     Degraded (ForwardFailure)\n")
    conditions = text.split("Conditions:\n")[1].split("\n\n")[0].splitlines()
    assert conditions[0].split() == ["TYPE", "STATUS", "REASON", "AGE", "MESSAGE"]
    assert conditions[3].split()[:3] == ["Degraded", "True", "ForwardFailure"]
    # the False standard conditions do not repeat the True one's message (spec §5: they share it)
    assert conditions[1].endswith("(as Degraded)") and conditions[2].endswith("(as Degraded)")
    assert conditions[3].endswith("edge-2: ForwardFailure")
    assert "History (newest first):\n  (not on the hub copy" in text  # conditions copied only
    document = fleet_json(capsys, "--kubeconfig", str(kubeconfig), "edge-2")
    assert document["kind"] == "addon-status.fleet.cluster/v1"
    assert document["cluster"] == "edge-2" and document["state"] == "Degraded"
    assert [c["type"] for c in document["conditions"]][:3] == [
        "Available", "Progressing", "Degraded",
    ]  # fmt: skip
    assert main(["fleet", "--kubeconfig", str(kubeconfig), "-o", "name", "edge-2"]) == 0
    assert capsys.readouterr().out == f"{NAME_KIND}/edge-2\n"


def test_an_unknown_cluster_is_a_one_line_read_error(
    kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["fleet", "--kubeconfig", str(kubeconfig), "nowhere"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nowhere" in err
