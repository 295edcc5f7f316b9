"""The demo's spoke API servers as Open Cluster Management leaves them once the addon is rolled
out (the addon CR and the rendered agent's manifests; the hub is `ocm_hub`), with what the demo
reads back from them and the agents' hub credentials."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from controller.demo.addon_manager import Rendered, render
from controller.demo.ocm_hub import HUB_TOKEN
from controller.demo.scenario_file import Scenario, start_generation
from controller.kube.kubeconfig import kubeconfig_yaml
from controller.spoke.addon import GROUP, PLURAL, VERSION
from controller.spoke.bookkeeping import KEY, config_map_name
from controller.spoke.options import DEFAULT_NAME, DEFAULT_NAMESPACE
from kubesim import APIServer, UserInfo
from statemachines.errors import AddonStatusError
from statemachines.stored import OWNED_FIELDS

__all__ = ["CRD", "HUB_TOKEN", "MCA_CRD", "agent_tokens", "rollout", "spoke_server"]

ADDON, SPOKE_NAMESPACE = DEFAULT_NAME, DEFAULT_NAMESPACE
MANAGED_ADDON = "addon-status"  # the ClusterManagementAddOn: OCM names each cluster's MCA so
CRD = Path(__file__).with_name("crds") / "observabilityaddons.yaml"  # manifests/base/crd.yaml
# tests/data/upstream/managedclusteraddons.crd.yaml: what the hub side mirrors onto
MCA_CRD = Path(__file__).with_name("crds") / "managedclusteraddons.yaml"
# The fleet rollout (manifests/ocm), copied by tests/manifests/ocm.py: every spoke of the demo is
# installed as the addon manager installs it from these.
ROLLOUT = Path(__file__).with_name("ocm")


def rollout(clusters: Sequence[str]) -> dict[str, Rendered]:
    """Each cluster's share of the fleet rollout: the seed AddOnTemplate rendered with the
    rollout's deployment config, as the addon manager renders it."""
    documents = [yaml.safe_load((ROLLOUT / f"{n}.yaml").read_text("utf-8"))
                 for n in ("addontemplate", "addondeploymentconfig")]  # fmt: skip
    return {cluster: render(documents[0], cluster, documents[1]) for cluster in clusters}


def agent_token(cluster: str) -> str:
    """A demo credential standing in for the client certificate the framework issues."""
    return f"demo-agent-{cluster}"


def agent_tokens(rendered: Mapping[str, Rendered]) -> dict[str, UserInfo]:
    """Each agent's demo credential, authenticating as its registration identity."""
    return {
        agent_token(cluster): UserInfo(share.identity.user, groups=share.identity.groups)
        for cluster, share in rendered.items()
    }


@contextmanager
def spoke_server(
    scenario: Scenario,
    crds: Sequence[Path] = (),
    agent: Sequence[Mapping[str, Any]] = (),
    clock: Callable[[], datetime] | None = None,
) -> Iterator[APIServer]:
    """A spoke API server with the addon CR at the scenario's starting generation, and the
    `agent` manifests as the work agent applies them (the CRD is served from its file); it also
    serves `crds` (the kinds of watched objects, e.g. cert-manager's Certificate)."""
    with APIServer([_crd(), *crds], namespaces=["default", SPOKE_NAMESPACE], clock=clock) as spoke:
        spoke.put_object(GROUP, VERSION, PLURAL, _addon(SPOKE_NAMESPACE))
        for obj in agent:
            if obj["kind"] != "CustomResourceDefinition":
                group, _, version = obj["apiVersion"].rpartition("/")
                spoke.put_object(
                    group, version, spoke.plural_of(obj["apiVersion"], obj["kind"]), obj
                )
        if start_generation(scenario) != 1:
            change_generation(spoke, start_generation(scenario))
        yield spoke


def _crd(path: Path = CRD) -> Path:
    if not path.exists():
        raise AddonStatusError(f"{path}: the CRD is missing; reinstall addon-status")
    return path


def _addon(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ObservabilityAddon",
        "metadata": {"name": ADDON, "namespace": namespace},
        "spec": {"enableMetrics": True, "interval": 300},
    }


def cluster_names(count: int) -> list[str]:
    """`cluster1` ... `clusterN`: each spoke's namespace on the hub."""
    return [f"cluster{i}" for i in range(1, count + 1)]


def hub_kubeconfig(hub: APIServer, directory: Path) -> Path:
    path = directory / "hub-kubeconfig"
    path.write_text(kubeconfig_yaml(server=hub.url, token=HUB_TOKEN, user="spoke"), "utf-8")
    path.chmod(0o600)
    return path


def agent_kubeconfig(hub: APIServer, cluster: str, directory: Path) -> Path:
    """The agent's hub kubeconfig, where the framework would mount its Secret."""
    path = directory / cluster / "hub-kubeconfig" / "kubeconfig"
    path.parent.mkdir(parents=True)
    path.write_text(
        kubeconfig_yaml(server=hub.url, token=agent_token(cluster), user="agent"), "utf-8"
    )
    path.chmod(0o600)
    return path


def hub_status(server: APIServer, namespace: str) -> dict[str, Any]:
    obj = server.get_object(GROUP, VERSION, PLURAL, namespace, ADDON) or {}
    status: dict[str, Any] = obj.get("status") or {}
    return status


def spoke_status(server: APIServer) -> dict[str, Any]:
    """The spoke CR's status; where the profile keeps its bookkeeping in the ConfigMap (acm),
    with the collectors' machines from there, as `simulate` shows them."""
    status = hub_status(server, SPOKE_NAMESPACE)
    kept = server.get_object("", "v1", "configmaps", SPOKE_NAMESPACE, config_map_name(ADDON))
    if kept is not None and "collectors" not in status:
        status["collectors"] = json.loads(kept["data"][KEY]).get("collectors") or []
    return status


def with_bookkeeping(server: APIServer, status: Mapping[str, Any]) -> dict[str, Any]:
    """`status` with what the profile keeps in the bookkeeping ConfigMap instead (acm): the
    story's fields (history, versions, ...) and the conditions the CR does not carry (`Ready`),
    as `simulate` shows them."""
    kept = server.get_object("", "v1", "configmaps", SPOKE_NAMESPACE, config_map_name(ADDON))
    if kept is None:
        return dict(status)
    book = json.loads(kept["data"][KEY])
    on_cr = {c.get("type") for c in status.get("conditions") or []}
    extra = [c for c in book.get("conditions") or [] if c.get("type") not in on_cr]
    story = {k: book[k] for k in OWNED_FIELDS if k in book and k not in status}
    return {**status, **story, "conditions": [*(status.get("conditions") or []), *extra]}


def change_generation(server: APIServer, generation: int) -> None:
    """The spoke CR as the API server stores it once its spec changed up to `generation` (which
    the server owns: the demo writes it straight to storage; the watch delivers it)."""
    obj = server.get_object(GROUP, VERSION, PLURAL, SPOKE_NAMESPACE, ADDON)
    if obj is None:
        raise AddonStatusError(f"the addon CR {SPOKE_NAMESPACE}/{ADDON} is gone")
    obj["metadata"]["generation"] = generation
    server.put_object(GROUP, VERSION, PLURAL, obj)
