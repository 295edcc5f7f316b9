"""`addon-status fleet CLUSTER`: one cluster's hub copy described, as `kubectl describe` and
`flux events` show one object: its state (the path's when OCM's view says it is broken,
docs/spec.md §12.2), every condition of the copy (the collectors' and `Ready` included), OCM's
conditions beside them (the cluster's availability, the ManagedClusterAddOn's), the resources
its health rules watch, the installed versions and the history, newest first. Pure: the copy,
OCM's objects and `now` in, text or a document out. What the copy does not carry
(`--hub-copy conditions` copies the conditions only) is said to be absent, not invented.
Every string of the copy and of OCM's objects is the hub's: shown with its control characters
escaped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from controller.fleet.paths import keep_addon, keep_cluster, with_path
from controller.fleet.view import Row, age, row_of
from controller.terminal import escaped
from statemachines.conditions import parse_time

__all__ = ["CLUSTER_SCHEMA", "ClusterOcm", "cluster_document", "describe"]


@dataclass(frozen=True)
class ClusterOcm:
    """OCM's objects of one cluster as read (None: absent): the ManagedClusterAddOn the hub
    side writes (`name`), the agent's own (the same but on ACM), the ManagedCluster."""

    name: str
    addon: Mapping[str, Any] | None
    agent: Mapping[str, Any] | None
    cluster: Mapping[str, Any] | None

    def row(self, cluster: str, copy: Mapping[str, Any] | None, now: datetime) -> Row:
        base = None if copy is None else row_of(copy)
        verdict = None if self.addon is None else keep_addon(self.addon)[1]
        agent = None if self.agent is None else keep_addon(self.agent)[1]
        available = None if self.cluster is None else keep_cluster(self.cluster)[1]
        found = with_path(base, cluster, verdict=verdict, agent=agent,
                          availability=available, now=now)  # fmt: skip
        return found or Row(cluster, "", "Unknown", None, None, "no hub copy", None, ())

    def conditions(self) -> list[tuple[str, dict[str, Any]]]:
        """(whose, condition) of every OCM condition read."""
        found = [("ManagedCluster", c) for c in _conditions(self.cluster)]
        found += [(f"ManagedClusterAddOn {self.name}", c) for c in _conditions(self.addon)]
        if self.agent is not None and self.agent is not self.addon:
            name = (self.agent.get("metadata") or {}).get("name")
            found += [(f"ManagedClusterAddOn {name}", c) for c in _conditions(self.agent)]
        return found


CLUSTER_SCHEMA: Final = "addon-status.fleet.cluster/v1"  # the document's `kind`
_RESOURCES_HEALTHY: Final = "ResourcesHealthy"


def cluster_document(
    cluster: str, copy: Mapping[str, Any] | None, ocm: ClusterOcm, now: datetime
) -> dict[str, Any]:
    """The machine shape of one cluster (`-o json` / `-o yaml`): its row, and the copy's
    conditions, versions and history as stored (history newest first), and OCM's conditions."""
    status = _mapping((copy or {}).get("status"))
    return {
        "kind": CLUSTER_SCHEMA,
        **ocm.row(cluster, copy, now).to_json(),
        "conditions": _list(status.get("conditions")),
        "versions": _list(status.get("versions")),
        "history": _list(status.get("history")),
        "lastKnownGood": status.get("lastKnownGood"),
        "ocm": [{"object": whose, **condition} for whose, condition in ocm.conditions()],
    }


def describe(cluster: str, copy: Mapping[str, Any] | None, ocm: ClusterOcm, now: datetime) -> str:
    """The text a person reads."""
    row = ocm.row(cluster, copy, now)
    status = _mapping((copy or {}).get("status"))
    lines = [
        f"Cluster:   {escaped(row.cluster)}",
        f"State:     {escaped(row.state)}" + (f" ({escaped(row.reason)})" if row.reason else ""),
        f"Since:     {age(row.since, now)}",
        f"Message:   {_cell(row.message)}",
        "",
        "Conditions:" if copy is not None else
        "Conditions: (no hub copy)",
        *_table(
            ("TYPE", "STATUS", "REASON", "AGE", "MESSAGE"),
            [
                (c.get("type"), c.get("status"), c.get("reason"), _age(c, now), message)
                for c, message in _unrepeated(_list(status.get("conditions")))
            ],
        ),
        "",
        "OCM:",
        *_table(
            ("OBJECT", "TYPE", "STATUS", "REASON", "AGE", "MESSAGE"),
            [
                (whose, c.get("type"), c.get("status"), c.get("reason"), _age(c, now),
                 c.get("message"))
                for whose, c in ocm.conditions()
            ],
        ),
    ]  # fmt: skip
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


def _unrepeated(conditions: list[dict[str, Any]]) -> list[tuple[dict[str, Any], Any]]:
    """Each condition with its message, or `(as T)` when the `True` condition T says the same
    (a copy written before 0.2.0, or by MCO, repeats the addon's message on every standard
    condition; spec §5): the view fits a terminal."""
    true = [c for c in conditions if c.get("status") == "True" and c.get("message")]
    shown = []
    for c in conditions:
        said = next((t for t in true if t is not c and t.get("message") == c.get("message")), None)
        shown.append((c, f"(as {said.get('type')})" if said and c.get("status") != "True" else
                      c.get("message")))  # fmt: skip
    return shown


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


def _conditions(obj: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    return _list(_mapping((obj or {}).get("status")).get("conditions"))
