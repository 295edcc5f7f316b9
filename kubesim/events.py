"""core/v1 Event as kube-apiserver stores and validates it: its Go shape, the field labels a
field selector may name, and the rules a recorder's create and patch must pass."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kubesim.fields import FieldError
from kubesim.meta import dns1123_subdomain, qualified_name_errors
from kubesim.resources import COMMON_FIELD_LABELS
from kubesim.selectors import Getter, field_at
from kubesim.typed import Field, Scalar, Struct
from kubesim.typed_strategy import TypedStrategy

__all__ = ["EVENT", "EventStrategy"]

Obj = dict[str, Any]
STRING, INT32 = Scalar("string"), Scalar("int32")
TIME, MICRO_TIME = Scalar("Time"), Scalar("MicroTime")

OBJECT_REFERENCE = Struct(
    "ObjectReference",
    (
        Field("kind", STRING),
        Field("namespace", STRING),
        Field("name", STRING),
        Field("uid", STRING),
        Field("apiVersion", STRING),
        Field("resourceVersion", STRING),
        Field("fieldPath", STRING),
    ),
)
EVENT = Struct(
    "Event",
    (
        Field("involvedObject", OBJECT_REFERENCE, omitempty=False),
        Field("reason", STRING),
        Field("message", STRING),
        Field("source", Struct("EventSource", (Field("component", STRING), Field("host", STRING)))),
        Field("firstTimestamp", TIME),
        Field("lastTimestamp", TIME),
        Field("count", INT32),
        Field("type", STRING),
        Field("eventTime", MICRO_TIME),
        Field(
            "series",
            Struct(
                "EventSeries",
                (
                    Field("count", INT32),
                    Field("lastObservedTime", MICRO_TIME),
                ),
            ),
            pointer=True,
        ),
        Field("action", STRING),
        Field("related", OBJECT_REFERENCE, pointer=True),
        Field("reportingComponent", STRING, omitempty=False),
        Field("reportingInstance", STRING, omitempty=False),
    ),
)


class EventStrategy(TypedStrategy):
    """core/v1 Event: legacy validation only (what kube-apiserver applies to v1 requests)."""

    allow_create_on_update = True
    field_labels: ClassVar[Mapping[str, Getter]] = {
        **COMMON_FIELD_LABELS,
        **{
            f"involvedObject.{k}": field_at("involvedObject", k)
            for k in (
                "kind",
                "namespace",
                "name",
                "uid",
                "apiVersion",
                "resourceVersion",
                "fieldPath",
            )
        },
        "reason": field_at("reason"),
        "reportingComponent": field_at("reportingComponent"),
        "source": field_at("source", "component"),
        "type": field_at("type"),
    }

    def __init__(self) -> None:
        super().__init__(EVENT)

    def validate(self, obj: Obj, version: str) -> list[FieldError]:
        errors: list[FieldError] = []
        namespace = obj["metadata"].get("namespace", "")
        involved = obj["involvedObject"].get("namespace", "")
        mismatch = FieldError.invalid(
            "involvedObject.namespace", involved, "does not match event.namespace"
        )
        if obj.get("eventTime") is None:
            if (not involved and namespace not in ("", "default")) or (
                involved and namespace != involved
            ):
                errors.append(mismatch)
        else:
            if not involved and namespace not in ("default", "kube-system"):
                errors.append(mismatch)
            component = obj.get("reportingComponent", "")
            if not component:
                errors.append(FieldError.required("reportingComponent"))
            errors += [
                FieldError.invalid("reportingComponent", component, msg)
                for msg in qualified_name_errors(component)
            ]
            for name in ("reportingInstance", "action", "reason"):
                value = obj.get(name, "")
                if not value:
                    errors.append(FieldError.required(name))
                if len(value) > 128:
                    errors.append(FieldError.invalid(name, "", "can have at most 128 characters"))
            if len(obj.get("message", "")) > 1024:
                errors.append(FieldError.invalid("message", "", "can have at most 1024 characters"))
        errors += [
            FieldError.invalid("namespace", namespace, msg) for msg in dns1123_subdomain(namespace)
        ]
        return errors
