"""`addon-status check hub`: the fleet rollout on an Open Cluster Management hub (manifests/ocm),
checked as its admin: OCM's APIs, the rollout's own objects (the ClusterManagementAddOn, the
addon manager's `bind` grant asked of RBAC with a SubjectAccessReview, the admission policy that
keeps each agent to its cluster), the Placement's decisions, and for each cluster chosen its
ManagedClusterAddOn (registered, manifests applied, the agent available) and its hub copy."""

from __future__ import annotations

import itertools
from collections.abc import Generator, Iterator, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any, Final

from controller.check.findings import Access, Finding, bad, good, may
from controller.check.hub_side import APPLY, BESIDE, hub_side_findings
from controller.hub.access import refusal
from controller.hub.ocm import MANAGED_CLUSTER, MANAGED_CLUSTER_ADDON
from controller.kube.api import ADDON, OWN_ADDON, ApiResource, Kube, KubeError, NotFoundError, whole
from controller.kube.pager import list_all

__all__ = ["hub_findings"]

Obj = dict[str, Any]
ADDON_API: Final = "addon.open-cluster-management.io/v1alpha1"
PLACEMENTS: Final = "cluster.open-cluster-management.io/v1beta1"
OCM_KINDS: Final = (
    (MANAGED_CLUSTER.api_version, MANAGED_CLUSTER.kind),
    (ADDON_API, "ClusterManagementAddOn"),
    (ADDON_API, "ManagedClusterAddOn"),
    (ADDON_API, "AddOnTemplate"),
    (ADDON_API, "AddOnDeploymentConfig"),
    (PLACEMENTS, "Placement"),
    (PLACEMENTS, "PlacementDecision"),
)
CLUSTER_ROLE: Final = ApiResource(
    "rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False
)
HUB_ROLES: Final = ("addon-status-hub", "addon-status-hub-create-missing")  # manifests/hub/roles
ADDON_MANAGER: Final = {  # OCM's and MCE's addon manager, as RBAC sees it
    "user": "system:serviceaccount:open-cluster-management-hub:addon-manager-controller-sa",
    "groups": [
        "system:serviceaccounts",
        "system:serviceaccounts:open-cluster-management-hub",
        "system:authenticated",
    ],
}
COPIES_CRD: Final = {  # a step of its own, once, before the rollout (docs/operations.md)
    ADDON.kind: "kubectl apply -k manifests/hub/crd (once, before the rollout)",
    OWN_ADDON.kind: "kubectl apply -k manifests/hub/crd-own-kind (once, before the rollout)",
}
POLICY: Final = "addon-status-agent-isolation"  # manifests/ocm/common/agent-isolation.yaml
PLACEMENT_LABEL: Final = "cluster.open-cluster-management.io/placement"
ROLE_BINDING: Final = ApiResource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")


def hub_findings(
    kube: Kube,
    addon: str,
    copy_name: str,
    *,
    kind: ApiResource = ADDON,
    hub_side: tuple[str, str] | None = None,
    now: datetime | None = None,
) -> Iterator[Finding | str]:
    """The rollout's findings, then the hub side's judged at `now`: `kind` is the hub copies'
    (ACM's ObservabilityAddon, or the project's own beside ACM's observability operator);
    `hub_side` names the namespace and name of its Deployment and Lease; by default, each
    Deployment labelled as its manifests label it (manifests/ocm and manifests/hub-controller
    place it differently)."""
    yield f"hub: the rollout of addon {addon}"
    served = yield from _apis(kube, kind)
    findings = _rollout(kube, served, addon, copy_name, kind) if served is not None else iter(())
    at = now or datetime.now().astimezone()
    for found in itertools.chain(findings, hub_side_findings(kube, hub_side, at)):
        if isinstance(found, Finding) and kind == OWN_ADDON:  # the fixes name its overlays
            yield replace(found, fix=_beside(found.fix))
        else:
            yield found


def _beside(fix: str) -> str:
    for step, instead in BESIDE.items():
        fix = fix.replace(step, instead)
    return fix


def _rollout(
    kube: Kube, served: Mapping[str, ApiResource], addon: str, copy_name: str, kind: ApiResource
) -> Iterator[Finding | str]:
    try:
        cma = kube.get(served["ClusterManagementAddOn"], "", addon)
    except NotFoundError:
        yield bad(f"ClusterManagementAddOn {addon} does not exist", APPLY)
        return
    except KubeError as error:
        yield bad(f"ClusterManagementAddOn {addon} cannot be read", str(error))
        return
    yield good(f"ClusterManagementAddOn {addon} exists")
    yield from _bind_grant(kube)
    yield from _admission_policy(kube)
    clusters = yield from _decisions(kube, served, cma)
    healthy = 0
    for cluster in clusters:  # only a cluster with something to fix is shown in full
        found = list(_cluster(kube, served[kind.kind], cluster, addon, copy_name))
        if all(f.ok for f in found):
            healthy += 1
        else:
            yield f"cluster {cluster}"
            yield from found
    if healthy:
        yield good(f"{healthy} of {len(clusters)} clusters: registered, manifests applied, "
                   "the hub copy kept by a running agent")  # fmt: skip


def _apis(
    kube: Kube, copies: ApiResource
) -> Generator[Finding, None, dict[str, ApiResource] | None]:
    """Each kind the rollout needs, served: their resources by kind, or None when one is not."""
    needed = (*OCM_KINDS, (copies.api_version, copies.kind))
    served: dict[str, ApiResource] = {}
    for api_version, kind in needed:
        try:
            served[kind] = kube.discover(api_version, kind)
        except NotFoundError:
            fix = "install Open Cluster Management v1.3 or later (clusteradm init)"
            if kind == copies.kind:
                fix = f"the copies' CRD: {COPIES_CRD.get(kind, APPLY)}"
            yield bad(f"{kind} {api_version} is not served", fix)
        except KubeError as error:
            yield bad("the hub did not answer", str(error))
            return None
    if len(served) < len(needed):
        return None
    yield good(f"Open Cluster Management's kinds and the hub copies' are served ({len(needed)})")
    return served


def _bind_grant(kube: Kube) -> Iterator[Finding]:
    """The addon manager creates each agent's RoleBinding as itself: RBAC lets it bind the
    rollout's hub roles only with the `bind` grant of manifests/ocm/common/addon-manager.yaml."""
    try:
        missing = [
            r
            for r in HUB_ROLES
            if not may(kube, Access("bind", CLUSTER_ROLE, name=r), ADDON_MANAGER)
        ]
    except KubeError as error:
        yield bad(
            "the addon manager's permissions cannot be asked (SubjectAccessReview)",
            f"run the check as a hub admin; {error}",
        )
        return
    if missing:
        yield bad(
            f"the addon manager may not bind ClusterRole {', '.join(missing)}",
            f"every agent's hub RoleBinding would be refused: {APPLY}",
        )
    else:
        yield good("the addon manager may bind the agents' hub roles")


def _admission_policy(kube: Kube) -> Iterator[Finding]:
    fix = f"without it one cluster's agent may write another's copy: {APPLY}"
    try:
        policies = kube.discover("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy")
        bindings = kube.discover(
            "admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"
        )
        kube.get(policies, "", POLICY)
        enforcing = [
            b
            for b in list_all(kube, bindings, "", keep=whole).items
            if (b.get("spec") or {}).get("policyName") == POLICY
            and "Deny" in ((b.get("spec") or {}).get("validationActions") or [])
        ]
    except NotFoundError:
        yield bad(f"the admission policy {POLICY} does not exist", fix)
        return
    except KubeError as error:
        yield bad(f"the admission policy {POLICY} cannot be read", str(error))
        return
    if enforcing:
        yield good(f"the admission policy {POLICY} is in force (Deny)")
    else:
        yield bad(f"the admission policy {POLICY} has no binding that denies", fix)


def _decisions(
    kube: Kube, served: Mapping[str, ApiResource], cma: Obj
) -> Generator[Finding, None, list[str]]:
    """The clusters the ClusterManagementAddOn's Placements chose (their PlacementDecisions),
    and whether each Placement keeps a lost cluster."""
    decisions, placements = served["PlacementDecision"], served["Placement"]
    strategy = (cma.get("spec") or {}).get("installStrategy") or {}
    chosen: list[str] = []
    for placement in strategy.get("placements") or []:
        name, namespace = placement.get("name", ""), placement.get("namespace", "")
        try:
            listed = list_all(
                kube, decisions, namespace, keep=whole, label_selector=f"{PLACEMENT_LABEL}={name}"
            )
        except KubeError as error:
            yield bad(f"the decisions of Placement {namespace}/{name} cannot be read", str(error))
            continue
        clusters = [
            d["clusterName"]
            for item in listed.items
            for d in (item.get("status") or {}).get("decisions") or []
            if d.get("clusterName")
        ]
        yield from _tolerates_lost_clusters(kube, placements, namespace, name)
        if clusters:
            yield good(f"Placement {namespace}/{name} chose {len(clusters)} clusters")
        else:
            yield bad(
                f"Placement {namespace}/{name} chose no cluster",
                f"bind a ManagedClusterSet to namespace {namespace} "
                "(ManagedClusterSetBinding) and check the Placement's predicates",
            )
        chosen += clusters
    if not strategy.get("placements"):
        yield bad("the ClusterManagementAddOn names no Placement", APPLY)
    return sorted(set(chosen))


LOST_TAINTS: Final = ("cluster.open-cluster-management.io/unreachable",
                      "cluster.open-cluster-management.io/unavailable")  # fmt: skip


def _tolerates_lost_clusters(
    kube: Kube, placements: ApiResource, namespace: str, name: str
) -> Iterator[Finding]:
    """A cluster OCM loses is tainted: a Placement that does not tolerate it drops it, and the
    addon manager then deletes its ManagedClusterAddOn and uninstalls the agent, so the console
    shows no row for the cluster instead of its being lost (docs/spec.md §12.2)."""
    try:
        placement = kube.get(placements, namespace, name)
    except KubeError as error:
        yield bad(f"Placement {namespace}/{name} cannot be read", str(error))
        return
    tolerated = {
        t.get("key") for t in (placement.get("spec") or {}).get("tolerations") or []
        if isinstance(t, dict) and t.get("operator") == "Exists"
    }  # fmt: skip
    if missing := [taint for taint in LOST_TAINTS if taint not in tolerated]:
        yield bad(
            f"Placement {namespace}/{name} does not tolerate {', '.join(missing)}: a lost "
            "cluster would leave it, and its addon with it (the console would show no row)",
            f"add tolerations with operator Exists for those keys ({APPLY} has them)",
        )


def _cluster(
    kube: Kube, copies: ApiResource, cluster: str, addon: str, copy_name: str
) -> Iterator[Finding]:
    try:
        mca = kube.get(MANAGED_CLUSTER_ADDON, cluster, addon)
    except NotFoundError:
        yield bad(
            f"ManagedClusterAddOn {cluster}/{addon} does not exist",
            "the addon manager creates it for each cluster the Placement chose: is it "
            "running (open-cluster-management-hub)?",
        )
        return
    except KubeError as error:
        yield bad(f"ManagedClusterAddOn {cluster}/{addon} cannot be read", str(error))
        return
    conditions = {c.get("type"): c for c in (mca.get("status") or {}).get("conditions") or []}
    for type_, fix in (
        (
            "RegistrationApplied",
            "the addon manager could not bind the agent's hub role: its "
            "logs, and the bind grant above",
        ),
        (
            "ManifestApplied",
            "the work agent could not apply the AddOnTemplate on the spoke: "
            "the ManifestWork's status in this namespace",
        ),
    ):
        yield _condition(conditions, type_, fix)
    try:
        refused = refusal(kube, cluster, addon, copy_name, copies)
    except KubeError as error:
        yield bad("cannot ask whether the agent may write its hub copy", str(error))
    else:
        if refused is not None:
            yield bad(refused, _why_refused(kube, cluster, addon))
    available = conditions.get("Available") or {}
    try:
        copy = kube.get(copies, cluster, copy_name)
    except NotFoundError:
        yield bad(
            f"the hub copy {cluster}/{copy_name} does not exist",
            "the agent creates it once it runs (addon-status check spoke, in its pod)",
        )
        return
    except KubeError as error:
        yield bad(f"the hub copy {cluster}/{copy_name} cannot be read", str(error))
        return
    if not (copy.get("status") or {}).get("conditions"):
        yield bad(
            f"the hub copy {cluster}/{copy_name} carries no conditions",
            "the agent has not written it: its logs on the spoke",
        )
    elif available.get("status") == "True":
        yield good(f"the hub copy {cluster}/{copy_name} is kept by a running agent")
    else:
        since = available.get("lastTransitionTime") or "unknown"
        yield bad(
            f"the hub copy {cluster}/{copy_name} may be stale: the agent is not "
            f"available (ManagedClusterAddOn Available={available.get('status', 'absent')}"
            f" since {since})",
            "the spoke is silent: its klusterlet and the agent's pod",
        )


def _condition(conditions: Mapping[Any, Obj], type_: str, fix: str) -> Finding:
    found = conditions.get(type_) or {}
    if found.get("status") == "True":
        return good(f"{type_} ({found.get('reason') or 'no reason'})")
    status = found.get("status", "absent")
    message = found.get("message") or found.get("reason") or ""
    return bad(f"{type_} is {status}" + (f": {message}" if message else ""), fix)


def _why_refused(kube: Kube, cluster: str, addon: str) -> str:
    """What to do when the agent may not write its copy: name the RoleBinding OCM makes for it
    (docs/spec.md §12.2) when it is missing or binds a ClusterRole that is gone."""
    name = f"open-cluster-management:{addon}:clusterrole:agent"
    remake = (
        "the addon manager makes it again on the ManagedClusterAddOn's next change or within "
        f"10 minutes; sooner: kubectl annotate managedclusteraddon -n {cluster} {addon} "
        'addon-status.open-cluster-management.io/touched="$(date +%s)" --overwrite'
    )
    try:
        binding = kube.get(ROLE_BINDING, cluster, name)
    except NotFoundError:
        return f"RoleBinding {cluster}/{name} is missing: {remake}"
    except KubeError as error:
        return f"RoleBinding {cluster}/{name} cannot be read: {error}"
    role = (binding.get("roleRef") or {}).get("name", "")
    try:
        kube.get(CLUSTER_ROLE, "", role)
    except NotFoundError:
        return (
            f"RoleBinding {cluster}/{name} binds ClusterRole {role}, which does not exist: {APPLY}"
        )
    except KubeError:
        pass
    return (
        f"RoleBinding {cluster}/{name} exists (ClusterRole {role}): its subjects, the "
        "ClusterRole's rules, and the admission policy"
    )
