"""`addon-status fleet CLUSTER`: one cluster's hub copy described, as `kubectl describe` and
`flux events` show one object: its state, every condition (the collectors' and `Ready`
included), the resources its health rules watch, the installed versions and the history,
newest first. Pure: the copy and `now` in, text or a document out. What the copy does not
carry (`--hub-copy conditions` copies the conditions only) is said to be absent, not invented.
Every string of the copy is the hub's: shown with its control characters escaped.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from controller.fleet.view import age, row_of
from controller.terminal import escaped
from statemachines.conditions import parse_time

__all__ = ["CLUSTER_SCHEMA", "cluster_document", "describe"]

CLUSTER_SCHEMA: Final = "addon-status.fleet.cluster/v1"  # the document's `kind`
_RESOURCES_HEALTHY: Final = "ResourcesHealthy"


def cluster_document(copy: Mapping[str, Any]) -> dict[str, Any]:
    """The machine shape of one cluster (`-o json` / `-o yaml`): its row, and the copy's
    conditions, versions and history as stored (history newest first)."""
    status = _mapping(copy.get("status"))
    return {
        "kind": CLUSTER_SCHEMA,
        **row_of(copy).to_json(),
        "conditions": _list(status.get("conditions")),
        "versions": _list(status.get("versions")),
        "history": _list(status.get("history")),
        "lastKnownGood": status.get("lastKnownGood"),
    }


def describe(copy: Mapping[str, Any], now: datetime) -> str:
    """The text a person reads."""
    row = row_of(copy)
    status = _mapping(copy.get("status"))
    lines = [
        f"Cluster:   {escaped(row.cluster)}",
        f"State:     {escaped(row.state)}" + (f" ({escaped(row.reason)})" if row.reason else ""),
        f"Since:     {age(row.since, now)}",
        f"Message:   {_cell(row.message)}",
        "",
        "Conditions:",
        *_table(
            ("TYPE", "STATUS", "REASON", "AGE", "MESSAGE"),
            [
                (c.get("type"), c.get("status"), c.get("reason"), _age(c, now), c.get("message"))
                for c in _list(status.get("conditions"))
            ],
        ),
    ]
    resources = [c for c in _list(status.get("conditions")) if c.get("type") == _RESOURCES_HEALTHY]
    lines += ["", "Resources:", *(
        [f"  {escaped(c.get('status'))} {escaped(c.get('reason'))}: "
         f"{escaped(c.get('message') or '-')}" for c in resources]
        or ["  (no health rule reported)"]
    )]  # fmt: skip
    versions = _list(status.get("versions"))
    lines += ["", "Versions:", *(
        [f"  {escaped(v.get('name'))}: {escaped(v.get('version'))}" for v in versions]
        or ["  (none known on the hub copy)"]
    )]  # fmt: skip
    history = _list(status.get("history"))
    entries = [(_age(h, now), h.get("type"), h.get("reason"), h.get("message")) for h in history]
    absent = ["  (not on the hub copy: the spoke copies it with --hub-copy status)"]
    lines += ["", "History (newest first):"]
    lines += _table(("AGE", "TYPE", "REASON", "MESSAGE"), entries) if history else absent
    return "\n".join(lines)


def _table(header: tuple[str, ...], rows: list[tuple[Any, ...]]) -> list[str]:
    cells = [tuple(_cell(v) for v in row) for row in rows]
    widths = [max(len(r[i]) for r in [header, *cells]) for i in range(len(header) - 1)]
    return [
        "  "
        + "  ".join(text.ljust(w) for text, w in zip(row, widths, strict=False))
        + "  "
        + row[-1]
        for row in [header, *cells]
    ]


def _cell(value: Any) -> str:
    text = "-" if value is None or value == "" else str(value)
    first, _, rest = text.partition("\n")
    return escaped(first) + (" …" if rest.strip() else "")


def _age(entry: Mapping[str, Any], now: datetime) -> str:
    try:
        return age(parse_time(str(entry.get("lastTransitionTime"))), now)
    except ValueError:
        return "-"


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []
