"""A request's URL and method in Kubernetes' terms (kube-apiserver's RequestInfoFactory):
verb, API group and version, resource, subresource, namespace and name. Authorization, audit
and fault matching all speak these terms."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

__all__ = ["RequestInfo", "parse_bool", "request_info"]

_NAMESPACE_SUBRESOURCES: Final = frozenset({"status", "finalize"})
_VERBS: Final = {
    "POST": "create",
    "PUT": "update",
    "PATCH": "patch",
    "GET": "get",
    "HEAD": "get",
    "DELETE": "delete",
}


@dataclass(frozen=True, slots=True)
class RequestInfo:
    method: str
    path: str
    verb: str
    is_resource: bool
    api_prefix: str = ""  # "api" or "apis"
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    user: str = ""
    pod: str = ""  # the caller's user.extra pod name (a bound ServiceAccount token)
    # The name a list or watch's field selector requires (`metadata.name=X`): RequestInfoFactory
    # gives it to authorization (RBAC's resourceNames) and audit; the request still lists.
    selected_name: str = ""


def parse_bool(value: str | None) -> bool:
    """Go's strconv.ParseBool, as kube-apiserver reads `watch=`."""
    return value in ("1", "t", "T", "TRUE", "true", "True")


def request_info(method: str, path: str, query: Mapping[str, str]) -> RequestInfo:
    parts = [p for p in path.strip("/").split("/") if p] if path.strip("/") else []
    plain = _VERBS.get(method, method.lower())
    non_resource = RequestInfo(method, path, method.lower(), is_resource=False)
    if not parts or parts[0] not in ("api", "apis"):
        return non_resource
    prefix = parts[0]
    if prefix == "api":
        if len(parts) < 2:
            return non_resource
        group, version, rest = "", parts[1], parts[2:]
    else:
        if len(parts) < 3:
            return RequestInfo(
                method, path, method.lower(), False, prefix, parts[1] if len(parts) > 1 else ""
            )
        group, version, rest = parts[1], parts[2], parts[3:]
    if not rest:
        return RequestInfo(method, path, method.lower(), False, prefix, group, version)
    verb = plain
    if rest[0] == "watch":  # the deprecated /watch/ prefix
        verb, rest = "watch", rest[1:]
    namespace = ""
    if rest and rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0] if rest else ""
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    selected = ""
    if not name:
        verb, selected = _collection_verb(verb, query)
    return RequestInfo(
        method,
        path,
        verb,
        True,
        prefix,
        group,
        version,
        resource,
        subresource,
        namespace,
        name,
        selected_name=selected,
    )


def _collection_verb(verb: str, query: Mapping[str, str]) -> tuple[str, str]:
    """A request on a collection: get is list or watch, delete is deletecollection; a list or
    watch takes the name its field selector requires, if any."""
    if verb == "get":
        verb = "watch" if parse_bool(query.get("watch")) else "list"
    elif verb == "delete":
        verb = "deletecollection"
    name = _name_in_field_selector(query.get("fieldSelector", ""))
    return verb, name if verb in ("list", "watch") else ""


def _name_in_field_selector(selector: str) -> str:
    """RequestInfoFactory: a list or watch without a name takes the one its field selector
    requires exactly (`metadata.name=X` or `==`), so that RBAC's resourceNames can allow it."""
    for requirement in selector.split(","):
        for operator in ("==", "="):
            key, sep, value = requirement.partition(operator)
            if sep and key.strip() == "metadata.name":
                return value.strip()
    return ""
