"""The part of kustomize that manifests/ uses, in Python, so that the manifest tests see the
objects a `kubectl apply -k` would create even where no kustomize binary is installed.

It reads `resources` (files and directories, recursively), `components` (directories of
`kind: Component`, applied to what the kustomization has so far), `namespace`, `images`, delete
patches chosen by a label selector and JSON patches (`add`, `replace`) chosen by kind and name,
and refuses any other field: a kustomization that starts using more of kustomize must extend
this build (and its comparison with `kubectl kustomize` in test_kustomize.py) rather than be
silently misread.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

__all__ = [
    "CLUSTER_SCOPED",
    "MANIFESTS",
    "ROOT",
    "Build",
    "KustomizeError",
    "build",
    "documents",
    "find",
    "identity",
    "kustomization_roots",
]

ROOT: Final = Path(__file__).resolve().parents[2]
MANIFESTS: Final = ROOT / "manifests"
CLUSTER_SCOPED: Final = frozenset({
    "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "Namespace",
    "ClusterManagementAddOn", "AddOnTemplate", "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
})  # fmt: skip
_FIELDS: Final = frozenset(
    {"apiVersion", "kind", "resources", "components", "namespace", "patches", "images"}
)

Obj = dict[str, Any]


class KustomizeError(Exception):
    """A kustomization this build cannot read as kustomize would."""


@dataclass
class Build:
    objects: list[Obj] = field(default_factory=list)
    files: set[Path] = field(default_factory=set)  # every file the build read


def documents(path: Path) -> list[Obj]:
    """The YAML documents of a file, empty ones left out (as kubectl does)."""
    with path.open(encoding="utf-8") as stream:
        return [doc for doc in yaml.safe_load_all(stream) if doc is not None]


def identity(obj: Mapping[str, Any]) -> tuple[str, str, str, str]:
    meta = obj.get("metadata") or {}
    return (obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"])


def find(objects: Iterable[Obj], kind: str, name: str | None = None) -> Obj:
    """The one object of `kind` (and `name`); fails the test when there is not exactly one."""
    found = [
        o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)
    ]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def kustomization_roots() -> list[Path]:
    """Every directory under manifests/ that holds a kustomization."""
    return sorted(p.parent for p in MANIFESTS.rglob("kustomization.yaml"))


def build(directory: Path, *, onto: list[Obj] | None = None) -> Build:
    """The objects `kubectl kustomize directory` prints (in file order, not kustomize's); a
    component is built `onto` the objects of the kustomization that uses it."""
    path = directory / "kustomization.yaml"
    if not path.is_file():
        raise KustomizeError(f"{directory}: no kustomization.yaml")
    spec = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    unknown = set(spec) - _FIELDS
    if unknown:
        raise KustomizeError(f"{path}: {sorted(unknown)} not supported by this build")
    result = Build(objects=list(onto or []), files={path.resolve()})
    for entry in spec.get("resources") or []:
        _add_resource(result, directory, str(entry), source=path)
    for entry in spec.get("components") or []:
        _apply_component(result, directory, str(entry), source=path)
    namespace = spec.get("namespace")
    if namespace:
        for obj in result.objects:
            _set_namespace(obj, str(namespace))
    for patch in spec.get("patches") or []:
        result.objects = _patched(result.objects, patch, source=path)
    for image in spec.get("images") or []:
        for obj in result.objects:
            _set_image(obj, image)
    return result


def _add_resource(result: Build, directory: Path, entry: str, *, source: Path) -> None:
    target = (directory / entry).resolve()
    if target.is_dir():
        nested = build(target)
        result.objects += nested.objects
        result.files |= nested.files
    elif target.is_file():
        if not target.is_relative_to(directory.resolve()):
            # kustomize's load restrictor: files only from within the kustomization's root
            raise KustomizeError(f"{source}: {entry} is not in or below {directory}")
        result.objects += copy.deepcopy(documents(target))
        result.files.add(target)
    else:
        raise KustomizeError(f"{source}: resources: {entry} does not exist")


def _apply_component(result: Build, directory: Path, entry: str, *, source: Path) -> None:
    target = (directory / entry).resolve()
    spec = yaml.safe_load((target / "kustomization.yaml").read_text(encoding="utf-8")) or {}
    if spec.get("kind") != "Component":
        raise KustomizeError(f"{source}: components: {entry} is not a kind: Component")
    applied = build(target, onto=result.objects)
    result.objects = applied.objects
    result.files |= applied.files


def _set_namespace(obj: Obj, namespace: str) -> None:
    """Namespaced objects move; every binding's service accounts follow (a ClusterRoleBinding's
    too, as kustomize does)."""
    if obj["kind"] not in CLUSTER_SCOPED:
        obj["metadata"]["namespace"] = namespace
    for subject in obj.get("subjects") or []:
        if subject.get("kind") == "ServiceAccount":
            subject["namespace"] = namespace


def _patched(objects: list[Obj], patch: Mapping[str, Any], *, source: Path) -> list[Obj]:
    body = yaml.safe_load(str(patch.get("patch", "")))
    target = patch.get("target") or {}
    if set(patch) == {"target", "patch"} and set(target) == {"labelSelector"}:
        if not isinstance(body, dict) or body.get("$patch") != "delete":
            raise KustomizeError(f"{source}: only `$patch: delete` patches are supported")
        wanted = dict(pair.split("=", 1) for pair in str(target["labelSelector"]).split(","))
        return [o for o in objects if not _labelled(o, wanted)]
    if set(patch) == {"target", "patch"} and set(target) == {"kind", "name"}:
        if not isinstance(body, list) or {op.get("op") for op in body} - _JSON_OPS:
            raise KustomizeError(f"{source}: only JSON patches of `add`, `replace`, `remove`")
        for obj in objects:
            if obj["kind"] == target["kind"] and obj["metadata"]["name"] == target["name"]:
                for op in body:
                    _json_patch(obj, op, source=source)
        return objects
    raise KustomizeError(
        f"{source}: only delete patches by labelSelector, or JSON patches by kind and name"
    )


_JSON_OPS: Final = {"add", "replace", "remove"}


def _json_patch(obj: Obj, op: Mapping[str, Any], *, source: Path) -> None:
    """One RFC 6902 `add`, `replace` or `remove` (on maps; on lists, by index, and `add` at the
    end, `-`)."""
    *parents, last = [
        part.replace("~1", "/").replace("~0", "~") for part in str(op["path"]).split("/")[1:]
    ]
    node: Any = obj
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node.get(part)
        if node is None:
            raise KustomizeError(f"{source}: {op['path']}: no such path")
    if op["op"] == "remove":
        try:
            del node[int(last) if isinstance(node, list) else last]
        except (IndexError, KeyError):
            raise KustomizeError(f"{source}: {op['path']}: nothing to remove") from None
        return
    if isinstance(node, list):
        if op["op"] == "add" and last == "-":
            node.append(copy.deepcopy(op["value"]))
        elif op["op"] == "add":
            node.insert(int(last), copy.deepcopy(op["value"]))
        else:
            node[int(last)] = copy.deepcopy(op["value"])
        return
    if op["op"] == "replace" and last not in node:
        raise KustomizeError(f"{source}: {op['path']}: nothing to replace")
    node[last] = copy.deepcopy(op["value"])


def _labelled(obj: Obj, wanted: Mapping[str, str]) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in wanted.items())


def _set_image(obj: Obj, image: Mapping[str, str]) -> None:
    """kustomize's image transformer (its `LegacyFilter`): every `image` of a list named
    `containers` or `initContainers` anywhere in the object (an AddOnTemplate's embedded
    Deployments too), but in a CustomResourceDefinition."""
    if obj.get("kind") != "CustomResourceDefinition":
        for container in _containers(obj):
            container["image"] = _retagged(str(container["image"]), image)


def _containers(node: object) -> Iterable[Obj]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("containers", "initContainers") and isinstance(value, list):
                yield from (c for c in value if isinstance(c, dict) and "image" in c)
            yield from _containers(value)
    elif isinstance(node, list):
        for value in node:
            yield from _containers(value)


def _retagged(reference: str, image: Mapping[str, str]) -> str:
    name, sep, tag = reference.rpartition(":")
    if not sep or "/" in tag:  # no tag; the colon was a registry's port
        name, tag = reference, ""
    if name != image["name"]:
        return reference
    new_name = image.get("newName", name)
    new_tag = image.get("newTag", tag)
    return f"{new_name}@{image['digest']}" if "digest" in image else f"{new_name}:{new_tag}"
