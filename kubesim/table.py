"""`kubectl get`'s Table (`meta.k8s.io/v1` and `v1beta1`), as kube-apiserver answers a GET or a
list whose `Accept` asks for `application/json;as=Table;v=v1;g=meta.k8s.io`.

For a custom resource the columns are `Name`, then the CRD version's
`additionalPrinterColumns` (apiextensions-apiserver's tableconvertor), or `Age` on
`.metadata.creationTimestamp` when it declares none (the CRD's defaulting): each cell the
column's JSONPath on the object (missing: null), a `string` printed, an `integer`, `number` or
`boolean` kept when the value has that type, a `date` as the age kubectl shows
(`duration.HumanDuration`). Built-in kinds get the generic convertor's `Name` and `Created At`.
Each row carries the object as `includeObject` says (default `Metadata`: a
PartialObjectMetadata); `?includeObject=Object` the whole object, `None` none.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from kubesim.codec import now as current
from kubesim.errors import bad_request

__all__ = ["Column", "table_version", "to_table"]

Obj = dict[str, Any]
Column = Mapping[str, Any]  # an additionalPrinterColumns entry
_AGE: Final = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
_NAME: Final = {"name": "Name", "type": "string", "format": "name", "priority": 0,
                "description": "Name must be unique within a namespace."}  # fmt: skip


def table_version(accept: str | None) -> str | None:
    """The Table version the `Accept` header asks for first (`v1`, `v1beta1`); None when its
    first acceptable choice is plain JSON, as kube-apiserver negotiates it."""
    for choice in (accept or "").split(","):
        kind, *parameters = (p.strip() for p in choice.split(";"))
        fields = dict(p.split("=", 1) for p in parameters if "=" in p)
        if kind in ("application/json", "*/*", "application/*") and "as" not in fields:
            return None
        table = kind == "application/json" and fields.get("as") == "Table"
        if table and fields.get("g") == "meta.k8s.io" and fields.get("v") in ("v1", "v1beta1"):
            return fields["v"]
    return None


def to_table(
    found: Obj,
    columns: Sequence[Column] | None,
    version: str,
    query: Mapping[str, str],
    now: datetime | None = None,
) -> Obj:
    """`found` (an object or a list) as a Table; `columns` None for a built-in kind."""
    include = query.get("includeObject", "") or "Metadata"
    if include not in ("Object", "Metadata", "None"):
        raise bad_request(f'unrecognized includeObject value: "{include}"')
    now = now or current()
    custom = columns is not None
    definitions = [dict(c) for c in (columns or [_AGE])] if custom else [
        {"name": "Created At", "type": "date", "format": "", "priority": 0,
         "description": "CreationTimestamp is a timestamp representing the server time when "
         "this object was created."}]  # fmt: skip
    items = found.get("items", [found])
    meta = found.get("metadata") or {}
    table: Obj = {"kind": "Table", "apiVersion": f"meta.k8s.io/{version}", "metadata": {}}
    for key in ("resourceVersion", "continue", "remainingItemCount"):
        if key in meta:
            table["metadata"][key] = meta[key]
    if query.get("noHeaders") not in ("true", "1"):
        headers = [dict(_NAME)]
        for column in definitions:
            header = {"name": column["name"], "type": column["type"],
                      "format": column.get("format", ""), "priority": column.get("priority", 0),
                      "description": column.get("description") or (
                          f"Custom resource definition column (in JSONPath format): "
                          f"{column.get('jsonPath', '')}")}  # fmt: skip
            headers.append(header)
        table["columnDefinitions"] = headers
    table["rows"] = [
        {"cells": [item["metadata"]["name"], *_cells(item, definitions, custom, now)],
         **_row_object(item, include)}
        for item in items
    ]  # fmt: skip
    return table


def _cells(item: Obj, columns: Sequence[Column], custom: bool, now: datetime) -> list[Any]:
    if not custom:
        return [item["metadata"].get("creationTimestamp")]
    return [_cell(column, _first(item, str(column.get("jsonPath", ""))), now) for column in columns]


def _first(item: Obj, path: str) -> Any:
    """The first value kube's JSONPath finds (missing keys allowed); None when none."""
    import jsonpath

    expression = path.strip()
    expression = expression[1:-1] if expression.startswith("{") else expression
    try:
        found = jsonpath.findall("$" + expression if expression.startswith(".") else expression,
                                 item)  # fmt: skip
    except jsonpath.JSONPathError:
        return None
    return found[0] if found else None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _date(value: Any, now: datetime) -> Any:
    if not isinstance(value, str):
        return None
    try:
        at = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return "<invalid>"
    return human_duration((now - at).total_seconds())


def _cell(column: Column, value: Any, now: datetime) -> Any:
    """cellForJSONValue: the value as its column's type, None when it is not of that type."""
    if value is None:
        return None
    converted: dict[str, Any] = {
        "string": value if isinstance(value, str) else json.dumps(value, separators=(",", ":")),
        "integer": int(value) if _number(value) else None,
        "number": float(value) if _number(value) else None,
        "boolean": value if isinstance(value, bool) else None,
    }
    if column.get("type") == "date":
        return _date(value, now)
    return converted.get(str(column.get("type")))


def _row_object(item: Obj, include: str) -> Obj:
    if include == "None":
        return {}
    if include == "Object":
        return {"object": item}
    return {"object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                       "metadata": item["metadata"]}}  # fmt: skip


def _pair(major: int, major_unit: str, minor: int, minor_unit: str) -> str:
    return f"{major}{major_unit}{minor}{minor_unit}" if minor else f"{major}{major_unit}"


def human_duration(seconds: float) -> str:
    """k8s.io/apimachinery's duration.HumanDuration: how kubectl writes an age."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    s = max(s, 0)
    m, h, d = s // 60, s // 3600, s // 86400
    steps = (
        (120, f"{s}s"), (600, _pair(m, "m", s % 60, "s")), (3 * 3600, f"{m}m"),
        (8 * 3600, _pair(h, "h", m % 60, "m")), (48 * 3600, f"{h}h"),
        (8 * 86400, _pair(d, "d", h % 24, "h")), (2 * 365 * 86400, f"{d}d"),
        (8 * 365 * 86400, _pair(d // 365, "y", d % 365, "d")),
    )  # fmt: skip
    return next((text for below, text in steps if s < below), f"{d // 365}y")
