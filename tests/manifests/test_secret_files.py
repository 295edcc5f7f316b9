"""Who may read the files of the pod's Secrets (the hub kubeconfig, the serving key): the
controller, and no other user of the pod. The kubelet's rule for Secret volumes is modelled
here (`SetVolumeOwnership`: with an fsGroup the files become root:fsGroup and get at least
0440, without one they stay root:root with `defaultMode`), and the controller's process runs
as the image's user (65532:65532), or under OpenShift's restricted SCC as an assigned UID with
group 0 and the fsGroup the SCC assigns. The NetworkPolicy's metrics scraper is the one
setting of manifests/kubernetes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import pytest

from tests.manifests.kustomize import MANIFESTS, build, find

Obj = dict[str, Any]
IMAGE_USER: Final = 65532  # Dockerfile: USER 65532:65532
SCC_UID, SCC_FSGROUP = 1000680000, 1000680000  # what restricted-v2 assigns from the ranges
SECRETS: Final = ("hub-kubeconfig", "serving-cert")
MOUNTED: Final = {"base": SECRETS, "kubernetes": ("hub-kubeconfig",)}  # kubernetes: self-issued


@dataclass(frozen=True)
class Process:
    uid: int
    groups: frozenset[int]


@dataclass(frozen=True)
class File:
    owner: int
    group: int
    mode: int

    def readable_by(self, process: Process) -> bool:
        if process.uid == 0:  # root reads anything
            return True
        if process.uid == self.owner:
            return bool(self.mode & 0o400)
        if self.group in process.groups:
            return bool(self.mode & 0o040)
        return bool(self.mode & 0o004)


def secret_files(pod: Obj, volume_name: str) -> File:
    """The kubelet's Secret volume: `defaultMode` (0644 when unset), owned by root, and with an
    fsGroup group-owned by it and at least 0440 (read-only volumes get `roMask`)."""
    volume = next(v for v in pod["volumes"] if v["name"] == volume_name)
    mode = int(volume["secret"].get("defaultMode", 0o644))
    fs_group = (pod.get("securityContext") or {}).get("fsGroup")
    if fs_group is None:
        return File(owner=0, group=0, mode=mode)
    return File(owner=0, group=int(fs_group), mode=mode | 0o440)


def pod_of(root: str) -> Obj:
    deployment = find(build(MANIFESTS / root).objects, "Deployment", "addon-status-controller")
    spec: Obj = deployment["spec"]["template"]["spec"]
    return spec


def image_process(pod: Obj) -> Process:
    fs_group = (pod.get("securityContext") or {}).get("fsGroup")
    groups = {IMAGE_USER} | ({int(fs_group)} if fs_group is not None else set())
    return Process(uid=IMAGE_USER, groups=frozenset(groups))


def under_openshift_scc(pod: Obj) -> tuple[Obj, Process]:
    """restricted-v2 admits a pod without runAsUser or fsGroup and assigns both."""
    context = pod.get("securityContext") or {}
    assert "fsGroup" not in context and "runAsUser" not in context, "the SCC would refuse it"
    admitted = {**pod, "securityContext": {**context, "fsGroup": SCC_FSGROUP}}
    return admitted, Process(uid=SCC_UID, groups=frozenset({0, SCC_FSGROUP}))


@pytest.mark.parametrize(
    ("root", "volume"), [(root, volume) for root, mounted in MOUNTED.items() for volume in mounted]
)
def test_no_other_user_may_read_the_secrets(root: str, volume: str) -> None:
    pod = pod_of(root)
    if root == "base":
        pod, _ = under_openshift_scc(pod)
    other = Process(uid=1001, groups=frozenset({1001}))
    assert not secret_files(pod, volume).readable_by(other)
    assert secret_files(pod, volume).mode & 0o007 == 0


@pytest.mark.parametrize("volume", SECRETS)
def test_the_controller_reads_its_secrets_under_openshifts_scc(volume: str) -> None:
    pod, process = under_openshift_scc(pod_of("base"))
    assert secret_files(pod, volume).readable_by(process)


@pytest.mark.parametrize("volume", MOUNTED["kubernetes"])
def test_the_controller_reads_its_secrets_with_the_kubernetes_overlay(volume: str) -> None:
    pod = pod_of("kubernetes")
    assert pod["securityContext"]["fsGroup"] == IMAGE_USER
    assert secret_files(pod, volume).readable_by(image_process(pod))


def test_without_openshift_the_base_alone_cannot_read_its_secrets() -> None:
    """Why manifests/kubernetes exists: no fsGroup, so the files stay root:root 0440."""
    pod = pod_of("base")
    assert not secret_files(pod, "hub-kubeconfig").readable_by(image_process(pod))


def metrics_scrapers(root: str) -> list[str]:
    policy = find(build(MANIFESTS / root).objects, "NetworkPolicy", "addon-status-controller")
    return [
        peer["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
        for rule in policy["spec"]["ingress"]
        if {"protocol": "TCP", "port": "metrics"} in rule["ports"]
        for peer in rule["from"]
    ]


def test_metrics_are_admitted_from_the_overlays_scraper_namespace() -> None:
    assert metrics_scrapers("base") == ["openshift-monitoring"]
    assert metrics_scrapers("kubernetes") == ["monitoring"]


def test_the_kubernetes_overlay_issues_its_serving_certificate_instead_of_mounting_it() -> None:
    """No issuer on plain Kubernetes writes addon-status-serving-cert: a pod mounting it would
    never start. The controller issues it (controller/report_api/issuer.py), with the Role it
    needs to."""
    objects = build(MANIFESTS / "kubernetes").objects
    pod = pod_of("kubernetes")
    [container] = pod["containers"]
    assert "--issue-serving-cert=addon-status-serving-cert" in container["args"]
    assert not [a for a in container["args"] if a.startswith("--tls-")]
    assert "serving-cert" not in {v["name"] for v in pod["volumes"]}
    rules = find(objects, "Role", "addon-status-serving-cert")["rules"]
    assert {"resourceNames": ["addon-status-serving-cert"], "verbs": ["get", "update"]}.items() <= (
        rules[1].items()
    )
