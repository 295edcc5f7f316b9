"""Role-based access control as kube-apiserver's RBAC authorizer runs it: the four types of
`rbac.authorization.k8s.io/v1` (stored and validated like any other) and `Authorizer`, which
allows a request when a binding that names the caller grants a rule that covers it.

What it follows (plugin/pkg/auth/authorizer/rbac): a ClusterRoleBinding's rules hold in every
namespace and at the cluster scope, a RoleBinding's only in its namespace (its roleRef a Role of
that namespace or a ClusterRole); a subject is a `User` (the user name), a `Group` (one of the
caller's groups) or a `ServiceAccount` (`system:serviceaccount:<namespace>:<name>`); a rule
covers a verb, an API group, a resource (`resource/subresource` for a subresource, `*` and
`*/sub` and `resource/*` as wildcards) and, when it lists `resourceNames`, only requests that
name one of them (a create names none; a list or watch names the one its field selector
requires). Non-resource URLs (`/version`, `/apis`) match `nonResourceURLs`, a trailing `*` a
prefix. The bootstrap policy every cluster has is built in: `system:masters` may do anything
(the superuser authorizer before RBAC), and `system:authenticated` may read discovery and
version (`system:discovery`, `system:basic-user`, `system:public-info-viewer`). A denial is the
403 kube-apiserver sends, naming the user, verb, resource, group and namespace.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from kubesim.access import UserInfo
from kubesim.errors import APIError, forbidden
from kubesim.fields import FieldError
from kubesim.meta import coerce_metadata
from kubesim.resources import ResourceType, Strategy
from kubesim.routing import RequestInfo

__all__ = ["RBAC_GROUP", "Authorizer", "rbac_types"]

Obj = dict[str, Any]
RBAC_GROUP: Final = "rbac.authorization.k8s.io"
_SUBJECT_KINDS: Final = ("User", "Group", "ServiceAccount")
# The bootstrap ClusterRoles bound to every authenticated user (discovery, version, reviews of
# oneself): what a controller reads before its own RBAC comes into play.
_DISCOVERY_URLS: Final = (
    "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/readyz", "/openapi",
    "/openapi/*", "/version", "/version/",
)  # fmt: skip
_SELF_REVIEWS: Final = {
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
    ("authentication.k8s.io", "selfsubjectreviews"),
}


class _RBACStrategy(Strategy):
    """Keeps the type's fields of the top level, validates what authorization relies on."""

    fields: tuple[str, ...] = ()

    def name_errors(self, name: str, prefix: bool) -> list[str]:
        """ValidateRBACName: any path segment (`system:controller:x` is a name), not a DNS one."""
        if name in (".", ".."):
            return [f"may not be '{name}'"]
        return [f"may not contain '{c}'" for c in ("/", "%") if c in name]

    def decode(self, body: Obj, version: str) -> tuple[Obj, list[str]]:
        metadata, dropped = coerce_metadata(body.get("metadata"))
        obj: Obj = {"kind": body.get("kind"), "apiVersion": body.get("apiVersion")}
        obj["metadata"] = metadata
        for key, value in body.items():
            if key in self.fields:
                obj[key] = value
            elif key not in ("apiVersion", "kind", "metadata"):
                dropped.append(key)
        return obj, dropped


class _RoleStrategy(_RBACStrategy):
    fields = ("rules", "aggregationRule")

    def validate(self, obj: Obj, version: str) -> list[FieldError]:
        errors = []
        for index, rule in enumerate(obj.get("rules") or []):
            errors += _rule_errors(f"rules[{index}]", rule, namespaced=obj.get("kind") == "Role")
        return errors


def _rule_errors(where: str, rule: object, *, namespaced: bool) -> list[FieldError]:
    """ValidatePolicyRule's checks."""
    if not isinstance(rule, dict):
        return [FieldError.invalid(where, rule, "must be an object")]
    urls, resources = rule.get("nonResourceURLs"), rule.get("resources")
    problems = [
        (not rule.get("verbs"), f"{where}.verbs", "verbs must contain at least one value"),
        (bool(urls and namespaced), f"{where}.nonResourceURLs",
         "namespaced rules cannot apply to non-resource URLs"),
        (bool(urls and resources), f"{where}.nonResourceURLs",
         "rules cannot apply to both regular resources and non-resource URLs"),
        (not urls and not resources, f"{where}.resources",
         "resource rules must supply at least one resource"),
        (bool(resources) and "apiGroups" not in rule, f"{where}.apiGroups",
         "resource rules must supply at least one api group"),
    ]  # fmt: skip
    return [FieldError.invalid(path, "", why) for failed, path, why in problems if failed]


class _BindingStrategy(_RBACStrategy):
    fields = ("roleRef", "subjects")

    def validate(self, obj: Obj, version: str) -> list[FieldError]:
        errors = []
        ref = obj.get("roleRef") or {}
        allowed = ("Role", "ClusterRole") if obj.get("kind") == "RoleBinding" else ("ClusterRole",)
        if ref.get("apiGroup") != RBAC_GROUP:
            errors.append(
                FieldError.not_supported("roleRef.apiGroup", ref.get("apiGroup"), [RBAC_GROUP])
            )
        if ref.get("kind") not in allowed:
            errors.append(FieldError.not_supported("roleRef.kind", ref.get("kind"), list(allowed)))
        if not ref.get("name"):
            errors.append(FieldError.required("roleRef.name", ""))
        for index, subject in enumerate(obj.get("subjects") or []):
            where = f"subjects[{index}]"
            kind = (subject or {}).get("kind")
            if kind not in _SUBJECT_KINDS:
                errors.append(FieldError.not_supported(f"{where}.kind", kind, list(_SUBJECT_KINDS)))
            if not (subject or {}).get("name"):
                errors.append(FieldError.required(f"{where}.name", ""))
            if (
                kind == "ServiceAccount"
                and not subject.get("namespace")
                and obj.get("kind") == "ClusterRoleBinding"
            ):
                errors.append(FieldError.required(f"{where}.namespace", ""))
        return errors

    def validate_update(self, new: Obj, old: Obj, version: str) -> list[FieldError]:
        if new.get("roleRef") != old.get("roleRef"):
            return [FieldError.invalid("roleRef", new.get("roleRef"), "cannot change roleRef")]
        return self.validate(new, version)


def rbac_types() -> list[ResourceType]:
    def kind(plural: str, name: str, namespaced: bool, strategy: Strategy) -> ResourceType:
        return ResourceType(RBAC_GROUP, ("v1",), plural, name.lower(), name, f"{name}List",
                            namespaced=namespaced, strategy=strategy)  # fmt: skip

    return [
        kind("roles", "Role", True, _RoleStrategy()),
        kind("clusterroles", "ClusterRole", False, _RoleStrategy()),
        kind("rolebindings", "RoleBinding", True, _BindingStrategy()),
        kind("clusterrolebindings", "ClusterRoleBinding", False, _BindingStrategy()),
    ]


# (group, plural) -> the stored objects of that type (in one namespace, or all with None).
Objects = Callable[[str, str | None], list[Obj]]


class Authorizer:
    """Allows or denies one request from the RBAC objects stored now (no cache: a binding
    created a moment ago holds for the next request, as the informers' lag makes no test
    depend on)."""

    def __init__(self, objects: Objects) -> None:
        self._objects = objects

    def authorize(self, user: UserInfo, info: RequestInfo) -> APIError | None:
        """None when allowed, else the 403 to send."""
        groups = (
            user.authenticated_groups()
            if user.username != "system:anonymous"
            else list(user.groups)
        )
        if self.allows(user, groups, info):
            return None
        if not info.is_resource:
            message = f'forbidden: User "{user.username}" cannot {info.verb} path "{info.path}"'
            return APIError(403, "Forbidden", message)
        return forbidden(user.username, info.verb, group=info.api_group, resource=info.resource,
                         subresource=info.subresource, namespace=info.namespace,
                         name=info.name or info.selected_name)  # fmt: skip

    def allows(self, user: UserInfo, groups: list[str], info: RequestInfo) -> bool:
        """The decision for `user` in exactly `groups` (an access review names them as is)."""
        if "system:masters" in groups or self._bootstrap(groups, info):
            return True
        return any(_covers(rule, info) for rule in self._rules(user, groups, info.namespace))

    def holder(self, user: UserInfo, namespace: str) -> Callable[[RequestInfo], bool]:
        """Whether `user` may do a request in `namespace`, its rules resolved once (RBAC's
        RulesFor, as the escalation check asks it of every right a role grants)."""
        groups = user.authenticated_groups()
        rules = list(self._rules(user, groups, namespace))
        masters = "system:masters" in groups
        return lambda info: (
            masters or self._bootstrap(groups, info) or any(_covers(rule, info) for rule in rules)
        )

    def _bootstrap(self, groups: list[str], info: RequestInfo) -> bool:
        if "system:authenticated" not in groups:
            return not info.is_resource and info.verb == "get" and info.path.rstrip("/") in (
                "/healthz", "/livez", "/readyz", "/version"
            )  # fmt: skip
        if not info.is_resource:
            return info.verb == "get" and any(_url_matches(u, info.path) for u in _DISCOVERY_URLS)
        return info.verb == "create" and (info.api_group, info.resource) in _SELF_REVIEWS

    def _rules(
        self, user: UserInfo, groups: list[str], namespace: str
    ) -> Iterable[Mapping[str, Any]]:
        for binding in self._objects("clusterrolebindings", None):
            if _names(binding, user, groups, ""):
                yield from self._role_rules(binding["roleRef"], "")
        if not namespace:
            return
        for binding in self._objects("rolebindings", namespace):
            if _names(binding, user, groups, namespace):
                yield from self._role_rules(binding["roleRef"], namespace)

    def _role_rules(self, ref: Mapping[str, Any], namespace: str) -> list[Mapping[str, Any]]:
        plural = "roles" if ref.get("kind") == "Role" else "clusterroles"
        for role in self._objects(plural, namespace if plural == "roles" else None):
            if role["metadata"]["name"] == ref.get("name"):
                return list(role.get("rules") or [])
        return []  # a binding to a role that does not exist grants nothing


def _names(binding: Mapping[str, Any], user: UserInfo, groups: list[str], namespace: str) -> bool:
    for subject in binding.get("subjects") or []:
        kind, name = subject.get("kind"), subject.get("name")
        if kind == "User" and name == user.username:
            return True
        if kind == "Group" and name in groups:
            return True
        if kind == "ServiceAccount":
            where = subject.get("namespace") or namespace
            if user.username == f"system:serviceaccount:{where}:{name}":
                return True
    return False


def _covers(rule: Mapping[str, Any], info: RequestInfo) -> bool:
    verbs = rule.get("verbs") or []
    if info.verb not in verbs and "*" not in verbs:
        return False
    if not info.is_resource:
        return any(_url_matches(u, info.path) for u in rule.get("nonResourceURLs") or [])
    groups = rule.get("apiGroups") or []
    if info.api_group not in groups and "*" not in groups:
        return False
    if not _resource_matches(rule.get("resources") or [], info.resource, info.subresource):
        return False
    names = rule.get("resourceNames") or []
    return not names or (info.name or info.selected_name) in names


def _resource_matches(resources: list[str], resource: str, subresource: str) -> bool:
    combined = f"{resource}/{subresource}" if subresource else resource
    for granted in resources:
        if granted in ("*", combined):
            return True
        if subresource and granted in (f"*/{subresource}", f"{resource}/*"):
            return True
    return False


def _url_matches(granted: str, path: str) -> bool:
    if granted == "*":
        return True
    if granted.endswith("*"):
        return path.startswith(granted[:-1])
    return granted == path
