"""A CRD's structural schema applied to a custom resource as kube-apiserver applies it: prune
unknown fields, drop non-nullable nulls and fill defaults, then validate, with the field paths
and messages of kube-openapi, so a controller sees the same 422 it would see in a cluster."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Final

from kubesim.codec import Float64Integer, clone
from kubesim.fields import FieldError, go_quote, go_value
from kubesim.formats import FORMATS

__all__ = ["PathPart", "apply_defaults", "path_string", "prune", "validate"]

PathPart = str | int
Schema = Mapping[str, Any]

_META_FIELDS: Final = {"apiVersion": str, "kind": str, "metadata": dict}


def path_string(path: list[PathPart]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


# -- pruning -------------------------------------------------------------------------------------


def prune(value: Any, schema: Schema | None, *, root: bool = True) -> list[str]:
    """Remove, in place, every field the schema does not specify; returns their paths (for
    the `Warning: unknown field` header and `fieldValidation=Strict`)."""
    pruned: list[str] = []
    _prune(value, schema, [], pruned, embedded=root)
    return pruned


def _is_meta_field(key: str, value: Any) -> bool:
    kind = _META_FIELDS.get(key)
    return kind is not None and isinstance(value, kind)


def _prune(
    value: Any,
    schema: Schema | None,
    path: list[PathPart],
    pruned: list[str],
    *,
    embedded: bool = False,
) -> None:
    """Drop what `schema` does not know from `value`, in place; each dropped field's path goes
    to `pruned`. `path` is the one list of the walk, extended and restored around each step
    (a copy per node cost more than the pruning)."""
    if schema is not None and schema.get("x-kubernetes-preserve-unknown-fields"):
        _prune_known_only(value, schema, path, pruned)
        return
    embedded = embedded or bool(schema and schema.get("x-kubernetes-embedded-resource"))
    if isinstance(value, dict):
        properties = (schema or {}).get("properties") or {}
        additional = (schema or {}).get("additionalProperties")
        for key in list(value):
            if embedded and _is_meta_field(key, value[key]):
                continue
            below = properties.get(key)
            if below is None and isinstance(additional, Mapping):
                below = additional
            if below is not None:
                _step(value[key], below, path, key, pruned, _prune)
            elif not (additional is True and schema is not None):
                pruned.append(path_string([*path, key]))
                del value[key]
    elif isinstance(value, list):
        items = schema.get("items") if schema is not None else None
        for index, item in enumerate(value):
            _step(item, items, path, index, pruned, _prune)


def _prune_known_only(value: Any, schema: Schema, path: list[PathPart], pruned: list[str]) -> None:
    """Under x-kubernetes-preserve-unknown-fields unknown keys stay, known ones are pruned."""
    embedded = bool(schema.get("x-kubernetes-embedded-resource"))
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        for key in list(value):
            if embedded and _is_meta_field(key, value[key]):
                continue
            below = properties.get(key)
            if below is None and isinstance(additional, Mapping):
                below = additional
            if below is not None:
                _step(value[key], below, path, key, pruned, _prune)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            _step(item, schema["items"], path, index, pruned, _prune_known_only)


def _step(  # noqa: PLR0917 (one step of the walk)
    value: Any,
    schema: Any,
    path: list[PathPart],
    part: PathPart,
    pruned: list[str],
    walk: Any,
) -> None:
    path.append(part)
    try:
        walk(value, schema, path, pruned)
    finally:
        path.pop()


# -- defaulting ----------------------------------------------------------------------------------


def apply_defaults(value: Any, schema: Schema | None) -> None:
    """Non-nullable nulls are dropped and missing fields take their `default`, in place."""
    if schema is None:
        return
    if isinstance(value, dict):
        for key, sub in (schema.get("properties") or {}).items():
            if key in value and value[key] is None and not sub.get("nullable"):
                del value[key]
            if key not in value and "default" in sub:
                value[key] = clone(sub["default"])
            if key in value:
                apply_defaults(value[key], sub)
        additional = schema.get("additionalProperties")
        if isinstance(additional, Mapping):
            for key in value:
                if key not in (schema.get("properties") or {}):
                    apply_defaults(value[key], additional)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for item in value:
            apply_defaults(item, schema["items"])


# -- validation ----------------------------------------------------------------------------------


def validate(value: Any, schema: Schema | None) -> list[FieldError]:
    errors: list[FieldError] = []
    if schema is not None:
        _validate(value, schema, [], errors, root=True)
    return errors


_JSON_TYPES: Final = (
    (bool, "boolean"),
    (Float64Integer, "number"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return next(name for kind, name in _JSON_TYPES if isinstance(value, kind))


def _type_ok(value: Any, wanted: str) -> bool:
    actual = _type_name(value)
    if wanted == "number":
        return actual in ("integer", "number")
    return actual == wanted


def _number_format_mismatch(value: Any, schema: Schema) -> bool:
    """A number that is no JSON integer where the schema wants an integer of a format."""
    return (
        _type_name(value) == "number"
        and schema.get("type") == "integer"
        and schema.get("format") in ("int32", "int64")
    )


def _validate(
    value: Any,
    schema: Schema,
    path: list[PathPart],
    errors: list[FieldError],
    *,
    root: bool = False,
) -> None:
    where = path_string(path)
    if value is None and schema.get("nullable"):
        return
    if schema.get("x-kubernetes-int-or-string"):
        if _type_name(value) not in ("integer", "string"):
            actual = _type_name(value)
            message = f"{where} in body must be of type integer,string: {go_quote(actual)}"
            errors.append(FieldError.type_invalid(where, actual, message))
            return
    elif _number_format_mismatch(value, schema):
        # kube-openapi's typeValidator checks a format before the type, and names a float64's
        # format "float64"; apiextensions makes that a TypeInvalid field error.
        message = f'{where} in body must be of type {schema["format"]}: "float64"'
        errors.append(FieldError.type_invalid(where, "float64", message))
        return
    elif "type" in schema and not _type_ok(value, schema["type"]):
        message = f"{where} in body must be of type {schema['type']}: {go_quote(_type_name(value))}"
        errors.append(FieldError.type_invalid(where, _type_name(value), message))
        return
    if "enum" in schema and value not in schema["enum"]:
        errors.append(FieldError.not_supported(where, value, schema["enum"]))
    if isinstance(value, str):
        _validate_string(value, schema, where, errors)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        _validate_number(value, schema, where, errors)
    elif isinstance(value, list):
        _validate_array(value, schema, path, errors)
    elif isinstance(value, dict):
        _validate_object(value, schema, path, errors, root=root)
    _validate_combinators(value, schema, path, errors)


def _validate_string(value: str, schema: Schema, where: str, errors: list[FieldError]) -> None:
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        errors.append(FieldError.too_long(where, schema["maxLength"]))
    if "minLength" in schema and len(value) < schema["minLength"]:
        detail = f"{where} in body should be at least {schema['minLength']} chars long"
        errors.append(FieldError.invalid(where, value, detail))
    if "pattern" in schema and not _regex(schema["pattern"]).search(value):
        detail = f"{where} in body should match '{schema['pattern']}'"
        errors.append(FieldError.invalid(where, value, detail))
    checker = FORMATS.get(schema.get("format", ""))
    if checker is not None and not checker(value):
        detail = f"{where} in body must be of type {schema['format']}: {go_quote(value)}"
        errors.append(FieldError.type_invalid(where, value, detail))


def _validate_number(value: float, schema: Schema, where: str, errors: list[FieldError]) -> None:
    if "maximum" in schema:
        maximum = schema["maximum"]
        if schema.get("exclusiveMaximum") and value >= maximum:
            detail = f"{where} in body should be less than {go_value(maximum)}"
            errors.append(FieldError.invalid(where, value, detail))
        elif value > maximum:
            detail = f"{where} in body should be less than or equal to {go_value(maximum)}"
            errors.append(FieldError.invalid(where, value, detail))
    if "minimum" in schema:
        minimum = schema["minimum"]
        if schema.get("exclusiveMinimum") and value <= minimum:
            detail = f"{where} in body should be greater than {go_value(minimum)}"
            errors.append(FieldError.invalid(where, value, detail))
        elif value < minimum:
            detail = f"{where} in body should be greater than or equal to {go_value(minimum)}"
            errors.append(FieldError.invalid(where, value, detail))
    factor = schema.get("multipleOf")
    if factor and (value / factor) != int(value / factor):
        detail = f"{where} in body should be a multiple of {go_value(factor)}"
        errors.append(FieldError.invalid(where, value, detail))


def _validate_array(
    value: list[Any], schema: Schema, path: list[PathPart], errors: list[FieldError]
) -> None:
    where = path_string(path)
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        errors.append(FieldError.too_many(where, len(value), schema["maxItems"]))
    if "minItems" in schema and len(value) < schema["minItems"]:
        detail = f"{where} in body should have at least {schema['minItems']} items"
        errors.append(FieldError.invalid(where, len(value), detail))
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "set":
        seen: set[str] = set()
        for index, item in enumerate(value):
            key = json.dumps(item, sort_keys=True)
            if key in seen:
                errors.append(FieldError.duplicate(path_string([*path, index]), item))
            seen.add(key)
    elif list_type == "map":
        keys = schema.get("x-kubernetes-list-map-keys") or []
        seen_keys: set[str] = set()
        for index, item in enumerate(value):
            if not isinstance(item, dict):
                continue
            identity = {k: item.get(k) for k in keys if k in item}
            key = json.dumps(identity, sort_keys=True)
            if key in seen_keys:
                errors.append(FieldError.duplicate(path_string([*path, index]), identity))
            seen_keys.add(key)
    items = schema.get("items")
    if isinstance(items, Mapping):
        for index, item in enumerate(value):
            _validate(item, items, [*path, index], errors)


def _validate_object(
    value: dict[str, Any],
    schema: Schema,
    path: list[PathPart],
    errors: list[FieldError],
    *,
    root: bool,
) -> None:
    where = path_string(path)
    for key in schema.get("required") or []:
        if key not in value:
            errors.append(FieldError.required(path_string([*path, key])))
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        errors.append(FieldError.too_many(where, len(value), schema["maxProperties"]))
    if "minProperties" in schema and len(value) < schema["minProperties"]:
        detail = f"{where} in body should have at least {schema['minProperties']} properties"
        errors.append(FieldError.invalid(where, len(value), detail))
    properties = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    for key, item in value.items():
        if root and key == "metadata":
            continue  # ObjectMeta is validated as ObjectMeta, not against the schema
        if key in properties:
            _validate(item, properties[key], [*path, key], errors)
        elif isinstance(additional, Mapping):
            _validate(item, additional, [*path, key], errors)


def _validate_combinators(
    value: Any, schema: Schema, path: list[PathPart], errors: list[FieldError]
) -> None:
    where = path_string(path)
    for sub in schema.get("allOf") or []:
        _validate(value, sub, path, errors)
    any_of = schema.get("anyOf")
    if any_of and not any(not _errors_of(value, sub, path) for sub in any_of):
        detail = f"{where} in body must validate at least one schema (anyOf)"
        errors.append(FieldError.invalid(where, value, detail))
    one_of = schema.get("oneOf")
    if one_of and sum(1 for sub in one_of if not _errors_of(value, sub, path)) != 1:
        detail = f"{where} in body must validate one and only one schema (oneOf)"
        errors.append(FieldError.invalid(where, value, detail))
    negated = schema.get("not")
    if isinstance(negated, Mapping) and not _errors_of(value, negated, path):
        detail = f"{where} in body should not validate the schema"
        errors.append(FieldError.invalid(where, value, detail))


def _errors_of(value: Any, schema: Schema, path: list[PathPart]) -> list[FieldError]:
    found: list[FieldError] = []
    _validate(value, schema, path, found)
    return found


@lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)
