"""The built-in types health rules watch (docs/spec.md §8) beyond those of `builtins.py` (which has
ConfigMaps): apps/v1 Deployment and core/v1 Secret, with the create/update rules kube-apiserver
applies to each (the strategies of `pkg/registry/apps/deployment` and `pkg/registry/core/secret`);
and the other kinds the controller's manifests install (ServiceAccount, Service,
PodDisruptionBudget, NetworkPolicy), stored so that a rollout can be applied and read back.

Unlike `builtins.py`, these are not decoded into their full Go structs: the fields of the top
level that the type has are kept and the rest dropped, and what is inside `spec` and `status` is
kept as sent (a real server would drop an unknown field deep inside a pod template). What a
watcher of health sees is exact: the status subresource, `metadata.generation` and when it
moves, the defaults of a Deployment's spec, and Secrets' `stringData`.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, ClassVar

from kubesim.codec import clone
from kubesim.fields import FieldError
from kubesim.meta import coerce_metadata
from kubesim.patch import MergeLists
from kubesim.resources import ResourceType, Strategy

__all__ = ["workload_types"]

Obj = dict[str, Any]


def _pod_lists(template: tuple[str, ...]) -> MergeLists:
    """The merge keys a strategic merge patch uses in a pod spec at `template` (the
    `patchMergeKey` tags of k8s.io/api/core/v1: PodSpec's containers, initContainers,
    ephemeralContainers, volumes, imagePullSecrets by name, hostAliases by ip; a container's
    env by name, ports by containerPort, volumeMounts by mountPath, volumeDevices by
    devicePath). Lists without a tag (args, envFrom, tolerations) are replaced whole."""
    lists: dict[tuple[str, ...], str | None] = {
        (*template, field): "name" for field in ("volumes", "imagePullSecrets")
    }
    lists[(*template, "hostAliases")] = "ip"
    for field in ("containers", "initContainers", "ephemeralContainers"):
        lists[(*template, field)] = "name"
        container = (*template, field, "*")
        lists |= {(*container, "env"): "name", (*container, "ports"): "containerPort",
                  (*container, "volumeMounts"): "mountPath",
                  (*container, "volumeDevices"): "devicePath"}  # fmt: skip
    return lists


_POD_TEMPLATE_LISTS = _pod_lists(("spec", "template", "spec"))
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")  # validation.IsConfigMapKey, for Secrets too


class _TopLevelStrategy(Strategy):
    """Keeps `fields` of the top level (besides apiVersion, kind, metadata); drops the rest."""

    fields: tuple[str, ...] = ()

    def decode(self, body: Obj, version: str) -> tuple[Obj, list[str]]:
        metadata, dropped = coerce_metadata(body.get("metadata"))
        obj: Obj = {"kind": body.get("kind"), "apiVersion": body.get("apiVersion")}
        obj["metadata"] = metadata
        for key, value in body.items():
            if key in self.fields:
                obj[key] = clone(value)
            elif key not in ("apiVersion", "kind", "metadata"):
                dropped.append(key)
        return obj, dropped


class DeploymentStrategy(_TopLevelStrategy):
    """deploymentStrategy and deploymentStatusStrategy: status only through /status (reset on
    create); `generation` 1 on create and bumped by a change of `spec` or of the annotations
    (they are copied to the ReplicaSets), never by a status write; the spec's defaults."""

    fields = ("spec", "status")
    sets_generation = True
    merge_lists: ClassVar[MergeLists] = {**Strategy.merge_lists, **_POD_TEMPLATE_LISTS,
                                         ("status", "conditions"): "type"}  # fmt: skip

    def has_subresource(self, name: str, version: str) -> bool:
        return name == "status"

    def prepare_create(self, obj: Obj, version: str) -> None:
        obj["status"] = {}
        obj["metadata"]["generation"] = 1
        _default_spec(obj)

    def prepare_update(self, new: Obj, old: Obj, subresource: str, version: str) -> Obj:
        if subresource == "status":
            out = clone(old)
            out["status"] = clone(new.get("status") or {})
            return out
        new["status"] = clone(old.get("status") or {})
        _default_spec(new)
        generation = old["metadata"].get("generation", 1)
        annotations = (new["metadata"].get("annotations"), old["metadata"].get("annotations"))
        if new.get("spec") != old.get("spec") or annotations[0] != annotations[1]:
            generation += 1
        new["metadata"]["generation"] = generation
        return new

    def validate(self, obj: Obj, version: str) -> list[FieldError]:
        spec = obj.get("spec") or {}
        errors = []
        selector = spec.get("selector") or {}
        if not (selector.get("matchLabels") or selector.get("matchExpressions")):
            errors.append(FieldError.required("spec.selector", ""))
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        wanted = selector.get("matchLabels") or {}
        if any(labels.get(k) != v for k, v in wanted.items()):
            errors.append(
                FieldError.invalid(
                    "spec.template.metadata.labels",
                    labels,
                    "`selector` does not match template `labels`",
                )
            )
        containers = ((spec.get("template") or {}).get("spec") or {}).get("containers")
        if not containers:
            errors.append(FieldError.required("spec.template.spec.containers", ""))
        replicas = spec.get("replicas")
        if not isinstance(replicas, int) or replicas < 0:
            detail = "must be greater than or equal to 0"
            errors.append(FieldError.invalid("spec.replicas", replicas, detail))
        return errors


def _default_spec(obj: Obj) -> None:
    """SetDefaults_Deployment of apps/v1."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    strategy = spec.setdefault("strategy", {"type": "RollingUpdate"})
    if strategy.get("type", "RollingUpdate") == "RollingUpdate":
        strategy.setdefault("type", "RollingUpdate")
        strategy.setdefault("rollingUpdate", {"maxUnavailable": "25%", "maxSurge": "25%"})


class SecretStrategy(_TopLevelStrategy):
    """secretStrategy: `stringData` is write-only, merged into `data` (base64) on every write;
    `type` defaults to Opaque and never changes; `data` values must be base64."""

    fields = ("data", "stringData", "type", "immutable")

    def decode(self, body: Obj, version: str) -> tuple[Obj, list[str]]:
        obj, dropped = super().decode(body, version)
        strings = obj.pop("stringData", None) or {}
        if strings:
            data = obj.setdefault("data", {}) or {}
            for key, value in strings.items():
                data[key] = base64.b64encode(str(value).encode()).decode()
            obj["data"] = data
        obj.setdefault("type", "Opaque")
        return obj, dropped

    def validate(self, obj: Obj, version: str) -> list[FieldError]:
        errors = _key_errors(obj, "data")
        for key, value in (obj.get("data") or {}).items():
            try:
                base64.b64decode(str(value), validate=True)
            except (binascii.Error, ValueError):
                errors.append(FieldError.invalid(f"data[{key}]", "<value omitted>", "not base64"))
        return errors

    def validate_update(self, new: Obj, old: Obj, version: str) -> list[FieldError]:
        errors = _immutable(new, old)
        if new.get("type") != old.get("type"):
            errors.append(FieldError.invalid("type", new.get("type"), "field is immutable"))
        return errors or self.validate(new, version)


def _key_errors(obj: Obj, field: str) -> list[FieldError]:
    return [
        FieldError.invalid(
            f"{field}[{key}]",
            key,
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
        )
        for key in obj.get(field) or {}
        if len(key) > 253 or not _CONFIG_KEY.match(key)
    ]


def _immutable(new: Obj, old: Obj) -> list[FieldError]:
    """An immutable Secret keeps its data and stays immutable."""
    if not old.get("immutable"):
        return []
    if not new.get("immutable"):
        return [FieldError.forbidden("immutable", "field is immutable when `immutable` is set")]
    changed = [k for k in ("data",) if new.get(k) != old.get(k)]
    return [FieldError.forbidden(k, "field is immutable when `immutable` is set") for k in changed]


class _Kept(_TopLevelStrategy):
    """A kind stored with its fields of the top level; `status` only through `/status`."""

    def __init__(self, *fields: str) -> None:
        self.fields = fields

    def prepare_create(self, obj: Obj, version: str) -> None:
        if "status" in self.fields:
            obj["status"] = {}

    def prepare_update(self, new: Obj, old: Obj, subresource: str, version: str) -> Obj:
        if "status" in self.fields:
            new["status"] = clone(old.get("status") or {})
        return new


def _kept(
    group: str, plural: str, kind: str, *fields: str, short: tuple[str, ...] = ()
) -> ResourceType:
    return ResourceType(group, ("v1",), plural, kind.lower(), kind, f"{kind}List", namespaced=True,
                        strategy=_Kept(*fields), short_names=short)  # fmt: skip


def workload_types() -> list[ResourceType]:
    return [
        _kept(
            "",
            "serviceaccounts",
            "ServiceAccount",
            "secrets",
            "imagePullSecrets",
            "automountServiceAccountToken",
            short=("sa",),
        ),
        _kept("", "services", "Service", "spec", "status", short=("svc",)),
        _kept(
            "policy",
            "poddisruptionbudgets",
            "PodDisruptionBudget",
            "spec",
            "status",
            short=("pdb",),
        ),
        _kept("networking.k8s.io", "networkpolicies", "NetworkPolicy", "spec", short=("netpol",)),
        ResourceType(
            "apps",
            ("v1",),
            "deployments",
            "deployment",
            "Deployment",
            "DeploymentList",
            namespaced=True,
            strategy=DeploymentStrategy(),
            short_names=("deploy",),
            categories=("all",),
            subresource_verbs={"status": ("get", "patch", "update")},
        ),
        ResourceType(
            "",
            ("v1",),
            "secrets",
            "secret",
            "Secret",
            "SecretList",
            namespaced=True,
            strategy=SecretStrategy(),
        ),
    ]
