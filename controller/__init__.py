"""The shell of the addon status controller: Kubernetes API, report API, hub replication,
metrics and the command line. Collectors and the endpoint operator use `ReportClient`."""

from controller.reports.client import ReportClient, ReportRejected, ReportUnavailable

__all__ = ["ReportClient", "ReportRejected", "ReportUnavailable"]
