"""ObjectMeta as kube-apiserver sees it: which metadata fields exist and of what type, the
name/label/annotation rules of apimachinery's validation, and which fields an update may not
change. Shared by custom resources and built-in types, as in kube-apiserver."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from kubesim.fields import FieldError

__all__ = [
    "ObjectMetaError",
    "coerce_metadata",
    "dns1123_label",
    "dns1123_subdomain",
    "path_segment_errors",
    "qualified_name_errors",
    "validate_object_meta",
    "validate_object_meta_update",
]

NameCheck = Callable[[str, bool], list[str]]

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_TOTAL_ANNOTATION_SIZE: Final = 256 * 1024


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    """validation.RegexError, including its double spaces between examples."""
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{fmt}')"


_SUBDOMAIN_MSG: Final = _regex_error(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character",
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*",
    "example.com",
)
_LABEL_MSG: Final = _regex_error(
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character",
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?",
    "my-name",
    "123-abc",
)
_QUALIFIED_MSG: Final = _regex_error(
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character",
    "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]",
    "MyName",
    "my.name",
    "123-abc",
)
_LABEL_VALUE_MSG: Final = _regex_error(
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character",
    "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?",
    "MyValue",
    "my_value",
    "12345",
)


def _mask_trailing_dash(name: str, prefix: bool) -> str:
    if prefix and len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def dns1123_subdomain(name: str, prefix: bool = False) -> list[str]:
    name = _mask_trailing_dash(name, prefix)
    errors = []
    if len(name) > 253:
        errors.append("must be no more than 253 characters")
    if not _SUBDOMAIN.match(name):
        errors.append(_SUBDOMAIN_MSG)
    return errors


def dns1123_label(name: str, prefix: bool = False) -> list[str]:
    name = _mask_trailing_dash(name, prefix)
    errors = []
    if len(name) > 63:
        errors.append("must be no more than 63 characters")
    if not _LABEL.match(name):
        errors.append(_LABEL_MSG)
    return errors


def path_segment_errors(name: str) -> list[str]:
    """path.IsValidPathSegmentName: a name must survive being a URL segment."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{bad}'" for bad in ("/", "%") if bad in name]


def qualified_name_errors(value: str) -> list[str]:
    parts = value.split("/")
    errors: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend("prefix part " + msg for msg in dns1123_subdomain(prefix))
    else:
        return [
            "a qualified name "
            + _QUALIFIED_MSG
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    if not _QUALIFIED.match(name):
        errors.append("name part " + _QUALIFIED_MSG)
    return errors


class ObjectMetaError(ValueError):
    """A metadata field of the wrong JSON type: a decoding failure (400), not a 422."""


_STRING_FIELDS: Final = (
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
)
_OWNER_FIELDS: Final = {
    "apiVersion": str,
    "kind": str,
    "name": str,
    "uid": str,
    "controller": bool,
    "blockOwnerDeletion": bool,
}


def _go_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _type_error(path: str, value: Any, go_type: str) -> ObjectMetaError:
    return ObjectMetaError(
        f"json: cannot unmarshal {_go_type(value)} into Go struct field ObjectMeta.{path} "
        f"of type {go_type}"
    )


def _string(path: str, value: Any, dropped: list[str]) -> Any:
    if not isinstance(value, str):
        raise _type_error(path, value, "string")
    return value or None


def _int64(path: str, value: Any, dropped: list[str]) -> Any:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _type_error(path, value, "int64")
    return value


def _string_map(path: str, value: Any, dropped: list[str]) -> Any:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise _type_error(path, value, "map[string]string")
    return dict(value) or None


def _string_list(path: str, value: Any, dropped: list[str]) -> Any:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _type_error(path, value, "[]string")
    return list(value) or None


def _owner_references(path: str, value: Any, dropped: list[str]) -> Any:
    if not isinstance(value, list):
        raise _type_error(path, value, "[]v1.OwnerReference")
    out = []
    for index, ref in enumerate(value):
        if not isinstance(ref, dict):
            raise _type_error(path, ref, "v1.OwnerReference")
        clean: dict[str, Any] = {"apiVersion": "", "kind": "", "name": "", "uid": ""}
        for key, item in ref.items():
            wanted = _OWNER_FIELDS.get(key)
            if wanted is None:
                dropped.append(f"{path}[{index}].{key}")
            elif item is not None:
                if not isinstance(item, wanted):
                    raise _type_error(f"{path}.{key}", item, wanted.__name__)
                clean[key] = item
        out.append(clean)
    return out or None


def _not_tracked(path: str, value: Any, dropped: list[str]) -> Any:
    return None


_COERCE: Final[Mapping[str, Callable[[str, Any, list[str]], Any]]] = {
    **dict.fromkeys(_STRING_FIELDS, _string),
    "generation": _int64,
    "deletionGracePeriodSeconds": _int64,
    "labels": _string_map,
    "annotations": _string_map,
    "finalizers": _string_list,
    "ownerReferences": _owner_references,
    "managedFields": _not_tracked,
}


def coerce_metadata(raw: Any) -> tuple[dict[str, Any], list[str]]:
    """Keep the ObjectMeta fields (type-checked), drop the rest; returns (metadata, dropped
    paths). managedFields are dropped too: this server does not track field managers."""
    if raw is None:
        return {}, []
    if not isinstance(raw, dict):
        raise ObjectMetaError(
            f"json: cannot unmarshal {_go_type(raw)} into Go struct field .metadata of type "
            "v1.ObjectMeta"
        )
    meta: dict[str, Any] = {}
    dropped: list[str] = []
    for key, value in raw.items():
        coerce = _COERCE.get(key)
        if coerce is None:
            dropped.append(f"metadata.{key}")
        elif value is not None:
            kept = coerce(f"metadata.{key}", value, dropped)
            if kept is not None:
                meta[key] = kept
    return meta, dropped


def validate_object_meta(
    meta: Mapping[str, Any], *, namespaced: bool, name_check: NameCheck
) -> list[FieldError]:
    """apimachinery ValidateObjectMeta."""
    errors = _validate_identity(meta, namespaced, name_check)
    if meta.get("generation", 0) < 0:
        errors.append(
            FieldError.invalid(
                "metadata.generation", meta["generation"], "must be greater than or equal to 0"
            )
        )
    errors += _validate_labels(meta.get("labels") or {})
    annotations = meta.get("annotations") or {}
    for key in annotations:
        errors += [
            FieldError.invalid("metadata.annotations", key, msg)
            for msg in qualified_name_errors(key.lower())
        ]
    if sum(len(k) + len(v) for k, v in annotations.items()) > _TOTAL_ANNOTATION_SIZE:
        errors.append(FieldError.too_long("metadata.annotations", _TOTAL_ANNOTATION_SIZE))
    for index, finalizer in enumerate(meta.get("finalizers") or []):
        errors += [
            FieldError.invalid(f"metadata.finalizers[{index}]", finalizer, msg)
            for msg in qualified_name_errors(finalizer)
        ]
    errors += _validate_owner_references(meta.get("ownerReferences") or [])
    return errors


def _validate_identity(
    meta: Mapping[str, Any], namespaced: bool, name_check: NameCheck
) -> list[FieldError]:
    errors: list[FieldError] = []
    generate_name = meta.get("generateName", "")
    if generate_name:
        errors += [
            FieldError.invalid("metadata.generateName", generate_name, msg)
            for msg in name_check(generate_name, True)
        ]
    name = meta.get("name", "")
    if not name:
        errors.append(FieldError.required("metadata.name", "name or generateName is required"))
    else:
        errors += [
            FieldError.invalid("metadata.name", name, msg) for msg in name_check(name, False)
        ]
    namespace = meta.get("namespace", "")
    if namespaced and not namespace:
        errors.append(FieldError.required("metadata.namespace"))
    elif namespaced:
        errors += [
            FieldError.invalid("metadata.namespace", namespace, msg)
            for msg in dns1123_label(namespace)
        ]
    elif namespace:
        errors.append(FieldError.forbidden("metadata.namespace", "not allowed on this type"))
    return errors


def _validate_labels(labels: Mapping[str, str]) -> list[FieldError]:
    errors: list[FieldError] = []
    for key, value in labels.items():
        errors += [
            FieldError.invalid("metadata.labels", key, msg) for msg in qualified_name_errors(key)
        ]
        if len(value) > 63:
            errors.append(
                FieldError.invalid(
                    f"metadata.labels[{key}]", value, "must be no more than 63 characters"
                )
            )
        if not _LABEL_VALUE.match(value):
            errors.append(FieldError.invalid(f"metadata.labels[{key}]", value, _LABEL_VALUE_MSG))
    return errors


def _validate_owner_references(refs: list[dict[str, Any]]) -> list[FieldError]:
    errors: list[FieldError] = []
    controllers = 0
    for ref in refs:
        for key, what in (
            ("apiVersion", "version"),
            ("kind", "kind"),
            ("name", "name"),
            ("uid", "uid"),
        ):
            if not ref.get(key):
                errors.append(
                    FieldError.invalid(
                        f"metadata.ownerReferences.{key}",
                        ref.get(key, ""),
                        f"{what} must not be empty",
                    )
                )
        controllers += bool(ref.get("controller"))
    if controllers > 1:
        errors.append(
            FieldError.invalid(
                "metadata.ownerReferences",
                refs,
                "Only one reference can have Controller set to true",
            )
        )
    return errors


def validate_object_meta_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """ValidateObjectMetaUpdate: identity fields are immutable, finalizers only shrink once
    deletion has started."""
    errors: list[FieldError] = []
    for key in ("name", "namespace", "uid", "creationTimestamp"):
        if new.get(key, "") != old.get(key, ""):
            errors.append(
                FieldError.invalid(f"metadata.{key}", new.get(key, ""), "field is immutable")
            )
    if old.get("deletionTimestamp"):
        added = set(new.get("finalizers") or []) - set(old.get("finalizers") or [])
        if added:
            errors.append(
                FieldError.forbidden(
                    "metadata.finalizers",
                    f"no new finalizers can be added if the object is being deleted, found new "
                    f"finalizers {sorted(added)!r}".replace("'", '"'),
                )
            )
    return errors
