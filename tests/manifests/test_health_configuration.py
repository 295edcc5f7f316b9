"""The shipped configuration file (manifests/base/configuration.yaml) and what it needs: it
loads (the controller would start with it), the Deployment passes it with `--config` from the
ConfigMap it mounts, it watches the two collectors' Deployments with `for: 2m`, and the Role
grants list and watch on exactly the configured kinds and names — every configured object is
covered, and no rule reaches an object the configuration does not name."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from statemachines.config_file import load_configuration, resource_objects
from tests.manifests.kustomize import MANIFESTS, build, find
from tests.manifests.pod import flag_value
from tests.manifests.rbac import ServiceAccount, grants_for

Obj = dict[str, Any]
# The controller's own objects: the addon CR, its Events, its Lease, TokenReviews.
OWN = {"observabilityaddons", "observabilityaddons/status", "events", "leases", "tokenreviews"}


def _shipped() -> tuple[list[Obj], Obj, str]:
    objects = build(MANIFESTS / "base").objects
    deployment = find(objects, "Deployment")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    path = PurePosixPath(flag_value(container, "--config"))
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    config_map = volumes[mounts[str(path.parent)]]["configMap"]["name"]
    text = find(objects, "ConfigMap", config_map)["data"][path.name]
    return objects, deployment, text


def test_the_shipped_configuration_loads_from_the_configmap_the_deployment_mounts() -> None:
    _, deployment, text = _shipped()
    namespace = deployment["metadata"]["namespace"]
    config, _ = load_configuration(text, source="config.yaml", namespace=namespace)
    assert [(r.name, r.object.kind, r.for_.total_seconds()) for r in config.resources] == [
        ("metrics-collector-deployment", "Deployment", 120.0),
        ("uwl-metrics-collector-deployment", "Deployment", 120.0),
    ]
    assert {r.collector for r in config.resources} == {c.name for c in config.collectors}


def test_the_role_grants_list_and_watch_on_exactly_the_configured_objects() -> None:
    objects, deployment, text = _shipped()
    namespace = deployment["metadata"]["namespace"]
    config, _ = load_configuration(text, source="config.yaml", namespace=namespace)
    account = ServiceAccount(
        namespace, deployment["spec"]["template"]["spec"]["serviceAccountName"]
    )
    granted: set[tuple[str, str, str, str]] = set()
    for grant in grants_for(account, objects):
        resources = set(grant.rule.get("resources") or [])
        if resources <= OWN:
            continue
        assert sorted(grant.rule["verbs"]) == ["list", "watch"], grant
        assert grant.rule.get("resourceNames"), f"{grant}: names no object"
        for group in grant.rule["apiGroups"]:
            for resource in resources:
                for name in grant.rule["resourceNames"]:
                    granted.add((group, resource, grant.namespace or "", name))
    wanted = {
        (o["group"], o["resource"], o["namespace"], o["name"]) for o in resource_objects(config)
    }
    assert granted == wanted
