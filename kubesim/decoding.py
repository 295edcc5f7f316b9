"""A write's body decoded as kube-apiserver's handlers decode it (400 for what does not fit),
and the write's query options (dryRun, fieldValidation)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesim.errors import bad_request
from kubesim.meta import ObjectMetaError
from kubesim.resources import ResourceType
from kubesim.typed import TypedDecodeError

__all__ = ["decode_body", "dry_run_of"]

Obj = dict[str, Any]


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "array" if isinstance(value, list) else "string"


def dry_run_of(query: Mapping[str, str]) -> bool:
    value = query.get("dryRun", "")
    if value not in ("", "All"):
        raise bad_request(f'dryRun: Unsupported value: "{value}": supported values: "All"')
    return value == "All"


def _field_validation(query: Mapping[str, str]) -> str:
    value = query.get("fieldValidation", "") or "Warn"
    if value not in ("Ignore", "Warn", "Strict"):
        raise bad_request(f"fieldValidation parameter unsupported: {value}")
    return value


def decode_body(
    rt: ResourceType, version: str, body: Any, query: Mapping[str, str]
) -> tuple[Obj, list[str]]:
    """The request body as the object to store, plus `Warning` texts for dropped fields."""
    field_validation = _field_validation(query)
    cannot = f'{rt.kind} in version "{version}" cannot be handled as a {rt.kind}'
    if body is None:
        raise bad_request("Object 'Kind' is missing in 'null'")
    if not isinstance(body, dict):
        raise bad_request(
            f"{cannot}: json: cannot unmarshal {_json_kind(body)} into Go "
            f"value of type map[string]interface {{}}"
        )
    expected = rt.api_version(version)
    api_version = body.get("apiVersion") or expected
    kind = body.get("kind") or rt.kind
    if api_version not in [rt.api_version(v) for v in rt.versions]:
        raise bad_request(
            f"the API version in the data ({api_version}) does not match the "
            f"expected API version ({expected})"
        )
    if kind != rt.kind and not rt.strategy.unstructured:
        raise bad_request(
            f'no kind "{kind}" is registered for version "{api_version}" in '
            f'scheme "pkg/api/legacyscheme/scheme.go:30"'
        )
    try:
        obj, dropped = rt.strategy.decode({**body, "apiVersion": expected, "kind": kind}, version)
    except (ObjectMetaError, TypedDecodeError) as exc:
        raise bad_request(f"{cannot}: {exc}") from None
    obj["apiVersion"] = rt.api_version(rt.storage_version)
    if field_validation == "Strict" and dropped:
        raise bad_request(
            "strict decoding error: " + ", ".join(f'unknown field "{path}"' for path in dropped)
        )
    warnings = [] if field_validation == "Ignore" else [f'unknown field "{p}"' for p in dropped]
    return obj, warnings
