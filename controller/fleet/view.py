"""The fleet view's logic, pure: one row per hub copy, the filters, a summary, the order, and
the outputs kubectl's `-o` names (a table for people, wide, a JSON or YAML document of a stable
shape for machines, the names alone for scripts).

No client and no clock here: the caller lists the hub copies (`controller.fleet.copies`)
and passes `now`, so that every rule below is tested on plain dicts.

A row's state is the standard condition that is `True` on the hub copy, among the standard
types of either profile (seed: five types; acm: `Available` / `Progressing` / `Degraded`), so
one reading serves hubs of both. A copy with none `True` (no status replicated yet, or a copy
someone broke) is `Unknown`; with more than one, the first in the vocabulary's order wins and
the row says so in its message, since the rules allow exactly one.
"""

from __future__ import annotations

import fnmatch
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from controller.terminal import escaped
from statemachines.conditions import STANDARD_TYPES, format_time, parse_time, standard_true_in
from statemachines.names import ConditionType

__all__ = [
    "NAME_KIND",
    "OUTPUTS",
    "SCHEMA",
    "SORT_KEYS",
    "UNKNOWN",
    "Filters",
    "Output",
    "Row",
    "Summary",
    "age",
    "as_json",
    "as_table",
    "name_of",
    "render",
    "render_rows",
    "row_of",
    "rows_of",
    "summarise",
    "summary_line",
]

SCHEMA: Final = "addon-status.fleet/v1"  # the `kind` of the JSON document; bumped on a break
UNKNOWN: Final = "Unknown"  # the state of a hub copy with no standard condition True
READY: Final = "Ready"  # docs/spec.md §10's condition; not a standard type, copied when present
RECENT: Final = timedelta(hours=1)  # "changed state in the last hour"

_NO_STATUS: Final = "no standard condition is True on the hub copy"
OUTPUTS: Final = ("table", "wide", "json", "yaml", "name")
SORT_KEYS: Final = ("cluster", "state", "since")


@dataclass(frozen=True)
class Output:
    """How the view is written, as kubectl's flags say it: `format` is `-o` (`table`; `wide`,
    its lines not cut to the terminal; `json`; `yaml`, the same document; `name`, one cluster a
    line), `headers` False is `--no-headers` (the rows alone), `sort_by` is `--sort-by`
    (`cluster`; `state`, then cluster; `since`, the longest in its state first)."""

    format: str = "table"
    headers: bool = True
    sort_by: str = "cluster"


@dataclass(frozen=True)
class Row:
    """One cluster's hub copy as the fleet view shows it; None: the copy does not say."""

    cluster: str  # the hub copy's namespace: the cluster's namespace on the hub
    name: str  # the hub copy's name (the addon's)
    state: str  # the standard type that is True, or UNKNOWN
    reason: str | None
    since: datetime | None  # that condition's lastTransitionTime
    message: str
    ready: str | None  # the Ready condition's status, when the hub copy carries it
    versions: tuple[tuple[str, str], ...]  # status.versions: (collector, installed version)

    @property
    def version(self) -> str | None:
        """The installed version: one when every collector runs it, else each collector's."""
        distinct = {version for _, version in self.versions}
        if not distinct:
            return None
        if len(distinct) == 1:
            return distinct.pop()
        return ",".join(f"{name}={version}" for name, version in self.versions)

    def to_json(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "name": self.name,
            "state": self.state,
            "reason": self.reason,
            "since": None if self.since is None else format_time(self.since),
            "message": self.message,
            "ready": self.ready,
            "versions": [{"name": name, "version": version} for name, version in self.versions],
        }


def row_of(copy: Mapping[str, Any]) -> Row:
    """The row of one hub copy (a custom object as the API server returns it). A copy may be
    written by anyone, under any schema: what is not of the expected shape counts as absent,
    never as an error."""
    meta = _mapping(copy.get("metadata"))
    status = _mapping(copy.get("status"))
    conditions = [c for c in _list(status.get("conditions")) if isinstance(c, dict)]
    by_type = {c["type"]: c for c in conditions if isinstance(c.get("type"), str)}
    true = standard_true_in(conditions)
    ready = by_type.get(READY, {}).get("status")
    state, reason, since, message = UNKNOWN, None, None, _NO_STATUS
    if true:
        chosen = true[0]
        state, reason = str(chosen["type"]), chosen.get("reason") or None
        since, message = _time(chosen.get("lastTransitionTime")), chosen.get("message") or ""
        if len(true) > 1:
            also = ", ".join(str(c["type"]) for c in true[1:])
            message = f"(also True: {also}) {message}".rstrip()
    return Row(
        cluster=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        state=state,
        reason=None if reason is None else str(reason),
        since=since,
        message=str(message),
        ready=ready if isinstance(ready, str) else None,
        versions=_versions(status.get("versions")),
    )


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def rows_of(copies: Iterable[Mapping[str, Any]]) -> list[Row]:
    """Rows sorted by cluster, then name: the same list in the same order on every call."""
    return sorted((row_of(c) for c in copies), key=lambda r: (r.cluster, r.name))


def _versions(raw: object) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, list):
        return ()
    pairs = [
        (str(v["name"]), str(v["version"]))
        for v in raw
        if isinstance(v, dict) and v.get("name") and v.get("version")
    ]
    return tuple(sorted(pairs))


def _time(raw: object) -> datetime | None:
    """A condition's transition time; None when missing or not a time (another writer's)."""
    if not isinstance(raw, str):
        return None
    try:
        return parse_time(raw)
    except ValueError:
        return None


@dataclass(frozen=True)
class Filters:
    """Which rows to show: a row must be in one of `states` (if any), in none of `excluded`,
    and its cluster must match one of the glob `clusters` (if any; `fnmatch`, case-sensitive
    like Kubernetes names)."""

    states: frozenset[str] = frozenset()
    excluded: frozenset[str] = frozenset()
    clusters: tuple[str, ...] = ()

    def keep(self, row: Row) -> bool:
        if self.states and row.state not in self.states:
            return False
        if row.state in self.excluded:
            return False
        return not self.clusters or any(
            fnmatch.fnmatchcase(row.cluster, pattern) for pattern in self.clusters
        )

    def apply(self, rows: Iterable[Row]) -> list[Row]:
        return [row for row in rows if self.keep(row)]


@dataclass(frozen=True)
class Summary:
    """What the rows add up to at `now`."""

    clusters: int
    states: dict[str, int]  # state -> clusters, in the vocabulary's order, UNKNOWN last
    longest_degraded: Row | None  # the Degraded cluster that has been so the longest
    changed_recently: int  # clusters whose state changed within RECENT before `now`
    now: datetime

    def to_json(self) -> dict[str, Any]:
        longest = self.longest_degraded
        return {
            "clusters": self.clusters,
            "states": self.states,
            "longestDegraded": None
            if longest is None or longest.since is None
            else {"cluster": longest.cluster, "since": format_time(longest.since)},
            "changedLastHour": self.changed_recently,
        }


def summarise(rows: Sequence[Row], now: datetime) -> Summary:
    """Clusters per state, the longest `Degraded` (the earliest transition; a tie goes to the
    first cluster by name) and how many changed state within the last hour."""
    counts = Counter(row.state for row in rows)
    order = [*STANDARD_TYPES, UNKNOWN]
    order += sorted(set(counts) - set(order))  # a broken path's states (docs/spec.md §12.2)
    states = {state: counts[state] for state in order if counts[state]}
    degraded = [r for r in rows if r.state == ConditionType.DEGRADED and r.since is not None]
    longest = min(degraded, key=lambda r: (r.since, r.cluster), default=None)
    recent = sum(1 for r in rows if r.since is not None and now - r.since <= RECENT)
    return Summary(len(rows), states, longest, recent, now)


def age(since: datetime | None, now: datetime) -> str:
    """How long ago, as kubectl's AGE column writes it (`45s`, `5m12s`, `3h`, `2d4h`); `-`
    when unknown; a time ahead of `now` (clocks apart) counts as `0s`."""
    if since is None:
        return "-"
    s = max(int((now - since).total_seconds()), 0)
    m, h, d = s // 60, s // 3600, s // 86400
    if s < 120:
        parts = [(s, "s")]
    elif m < 10:
        parts = [(m, "m"), (s % 60, "s")]
    elif h < 3:
        parts = [(m, "m")]
    elif h < 8:
        parts = [(h, "h"), (m % 60, "m")]
    elif h < 48:
        parts = [(h, "h")]
    elif d < 8:
        parts = [(d, "d"), (h % 24, "h")]
    else:
        parts = [(d, "d")] if d < 365 * 2 else [(d // 365, "y")]
    (count, unit), *rest = parts
    return f"{count}{unit}" + "".join(f"{n}{u}" for n, u in rest if n)


def summary_line(summary: Summary) -> str:
    """`3 clusters: 2 Available, 1 Degraded; longest Degraded: cluster2 for 5m; 1 changed
    state in the last hour` (the demo's live view prints it too)."""
    if not summary.clusters:
        return "0 clusters"
    states = ", ".join(f"{count} {state}" for state, count in summary.states.items())
    text = f"{summary.clusters} cluster{'s' if summary.clusters != 1 else ''}: {states}"
    longest = summary.longest_degraded
    if longest is not None:
        text += f"; longest Degraded: {escaped(longest.cluster)} for "
        text += age(longest.since, summary.now)
    return text + f"; {summary.changed_recently} changed state in the last hour"


_COLUMNS: Final = ("CLUSTER", "STATE", "REASON", "SINCE", "READY", "VERSION", "MESSAGE")


def as_table(
    rows: Sequence[Row], summary: Summary, *, total: int, width: int = 160, headers: bool = True
) -> str:
    """The rows under a header, columns as wide as their widest cell, each message's first
    line cut to fit `width`; then the summary, saying how many of `total` copies are shown.
    Without `headers`, the rows alone."""
    cells = [
        tuple(
            escaped(text)  # a hub copy may carry an escape sequence, or forge a row
            for text in (
                r.cluster,
                r.state,
                r.reason or "-",
                age(r.since, summary.now),
                r.ready or "-",
                r.version or "-",
                _first_line(r.message),
            )
        )
        for r in rows
    ]
    widths = [max(len(c[i]) for c in [_COLUMNS, *cells]) for i in range(len(_COLUMNS) - 1)]
    lines = []
    for cell in [_COLUMNS, *cells] if headers else cells:
        head = "  ".join(text.ljust(w) for text, w in zip(cell, widths, strict=False))
        line = f"{head}  {cell[-1]}"
        lines.append(line if len(line) <= width else line[: max(width - 1, 0)] + "…")
    if not headers:
        return "\n".join(lines)
    shown = "" if total == len(rows) else f" (shown: {len(rows)} of {total})"
    return "\n".join([*lines, "", summary_line(summary) + shown])


def _first_line(message: str) -> str:
    first, _, rest = message.partition("\n")
    return f"{first} …" if rest.strip() else first


NAME_KIND: Final = "managedcluster.cluster.open-cluster-management.io"


def name_of(cluster: str) -> str:
    """`kubectl -o name`'s `kind/name` for a row: a row is one cluster, so its ManagedCluster
    (`xargs kubectl get` then reads the cluster the row is about)."""
    return f"{NAME_KIND}/{escaped(cluster)}"


def as_json(rows: Sequence[Row], summary: Summary, *, total: int) -> str:
    """The stable machine shape (README, "The fleet view"), indented 4 as `kubectl -o json`
    writes: `kind`, `now`, `total` (hub copies listed), `clusters` (the rows shown, each with
    every field, null when unknown) and `summary` (of the rows shown)."""
    return json.dumps(_document(rows, summary, total=total), indent=4)


def _document(rows: Sequence[Row], summary: Summary, *, total: int) -> dict[str, Any]:
    return {
        "kind": SCHEMA,
        "now": format_time(summary.now),
        "total": total,
        "clusters": [row.to_json() for row in rows],
        "summary": summary.to_json(),
    }


def render(
    copies: Iterable[Mapping[str, Any]],
    now: datetime,
    *,
    filters: Filters,
    output: Output = Output(),
    width: int = 160,
) -> str:
    """The whole view of `copies` at `now`: rows filtered, summarised, in the chosen output."""
    return render_rows(rows_of(copies), now, filters=filters, output=output, width=width)


def render_rows(
    rows: Sequence[Row],
    now: datetime,
    *,
    filters: Filters,
    output: Output = Output(),
    width: int = 160,
) -> str:
    """The whole view of `rows` at `now`, in `output`'s order and format."""
    shown = sorted(filters.apply(rows), key=_SORT[output.sort_by])
    summary = summarise(shown, now)
    if output.format == "json":
        return as_json(shown, summary, total=len(rows))
    if output.format == "yaml":
        import yaml

        return yaml.safe_dump(_document(shown, summary, total=len(rows)), sort_keys=False).rstrip()
    if output.format == "name":
        return "\n".join(name_of(row.cluster) for row in shown)
    wide = output.format == "wide"
    return as_table(shown, summary, total=len(rows), width=10**9 if wide else width,
                    headers=output.headers)  # fmt: skip


_SORT: Final[Mapping[str, Any]] = {
    "cluster": lambda row: (row.cluster, row.name),
    "state": lambda row: (row.state, row.cluster, row.name),
    "since": lambda row: (
        row.since is None,
        row.since.timestamp() if row.since else 0.0,
        row.cluster,
    ),
}
