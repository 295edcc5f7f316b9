"""The shell of the addon status controller: Kubernetes API, report API, hub replication,
metrics and the command line. Collectors and the endpoint operator use `ReportClient`.

The client is imported on first use, not with the package, so that `addon-status --help` does
not pay for it (see `controller.cli`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from controller.reporter.client import ReportClient, ReportRejected, ReportUnavailable

__all__ = ["ReportClient", "ReportRejected", "ReportUnavailable"]


def __getattr__(name: str) -> object:
    if name in __all__:
        from controller.reporter import client

        return getattr(client, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
