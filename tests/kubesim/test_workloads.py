"""The kinds health rules watch, through the typed client (which deserialises every answer into
its model) and the dynamic client (which finds them by discovery): apps/v1 Deployments, v1
ConfigMaps and Secrets, and a custom resource from a CRD file (cert-manager's Certificate).
Each test names the kube-apiserver behaviour it mirrors."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, dynamic, watch
from kubernetes.client.exceptions import ApiException

from kubesim import APIServer
from tests.kubesim.conftest import CRD, status_of
from tests.support import api_client

pytestmark = pytest.mark.integration
NAMESPACE = "addons"
CERTIFICATE_CRD = Path(__file__).parents[1] / "data" / "crds" / "certificates.cert-manager.io.yaml"
LABELS = {"app": "metrics-collector"}


@pytest.fixture
def served() -> Iterator[APIServer]:
    with APIServer(
        [CRD, CERTIFICATE_CRD], namespaces=["default", NAMESPACE], watch_history=20
    ) as srv:
        yield srv


@pytest.fixture
def api(served: APIServer) -> Iterator[client.ApiClient]:
    with api_client(served) as api:
        yield api


@pytest.fixture
def apps(api: client.ApiClient) -> client.AppsV1Api:
    return client.AppsV1Api(api)


@pytest.fixture
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


def _deployment(name: str = "metrics-collector", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": LABELS},
            "template": {
                "metadata": {"labels": LABELS},
                "spec": {"containers": [{"name": "collector", "image": "collector:1"}]},
            },
            **spec,
        },
    }


def _available(generation: int, status: str = "True") -> dict[str, Any]:
    return {
        "observedGeneration": generation,
        "conditions": [
            {"type": "Available", "status": status, "reason": "MinimumReplicasAvailable"}
        ],
    }


def test_deployment_create_sets_generation_1_defaults_the_spec_and_drops_the_status(
    apps: client.AppsV1Api,
) -> None:
    """deploymentStrategy.PrepareForCreate and SetDefaults_Deployment."""
    created = apps.create_namespaced_deployment(
        NAMESPACE, {**_deployment(), "status": _available(7)}
    )
    assert created.metadata.generation == 1
    assert created.status.observed_generation is None
    assert (created.spec.replicas, created.spec.progress_deadline_seconds) == (1, 600)
    assert created.spec.strategy.type == "RollingUpdate"


def test_deployment_generation_moves_with_the_spec_and_the_annotations_not_the_status(
    apps: client.AppsV1Api,
) -> None:
    """deploymentStrategy.PrepareForUpdate: a spec or annotation change bumps the generation;
    deploymentStatusStrategy keeps the spec and the generation on a status write."""
    apps.create_namespaced_deployment(NAMESPACE, _deployment())
    scaled = apps.patch_namespaced_deployment(
        "metrics-collector", NAMESPACE, {"spec": {"replicas": 2}}
    )
    assert scaled.metadata.generation == 2
    annotated = apps.patch_namespaced_deployment(
        "metrics-collector", NAMESPACE, {"metadata": {"annotations": {"a": "b"}}}
    )
    assert annotated.metadata.generation == 3
    labelled = apps.patch_namespaced_deployment(
        "metrics-collector", NAMESPACE, {"metadata": {"labels": {"l": "v"}}}
    )
    assert labelled.metadata.generation == 3
    body = apps.read_namespaced_deployment("metrics-collector", NAMESPACE).to_dict()
    written = apps.replace_namespaced_deployment_status(
        "metrics-collector",
        NAMESPACE,
        {**_deployment(replicas=9), "metadata": body["metadata"], "status": _available(3)},
    )
    assert written.metadata.generation == 3
    assert written.spec.replicas == 2  # the status subresource ignores the spec
    assert written.status.observed_generation == 3


def test_a_status_sent_to_the_main_resource_is_ignored(apps: client.AppsV1Api) -> None:
    """With the status subresource, an update of the main resource keeps the stored status."""
    apps.create_namespaced_deployment(NAMESPACE, _deployment())
    read = apps.read_namespaced_deployment("metrics-collector", NAMESPACE)
    read.status = client.V1DeploymentStatus(observed_generation=5)
    replaced = apps.replace_namespaced_deployment("metrics-collector", NAMESPACE, read)
    assert replaced.status.observed_generation is None


def test_a_strategic_merge_patch_merges_a_pod_templates_containers_by_name(
    apps: client.AppsV1Api,
) -> None:
    """kube-apiserver merges a Deployment's pod template lists by their `patchMergeKey`
    (k8s.io/api core/v1: containers and env by name, volumeMounts by mountPath) and replaces a
    list without one (args): `kubectl apply` of a changed image sends only the image, and the
    container keeps its args, env and mounts."""
    container = {"name": "collector", "image": "collector:1", "args": ["run", "--a"],
                 "env": [{"name": "A", "value": "1"}],
                 "volumeMounts": [{"name": "config", "mountPath": "/etc/c"}]}  # fmt: skip
    body = _deployment()
    body["spec"]["template"]["spec"]["containers"] = [container, {"name": "side", "image": "s:1"}]
    apps.create_namespaced_deployment(NAMESPACE, body)
    patch = {"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "collector"}, {"name": "side"}],
        "containers": [{"name": "collector", "image": "collector:2", "args": ["run"],
                        "env": [{"name": "B", "value": "2"}]}]}}}}  # fmt: skip
    patched = apps.patch_namespaced_deployment(
        "metrics-collector", NAMESPACE, patch,
        _content_type="application/strategic-merge-patch+json",
    )  # fmt: skip
    collector, side = patched.spec.template.spec.containers
    assert (collector.image, collector.args) == ("collector:2", ["run"])
    assert [(e.name, e.value) for e in collector.env] == [("A", "1"), ("B", "2")]
    assert [m.mount_path for m in collector.volume_mounts] == ["/etc/c"]
    assert (side.name, side.image) == ("side", "s:1")


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        pytest.param({"selector": {}}, "spec.selector", id="selector-required"),
        pytest.param(
            {"selector": {"matchLabels": {"app": "other"}}},
            "spec.template.metadata.labels",
            id="selector-must-match-template-labels",
        ),
        pytest.param({"replicas": -1}, "spec.replicas", id="replicas-not-negative"),
    ],
)
def test_an_invalid_deployment_is_422_naming_the_field(
    apps: client.AppsV1Api, spec: dict[str, Any], field: str
) -> None:
    """ValidateDeployment."""
    with pytest.raises(ApiException) as raised:
        apps.create_namespaced_deployment(NAMESPACE, _deployment(**spec))
    assert raised.value.status == 422
    assert field in str(status_of(raised.value)["details"]["causes"])


def test_a_secrets_string_data_is_written_into_data(core: client.CoreV1Api) -> None:
    """secretStrategy: stringData is write-only, merged into data base64-encoded; type Opaque."""
    created = core.create_namespaced_secret(
        NAMESPACE,
        {"metadata": {"name": "creds"}, "stringData": {"token": "s3cret"}, "data": {}},
    )
    assert created.data == {"token": base64.b64encode(b"s3cret").decode()}
    assert created.string_data is None
    assert created.type == "Opaque"
    assert created.metadata.generation is None


def test_a_configmap_key_must_be_a_config_key(core: client.CoreV1Api) -> None:
    """ValidateConfigMap: keys of [-._a-zA-Z0-9]."""
    with pytest.raises(ApiException) as raised:
        core.create_namespaced_config_map(
            NAMESPACE, {"metadata": {"name": "c"}, "data": {"a b": "x"}}
        )
    assert raised.value.status == 422


def test_an_immutable_configmap_keeps_its_data(core: client.CoreV1Api) -> None:
    """ValidateConfigMapUpdate: data of an immutable ConfigMap cannot change."""
    core.create_namespaced_config_map(
        NAMESPACE, {"metadata": {"name": "c"}, "data": {"a": "1"}, "immutable": True}
    )
    with pytest.raises(ApiException) as raised:
        core.patch_namespaced_config_map("c", NAMESPACE, {"data": {"a": "2"}})
    assert raised.value.status == 422


def test_the_dynamic_client_discovers_the_kinds_and_the_certificate_crd(
    api: client.ApiClient, tmp_path: Path
) -> None:
    """Discovery lists apps/v1 and the CRD's group beside the core kinds."""
    found = dynamic.DynamicClient(api, cache_file=str(tmp_path / "cache.json"))
    for api_version, kind, plural in [
        ("apps/v1", "Deployment", "deployments"),
        ("v1", "ConfigMap", "configmaps"),
        ("v1", "Secret", "secrets"),
        ("cert-manager.io/v1", "Certificate", "certificates"),
    ]:
        resource = found.resources.get(api_version=api_version, kind=kind)
        assert (resource.name, resource.namespaced) == (plural, True)


def test_a_watch_by_name_sees_only_that_deployment_and_410_after_compaction(
    served: APIServer, apps: client.AppsV1Api
) -> None:
    """A watch with fieldSelector metadata.name; 410 Gone from a compacted resourceVersion."""
    listed = apps.list_namespaced_deployment(NAMESPACE)
    apps.create_namespaced_deployment(NAMESPACE, _deployment("other"))
    apps.create_namespaced_deployment(NAMESPACE, _deployment())
    watcher = watch.Watch()
    events = []
    for event in watcher.stream(
        apps.list_namespaced_deployment,
        NAMESPACE,
        field_selector="metadata.name=metrics-collector",
        resource_version=listed.metadata.resource_version,
        timeout_seconds=2,
    ):
        events.append((event["type"], event["object"].metadata.name))
        watcher.stop()
    assert events == [("ADDED", "metrics-collector")]
    served.compact()
    with pytest.raises(ApiException) as raised:
        for _ in watch.Watch().stream(
            apps.list_namespaced_deployment,
            NAMESPACE,
            resource_version=listed.metadata.resource_version,
            timeout_seconds=2,
        ):
            pass
    assert raised.value.status == 410


def test_a_certificate_from_the_crd_file_keeps_its_status_through_the_subresource(
    api: client.ApiClient,
) -> None:
    """A CRD with the status subresource: status only through /status, fields pruned to the
    schema, generation bumped by a spec change."""
    custom = client.CustomObjectsApi(api)
    body = {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": "app-certificate"},
        "spec": {"secretName": "app-tls", "issuerRef": {"name": "ca"}, "bogus": 1},
    }
    created = custom.create_namespaced_custom_object(
        "cert-manager.io", "v1", NAMESPACE, "certificates", body
    )
    assert "bogus" not in created["spec"]
    ready = {"conditions": [{"type": "Ready", "status": "True", "observedGeneration": 1}]}
    written = custom.replace_namespaced_custom_object_status(
        "cert-manager.io",
        "v1",
        NAMESPACE,
        "certificates",
        "app-certificate",
        {**created, "status": ready},
    )
    assert written["status"] == ready and written["metadata"]["generation"] == 1
    moved = custom.patch_namespaced_custom_object(
        "cert-manager.io",
        "v1",
        NAMESPACE,
        "certificates",
        "app-certificate",
        {"spec": {"secretName": "new"}},
    )
    assert moved["metadata"]["generation"] == 2


def test_a_list_by_name_is_still_a_list_and_is_audited_with_that_name(
    served: APIServer, apps: client.AppsV1Api
) -> None:
    """RequestInfoFactory takes the name a list's field selector requires for authorization
    (RBAC's resourceNames) and audit; the request is still a list, here and in every namespace."""
    apps.create_namespaced_deployment(NAMESPACE, _deployment())
    selector = "metadata.name=metrics-collector"
    listed = apps.list_namespaced_deployment(NAMESPACE, field_selector=selector)
    everywhere = apps.list_deployment_for_all_namespaces(field_selector=selector)
    assert [d.metadata.name for d in listed.items] == ["metrics-collector"]
    assert [d.metadata.name for d in everywhere.items] == ["metrics-collector"]
    lists = [r for r in served.audit if r.verb == "list" and r.resource == "deployments"]
    assert [(r.namespace, r.name, r.code) for r in lists[-2:]] == [
        (NAMESPACE, "metrics-collector", 200),
        ("", "metrics-collector", 200),
    ]
