"""What Open Cluster Management's addon manager does with an AddOnTemplate for one cluster, so
that the demo and the tests run each spoke's controller exactly as a fleet rollout installs it
(in a real fleet the addon manager does this; the project never does).

For cluster `C` and addon `A` (following the addon framework's template agent):

1. Values: `HUB_KUBECONFIG` (`/managed/hub-kubeconfig/kubeconfig`, when the template registers a
   KubeClient), then the AddOnDeploymentConfig's `customizedVariables` (which may override it),
   then the built-ins no one overrides: `CLUSTER_NAME` (C) and `INSTALL_NAMESPACE` (the config's
   `agentInstallNamespace`, which its CRD defaults to `open-cluster-management-agent-addon`).
2. Each manifest, as JSON text, has every `{{NAME}}` replaced by its value (a name without a
   value becomes empty, as the framework's templating does) and is parsed again.
3. With an install namespace, every namespaced object moves there, a Namespace is renamed to it,
   and every subject of a (Cluster)RoleBinding gets it.
4. Each Deployment's containers get the values above as environment variables, and the hub
   kubeconfig Secret `A-hub-kubeconfig` mounted at `/managed/hub-kubeconfig` (volume
   `hub-kubeconfig`); the config's node placement replaces the pod's node selector and
   tolerations, and its registries rewrite images.
5. Registration: the agent's hub identity is user
   `system:open-cluster-management:cluster:C:addon:A:agent:A-agent` in the groups
   `system:open-cluster-management:cluster:C:addon:A`, `system:open-cluster-management:addon:A`
   and `system:authenticated`; each `CurrentCluster` hub permission becomes the RoleBinding
   `open-cluster-management:A:clusterrole:agent` in the namespace C, labelled
   `open-cluster-management.io/addon-name: A`, binding that ClusterRole to the agent's user and
   both its groups (OCM >= 1.2: the second group is every cluster's, so RBAC alone no longer
   keeps one cluster's agent out of another's namespace; the rollout's admission policy does).

6. Which template: the one the ClusterManagementAddOn's default config names (`chosen_template`;
   the manager copies it into each ManagedClusterAddOn's `configReferences` and renders what that
   names). Naming another template is a switch: each cluster's rendering of the new template
   replaces the manifests of the same ManifestWork (`addon-A-deploy-0`, a name without the
   template's); the work agent updates each object in place and deletes each object it applied
   that the work no longer lists (`no_longer_applied`), unless that object was applied annotated
   `addon.open-cluster-management.io/deletion-orphan` (the work then never owned it).

Not rendered (the project's configs use none of them): proxy settings, resource requirements,
custom signers, `SingleNamespace` permissions, per-placement or per-cluster configs.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "DELETION_ORPHAN",
    "HUB_KUBECONFIG_DIR",
    "AgentIdentity",
    "Rendered",
    "TemplateNotFoundError",
    "chosen_template",
    "deploy_work_name",
    "no_longer_applied",
    "render",
]

Obj = dict[str, Any]
HUB_KUBECONFIG_DIR: Final = "/managed/hub-kubeconfig"
_VARIABLE: Final = re.compile(r"\{\{([^{}]*)\}\}")
_RBAC: Final = "rbac.authorization.k8s.io"
_ADDON_GROUP: Final = "addon.open-cluster-management.io"
DEFAULT_INSTALL_NAMESPACE: Final = "open-cluster-management-agent-addon"
"""What the AddOnDeploymentConfig CRD defaults `agentInstallNamespace` to."""
DELETION_ORPHAN: Final = "addon.open-cluster-management.io/deletion-orphan"
"""An agent manifest so annotated is left on the spoke when the ManifestWork stops listing it."""


@dataclass(frozen=True)
class AgentIdentity:
    """Who the agent is on the hub (its client certificate's subject)."""

    user: str
    groups: tuple[str, ...]


@dataclass(frozen=True)
class Rendered:
    """One cluster's share: what goes to the spoke, what the manager creates on the hub."""

    agent: list[Obj]  # the ManifestWork's manifests, in the template's order
    hub: list[Obj]  # the RoleBindings of `hubPermissions`
    identity: AgentIdentity


def render(
    template: Mapping[str, Any], cluster: str, config: Mapping[str, Any] | None = None
) -> Rendered:
    """`template` (an AddOnTemplate) for `cluster`, with `config` (an AddOnDeploymentConfig)."""
    spec = template["spec"]
    addon = str(spec["addonName"])
    settings = (config or {}).get("spec") or {}
    kube_clients = [r for r in spec.get("registration") or [] if r.get("type") == "KubeClient"]
    values: dict[str, str] = {}
    if kube_clients:
        values["HUB_KUBECONFIG"] = f"{HUB_KUBECONFIG_DIR}/kubeconfig"
    values |= {
        v["name"]: str(v.get("value", "")) for v in settings.get("customizedVariables") or []
    }
    builtins = {"CLUSTER_NAME": cluster}
    if config is not None:
        namespace = settings.get("agentInstallNamespace", DEFAULT_INSTALL_NAMESPACE)
        if namespace:
            builtins["INSTALL_NAMESPACE"] = str(namespace)
    values |= builtins
    preset = [(k, values[k]) for k in ("HUB_KUBECONFIG",) if k in values]
    preset += sorted(builtins.items())
    namespace = builtins.get("INSTALL_NAMESPACE", "")
    agent = []
    for manifest in spec["agentSpec"]["workload"]["manifests"]:
        text = _VARIABLE.sub(lambda m: values.get(m[1], ""), json.dumps(manifest))
        obj = _moved(json.loads(text), namespace)
        if obj.get("kind") == "Deployment":
            _decorate(obj["spec"]["template"]["spec"], addon, preset, settings, bool(kube_clients))
        agent.append(obj)
    groups = (
        f"system:open-cluster-management:cluster:{cluster}:addon:{addon}",
        f"system:open-cluster-management:addon:{addon}",
        "system:authenticated",
    )
    identity = AgentIdentity(
        f"system:open-cluster-management:cluster:{cluster}:addon:{addon}:agent:{addon}-agent",
        groups,
    )
    hub = [
        _binding(addon, cluster, permission["currentCluster"]["clusterRoleName"], identity)
        for registration in kube_clients
        for permission in (registration.get("kubeClient") or {}).get("hubPermissions") or []
        if permission.get("type") == "CurrentCluster"
    ]
    return Rendered(agent, hub, identity)


def _moved(obj: Obj, namespace: str) -> Obj:
    if not namespace:
        return obj
    metadata = obj.setdefault("metadata", {})
    if metadata.get("namespace"):
        metadata["namespace"] = namespace
    if obj.get("kind") == "Namespace":
        metadata["name"] = namespace
    if obj.get("kind") in ("RoleBinding", "ClusterRoleBinding"):
        for subject in obj.get("subjects") or []:
            subject["namespace"] = namespace
    return obj


def _decorate(
    pod: Obj,
    addon: str,
    preset: Sequence[tuple[str, str]],
    settings: Mapping[str, Any],
    mount_hub_kubeconfig: bool,
) -> None:
    environment = [{"name": name, "value": value} for name, value in preset]
    for container in pod.get("containers") or []:
        container["env"] = [*(container.get("env") or []), *copy.deepcopy(environment)]
        if mount_hub_kubeconfig:
            mount = {"name": "hub-kubeconfig", "mountPath": HUB_KUBECONFIG_DIR}
            container["volumeMounts"] = [*(container.get("volumeMounts") or []), mount]
        container["image"] = _mirrored(
            str(container.get("image", "")), settings.get("registries") or []
        )
    if mount_hub_kubeconfig:
        volume = {"name": "hub-kubeconfig", "secret": {"secretName": f"{addon}-hub-kubeconfig"}}
        pod["volumes"] = [*(pod.get("volumes") or []), volume]
    placement = settings.get("nodePlacement") or {}
    if placement.get("nodeSelector") is not None:
        pod["nodeSelector"] = placement["nodeSelector"]
        pod["tolerations"] = placement.get("tolerations") or []


def _mirrored(image: str, registries: Sequence[Mapping[str, str]]) -> str:
    """The last registry whose `source` starts the image puts its `mirror` in that place."""
    for registry in reversed(registries):
        source = registry.get("source", "")
        if image.startswith(source):
            return registry["mirror"] + image[len(source) :]
    return image


def _binding(addon: str, cluster: str, role: str, identity: AgentIdentity) -> Obj:
    """The subjects are the registration's user and groups but `system:authenticated`."""
    subjects = [{"apiGroup": _RBAC, "kind": "User", "name": identity.user}]
    subjects += [{"apiGroup": _RBAC, "kind": "Group", "name": group}
                 for group in identity.groups if group != "system:authenticated"]  # fmt: skip
    return {
        "apiVersion": f"{_RBAC}/v1",
        "kind": "RoleBinding",
        "metadata": {
            "name": f"open-cluster-management:{addon}:clusterrole:agent",
            "namespace": cluster,
            "labels": {"open-cluster-management.io/addon-name": addon,
                       "open-cluster-management.io/addon-template-name": ""},
        },
        "roleRef": {"apiGroup": _RBAC, "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    }  # fmt: skip


class TemplateNotFoundError(LookupError):
    """The ClusterManagementAddOn names no AddOnTemplate, or one that is not there."""


def chosen_template(
    addon: Mapping[str, Any], templates: Iterable[Mapping[str, Any]]
) -> Mapping[str, Any]:
    """The AddOnTemplate that `addon` (a ClusterManagementAddOn) names as its default config,
    among `templates`: what the manager renders for every cluster."""
    name = next(
        ((c.get("defaultConfig") or {}).get("name") for c in
         (addon.get("spec") or {}).get("supportedConfigs") or []
         if (c.get("group"), c.get("resource")) == (_ADDON_GROUP, "addontemplates")),
        None,
    )  # fmt: skip
    found = [t for t in templates if t["metadata"]["name"] == name]
    if not name or not found:
        raise TemplateNotFoundError(
            f"ClusterManagementAddOn {addon['metadata']['name']} names AddOnTemplate "
            f"{name or '(none)'}, which is not there"
        )
    return found[0]


def deploy_work_name(template: Mapping[str, Any]) -> str:
    """The ManifestWork the manager keeps the agent in: named by the addon, not the template."""
    return f"addon-{template['spec']['addonName']}-deploy-0"


def no_longer_applied(before: Sequence[Obj], after: Sequence[Obj]) -> list[Obj]:
    """What the work agent deletes when a ManifestWork's manifests change from `before` to
    `after`: every object of `before` that `after` does not list (same group, kind, namespace
    and name), but those `before` annotated `DELETION_ORPHAN` (the agent applied them without
    its owner reference and leaves what it does not own), in `before`'s order."""
    listed = {_key(o) for o in after}
    return [
        o for o in before
        if _key(o) not in listed
        and DELETION_ORPHAN not in ((o.get("metadata") or {}).get("annotations") or {})
    ]  # fmt: skip


def _key(obj: Mapping[str, Any]) -> tuple[str, str, str, str]:
    metadata = obj.get("metadata") or {}
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    return group, str(obj.get("kind")), metadata.get("namespace", ""), metadata["name"]
