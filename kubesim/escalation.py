"""RBAC's escalation check, as kube-apiserver's RBAC storage runs it on every create and update
of a Role, ClusterRole, RoleBinding or ClusterRoleBinding (pkg/registry/rbac: `policybased`
storage, `ConfirmNoEscalation`): nobody grants what they do not hold.

- `system:masters` may write anything.
- A (Cluster)RoleBinding is allowed when its author may `bind` the role it references (the verb
  `bind` on `roles` or `clusterroles` named as the roleRef, in the binding's namespace), or holds
  every rule of that role in the binding's namespace (the cluster scope for a
  ClusterRoleBinding); a roleRef to a role that does not exist is its 404.
- A Role or ClusterRole is allowed when its author may `escalate` it, or holds every rule in it.

"Holds" is RBAC's `Covers`: each rule is taken apart into single verbs, groups, resources and
names, and each part must be allowed by a rule the author is bound to. A refusal is the 403
kube-apiserver sends: `user "<name>" (groups=[...]) is attempting to grant RBAC permissions not
currently held:` and a line per missing right.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final

from kubesim.access import UserInfo
from kubesim.errors import APIError, not_found, qualified
from kubesim.fields import go_quote
from kubesim.rbac import RBAC_GROUP, Authorizer
from kubesim.routing import RequestInfo

__all__ = ["check_escalation"]

Obj = dict[str, Any]
_BINDINGS: Final = {"RoleBinding": "rolebindings", "ClusterRoleBinding": "clusterrolebindings"}
_ROLES: Final = {"Role": "roles", "ClusterRole": "clusterroles"}
Role = Callable[[str, str, str], Obj | None]  # (plural, namespace, name) -> the stored role


def check_escalation(authorizer: Authorizer, user: UserInfo, obj: Obj, role_of: Role) -> None:
    """Raises the APIError kube-apiserver answers when `user` may not write `obj`."""
    kind = str(obj.get("kind"))
    if "system:masters" in user.authenticated_groups() or kind not in (*_BINDINGS, *_ROLES):
        return
    meta = obj["metadata"]
    namespace = str(meta.get("namespace") or "")
    if kind in _BINDINGS:
        ref = obj.get("roleRef") or {}
        plural = _ROLES.get(str(ref.get("kind")), "clusterroles")
        if _may(authorizer, user, "bind", (plural, namespace, str(ref.get("name", "")))):
            return
        role = role_of(plural, namespace if plural == "roles" else "", str(ref.get("name", "")))
        if role is None:
            raise not_found(RBAC_GROUP, plural, str(ref.get("name", "")))
        rules = list(role.get("rules") or [])
    else:
        if _may(authorizer, user, "escalate", (_ROLES[kind], namespace, str(meta["name"]))):
            return
        rules = list(obj.get("rules") or [])
    held = authorizer.holder(user, namespace)
    missing = _compacted(atom for atom in _atoms(rules) if not _held(held, namespace, atom))
    if missing:
        plural = _BINDINGS.get(kind) or _ROLES[kind]
        groups = "[" + " ".join(go_quote(g) for g in user.authenticated_groups()) + "]"
        lines = "\n".join(sorted(set(map(_text, missing))))
        why = (f"user {go_quote(user.username)} (groups={groups}) is attempting to grant RBAC "
               f"permissions not currently held:\n{lines}")  # fmt: skip
        name = str(meta["name"])
        message = f"{qualified(RBAC_GROUP, plural)} {go_quote(name)} is forbidden: {why}"
        details = {"name": name, "group": RBAC_GROUP, "kind": plural}
        raise APIError(403, "Forbidden", message, details)


def _compacted(missing: Iterable[Obj]) -> list[Obj]:
    """RBAC's CompactRules: the missing rights of one group, resource and name become one rule
    with their verbs, as kube-apiserver words its refusal (a line per resource, not per verb)."""
    simple: dict[tuple[str, str, str | None], Obj] = {}
    other: list[Obj] = []
    for atom in missing:
        if "nonResourceURLs" in atom:
            other.append(atom)
            continue
        names = atom.get("resourceNames") or [None]
        key = (atom["apiGroups"][0], atom["resources"][0], names[0])
        if key in simple:
            simple[key]["verbs"].append(atom["verbs"][0])
        else:
            simple[key] = {**atom, "verbs": list(atom["verbs"])}
    return [*other, *simple.values()]


def _may(authorizer: Authorizer, user: UserInfo, verb: str, role: tuple[str, str, str]) -> bool:
    """`user` may `verb` (bind, escalate) the role (plural, namespace, name)."""
    plural, namespace, name = role
    info = RequestInfo("", "", verb, True, api_group=RBAC_GROUP, resource=plural,
                       namespace=namespace, name=name)  # fmt: skip
    return authorizer.authorize(user, info) is None


def _atoms(rules: Iterable[Mapping[str, Any]]) -> Iterator[Obj]:
    """RBAC's BreakdownRule: each rule taken apart into rules of one group, resource, verb and
    name (or URL and verb), one at a time: a huge role is never held whole in memory."""
    for rule in rules:
        if not isinstance(rule, Mapping):
            continue
        verbs = rule.get("verbs") or []
        for group in rule.get("apiGroups") or []:
            for resource in rule.get("resources") or []:
                for verb in verbs:
                    for name in rule.get("resourceNames") or [None]:
                        atom: Obj = {"apiGroups": [group], "resources": [resource], "verbs": [verb]}
                        if name is not None:
                            atom["resourceNames"] = [name]
                        yield atom
        for url in rule.get("nonResourceURLs") or []:
            for verb in verbs:
                yield {"verbs": [verb], "nonResourceURLs": [url]}


def _held(held: Callable[[RequestInfo], bool], namespace: str, atom: Mapping[str, Any]) -> bool:
    """The author's rules in `namespace` cover `atom` (wildcards only by wildcards)."""
    [verb] = atom["verbs"]
    if "nonResourceURLs" in atom:
        return held(RequestInfo("GET", atom["nonResourceURLs"][0], verb, False))
    resource, _, subresource = atom["resources"][0].partition("/")
    return held(RequestInfo("", "", verb, True, api_group=atom["apiGroups"][0],
                            resource=resource, subresource=subresource, namespace=namespace,
                            name=(atom.get("resourceNames") or [""])[0]))  # fmt: skip


def _text(atom: Mapping[str, Any]) -> str:
    """RBAC's CompactString of a rule: `{APIGroups:["g"], Resources:["r"], Verbs:["get"]}`."""
    parts = []
    for key, label in (("apiGroups", "APIGroups"), ("resources", "Resources"),
                       ("nonResourceURLs", "NonResourceURLs"),
                       ("resourceNames", "ResourceNames"), ("verbs", "Verbs")):  # fmt: skip
        if atom.get(key):
            parts.append(f"{label}:[" + " ".join(go_quote(v) for v in atom[key]) + "]")
    return "{" + ", ".join(parts) + "}"
