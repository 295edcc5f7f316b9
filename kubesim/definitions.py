"""CustomResourceDefinitions as objects (`apiextensions.k8s.io/v1`), so that `kubectl apply` of a
manifest that carries its CRD finds the kind and patches it as it would on kube-apiserver: the
CRDs the server was started with are stored, Established, and can be read, listed, watched and
written. What is served stays what the server started with: a CRD written later is stored, and
a change to a served one's schema is kept but does not change how its objects are validated
(kubesim builds its types at start)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, Final

from kubesim.codec import Clock, clone, format_time
from kubesim.fields import FieldError
from kubesim.meta import coerce_metadata
from kubesim.patch import JSON_PATCH, MERGE_PATCH
from kubesim.resources import ResourceType, Strategy
from kubesim.store import Store

__all__ = ["APIEXTENSIONS", "definition_type", "store_definitions"]

Obj = dict[str, Any]
APIEXTENSIONS: Final = "apiextensions.k8s.io"


class _DefinitionStrategy(Strategy):
    """Keeps `spec` and `status` (the status through its subresource), bumps the generation on
    a spec change, and requires what the server itself reads of a definition."""

    patch_types = (JSON_PATCH, MERGE_PATCH)  # a CRD is no strategic-merge type to kube-apiserver
    sets_generation = True

    def decode(self, body: Obj, version: str) -> tuple[Obj, list[str]]:
        metadata, dropped = coerce_metadata(body.get("metadata"))
        obj: Obj = {"kind": body.get("kind"), "apiVersion": body.get("apiVersion")}
        obj["metadata"] = metadata
        for key, value in body.items():
            if key in ("spec", "status"):
                obj[key] = value
            elif key not in ("apiVersion", "kind", "metadata"):
                dropped.append(key)
        return obj, dropped

    def has_subresource(self, name: str, version: str) -> bool:
        return name == "status"

    def prepare_create(self, obj: Obj, version: str) -> None:
        obj.pop("status", None)
        obj["metadata"]["generation"] = 1

    def prepare_update(self, new: Obj, old: Obj, subresource: str, version: str) -> Obj:
        if subresource == "status":
            out = clone(old)
            out["status"] = new.get("status")
            return out
        new["status"] = clone(old.get("status"))
        generation = old["metadata"].get("generation", 1)
        new["metadata"]["generation"] = generation + (new.get("spec") != old.get("spec"))
        return new

    def validate(self, obj: Obj, version: str) -> list[FieldError]:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return [FieldError.required("spec", "")]
        names = spec.get("names")
        names = names if isinstance(names, dict) else {}
        wanted = {"spec.group": spec.get("group"), "spec.names.plural": names.get("plural"),
                  "spec.names.kind": names.get("kind")}  # fmt: skip
        errors = [FieldError.required(path, "") for path, value in wanted.items() if not value]
        if spec.get("scope") not in ("Cluster", "Namespaced"):
            errors.append(FieldError.not_supported("spec.scope", spec.get("scope"),
                                                   ["Cluster", "Namespaced"]))  # fmt: skip
        if not isinstance(spec.get("versions"), list) or not spec["versions"]:
            errors.append(FieldError.required("spec.versions", "must have exactly one version "
                                              "marked as storage version"))  # fmt: skip
        return errors


def definition_type() -> ResourceType:
    return ResourceType(
        APIEXTENSIONS, ("v1",), "customresourcedefinitions", "customresourcedefinition",
        "CustomResourceDefinition", "CustomResourceDefinitionList", namespaced=False,
        strategy=_DefinitionStrategy(), short_names=("crd", "crds"), categories=("api-extensions",),
        subresource_verbs={"status": ("get", "patch", "update")},
    )  # fmt: skip


def store_definitions(store: Store, types: Sequence[ResourceType], clock: Clock) -> None:
    """Store the definition of every custom type served, Established as kube-apiserver's
    controllers leave it."""
    served = definition_type()
    for rt in types:
        if rt.definition is None:
            continue
        obj = clone(dict(rt.definition))
        meta = {**(obj.get("metadata") or {}), "uid": str(uuid.uuid4()), "generation": 1}
        meta["creationTimestamp"] = format_time(clock())
        obj["metadata"] = meta
        names = (obj.get("spec") or {}).get("names") or {}
        at = format_time(clock())
        obj["status"] = {
            "acceptedNames": names,
            "storedVersions": [rt.storage_version],
            "conditions": [
                {"type": t, "status": "True", "lastTransitionTime": at, "reason": r, "message": m}
                for t, r, m in (("NamesAccepted", "NoConflicts", "no conflicts found"),
                                ("Established", "InitialNamesAccepted",
                                 "the initial names have been accepted"))
            ],
        }  # fmt: skip
        store.commit(served.id, ("", str(meta.get("name"))), obj)
