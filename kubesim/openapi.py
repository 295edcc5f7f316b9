"""The OpenAPI v3 documents kubectl downloads (`/openapi/v3`, then one document per group
version at the URL the index names), generated from the served types: every operation of a
resource, each write's `dryRun`, `fieldManager` and `fieldValidation` query parameters, and the
object's schema (a custom resource's `openAPIV3Schema`; an open object for a built-in kind).

kubectl reads them twice (cli-runtime's QueryParamVerifierV3, kubectl's apply Patcher): a PATCH
operation of the object's group-version-kind that takes `fieldValidation` makes `kubectl apply`
validate on the server (`fieldValidation=Strict`) instead of downloading the protobuf OpenAPI v2
document, which kubesim does not serve. No operation offers a strategic merge patch body:
kubectl then computes such a patch from its own compiled types, as it does for a server whose
document lacks the schemas (this one carries no patch strategies of built-in kinds)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any, Final

from kubesim.codec import clone
from kubesim.errors import path_not_found
from kubesim.patch import JSON_PATCH, MERGE_PATCH
from kubesim.resources import ResourceType

__all__ = ["OpenAPI"]

Obj = dict[str, Any]
_PATCH: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
_STATUS: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.Status"
_APPLY: Final = "application/apply-patch+yaml"
_WRITE_PARAMETERS: Final = ("dryRun", "fieldManager", "fieldValidation")


def _group_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _schema_name(rt: ResourceType, version: str) -> str:
    """kube-apiserver's definition names: the group reversed, the version, the kind."""
    if rt.definition is not None or "." in rt.group:
        prefix = ".".join(reversed(rt.group.split("."))) if rt.group else "io.k8s.api.core"
    else:
        prefix = f"io.k8s.api.{rt.group or 'core'}"
    return f"{prefix}.{version}.{rt.kind}"


def _ref(name: str) -> Obj:
    return {"$ref": f"#/components/schemas/{name}"}


class OpenAPI:
    def __init__(self, types: Sequence[ResourceType], version: str) -> None:
        self._types = list(types)
        self._version = version
        self._documents: dict[str, bytes] = {}

    def _group_versions(self) -> list[str]:
        found = {_group_path(rt.group, v): None for rt in self._types for v in rt.versions}
        return sorted(found)

    def answer(self, parts: Sequence[str]) -> Obj:
        """`/openapi/v3` (the index) or `/openapi/v3/<api|apis/group>/<version>`."""
        if tuple(parts[:2]) != ("openapi", "v3"):
            raise path_not_found()
        if len(parts) == 2:
            paths = {}
            for path in self._group_versions():
                digest = hashlib.sha512(self._document(path)).hexdigest().upper()
                paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
            return {"paths": paths}
        path = "/".join(parts[2:])
        if path not in self._group_versions():
            raise path_not_found()
        answer: Obj = json.loads(self._document(path))
        return answer

    def _document(self, path: str) -> bytes:
        if path not in self._documents:
            self._documents[path] = json.dumps(self._build(path), sort_keys=True).encode()
        return self._documents[path]

    def _build(self, path: str) -> Obj:
        paths: Obj = {}
        schemas: Obj = {_PATCH: {"type": "object"}, _STATUS: {"type": "object"}}
        for rt in self._types:
            for version in rt.versions:
                if _group_path(rt.group, version) == path:
                    name = _schema_name(rt, version)
                    schemas[name] = self._object_schema(rt, version)
                    paths.update(self._paths(rt, version, name))
        return {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": self._version},
            "paths": paths,
            "components": {"schemas": schemas},
        }

    @staticmethod
    def _object_schema(rt: ResourceType, version: str) -> Obj:
        schema: Obj = clone(dict(rt.strategy.schema(version) or {"type": "object"}))
        properties = schema.setdefault("properties", {})
        properties.setdefault("apiVersion", {"type": "string"})
        properties.setdefault("kind", {"type": "string"})
        properties.setdefault("metadata", {"type": "object"})
        schema["x-kubernetes-group-version-kind"] = [
            {"group": rt.group, "version": version, "kind": rt.kind}
        ]
        return schema

    def _paths(self, rt: ResourceType, version: str, name: str) -> Obj:
        base = "/" + _group_path(rt.group, version)
        scope = f"{base}/namespaces/{{namespace}}" if rt.namespaced else base
        gvk = {"group": rt.group, "version": version, "kind": rt.kind}

        def operation(action: str, writes: bool, body: Obj | None = None) -> Obj:
            op: Obj = {
                "operationId": f"{action}{rt.kind}",
                "x-kubernetes-action": action,
                "x-kubernetes-group-version-kind": gvk,
                "responses": {"200": {"description": "OK", "content": {
                    "application/json": {"schema": _ref(name)}}}},
            }  # fmt: skip
            if writes:
                op["parameters"] = [
                    {"name": p, "in": "query", "schema": {"type": "string"}, "uniqueItems": True}
                    for p in _WRITE_PARAMETERS
                ]
            if body is not None:
                op["requestBody"] = {"content": body, "required": True}
            return op

        whole = {"application/json": {"schema": _ref(name)}}
        patches = {media: {"schema": _ref(_PATCH)} for media in (JSON_PATCH, MERGE_PATCH)}
        if rt.definition is not None:
            patches[_APPLY] = {"schema": _ref(_PATCH)}
        verbs = set(rt.verbs)
        collection: Obj = {}
        if "list" in verbs:
            collection["get"] = operation("list", False)
        if "create" in verbs:
            collection["post"] = operation("post", True, whole)
        item: Obj = {}
        for verb, method, action, body in (("get", "get", "get", None), ("update", "put", "put",
                                           whole), ("patch", "patch", "patch", patches),
                                           ("delete", "delete", "delete", None)):  # fmt: skip
            if verb in verbs:
                item[method] = operation(action, verb != "get", body)
        paths: Obj = {}
        if collection:
            paths[f"{scope}/{rt.plural}"] = collection
        if item and rt.stored:
            paths[f"{scope}/{rt.plural}/{{name}}"] = item
            if rt.strategy.has_subresource("status", version):
                status = {m: op for m, op in item.items() if m in ("get", "put", "patch")}
                paths[f"{scope}/{rt.plural}/{{name}}/status"] = status
        return paths
