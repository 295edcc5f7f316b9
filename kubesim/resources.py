"""What a resource is to the server: its names and scope (`ResourceType`), and how its objects
are decoded, prepared and validated on create and update (`Strategy`, kube-apiserver's REST
strategies); custom resources get theirs from a CustomResourceDefinition file."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Final

import yaml

from kubesim.codec import clone
from kubesim.fields import FieldError
from kubesim.meta import coerce_metadata, dns1123_subdomain
from kubesim.patch import (
    APPLY_PATCH,
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    MergeLists,
)
from kubesim.schema import apply_defaults, prune, validate
from kubesim.selectors import Getter
from kubesim.store import ResourceId

__all__ = [
    "CRDError",
    "CustomResourceStrategy",
    "ResourceType",
    "Strategy",
    "load_crds",
    "version_priority",
]

Obj = dict[str, Any]
STANDARD_VERBS: Final = (
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
)
_META_LISTS: Final[MergeLists] = {
    ("metadata", "finalizers"): None,
    ("metadata", "ownerReferences"): "uid",
}


def _meta_getter(key: str) -> Getter:
    return lambda obj: str((obj.get("metadata") or {}).get(key, ""))


COMMON_FIELD_LABELS: Final[Mapping[str, Getter]] = {
    "metadata.name": _meta_getter("name"),
    "metadata.namespace": _meta_getter("namespace"),
}


class Strategy:
    """Decode, prepare and validate one kind of object (RESTCreateStrategy and
    RESTUpdateStrategy); the registry runs these in kube-apiserver's order."""

    patch_types: tuple[str, ...] = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH)
    merge_lists: ClassVar[MergeLists] = _META_LISTS
    allow_create_on_update = False
    allow_unconditional_update = True
    sets_generation = False
    unstructured = False  # custom resources: map keys sorted, list items keep apiVersion/kind
    field_labels: ClassVar[Mapping[str, Getter]] = COMMON_FIELD_LABELS

    def name_errors(self, name: str, prefix: bool) -> list[str]:
        return dns1123_subdomain(name, prefix)

    def decode(self, body: Obj, version: str) -> tuple[Obj, list[str]]:
        """The object as stored (unknown fields dropped), and the dropped fields' paths."""
        raise NotImplementedError

    def prepare_create(self, obj: Obj, version: str) -> None:
        """Reset what a client may not set on create."""

    def prepare_update(self, new: Obj, old: Obj, subresource: str, version: str) -> Obj:
        return new

    def validate(self, obj: Obj, version: str) -> list[FieldError]:
        return []

    def validate_update(self, new: Obj, old: Obj, version: str) -> list[FieldError]:
        return self.validate(new, version)

    def has_subresource(self, name: str, version: str) -> bool:
        return False

    def schema(self, version: str) -> Mapping[str, Any] | None:
        """The OpenAPI v3 schema of an object in `version`, where the type has one."""
        return None

    def bookmark(self, api_version: str, kind: str, rv: int) -> Obj:
        return {
            "kind": kind,
            "apiVersion": api_version,
            "metadata": {"resourceVersion": str(rv), "creationTimestamp": None},
        }


@dataclass(frozen=True, eq=False)
class ResourceType:
    group: str
    versions: tuple[str, ...]  # served, the preferred (and storage) one first
    plural: str
    singular: str
    kind: str
    list_kind: str
    namespaced: bool
    strategy: Strategy
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = STANDARD_VERBS
    stored: bool = True  # TokenReview is answered, never stored
    subresource_verbs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # a CRD version's additionalPrinterColumns (`kubectl get`'s Table); None for built-in kinds
    printer_columns: Mapping[str, tuple[Mapping[str, Any], ...]] | None = None
    definition: Mapping[str, Any] | None = None  # the CustomResourceDefinition it comes from

    @property
    def id(self) -> ResourceId:
        return (self.group, self.plural)

    @property
    def storage_version(self) -> str:
        return self.versions[0]

    def api_version(self, version: str) -> str:
        return f"{self.group}/{version}" if self.group else version

    def columns(self, version: str) -> tuple[Mapping[str, Any], ...] | None:
        """`kubectl get`'s columns in `version` (None: a built-in kind's generic ones)."""
        return None if self.printer_columns is None else self.printer_columns[version]


# -- custom resources -----------------------------------------------------------------------------


def _non_metadata(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k != "metadata"}


class CustomResourceStrategy(Strategy):
    """customResourceStrategy and its statusStrategy: structural pruning and validation,
    `status` owned by the /status subresource when enabled, generation bumped by any other
    change outside metadata."""

    patch_types = (JSON_PATCH, MERGE_PATCH, APPLY_PATCH)
    allow_unconditional_update = False
    sets_generation = True
    unstructured = True

    def __init__(
        self, schemas: Mapping[str, Mapping[str, Any] | None], status: Mapping[str, bool]
    ) -> None:
        self._schemas = dict(schemas)
        self._status = dict(status)

    def has_subresource(self, name: str, version: str) -> bool:
        return name == "status" and self._status.get(version, False)

    def schema(self, version: str) -> Mapping[str, Any] | None:
        return self._schemas.get(version)

    def decode(self, body: Obj, version: str) -> tuple[Obj, list[str]]:
        obj = clone(body)
        obj["metadata"], dropped = coerce_metadata(obj.get("metadata"))
        schema = self._schemas.get(version)
        dropped += prune(obj, schema)
        apply_defaults(obj, schema)
        return obj, dropped

    def prepare_create(self, obj: Obj, version: str) -> None:
        if self._status.get(version):
            obj.pop("status", None)
        obj["metadata"]["generation"] = 1

    def prepare_update(self, new: Obj, old: Obj, subresource: str, version: str) -> Obj:
        if subresource == "status":
            out = clone(old)
            if "status" in new:
                out["status"] = new["status"]
            else:
                out.pop("status", None)
            return out
        if self._status.get(version):
            if "status" in old:
                new["status"] = clone(old["status"])
            else:
                new.pop("status", None)
        generation = old["metadata"].get("generation", 1)
        if _non_metadata(new) != _non_metadata(old):
            generation += 1
        new["metadata"]["generation"] = generation
        return new

    def validate(self, obj: Obj, version: str) -> list[FieldError]:
        return validate(obj, self._schemas.get(version))

    def bookmark(self, api_version: str, kind: str, rv: int) -> Obj:
        return {"apiVersion": api_version, "kind": kind, "metadata": {"resourceVersion": str(rv)}}


_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Kubernetes' version order: GA before beta before alpha, higher numbers first, then
    anything else alphabetically. Lower sorts first."""
    match = _VERSION.match(version)
    if match is None:
        return (3, 0, 0, version)
    stage = {None: 0, "beta": 1, "alpha": 2}[match.group(2)]
    return (stage, -int(match.group(1)), -int(match.group(3) or 0), "")


# What a CRD version without additionalPrinterColumns is defaulted to (apiextensions).
_AGE: tuple[Mapping[str, Any], ...] = (
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
)


class CRDError(ValueError):
    """A CRD file this server cannot serve."""


def _resource_from_crd(doc: Mapping[str, Any], source: Path) -> ResourceType:
    spec = doc.get("spec") or {}
    names = spec.get("names") or {}
    group, plural, kind = spec.get("group"), names.get("plural"), names.get("kind")
    if not (group and plural and kind):
        raise CRDError(f"{source}: spec.group, spec.names.plural and spec.names.kind are required")
    served = [v for v in spec.get("versions") or [] if v.get("served")]
    if not served:
        raise CRDError(f"{source}: {plural}.{group} serves no version")
    storage = [v["name"] for v in served if v.get("storage")]
    order = sorted((v["name"] for v in served), key=version_priority)
    if storage:
        order.remove(storage[0])
        order.insert(0, storage[0])
    schemas = {v["name"]: (v.get("schema") or {}).get("openAPIV3Schema") for v in served}
    status = {v["name"]: "status" in (v.get("subresources") or {}) for v in served}
    subresource_verbs = {"status": ("get", "patch", "update")} if any(status.values()) else {}
    return ResourceType(
        group=group,
        versions=tuple(order),
        plural=plural,
        singular=names.get("singular") or kind.lower(),
        kind=kind,
        list_kind=names.get("listKind") or f"{kind}List",
        namespaced=spec.get("scope", "Namespaced") == "Namespaced",
        strategy=CustomResourceStrategy(schemas, status),
        short_names=tuple(names.get("shortNames") or ()),
        categories=tuple(names.get("categories") or ()),
        subresource_verbs=subresource_verbs,
        printer_columns={
            v["name"]: tuple(v.get("additionalPrinterColumns") or ()) or _AGE for v in served
        },
        definition=doc,
    )


def load_crds(paths: Sequence[Path]) -> list[ResourceType]:
    """Every CustomResourceDefinition in the given (possibly multi-document) YAML files."""
    out: list[ResourceType] = []
    for path in paths:
        with Path(path).open(encoding="utf-8") as handle:
            for doc in yaml.safe_load_all(handle):
                if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                    continue
                if doc.get("apiVersion") != "apiextensions.k8s.io/v1":
                    raise CRDError(f"{path}: only apiextensions.k8s.io/v1 CRDs are served")
                out.append(_resource_from_crd(doc, Path(path)))
    return out
