"""When the path from a spoke breaks (docs/spec.md §12.2): what Open Cluster Management knows of a
cluster that the hub copy cannot say, and the `Degraded` the hub side writes from it.

Pure rules, no I/O. OCM's view of one cluster (`OcmView`) is read from the conditions OCM writes
and never written here: the `ManagedCluster`'s availability, and on the agent's
`ManagedClusterAddOn` its `Available` (the health check), `RegistrationApplied` and
`ManifestApplied`; with it, whether a hub copy exists and whether the agent's identity may write
it. `path_break` finds the first break in the table's order; `degraded` turns it into the
`Degraded` condition once it has held for the window (`lastTransitionTime` is the moment it
counted), and says when to look again while it has not. A hub copy that changed after the break
began is the spoke's newer word: the path works again, and the copy's truth stands.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from statemachines.conditions import MAX_MESSAGE, format_time, parse_time, standard_true_in
from statemachines.size import cut

__all__ = [
    "CLUSTER_LOST",
    "PATH_REASONS",
    "STATUS_NOT_REPLICATED",
    "Break",
    "OcmView",
    "degraded",
    "effective",
    "find",
    "last_word",
    "path_break",
]

CLUSTER_LOST: Final = "ClusterLost"
AGENT_UNAVAILABLE: Final = "AgentUnavailable"
AGENT_NOT_REGISTERED: Final = "AgentNotRegistered"
STATUS_NOT_REPLICATED: Final = "StatusNotReplicated"
PATH_REASONS: Final = (CLUSTER_LOST, AGENT_UNAVAILABLE, AGENT_NOT_REGISTERED, STATUS_NOT_REPLICATED)
"""The hub side's reasons for a `Degraded` that OCM's view decides, in the table's order."""
_OCM_MESSAGE: Final = 1024  # of OCM's words quoted in ours
CHECK: Final = "addon-status check spoke"

Condition = dict[str, Any]


def find(conditions: object, kind: str) -> Mapping[str, Any] | None:
    """The first condition of type `kind` (a map list's), or None."""
    if not isinstance(conditions, Sequence) or isinstance(conditions, str):
        return None
    for condition in conditions:
        if isinstance(condition, Mapping) and condition.get("type") == kind:
            return condition
    return None


@dataclass(frozen=True, slots=True)
class OcmView:
    """What OCM and the hub's API server say of one cluster's path (each None: not known)."""

    # the ManagedCluster's ManagedClusterConditionAvailable
    cluster: Mapping[str, Any] | None = None
    available: Mapping[str, Any] | None = None  # the agent's ManagedClusterAddOn's Available
    registered: Mapping[str, Any] | None = None  # ... its RegistrationApplied
    deployed: Mapping[str, Any] | None = None  # ... its ManifestApplied
    has_copy: bool = True
    denied: tuple[datetime, str] | None = None  # since when the agent may not write, and why
    may_write: bool | None = None  # the API server's answer for the agent (None: not asked)


@dataclass(frozen=True, slots=True)
class Break:
    """A break of the path: the `Degraded` reason and status it leads to, since when OCM says
    so, and OCM's (or the API server's) words."""

    reason: str
    status: str
    since: datetime
    words: str
    dampened: bool = True  # counts after the window; False: it is a deadline of its own


def path_break(view: OcmView, now: datetime, *, grace: timedelta) -> Break | None:
    """The first break in the table's order: the cluster lost, the agent not running, the agent
    not registered, no status replicated (its deadline may be ahead: the grace after the
    agent's manifests were applied); None when the path holds (as far as OCM can tell)."""
    for condition, broken, reason, status in (
        (view.cluster, "Unknown", CLUSTER_LOST, "Unknown"),
        (view.available, "False", AGENT_UNAVAILABLE, "True"),
        # OCM can leave it False while an older binding still lets the agent write (a rollout
        # switched from one hub role to another): the API server's word on the writes wins
        (None if view.may_write else view.registered, "False", AGENT_NOT_REGISTERED, "True"),
    ):
        if condition is not None and condition.get("status") == broken:
            return Break(reason, status, _since(condition, now), _words(condition))
    if view.denied is not None:
        since, why = view.denied
        return Break(STATUS_NOT_REPLICATED, "True", since, why)
    deployed = view.deployed
    if not view.has_copy and deployed is not None and deployed.get("status") == "True":
        at = _since(deployed, now)
        words = f"its agent was deployed at {format_time(at)} and has written no hub copy since"
        return Break(STATUS_NOT_REPLICATED, "True", at + grace, words, dampened=False)
    return None


def degraded(
    cluster: str,
    copy: Sequence[Mapping[str, Any]],
    broken: Break | None,
    now: datetime,
    *,
    window: timedelta,
    copy_changed: datetime | None = None,
) -> tuple[Condition | None, datetime | None]:
    """(the `Degraded` the break leads to, or None for the copy's own; when to look again,
    or None). A break counts once it has held for `window`; a copy changed after it began
    outweighs it."""
    if broken is None or (copy_changed is not None and copy_changed > broken.since):
        return None, None
    counts = broken.since + window if broken.dampened else broken.since
    if counts > now:
        return None, counts
    return {
        "type": "Degraded",
        "status": broken.status,
        "reason": broken.reason,
        "message": cut(_message(cluster, broken, copy), MAX_MESSAGE),
        "lastTransitionTime": format_time(counts),
    }, None


def last_word(copy: Sequence[Mapping[str, Any]]) -> str:
    """The hub copy's last verdict and since when: "Available (ForwardSuccessful) since ..."."""
    true = standard_true_in([dict(c) for c in copy])
    if not true:
        return "none"
    first = true[0]
    return f"{first['type']} ({first.get('reason') or ''}) since {first.get('lastTransitionTime')}"


def _message(cluster: str, broken: Break, copy: Sequence[Mapping[str, Any]]) -> str:
    words = cut(broken.words, _OCM_MESSAGE) if broken.words else ""
    since = format_time(broken.since)
    last = f"the last status that reached the hub, not current: {last_word(copy)}"
    if broken.reason == CLUSTER_LOST:
        return (
            f"cluster {cluster} is lost: OCM has not heard from it since {since} ({words}); {last}"
        )
    if broken.reason == AGENT_UNAVAILABLE:
        return (
            f"the addon's agent is not running on cluster {cluster} (OCM, since {since}: "
            f"{words}); {last}"
        )
    if broken.reason == AGENT_NOT_REGISTERED:
        return (
            f"the addon's agent on cluster {cluster} is not registered with the hub, so it "
            f"cannot write its status (OCM, since {since}: {words}); {last}"
        )
    return (
        f"no status of cluster {cluster} reaches the hub: {words} (since {since}); run "
        f"`{CHECK}` in the cluster to find why; {last}"
    )


def _since(condition: Mapping[str, Any], now: datetime) -> datetime:
    """When a condition last changed; a time that cannot be read is taken as now (the
    window then starts when the hub side first sees it)."""
    at = condition.get("lastTransitionTime")
    try:
        return parse_time(at) if isinstance(at, str) else now
    except ValueError:
        return now


def _words(condition: Mapping[str, Any]) -> str:
    reason, message = condition.get("reason"), condition.get("message")
    parts = [p for p in (reason, message) if isinstance(p, str) and p]
    return ": ".join(parts)


def effective(
    cluster: str,
    copy: Sequence[Mapping[str, Any]] | None,
    view: OcmView,
    now: datetime,
    *,
    window: timedelta,
    grace: timedelta,
    copy_changed: datetime | None = None,
) -> tuple[list[Condition], datetime | None]:
    """The hub copy's standard conditions with `Degraded` as the table says (the copy's own
    when the path holds); when to look again, or None."""
    conditions = [dict(c) for c in copy or []]
    chosen, again = degraded(
        cluster, conditions, path_break(view, now, grace=grace), now,
        window=window, copy_changed=copy_changed,
    )  # fmt: skip
    if chosen is None:
        return conditions, again
    return [c for c in conditions if c.get("type") != "Degraded"] + [chosen], again
