"""The built-in types a controller touches — core/v1 Namespace, Event and ConfigMap,
coordination/v1 Lease, authentication/v1 TokenReview — with their Go shapes and the
create/update rules and validation kube-apiserver applies to each."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any, ClassVar, Final

from kubesim.codec import clone
from kubesim.events import EventStrategy
from kubesim.fields import FieldError
from kubesim.meta import (
    dns1123_label,
    qualified_name_errors,
)
from kubesim.patch import MergeLists
from kubesim.resources import COMMON_FIELD_LABELS, ResourceType, Strategy
from kubesim.selectors import Getter, field_at
from kubesim.typed import Field, ListOf, MapOf, Scalar, Struct
from kubesim.typed_strategy import TypedStrategy

__all__ = ["NAMESPACE_LABEL", "TOKEN_REVIEWS", "builtin_types", "token_review_struct"]

Obj = dict[str, Any]
STRING, INT32, INT64, BOOL = Scalar("string"), Scalar("int32"), Scalar("int64"), Scalar("bool")
TIME, MICRO_TIME = Scalar("Time"), Scalar("MicroTime")
NAMESPACE_LABEL: Final = "kubernetes.io/metadata.name"

LEASE = Struct(
    "Lease",
    (
        Field(
            "spec",
            Struct(
                "LeaseSpec",
                (
                    Field("holderIdentity", STRING, pointer=True),
                    Field("leaseDurationSeconds", INT32, pointer=True),
                    Field("acquireTime", MICRO_TIME, pointer=True),
                    Field("renewTime", MICRO_TIME, pointer=True),
                    Field("leaseTransitions", INT32, pointer=True),
                    Field("strategy", STRING, pointer=True),
                    Field("preferredHolder", STRING, pointer=True),
                ),
            ),
        ),
    ),
)
NAMESPACE = Struct(
    "Namespace",
    (
        Field("spec", Struct("NamespaceSpec", (Field("finalizers", ListOf(STRING)),))),
        Field(
            "status",
            Struct(
                "NamespaceStatus",
                (
                    Field("phase", STRING),
                    Field(
                        "conditions",
                        ListOf(
                            Struct(
                                "NamespaceCondition",
                                (
                                    Field("type", STRING, omitempty=False),
                                    Field("status", STRING, omitempty=False),
                                    Field("lastTransitionTime", TIME),
                                    Field("reason", STRING),
                                    Field("message", STRING),
                                ),
                            )
                        ),
                    ),
                ),
            ),
        ),
    ),
)
CONFIG_MAP = Struct(
    "ConfigMap",
    (
        Field("immutable", BOOL, pointer=True),
        Field("data", MapOf(STRING)),
        Field("binaryData", MapOf(STRING)),  # []byte: base64 in JSON
    ),
)
TOKEN_REVIEW = Struct(
    "TokenReview",
    (
        Field(
            "spec",
            Struct(
                "TokenReviewSpec",
                (
                    Field("token", STRING),
                    Field("audiences", ListOf(STRING)),
                ),
            ),
        ),
        Field(
            "status",
            Struct(
                "TokenReviewStatus",
                (
                    Field("authenticated", BOOL),
                    Field(
                        "user",
                        Struct(
                            "UserInfo",
                            (
                                Field("username", STRING),
                                Field("uid", STRING),
                                Field("groups", ListOf(STRING)),
                                Field("extra", MapOf(ListOf(STRING))),
                            ),
                        ),
                    ),
                    Field("audiences", ListOf(STRING)),
                    Field("error", STRING),
                ),
            ),
        ),
    ),
)


def token_review_struct() -> Struct:
    return TOKEN_REVIEW


class LeaseStrategy(TypedStrategy):
    def __init__(self) -> None:
        super().__init__(LEASE)

    def validate(self, obj: Obj, version: str) -> list[FieldError]:
        spec = obj.get("spec") or {}
        errors = []
        duration = spec.get("leaseDurationSeconds")
        if duration is not None and duration <= 0:
            errors.append(
                FieldError.invalid("spec.leaseDurationSeconds", duration, "must be greater than 0")
            )
        transitions = spec.get("leaseTransitions")
        if transitions is not None and transitions < 0:
            errors.append(
                FieldError.invalid(
                    "spec.leaseTransitions", transitions, "must be greater than or equal to 0"
                )
            )
        strategy = spec.get("strategy")
        if strategy is not None and strategy != "OldestEmulationVersion":
            errors.append(
                FieldError.not_supported("spec.strategy", strategy, ["OldestEmulationVersion"])
            )
        if spec.get("preferredHolder") and not strategy:
            errors.append(
                FieldError.forbidden(
                    "spec.preferredHolder", "may only be specified if `strategy` is defined"
                )
            )
        return errors


_CONFIG_MAP_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
CONFIG_MAP_MAX_BYTES: Final = 1024 * 1024  # corev1.MaxSecretSize, the limit for ConfigMaps too


class ConfigMapStrategy(TypedStrategy):
    """core/v1 ConfigMap: `ValidateConfigMap` and `ValidateConfigMapUpdate` of kube-apiserver —
    keys as `IsConfigMapKey`, no key in both maps, at most 1 MiB of data, and an immutable
    ConfigMap keeps its data and stays immutable."""

    def __init__(self) -> None:
        super().__init__(CONFIG_MAP)

    def validate(self, obj: Obj, version: str) -> list[FieldError]:
        errors: list[FieldError] = []
        data, binary = obj.get("data") or {}, obj.get("binaryData") or {}
        size = 0
        for field, values, other in (("data", data, binary), ("binaryData", binary, data)):
            for key, value in values.items():
                where = f"{field}[{key}]"
                errors += [FieldError.invalid(where, key, msg) for msg in _key_errors(key)]
                if key in other:
                    other_name = "binaryData" if field == "data" else "data"
                    errors.append(
                        FieldError.invalid(where, key, f"duplicate of key present in {other_name}")
                    )
                size += _size(value, binary=field == "binaryData")
        if size > CONFIG_MAP_MAX_BYTES:
            errors.append(FieldError.too_long("", CONFIG_MAP_MAX_BYTES))
        return errors

    def validate_update(self, new: Obj, old: Obj, version: str) -> list[FieldError]:
        errors = self.validate(new, version)
        if old.get("immutable"):
            frozen = "field is immutable when `immutable` is set"
            if not new.get("immutable"):
                errors.append(FieldError.forbidden("immutable", frozen))
            for field in ("data", "binaryData"):
                if (new.get(field) or {}) != (old.get(field) or {}):
                    errors.append(FieldError.forbidden(field, frozen))
        return errors


def _size(value: str, *, binary: bool) -> int:
    if not binary:
        return len(value.encode())
    try:
        return len(base64.b64decode(value, validate=True))
    except (binascii.Error, ValueError):
        return len(value)


def _key_errors(key: str) -> list[str]:
    """`validation.IsConfigMapKey`."""
    errors = []
    if len(key) > 253:
        errors.append("must be no more than 253 characters")
    if not _CONFIG_MAP_KEY.match(key):
        errors.append(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
            "(e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
            "'[-._a-zA-Z0-9]+')"
        )
    if key in (".", ".."):
        errors.append(f"must not be '{key}'")
    elif key.startswith(".."):
        errors.append("must not start with '..'")
    return errors


class NamespaceStrategy(TypedStrategy):
    """Namespaces: `kubernetes` finalizer and phase Active on create; status and finalizers are
    not changed through the main resource; the name label always matches the name."""

    merge_lists: ClassVar[MergeLists] = {**Strategy.merge_lists, ("status", "conditions"): "type"}
    field_labels: ClassVar[Mapping[str, Getter]] = {
        **COMMON_FIELD_LABELS,
        "status.phase": field_at("status", "phase"),
    }

    def __init__(self) -> None:
        super().__init__(NAMESPACE)

    def name_errors(self, name: str, prefix: bool) -> list[str]:
        return dns1123_label(name, prefix)

    def _label(self, obj: Obj) -> None:
        meta = obj["metadata"]
        if meta.get("name"):
            meta["labels"] = {**(meta.get("labels") or {}), NAMESPACE_LABEL: meta["name"]}

    def prepare_create(self, obj: Obj, version: str) -> None:
        finalizers = obj["spec"].get("finalizers") or []
        if "kubernetes" not in finalizers:
            obj["spec"]["finalizers"] = [*finalizers, "kubernetes"]
        obj["status"] = {"phase": "Active"}
        self._label(obj)

    def prepare_update(self, new: Obj, old: Obj, subresource: str, version: str) -> Obj:
        # an object another writer stored without them decodes with an empty spec and status
        new["spec"] = clone(old.get("spec") or {})
        new["status"] = clone(old.get("status") or {})
        self._label(new)
        return new

    def validate(self, obj: Obj, version: str) -> list[FieldError]:
        return [
            FieldError.invalid("spec.finalizers", finalizer, msg)
            for finalizer in obj["spec"].get("finalizers") or []
            for msg in qualified_name_errors(finalizer)
        ]


TOKEN_REVIEWS: Final = ("authentication.k8s.io", "tokenreviews")


def builtin_types() -> list[ResourceType]:
    return [
        ResourceType(
            "",
            ("v1",),
            "namespaces",
            "namespace",
            "Namespace",
            "NamespaceList",
            namespaced=False,
            strategy=NamespaceStrategy(),
            short_names=("ns",),
            verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
        ),
        ResourceType(
            "",
            ("v1",),
            "events",
            "event",
            "Event",
            "EventList",
            namespaced=True,
            strategy=EventStrategy(),
            short_names=("ev",),
        ),
        ResourceType(
            "",
            ("v1",),
            "configmaps",
            "configmap",
            "ConfigMap",
            "ConfigMapList",
            namespaced=True,
            strategy=ConfigMapStrategy(),
            short_names=("cm",),
        ),
        ResourceType(
            "coordination.k8s.io",
            ("v1",),
            "leases",
            "lease",
            "Lease",
            "LeaseList",
            namespaced=True,
            strategy=LeaseStrategy(),
        ),
        ResourceType(
            "authentication.k8s.io",
            ("v1",),
            "tokenreviews",
            "tokenreview",
            "TokenReview",
            "TokenReviewList",
            namespaced=False,
            strategy=TypedStrategy(TOKEN_REVIEW),
            verbs=("create",),
            stored=False,
        ),
    ]
