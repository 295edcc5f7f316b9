"""The demo's fleet lines: while the spokes play, the hub copies are listed the way `addon-status
fleet` lists them (one call, the real client, the demo's hub kubeconfig) and the fleet's summary
is printed whenever a cluster changes state, with what the ACM console shows for each cluster
(`controller.hub.console`, from its ManagedClusterAddOn's conditions). Each cluster's own lines
say when OCM's view of it changes (`ocm`: the addon's `Available` as OCM's health check wrote it,
a refused registration, the cluster's availability) and when the console's word or message for
it changes (`console`): that is how the hub side's verdicts show."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from controller.demo.ocm_model import CLUSTER_AVAILABLE, MANAGED_CLUSTER, MANAGED_CLUSTER_ADDON
from controller.demo.ocm_model import condition as find
from controller.demo.servers import MANAGED_ADDON
from controller.demo.view import View
from controller.fleet.copies import list_clusters, list_hub_copies, list_ocm
from controller.fleet.paths import join
from controller.fleet.view import summarise, summary_line
from controller.hub.console import console_view
from controller.kube.api import ALL_NAMESPACES, KubeError
from controller.kube.informer import Informer
from controller.kube.kubeconfig import KubeconfigSource
from controller.kube.reflector import Selection
from controller.kube.rest import RestKube
from controller.kube.runnable import Runnable

__all__ = ["FleetLine", "ocm_text"]

Obj = dict[str, Any]


def ocm_text(addon: Mapping[str, Any], cluster: Mapping[str, Any]) -> str:
    """OCM's view of a cluster: its MCA's `Available` (and `RegistrationApplied` when refused),
    and the cluster's own availability."""
    conditions = (addon.get("status") or {}).get("conditions")
    parts = [_said(find(conditions, "Available"), "Available")]
    registration = find(conditions, "RegistrationApplied")
    if registration and registration.get("status") != "True":
        parts.append(_said(registration, "RegistrationApplied"))
    state = find((cluster.get("status") or {}).get("conditions"), CLUSTER_AVAILABLE)
    return "; ".join([", ".join(parts), f"cluster Available={state.get('status', 'absent')}"])


def _said(found: Mapping[str, Any], kind: str) -> str:
    """`Available=False (ProbeUnavailable: its message)`; the message only when not True."""
    why = str(found.get("reason", ""))
    if found.get("status") != "True" and found.get("message"):
        why += f": {_short(str(found['message']))}"
    return f"{kind}={found.get('status', 'absent')} ({why})"


def console_text(addon: Mapping[str, Any]) -> str:
    """The console's word for the MCA, and its message (but for Available, whose message is
    OCM's "add-on is available.")."""
    word, message = console_view((addon.get("status") or {}).get("conditions"))
    return f"{word}: {_short(message)}" if message and word != "Available" else word


def _short(text: str, limit: int = 160) -> str:
    """A message on one line of the demo's output: its first line, cut at `limit` with `…`."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    cut = line if len(line) <= limit and line == text.strip() else line[: limit - 1] + "…"
    return cut


class FleetLine:
    """Polls the hub copies every `every` real seconds on a thread of its own until closed and
    follows the ManagedClusterAddOns and ManagedClusters with informers; `now` is the fleet's
    scenario time (the ages in the line are on the scenario's clock); `views` print each
    cluster's own lines."""

    def __init__(
        self,
        kubeconfig: Path,
        *,
        now: Callable[[], datetime],
        view: View,
        views: Mapping[str, View],
        every: float = 0.1,
    ) -> None:
        self._kube = RestKube(KubeconfigSource(kubeconfig).current(), request_timeout=5.0)
        self._now = now
        self._view, self._views = view, views
        self._every = every
        self.addons: Informer[Obj] = Informer(
            self._kube, Selection(MANAGED_CLUSTER_ADDON, ALL_NAMESPACES, name=MANAGED_ADDON),
            name="demo-console", watch_seconds=60,
        )  # fmt: skip
        self.clusters: Informer[Obj] = Informer(
            self._kube, Selection(MANAGED_CLUSTER), name="demo-clusters", watch_seconds=60
        )
        self._stop = threading.Event()
        self._lock = threading.Lock()  # the poller and the epilogue both show
        self._runner = Runnable("demo-fleet-line", self._run, self._stop.set)
        self._shown: object = None
        self._seen: dict[tuple[str, str], str] = {}  # (cluster, kind) -> the text last printed

    def __enter__(self) -> FleetLine:
        for informer in (self.addons, self.clusters):
            informer.start()
        self._runner.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._runner.stop(5)
        self.show()  # the fleet as the play left it, unless that is the line printed last
        for informer in (self.addons, self.clusters):
            informer.stop()

    def addon(self, cluster: str) -> Obj:
        """The cluster's ManagedClusterAddOn as this viewer last saw it ({}: not yet)."""
        return self.addons.get(f"{cluster}/{MANAGED_ADDON}") or {}

    def cluster(self, cluster: str) -> Obj:
        return self.clusters.get(cluster) or {}

    def show(self, *, always: bool = False) -> None:
        """Print each cluster's changes, then the summary if a cluster's state, the console's
        word for one, or the longest Degraded changed."""
        with self._lock:
            self._show(always)

    def _show(self, always: bool) -> None:
        console: dict[str, str] = {}
        for cluster in sorted(self._views):
            addon = self.addon(cluster)
            if not addon:
                continue
            console[cluster] = console_view((addon.get("status") or {}).get("conditions"))[0]
            for kind, text in (("ocm", ocm_text(addon, self.cluster(cluster))),
                               ("console", console_text(addon))):  # fmt: skip
                known = self._seen.get((cluster, kind))
                self._seen[(cluster, kind)] = text
                if known is not None and known != text:  # the first look is the baseline
                    self._views[cluster].line(kind, text)
        try:
            now = self._now()
            copies = list_hub_copies(self._kube)
            clusters = list_clusters(self._kube)
            rows = join(copies.rows, clusters, list_ocm(self._kube, MANAGED_ADDON), now)
        except KubeError as error:
            text = f"cannot list the hub copies: {error}"
            shown: object = text
        else:
            summary = summarise(rows, now)
            longest = summary.longest_degraded
            shown = (tuple(summary.states.items()), longest and longest.cluster, console)
            text = summary_line(summary)
            if console:
                text += "; console: " + ", ".join(f"{c} {w}" for c, w in console.items())
        if always or shown != self._shown:
            self._shown = shown
            self._view.line("fleet", text)

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self.show()
