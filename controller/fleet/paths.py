"""OCM's word beside each hub copy, for the fleet view (docs/spec.md §12.2): a cluster whose path
is broken — lost, its agent not running or not registered, its status never replicated — is in
that state, as the hub side writes `Degraded` for it, and its row says so rather than the copy's
stale verdict. Pure: what the fleet listed and `now` in, rows out.

The hub side's own verdict on the `ManagedClusterAddOn` comes first (it alone asks the API server
whether an agent may write its copy, and its window is its own): a `Degraded` it wrote, of a
broken path or of the copy, is what the console shows, and so the row. Without one, the same
rules are applied here to OCM's conditions (with the hub side's default window and grace, and
the copy's last change taken from its state's transition time), so the view tells the truth on
a hub where the hub side does not run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Final

from controller.fleet.view import Row
from controller.hub.path import PATH_REASONS, OcmView, degraded, find, path_break
from statemachines.conditions import format_time, parse_time
from statemachines.object_names import ADDON_CR

__all__ = ["Ocm", "OcmListing", "join", "keep_addon", "keep_cluster", "with_path"]

WINDOW: Final = timedelta(minutes=2)  # the hub side's defaults (`hub --path-window`, ...)
GRACE: Final = timedelta(minutes=10)
_TYPES: Final = ("Degraded", "Available", "RegistrationApplied", "ManifestApplied")

Condition = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Ocm:
    """What the fleet keeps of one cluster's ManagedClusterAddOn: the conditions it reads."""

    conditions: tuple[Condition, ...]

    def get(self, kind: str) -> Condition | None:
        return find(list(self.conditions), kind)


def keep_addon(obj: Mapping[str, Any]) -> tuple[str, Ocm]:
    """(its cluster, what is kept) of a listed ManagedClusterAddOn."""
    status, meta = obj.get("status"), obj.get("metadata")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    kept = tuple(c for kind in _TYPES if (c := find(conditions, kind)) is not None)
    return str(meta.get("namespace") or "") if isinstance(meta, Mapping) else "", Ocm(kept)


def keep_cluster(obj: Mapping[str, Any]) -> tuple[str, Condition | None]:
    """(its name, its availability) of a listed ManagedCluster."""
    status, meta = obj.get("status"), obj.get("metadata")
    available = find(status.get("conditions") if isinstance(status, Mapping) else None,
                     "ManagedClusterConditionAvailable")  # fmt: skip
    return str(meta.get("name") or "") if isinstance(meta, Mapping) else "", available


def with_path(
    row: Row | None,
    cluster: str,
    *,
    verdict: Ocm | None,
    agent: Ocm | None,
    availability: Condition | None,
    now: datetime,
    name: str = ADDON_CR,
) -> Row | None:
    """`row` (None: the cluster has no hub copy), in the path's state when it is broken; a
    cluster with neither a copy nor a word of OCM's has no row."""
    written = verdict.get("Degraded") if verdict is not None else None
    if written is not None and written.get("reason") in PATH_REASONS:
        return _broken(row, cluster, name, written)
    if written is not None and row is not None:
        return row  # the hub side judged the path and found it holds: the console says so too
    if agent is None and availability is None:
        return row
    view = OcmView(
        cluster=availability, has_copy=row is not None,
        available=agent.get("Available") if agent else None,
        registered=agent.get("RegistrationApplied") if agent else None,
        deployed=agent.get("ManifestApplied") if agent else None,
    )  # fmt: skip
    last = [] if row is None else [_true(row)]
    found, _ = degraded(cluster, last, path_break(view, now, grace=GRACE), now, window=WINDOW,
                        copy_changed=None if row is None else row.since)  # fmt: skip
    if found is not None:
        return _broken(row, cluster, name, found)
    if row is None and agent is not None:
        return Row(cluster, name, "Unknown", None, None, "no hub copy yet", None, ())
    return row


def _broken(row: Row | None, cluster: str, name: str, condition: Condition) -> Row:
    since = condition.get("lastTransitionTime")
    try:
        when = parse_time(since) if isinstance(since, str) else None
    except ValueError:
        when = None
    base = row or Row(cluster, name, "", None, None, "", None, ())
    reason = str(condition.get("reason"))
    return replace(base, state=reason, reason=reason, since=when,
                   message=str(condition.get("message") or ""))  # fmt: skip


def _true(row: Row) -> dict[str, Any]:
    """The copy's last verdict as a condition (for the message of a break)."""
    at = format_time(row.since) if row.since is not None else None
    return {"type": row.state, "status": "True", "reason": row.reason, "lastTransitionTime": at}


@dataclass(frozen=True, slots=True)
class OcmListing:
    """OCM's word on every cluster: the ManagedClusterAddOns the hub side writes (its verdicts),
    the agent's own (the same ones but on ACM), the ManagedClusters' availability; `problem`:
    why it could not be read (the rows are then the copies' alone)."""

    verdicts: Mapping[str, Ocm]
    agents: Mapping[str, Ocm]
    availability: Mapping[str, Condition | None]
    problem: str = ""


def join(rows: list[Row], clusters: frozenset[str], ocm: OcmListing, now: datetime) -> list[Row]:
    """One row per cluster with a hub copy or a word of OCM's, each in its path's state when
    that is broken; sorted by cluster."""
    by_cluster = {row.cluster: row for row in rows}
    names = (set(by_cluster) | set(ocm.verdicts) | set(ocm.agents)) & clusters
    joined = [
        with_path(
            by_cluster.get(cluster), cluster, verdict=ocm.verdicts.get(cluster),
            agent=ocm.agents.get(cluster), availability=ocm.availability.get(cluster), now=now,
        )
        for cluster in sorted(names)
    ]  # fmt: skip
    return [row for row in joined if row is not None]
