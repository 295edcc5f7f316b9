"""Kubernetes RBAC's decision, enough of it to hold the manifests' Roles against the calls the
controller makes: which rules reach a subject through the bindings, and whether one of them
allows a request, by kube-apiserver's rules (`RuleAllows` in plugin/pkg/auth/authorizer/rbac):

- verbs, API groups and resources match exactly or by `*`; a subresource is requested as
  `resource/subresource` and matches that, `*/subresource` or `*`;
- `resourceNames` restrict a rule to requests that name an object; a create names none (its
  name is in the body, not in the URL), so a rule with names never allows a create;
- a Role applies in its namespace; a ClusterRole bound by a RoleBinding in the binding's
  namespace, by a ClusterRoleBinding everywhere.

Requests come from the embedded API server's audit log, in the same terms.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubesim import AuditRecord

__all__ = ["Grant", "Request", "ServiceAccount", "grants_for", "unauthorized", "unused"]


@dataclass(frozen=True)
class Request:
    verb: str
    api_group: str
    resource: str
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    @classmethod
    def audited(cls, record: AuditRecord) -> Request:
        name = "" if record.verb == "create" else record.name
        return cls(
            record.verb,
            record.api_group,
            record.resource,
            record.subresource,
            record.namespace,
            name,
        )

    @property
    def combined(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource

    def __str__(self) -> str:
        where = f" in {self.namespace}" if self.namespace else " (cluster)"
        named = f" {self.name}" if self.name else ""
        return f"{self.verb} {self.combined}.{self.api_group or 'core'}{named}{where}"


@dataclass(frozen=True)
class ServiceAccount:
    namespace: str
    name: str

    @property
    def username(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.name}"

    @property
    def groups(self) -> frozenset[str]:
        return frozenset(
            {
                "system:serviceaccounts",
                f"system:serviceaccounts:{self.namespace}",
                "system:authenticated",
            }
        )

    def is_subject(self, subject: Mapping[str, Any]) -> bool:
        kind, name = subject.get("kind"), subject.get("name")
        if kind == "ServiceAccount":
            return name == self.name and subject.get("namespace") == self.namespace
        if kind == "User":
            return name == self.username
        return kind == "Group" and name in self.groups


@dataclass(frozen=True)
class Grant:
    """One PolicyRule and where it applies (`namespace` None: in every namespace)."""

    rule: Mapping[str, Any]
    namespace: str | None
    source: str

    def allows(self, request: Request) -> bool:
        rule = self.rule
        if self.namespace is not None and request.namespace != self.namespace:
            return False
        names = rule.get("resourceNames") or []
        return (
            _has(rule.get("verbs"), request.verb)
            and _has(rule.get("apiGroups"), request.api_group)
            and _resource_matches(rule.get("resources") or [], request)
            and (not names or (request.name != "" and request.name in names))
        )

    def privileges(self) -> list[tuple[str, str, str]]:
        """(verb, apiGroup, resource) triples this rule grants, for the unused-rule check."""
        rule = self.rule
        return [
            (verb, group, resource)
            for verb in rule.get("verbs") or []
            for group in rule.get("apiGroups") or []
            for resource in rule.get("resources") or []
        ]

    def __str__(self) -> str:
        return self.source


def _has(values: Sequence[str] | None, wanted: str) -> bool:
    return values is not None and ("*" in values or wanted in values)


def _resource_matches(resources: Sequence[str], request: Request) -> bool:
    for resource in resources:
        if resource in ("*", request.combined):
            return True
        if request.subresource and resource == f"*/{request.subresource}":
            return True
    return False


def grants_for(account: ServiceAccount, objects: Iterable[Mapping[str, Any]]) -> list[Grant]:
    """Every rule that reaches `account` through the RoleBindings and ClusterRoleBindings."""
    objects = list(objects)
    roles = {
        (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o
        for o in objects
        if o["kind"] in ("Role", "ClusterRole")
    }
    grants: list[Grant] = []
    for binding in objects:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if not any(account.is_subject(s) for s in binding.get("subjects") or []):
            continue
        ref = binding["roleRef"]
        bound_in = binding["metadata"].get("namespace")  # None for a ClusterRoleBinding
        role_namespace = bound_in if ref["kind"] == "Role" else None
        role = roles.get((ref["kind"], role_namespace, ref["name"]))
        assert role is not None, f"{binding['kind']} {binding['metadata']['name']}: no {ref}"
        for index, rule in enumerate(role.get("rules") or []):
            source = f"{ref['kind']} {ref['name']} rules[{index}]"
            grants.append(Grant(rule, bound_in, source))
    return grants


def unauthorized(requests: Iterable[Request], grants: Sequence[Grant]) -> list[str]:
    """The requests no grant allows, described."""
    return sorted({str(r) for r in requests if not any(g.allows(r) for g in grants)})


def unused(requests: Iterable[Request], grants: Sequence[Grant]) -> list[str]:
    """Each (rule, verb, resource) no request needed: a privilege the code does not use."""
    requests = list(requests)
    idle = []
    for grant in grants:
        for verb, group, resource in grant.privileges():
            narrowed = Grant(
                {**grant.rule, "verbs": [verb], "apiGroups": [group], "resources": [resource]},
                grant.namespace,
                grant.source,
            )
            if not any(narrowed.allows(r) for r in requests):
                idle.append(f"{grant}: {verb} {resource}.{group or 'core'}")
    return idle
