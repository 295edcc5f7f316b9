"""ValidatingAdmissionPolicies (`admissionregistration.k8s.io/v1`) as kube-apiserver's policy
plugin runs them (k8s.io/apiserver/pkg/admission/plugin/policy/validating), on every create,
update and delete that reaches storage, after the object's own validation.

A binding names a policy and what to do when it denies (`validationActions`: Deny, Warn,
Audit). A request is matched by the policy's `matchConstraints.resourceRules` (and the
binding's `matchResources`, when set: both must match), then by every `matchConditions`
expression, then each `validations` expression (admission_cel.py: how they are evaluated, the
variables lazily, within kube-apiserver's CEL cost limits). A false validation denies with its
`messageExpression`, else its `message`, else `failed expression: <expression>`, and its
`reason` (Invalid, 422, unless set); an expression that fails to evaluate follows
`failurePolicy` (Fail denies with the error, Ignore admits). The denial is
kube-apiserver's: `<resource> "<name>" is forbidden: ValidatingAdmissionPolicy '<policy>' with
binding '<binding>' denied request: <message>`.

The CEL variables are `object`, `oldObject` (null where there is none), `request` (kind,
resource, subResource, name, namespace, operation, userInfo) and `variables`; the kinds and
how their expressions are compiled are admission_kinds.py's. Policies and bindings themselves
are never judged by policies (policy/generic skips the admission configuration resources), and
admission never runs under the store's lock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubesim.access import UserInfo
from kubesim.admission_cel import decide
from kubesim.admission_kinds import (
    ADMISSION_GROUP,
    REASONS,
    admission_types,
    well_formed,
)
from kubesim.errors import APIError, qualified
from kubesim.escalation import check_escalation
from kubesim.fields import go_quote
from kubesim.rbac import RBAC_GROUP, Authorizer
from kubesim.reads import Target
from kubesim.store import Store

__all__ = ["ADMISSION_GROUP", "Admission", "AdmissionRequest", "Policies", "admission_types"]

Obj = dict[str, Any]


# --- evaluation ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AdmissionRequest:
    """One write as admission sees it."""

    operation: str  # CREATE, UPDATE, DELETE
    group: str
    version: str
    resource: str
    subresource: str
    kind: str
    namespace: str
    name: str
    user: UserInfo
    object: Obj | None
    old_object: Obj | None

    def variables(self) -> dict[str, Any]:
        user = {"username": self.user.username, "groups": self.user.authenticated_groups()}
        if self.user.uid:
            user["uid"] = self.user.uid
        gvr = {"group": self.group, "version": self.version, "resource": self.resource}
        gvk = {"group": self.group, "version": self.version, "kind": self.kind}
        request = {
            "kind": gvk, "resource": gvr, "subResource": self.subresource, "requestKind": gvk,
            "requestResource": gvr, "requestSubResource": self.subresource, "name": self.name,
            "namespace": self.namespace, "operation": self.operation, "userInfo": user,
            "dryRun": False,
        }  # fmt: skip
        return {"object": self.object, "oldObject": self.old_object, "request": request,
                "params": None, "namespaceObject": None}  # fmt: skip


Objects = Callable[[str], list[Obj]]  # plural -> the stored objects of that kind


class Policies:
    """The policies and bindings stored now (no cache: a binding created a moment ago holds for
    the next request)."""

    def __init__(self, objects: Objects) -> None:
        self._objects = objects

    def admit(self, request: AdmissionRequest) -> list[str]:
        """The warnings to send; raises the APIError of the first denial."""
        policies = {p["metadata"]["name"]: p for p in self._objects("validatingadmissionpolicies")
                    if well_formed(p, policy=True)}  # fmt: skip
        warnings: list[str] = []
        bindings = sorted((b for b in self._objects("validatingadmissionpolicybindings")
                           if well_formed(b, policy=False)),
                          key=lambda b: b["metadata"]["name"])  # fmt: skip
        for binding in bindings:
            spec = binding["spec"]
            policy = policies.get(spec["policyName"])
            if policy is None or not _matches(policy["spec"].get("matchConstraints"), request):
                continue
            if spec.get("matchResources") and not _matches(spec["matchResources"], request):
                continue
            denial = decide(policy["spec"], request.variables())
            if denial is None:
                continue
            message, reason = denial
            names = (policy["metadata"]["name"], binding["metadata"]["name"])
            actions = spec.get("validationActions") or []
            if "Warn" in actions:
                warnings.append(f"Validation failed for ValidatingAdmissionPolicy '{names[0]}' "
                                f"with binding '{names[1]}': {message}")  # fmt: skip
            if "Deny" in actions:
                raise _denied(request, names, message, reason)
        return warnings


def _matches(constraints: Any, request: AdmissionRequest) -> bool:
    """policy/matching: excluded by any excludeResourceRule, else matched by a resourceRule
    (none at all matches everything: a binding's matchResources may name no rules)."""
    constraints = constraints if isinstance(constraints, Mapping) else {}
    rules = [r for r in constraints.get("resourceRules") or [] if isinstance(r, Mapping)]
    excluded = [r for r in constraints.get("excludeResourceRules") or [] if isinstance(r, Mapping)]
    if any(_rule_matches(r, request) for r in excluded):
        return False
    return not rules or any(_rule_matches(r, request) for r in rules)


def _rule_matches(rule: Mapping[str, Any], request: AdmissionRequest) -> bool:
    """The webhook rules' matcher (admission/plugin/webhook/predicates/rules): `*` is every
    resource but no subresource, `*/*` every resource and subresource, `r/*` and `*/s` the
    halves; a Namespace is cluster-scoped though its request carries its own name."""

    def has(values: Any, value: str) -> bool:
        return isinstance(values, list) and ("*" in values or value in values)

    def resource_ok(granted: Any) -> bool:
        if not isinstance(granted, str):
            return False
        res, _, sub = granted.partition("/")
        return res in ("*", request.resource) and sub in ("*", request.subresource)

    is_namespace = (request.group, request.resource) == ("", "namespaces")
    cluster = is_namespace or not request.namespace
    scope = rule.get("scope") or "*"
    names = rule.get("resourceNames") or []
    return (
        has(rule.get("operations"), request.operation)
        and has(rule.get("apiGroups"), request.group)
        and has(rule.get("apiVersions"), request.version)
        and any(resource_ok(r) for r in rule.get("resources") or [])
        and (not names or request.name in names)
        and scope in ("*", "Cluster" if cluster else "Namespaced")
    )


def _denied(
    request: AdmissionRequest, names: tuple[str, str], message: str, reason: str
) -> APIError:
    text = (f"ValidatingAdmissionPolicy '{names[0]}' with binding '{names[1]}' denied "
            f"request: {message}")  # fmt: skip
    target = qualified(request.group, request.resource)
    target += f" {go_quote(request.name)}" if request.name else ""
    details = {"name": request.name, "group": request.group, "kind": request.resource,
               "causes": [{"message": text}]}  # fmt: skip
    details = {k: v for k, v in details.items() if v}
    return APIError(REASONS.get(reason, 422), reason, f"{target} is forbidden: {text}", details)


class Admission:
    """What kube-apiserver checks of a write after the object's own validation, before it is
    stored: RBAC's escalation check (with RBAC on), then the ValidatingAdmissionPolicies. Called
    by the registry as (operation, target, object, old object); the warnings to send."""

    def __init__(self, store: Store, authorizer: Authorizer | None) -> None:
        self._store, self._authorizer = store, authorizer
        self._policies = Policies(lambda plural: store.items((ADMISSION_GROUP, plural), None))

    def __call__(
        self, operation: str, target: Target, obj: Obj | None, old: Obj | None
    ) -> list[str]:
        assert target.user is not None
        rt = target.rt
        if self._authorizer is not None and obj is not None and rt.group == RBAC_GROUP:

            def role_of(plural: str, namespace: str, name: str) -> Obj | None:
                return self._store.get((RBAC_GROUP, plural), (namespace, name))

            check_escalation(self._authorizer, target.user, obj, role_of)
        if rt.group == ADMISSION_GROUP:  # policies never judge policies (no circular lock-out)
            return []
        meta = (obj or old or {}).get("metadata") or {}
        request = AdmissionRequest(
            operation, rt.group, target.version, rt.plural, target.subresource, rt.kind,
            target.namespace, str(meta.get("name") or target.name), target.user, obj, old,
        )  # fmt: skip
        return self._policies.admit(request)
