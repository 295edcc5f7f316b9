"""manifests/ocm, the rollout to a fleet: the AddOnTemplates are the spoke's own manifests
(built by tests/manifests/ocm.py, never edited by hand) changed only where the addon framework
takes over; rendered for a cluster as the addon manager renders them, the agent's pod runs
`addon-status run` for that cluster with the hub kubeconfig the framework mounts; every name
the ClusterManagementAddOn refers to is in the same apply."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from controller.demo.addon_manager import HUB_KUBECONFIG_DIR, render
from tests.manifests.kustomize import MANIFESTS, build, find
from tests.manifests.ocm import ADDON, DELETION_ORPHAN, FLAVOURS, VERSION, main, template
from tests.manifests.pod import options_of

Obj = dict[str, Any]
ROLLOUTS = {
    "seed": MANIFESTS / "ocm",
    "acm": MANIFESTS / "ocm" / "acm",
    "beside": MANIFESTS / "ocm" / "beside",
}


def _without_rollout_changes(obj: Obj) -> Obj:
    """`obj` with what the generator changes taken out, on either side of the comparison."""
    obj = copy.deepcopy(obj)
    annotations = obj["metadata"].get("annotations") or {}
    annotations.pop(DELETION_ORPHAN, None)
    if not annotations:
        obj["metadata"].pop("annotations", None)
    if obj["kind"] == "ConfigMap":
        obj.get("data", {}).pop("ADDON_STATUS_CLUSTER_NAME", None)
    if obj["kind"] == "Deployment":
        pod = obj["spec"]["template"]["spec"]
        [container] = pod["containers"]
        for key in ("args", "volumeMounts"):
            container.pop(key)
        pod.pop("volumes")
    return obj


def test_the_templates_are_the_generators_output() -> None:
    """Stale when the spoke's manifests changed: run `python -m tests.manifests.ocm`."""
    assert main(["--check"]) == 0


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_every_agent_manifest_is_the_spokes_but_where_the_framework_takes_over(
    flavour: str,
) -> None:
    spoke = build(FLAVOURS[flavour][0]).objects
    carried = template(flavour)["spec"]["agentSpec"]["workload"]["manifests"]
    if flavour == "seed":  # OCM creates no install namespace: the template carries its own
        namespace, *carried = carried
        assert namespace["kind"] == "Namespace"
        assert namespace["metadata"]["name"] == spoke[1]["metadata"]["namespace"]
    if flavour == "beside":  # nobody else makes the project's own kind: the template carries it
        *carried, addon = carried
        assert (addon["kind"], addon["metadata"]["name"]) == ("AddonStatus", ADDON)
        assert addon["metadata"]["namespace"] == spoke[1]["metadata"]["namespace"]
    assert [_without_rollout_changes(o) for o in carried] == [
        _without_rollout_changes(o) for o in spoke
    ]


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_the_rendered_agent_runs_for_its_cluster_with_the_mounted_hub_kubeconfig(
    flavour: str, tmp_path: Path
) -> None:
    rollout = build(ROLLOUTS[flavour]).objects
    config = find(rollout, "AddOnDeploymentConfig")
    rendered = render(find(rollout, "AddOnTemplate"), "cluster7", config)
    assert "{{" not in json.dumps(rendered.agent), "every variable has a value"
    deployment = find(rendered.agent, "Deployment", "addon-status-controller")
    pod = deployment["spec"]["template"]["spec"]
    [hub_volume] = [v for v in pod["volumes"] if v["name"] == "hub-kubeconfig"]
    assert hub_volume["secret"]["secretName"] == f"{ADDON}-hub-kubeconfig"
    [container] = pod["containers"]
    assert container["image"] == f"addon-status:{VERSION}"
    assert f"--hub-kubeconfig={HUB_KUBECONFIG_DIR}/kubeconfig" in container["args"]
    options = options_of(rendered.agent, deployment, files=tmp_path)
    assert options.cluster_name == "cluster7"
    assert options.log_level == "info"
    assert options.profile == ("acm" if flavour == "acm" else "seed")
    assert options.addon_kind == ("AddonStatus" if flavour == "beside" else "ObservabilityAddon")
    assert options.hub_create_missing is (flavour != "acm")
    namespaces = {o["metadata"].get("namespace") for o in rendered.agent} - {None}
    assert namespaces == {config["spec"]["agentInstallNamespace"]}


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_the_hub_permission_is_one_cluster_role_of_the_same_apply(flavour: str) -> None:
    rollout = build(ROLLOUTS[flavour]).objects
    rendered = render(find(rollout, "AddOnTemplate"), "cluster7")
    [binding] = rendered.hub
    assert binding["metadata"]["namespace"] == "cluster7"
    assert binding["metadata"]["labels"]["open-cluster-management.io/addon-name"] == ADDON
    find(rollout, "ClusterRole", binding["roleRef"]["name"])
    identity = rendered.identity
    assert [(s["kind"], s["name"]) for s in binding["subjects"]] == [  # OCM >= 1.2
        ("User", identity.user),
        *(("Group", group) for group in identity.groups if group != "system:authenticated"),
    ]


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_removing_the_addon_orphans_the_crd_and_the_namespace_and_nothing_else(
    flavour: str,
) -> None:
    """OCM deletes what the ManifestWork applied except objects annotated deletion-orphan (it
    reads no `deleteOption`): deleting the CRD or the namespace would delete every addon CR."""
    agent = template(flavour)["spec"]["agentSpec"]
    assert "deleteOption" not in agent
    kept = [
        o["kind"] for o in agent["workload"]["manifests"]
        if DELETION_ORPHAN in (o["metadata"].get("annotations") or {})
    ]  # fmt: skip
    orphaned = {
        "seed": ["Namespace", "CustomResourceDefinition"],
        "acm": [],  # MCO's CRD and namespace, never applied by the project
        "beside": ["CustomResourceDefinition", "AddonStatus"],  # the addon CR it carries
    }
    assert kept == orphaned[flavour]


def test_without_an_agent_install_namespace_the_crds_default_applies() -> None:
    """The AddOnDeploymentConfig CRD defaults `agentInstallNamespace`; without any config OCM
    moves nothing."""
    rollout = build(ROLLOUTS["seed"]).objects
    config = copy.deepcopy(find(rollout, "AddOnDeploymentConfig"))
    del config["spec"]["agentInstallNamespace"]
    rendered = render(find(rollout, "AddOnTemplate"), "cluster7", config)
    assert find(rendered.agent, "Namespace")["metadata"]["name"] == (
        "open-cluster-management-agent-addon"
    )
    unmoved = render(find(rollout, "AddOnTemplate"), "cluster7")
    assert find(unmoved.agent, "Namespace")["metadata"]["name"] == (
        "open-cluster-management-addon-observability"
    )


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_everything_the_addon_names_is_in_the_same_apply(flavour: str) -> None:
    rollout = build(ROLLOUTS[flavour]).objects
    addon = find(rollout, "ClusterManagementAddOn", ADDON)
    assert addon["metadata"]["annotations"]["addon.open-cluster-management.io/lifecycle"] == (
        "addon-manager"
    )
    configs = {c["resource"]: c["defaultConfig"] for c in addon["spec"]["supportedConfigs"]}
    assert find(rollout, "AddOnTemplate")["metadata"]["name"] == configs["addontemplates"]["name"]
    deployment_config = find(rollout, "AddOnDeploymentConfig")["metadata"]
    assert configs["addondeploymentconfigs"] == {
        "name": deployment_config["name"],
        "namespace": deployment_config["namespace"],
    }
    for chosen in addon["spec"]["installStrategy"]["placements"]:
        placement = find(rollout, "Placement", chosen["name"])
        assert placement["metadata"]["namespace"] == chosen["namespace"]
        for cluster_set in placement["spec"]["clusterSets"]:
            binding = find(rollout, "ManagedClusterSetBinding", cluster_set)
            assert binding["metadata"]["namespace"] == chosen["namespace"]
            # upstream's CRD rule: a binding is named after the set it binds
            assert binding["spec"]["clusterSet"] == binding["metadata"]["name"]


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_every_volume_of_the_rendered_pod_is_something_the_cluster_will_have(flavour: str) -> None:
    """A pod that mounts what nobody creates never starts: each Secret and ConfigMap it mounts is
    in the rendered manifests, or written by OCM's registration agent (the hub kubeconfig), or
    (acm, OpenShift only) issued by OpenShift's service CA for an annotated Service."""
    rollout = build(ROLLOUTS[flavour]).objects
    agent = render(find(rollout, "AddOnTemplate"), "cluster7",
                   find(rollout, "AddOnDeploymentConfig")).agent  # fmt: skip
    pod = find(agent, "Deployment", "addon-status-controller")["spec"]["template"]["spec"]
    rendered = {(o["kind"], o["metadata"]["name"]) for o in agent}
    by_service_ca = {
        o["metadata"]["annotations"]["service.beta.openshift.io/serving-cert-secret-name"]
        for o in agent
        if o["kind"] == "Service"
        and "service.beta.openshift.io/serving-cert-secret-name"
        in (o["metadata"].get("annotations") or {})
    }
    for volume in pod["volumes"]:
        if "configMap" in volume:
            assert ("ConfigMap", volume["configMap"]["name"]) in rendered, volume
        elif "secret" in volume:
            name = volume["secret"]["secretName"]
            ocm = name == f"{ADDON}-hub-kubeconfig"
            assert ocm or (flavour == "acm" and name in by_service_ca), volume
        else:
            assert set(volume) == {"name", "emptyDir"}, volume
    mounted = {m["name"] for c in pod["containers"] for m in c.get("volumeMounts", [])}
    assert mounted <= {v["name"] for v in pod["volumes"]}


def _unplaced(obj: Obj) -> Obj:
    obj = copy.deepcopy(obj)
    obj["metadata"].pop("namespace", None)
    for subject in obj.get("subjects") or []:
        subject.pop("namespace", None)
    return obj


def test_beside_names_nothing_of_mcos_and_runs_the_hub_side_beside() -> None:
    """Beside ACM's observability operator (docs/spec.md §12.1): not one object of the rollout,
    the agent's manifests included, names MCO's kind, group or ManagedClusterAddOn; the hub side
    is manifests/hub-controller-beside's, in the rollout's namespace; the agents' hub roles and
    the admission policy are about the project's own kind."""
    rollout = build(ROLLOUTS["beside"]).objects
    text = json.dumps(rollout)
    mcos = ("observability.open-cluster-management.io", "ObservabilityAddon",
            "observabilityaddons", "observability-controller", "observability-addon")  # fmt: skip
    assert [name for name in mcos if name in text] == []
    beside = build(MANIFESTS / "hub-controller-beside").objects
    for obj in beside:
        ours = find(rollout, obj["kind"], obj["metadata"]["name"])
        assert _unplaced(ours) == _unplaced(obj)
    for role in ("addon-status-hub", "addon-status-hub-create-missing"):
        rules = find(rollout, "ClusterRole", role)["rules"]
        assert {(g, r) for rule in rules for g in rule["apiGroups"] for r in rule["resources"]} \
            <= {("status.addon-status.io", "addonstatuses"),
                ("status.addon-status.io", "addonstatuses/status")}  # fmt: skip
    policy = find(rollout, "ValidatingAdmissionPolicy")["spec"]["matchConstraints"]
    assert policy["resourceRules"][0]["resources"] == ["addonstatuses", "addonstatuses/status"]
