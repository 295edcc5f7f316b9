"""The model of OCM v1.3 during a template switch (controller/demo/addon_manager.py): the addon
manager renders the AddOnTemplate the ClusterManagementAddOn's default config names (what its
addon configuration controller copies into each ManagedClusterAddOn's `configReferences`, which
the template agent reads: `templateagent.AddonTemplateConfigRef`), into the same ManifestWork
whatever the template's name (addon-framework's `DeployWorkNamePrefix(addon)` + `-0`); the work
agent deletes what the work no longer lists and it owns (`appliedManifestWorkReconciler` with
`helper.DeleteAppliedResources`, which skips what it does not own: an object whose manifest was
annotated `deletion-orphan`, as `OwnedByTheWork` decides from the work's orphaning rules). Then
the switch from release 0.1.0's template to the current one, both flavours."""

from __future__ import annotations

import re
from typing import Any

import pytest

from controller.demo.addon_manager import (
    DELETION_ORPHAN,
    TemplateNotFoundError,
    chosen_template,
    deploy_work_name,
    no_longer_applied,
    render,
)
from tests.manifests.kustomize import MANIFESTS, build, find
from tests.ocm.releases import PREVIOUS, ROLLOUTS

Obj = dict[str, Any]


def _addon(template: str | None) -> Obj:
    configs: list[Obj] = [{"group": "addon.open-cluster-management.io",
                           "resource": "addondeploymentconfigs",
                           "defaultConfig": {"name": "c", "namespace": "n"}}]  # fmt: skip
    if template is not None:
        configs.append({"group": "addon.open-cluster-management.io", "resource": "addontemplates",
                        "defaultConfig": {"name": template}})  # fmt: skip
    return {"metadata": {"name": "a"}, "spec": {"supportedConfigs": configs}}


def _obj(kind: str, name: str, namespace: str = "", *, orphan: bool = False) -> Obj:
    metadata: Obj = {"name": name, **({"namespace": namespace} if namespace else {})}
    if orphan:
        metadata["annotations"] = {DELETION_ORPHAN: ""}
    group = {"Deployment": "apps/v1", "Role": "rbac.authorization.k8s.io/v1"}.get(kind, "v1")
    return {"apiVersion": group, "kind": kind, "metadata": metadata}


def _named(name: str) -> Obj:
    return {"metadata": {"name": name}, "spec": {"addonName": "a"}}


def test_the_manager_renders_the_template_the_default_config_names() -> None:
    templates = [_named("a-0.1.0"), _named("a")]
    assert chosen_template(_addon("a"), templates)["metadata"]["name"] == "a"
    assert chosen_template(_addon("a-0.1.0"), templates)["metadata"]["name"] == "a-0.1.0"


@pytest.mark.parametrize("name", [None, "gone"], ids=["names-none", "names-a-missing-one"])
def test_a_template_that_is_not_there_is_a_clear_error(name: str | None) -> None:
    with pytest.raises(
        TemplateNotFoundError, match=re.escape(f"AddOnTemplate {name or '(none)'},")
    ):
        chosen_template(_addon(name), [_named("a")])


def test_the_work_is_named_by_the_addon_so_a_switch_changes_the_same_work() -> None:
    assert (
        deploy_work_name(_named("a-0.1.0")) == deploy_work_name(_named("a")) == "addon-a-deploy-0"
    )


@pytest.mark.parametrize(
    ("before", "after", "deleted"),
    [
        pytest.param([_obj("ConfigMap", "x", "ns")], [], ["x"], id="unlisted-is-deleted"),
        pytest.param([_obj("ConfigMap", "x", "ns", orphan=True)], [], [], id="orphaned-is-left"),
        pytest.param([_obj("Deployment", "x", "ns")], [_obj("Deployment", "x", "ns")], [],
                     id="still-listed-is-updated-in-place"),
        pytest.param([_obj("Deployment", "x", "ns")], [_obj("Deployment", "x", "other")], ["x"],
                     id="moved-to-another-namespace-is-deleted"),
        pytest.param([_obj("Role", "x", "ns")], [_obj("ConfigMap", "x", "ns")], ["x"],
                     id="another-kind-of-that-name-is-another-object"),
    ],
)  # fmt: skip
def test_the_work_agent_deletes_what_the_work_no_longer_lists_and_it_owns(
    before: list[Obj], after: list[Obj], deleted: list[str]
) -> None:
    assert [o["metadata"]["name"] for o in no_longer_applied(before, after)] == deleted


@pytest.mark.parametrize("flavour", sorted(ROLLOUTS))
def test_the_switch_from_0_1_0_updates_every_agent_object_in_place(flavour: str) -> None:
    """0.1.0's template was named after its release; the current one keeps one name. The switch
    renders into the same work, and every object 0.1.0's work applied is still listed: the work
    agent deletes nothing (the spoke's CRD, with every addon CR, stays)."""
    old = build(PREVIOUS / ROLLOUTS[flavour]).objects
    new = build(MANIFESTS / ROLLOUTS[flavour]).objects
    old_template = chosen_template(find(old, "ClusterManagementAddOn"),
                                   [find(old, "AddOnTemplate")])  # fmt: skip
    new_template = chosen_template(find(new, "ClusterManagementAddOn"),
                                   [old_template, find(new, "AddOnTemplate")])  # fmt: skip
    assert old_template["metadata"]["name"] != new_template["metadata"]["name"]
    assert deploy_work_name(old_template) == deploy_work_name(new_template)
    before = render(old_template, "cluster1", find(old, "AddOnDeploymentConfig")).agent
    after = render(new_template, "cluster1", find(new, "AddOnDeploymentConfig")).agent
    assert no_longer_applied(before, after) == []


@pytest.mark.parametrize("flavour", sorted(ROLLOUTS))
def test_while_kubectl_applies_the_upgrade_0_1_0s_template_renders_what_already_runs(
    flavour: str,
) -> None:
    """kubectl applies the new AddOnDeploymentConfig before the ClusterManagementAddOn that names
    the new template, and OCM renders 0.1.0's template with it in between (seen on OCM v1.3: with
    no IMAGE the render had no image, and every spoke refused the Deployment for about a
    second). That render must be the one already running: no refusal, no rollout."""
    old = build(PREVIOUS / ROLLOUTS[flavour]).objects
    new = build(MANIFESTS / ROLLOUTS[flavour]).objects
    template = find(old, "AddOnTemplate")
    running = render(template, "cluster1", find(old, "AddOnDeploymentConfig")).agent
    between = render(template, "cluster1", find(new, "AddOnDeploymentConfig")).agent
    assert between == running
