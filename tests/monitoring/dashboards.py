"""The Grafana dashboards of monitoring/dashboards, written from the panel lists below so that
every panel has the same shape (a Prometheus data source chosen at import, a grid place, one
query per series):

    .venv/bin/python -m tests.monitoring.dashboards          # rewrite them
    .venv/bin/python -m tests.monitoring.dashboards --check  # exit 1 if one is stale

- `addon-status-fleet.json`, for the hub's Prometheus: clusters by state over time, the clusters
  Degraded longest, state changes per hour, the hub side's writes and errors.
- `addon-status-spoke.json`, for a spoke's: the addon's conditions, reports by verdict, report
  to status latency, status writes and conflicts, leadership, replication to the hub.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from tests.generated import write_or_check

__all__ = ["DASHBOARDS", "Panel", "dashboard"]

ROOT: Final = Path(__file__).resolve().parents[2]
DIRECTORY: Final = ROOT / "monitoring" / "dashboards"
_DATASOURCE: Final = {"type": "prometheus", "uid": "${datasource}"}
# the spoke dashboard's variables: the cluster (a hub's Prometheus labels each spoke's series
# with it; the console's link sets it: var-cluster=NAME) and the namespace
_NS: Final = 'cluster=~"$cluster", namespace=~"$namespace"'


@dataclass(frozen=True)
class Panel:
    title: str
    kind: str  # timeseries, table, stat
    queries: tuple[tuple[str, str], ...]  # (expr, legend)
    unit: str = "short"
    description: str = ""


FLEET: Final = (
    Panel("Clusters by state", "timeseries",
          (('count by (type) (max by (cluster, type) (addon_status_hub_cluster_state))',
            "{{type}}"),),
          description="Each mirrored cluster counted under the standard type that is True on "
                      "its hub copy (Unknown: none)."),
    Panel("Degraded longest", "table",
          (('sort_desc(max by (cluster, reason) (addon_status_hub_cluster_state{type="Degraded"}) '
            '* on (cluster) group_left min by (cluster) '
            '(time() - addon_status_hub_cluster_state_since_timestamp_seconds))', ""),),
          unit="s", description="The Degraded clusters, longest first, with the reason."),
    Panel("State changes per hour", "timeseries",
          (('sum(changes(addon_status_hub_cluster_state_since_timestamp_seconds[1h]))',
            "changes"),),
          description="How often a cluster's True standard type changed, fleet-wide: flapping "
                      "shows here."),
    Panel("Degraded share", "stat",
          (('(count(max by (cluster) (addon_status_hub_cluster_state{type="Degraded"})) '
            'or vector(0)) / count(max by (cluster) (addon_status_hub_cluster_state))',
            "Degraded"),),
          unit="percentunit"),
    Panel("Broken paths", "timeseries",
          (('sum by (reason) (addon_status_hub_clusters_path)', "{{reason}}"),),
          description="Clusters whose Degraded OCM's view decides: lost, agent not running, "
                      "not registered, no status replicated."),
    Panel("Clusters whose path broke", "table",
          (('max by (cluster, reason) (addon_status_hub_cluster_path)', ""),),
          description="Each cluster whose Degraded OCM's view decides, with the reason."),
    Panel("Mirror writes and errors", "timeseries",
          (('sum(rate(addon_status_hub_mirror_writes_total[5m]))', "writes/s"),
           ('sum by (kind) (rate(addon_status_hub_mirror_errors_total[5m]))', "errors/s {{kind}}")),
          unit="ops"),
    Panel("Hub side ready and leading", "timeseries",
          (('max by (pod) (addon_status_ready and on (namespace, pod) '
            'addon_status_hub_mirror_writes_total)', "ready {{pod}}"),
           ('max by (pod) (addon_status_leader and on (namespace, pod) '
            'addon_status_hub_mirror_writes_total)', "leader {{pod}}"))),
)  # fmt: skip

SPOKE: Final = (
    Panel("Addon conditions", "timeseries",
          ((f'max by (condition) (addon_status_addon_condition{{{_NS}, status="true"}})',
            "{{condition}}"),),
          description="1 while the condition is True."),
    Panel("Reports by verdict", "timeseries",
          ((f'sum by (verdict) (rate(addon_status_reports_total{{{_NS}}}[5m]))', "{{verdict}}"),),
          unit="ops"),
    Panel("Report to status written", "timeseries",
          ((f'histogram_quantile(0.5, sum by (le) '
            f'(rate(addon_status_report_request_duration_seconds_bucket{{{_NS}}}[5m])))', "p50"),
           (f'histogram_quantile(0.99, sum by (le) '
            f'(rate(addon_status_report_request_duration_seconds_bucket{{{_NS}}}[5m])))', "p99")),
          unit="s", description="A report's answer comes once the CR holds its effect."),
    Panel("Status writes and conflicts", "timeseries",
          ((f'sum(rate(addon_status_status_writes_total{{{_NS}}}[5m]))', "writes/s"),
           (f'sum(rate(addon_status_status_write_conflicts_total{{{_NS}}}[5m]))', "conflicts/s"),
           (f'sum(rate(addon_status_status_write_failures_total{{{_NS}}}[5m]))', "failures/s")),
          unit="ops"),
    Panel("Leader", "timeseries",
          ((f'max by (pod) (addon_status_leader{{{_NS}}})', "{{pod}}"),)),
    Panel("Replication to the hub", "timeseries",
          ((f'histogram_quantile(0.99, sum by (le) '
            f'(rate(addon_status_hub_replication_lag_seconds_bucket{{{_NS}}}[5m])))', "lag p99"),
           (f'min(addon_status_hub_seconds_since_last_sync{{{_NS}}})', "since confirmed")),
          unit="s"),
    Panel("Refused reports by rule", "timeseries",
          ((f'sum by (rule) (rate(addon_status_reports_refused_total{{{_NS}}}[5m]))', "{{rule}}"),),
          unit="ops"),
    Panel("Collector transitions", "timeseries",
          ((f'sum by (collector, cause) '
            f'(rate(addon_status_collector_transitions_total{{{_NS}}}[1h])) * 3600',
            "{{collector}} {{cause}}"),),
          description="Moves of each collector's machine per hour, by cause."),
)  # fmt: skip

DASHBOARDS: Final = {
    "addon-status-fleet.json": ("Addon status: fleet", "addon-status-fleet", FLEET, False),
    "addon-status-spoke.json": ("Addon status: spoke", "addon-status-spoke", SPOKE, True),
}


def dashboard(
    title: str, uid: str, panels: tuple[Panel, ...], by_namespace: bool
) -> dict[str, Any]:
    variables: list[dict[str, Any]] = [
        {"name": "datasource", "label": "Prometheus", "type": "datasource", "query": "prometheus"}
    ]
    if by_namespace:
        variables += [{
            "name": name, "label": name.capitalize(), "type": "query", "datasource": _DATASOURCE,
            "query": f"label_values(addon_status_leader, {name})", "includeAll": True,
            "allValue": ".*", "multi": True, "refresh": 2,
        } for name in ("cluster", "namespace")]  # fmt: skip
    return {
        "title": title,
        "uid": uid,
        "tags": ["addon-status"],
        "schemaVersion": 39,
        "editable": True,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "1m",
        "templating": {"list": variables},
        "panels": [_panel(index, panel) for index, panel in enumerate(panels)],
    }


def _panel(index: int, panel: Panel) -> dict[str, Any]:
    return {
        "id": index + 1,
        "type": panel.kind,
        "title": panel.title,
        "description": panel.description,
        "datasource": _DATASOURCE,
        "gridPos": {"x": (index % 2) * 12, "y": (index // 2) * 8, "w": 12, "h": 8},
        "fieldConfig": {"defaults": {"unit": panel.unit}, "overrides": []},
        "targets": [
            {
                "refId": chr(ord("A") + n),
                "expr": expr,
                "legendFormat": legend,
                "datasource": _DATASOURCE,
                **({"format": "table", "instant": True} if panel.kind == "table" else {}),
            }
            for n, (expr, legend) in enumerate(panel.queries)
        ],
    }


def _targets() -> dict[Path, str]:
    return {
        DIRECTORY / name: json.dumps(dashboard(*spec), indent=2) + "\n"
        for name, spec in DASHBOARDS.items()
    }


def main(argv: list[str] | None = None) -> int:
    return write_or_check(_targets, argv, module="tests.monitoring.dashboards")


if __name__ == "__main__":
    raise SystemExit(main())
