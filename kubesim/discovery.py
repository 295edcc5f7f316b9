"""The documents a client reads before it calls anything: `/version`, and the legacy discovery
of `/api`, `/apis`, `/apis/<group>` and each group version's resource list, generated from the
resource types the server actually serves."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Sequence
from typing import Any, Final

from kubesim.errors import path_not_found
from kubesim.openapi import OpenAPI
from kubesim.resources import ResourceType, version_priority

__all__ = ["KUBERNETES_VERSION", "Discovery"]

KUBERNETES_VERSION: Final = (1, 37, 0)  # the API the installed kubernetes client (37.x) targets

Obj = dict[str, Any]


def storage_version_hash(group: str, version: str, kind: str) -> str:
    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def version_info() -> Obj:
    major, minor, patch = KUBERNETES_VERSION
    return {
        "major": str(major),
        "minor": str(minor),
        "emulationMajor": str(major),
        "emulationMinor": str(minor),
        "minCompatibilityMajor": str(major),
        "minCompatibilityMinor": str(minor - 1),
        "gitVersion": f"v{major}.{minor}.{patch}",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.25.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


class Discovery:
    def __init__(self, types: Sequence[ResourceType], server_address: str) -> None:
        self._types = list(types)
        self.server_address = server_address
        self._openapi = OpenAPI(self._types, version_info()["gitVersion"])

    def answer(self, path: str) -> dict[str, Any]:
        """The document of a discovery path (`/version`, `/api`, `/apis`, `/api/v1`,
        `/apis/GROUP`, `/apis/GROUP/VERSION`, `/openapi/v3...`); the router's 404 for any
        other."""
        parts = tuple(p for p in path.split("/") if p)
        fixed: dict[tuple[str, ...], Callable[[], dict[str, Any]]] = {
            ("version",): version_info, ("api",): self.api_versions, ("apis",): self.group_list,
        }  # fmt: skip
        if parts in fixed:
            return fixed[parts]()
        if parts[:1] == ("openapi",):
            return self._openapi.answer(parts)
        if parts[:1] == ("api",) and len(parts) == 2:
            return self.resource_list("", parts[1])
        if parts[:1] == ("apis",) and len(parts) == 2:
            return self.group(parts[1])
        if parts[:1] == ("apis",) and len(parts) == 3:
            return self.resource_list(parts[1], parts[2])
        raise path_not_found()

    def _groups(self) -> list[tuple[str, list[str]]]:
        """(group, versions by priority), built-in groups first as kube-apiserver lists them."""
        found: dict[str, set[str]] = {}
        for rt in self._types:
            if rt.group:
                found.setdefault(rt.group, set()).update(rt.versions)
        builtin = [g for g in found if g.endswith(".k8s.io")]
        custom = sorted(g for g in found if g not in builtin)
        return [(g, sorted(found[g], key=version_priority)) for g in [*builtin, *custom]]

    def api_versions(self) -> Obj:
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": self.server_address}
            ],
        }

    @staticmethod
    def _group(group: str, versions: list[str]) -> Obj:
        listed = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"name": group, "versions": listed, "preferredVersion": listed[0]}

    def group_list(self) -> Obj:
        return {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [self._group(g, vs) for g, vs in self._groups()],
        }

    def group(self, group: str) -> Obj:
        for name, versions in self._groups():
            if name == group:
                return {"kind": "APIGroup", "apiVersion": "v1", **self._group(name, versions)}
        raise path_not_found()

    def resource_list(self, group: str, version: str) -> Obj:
        served = [rt for rt in self._types if rt.group == group and version in rt.versions]
        if not served:
            raise path_not_found()
        resources: list[Obj] = []
        for rt in served:
            entry: Obj = {
                "name": rt.plural,
                "singularName": rt.singular,
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": list(rt.verbs),
            }
            if rt.short_names:
                entry["shortNames"] = list(rt.short_names)
            if rt.categories:
                entry["categories"] = list(rt.categories)
            if rt.stored:
                entry["storageVersionHash"] = storage_version_hash(group, version, rt.kind)
            resources.append(entry)
            for sub, verbs in rt.subresource_verbs.items():
                if rt.strategy.has_subresource(sub, version):
                    resources.append(
                        {
                            "name": f"{rt.plural}/{sub}",
                            "singularName": "",
                            "namespaced": rt.namespaced,
                            "kind": rt.kind,
                            "verbs": list(verbs),
                        }
                    )
        body: Obj = {"kind": "APIResourceList"}
        if group:
            body["apiVersion"] = "v1"
        body["groupVersion"] = f"{group}/{version}" if group else version
        body["resources"] = resources
        return body
