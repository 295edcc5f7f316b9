"""The demo's fleet summary line: while the spokes play, the hub copies are listed the way
`addon-status fleet` lists them (one call, the real client, the demo's hub kubeconfig) and the
fleet's summary is printed whenever a cluster changes state."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from types import TracebackType

from controller.demo.view import View
from controller.fleet.copies import list_hub_copies
from controller.fleet.view import summarise, summary_line
from controller.kube.api import KubeError
from controller.kube.kubeconfig import KubeconfigSource
from controller.kube.rest import RestKube
from controller.kube.runnable import Runnable

__all__ = ["FleetLine"]


class FleetLine:
    """Polls the hub every `every` real seconds on a thread of its own until closed; `now` is
    the fleet's scenario time (the ages in the line are on the scenario's clock)."""

    def __init__(
        self, kubeconfig: Path, *, now: Callable[[], datetime], view: View, every: float = 0.1
    ) -> None:
        self._kube = RestKube(KubeconfigSource(kubeconfig).current(), request_timeout=5.0)
        self._now = now
        self._view = view
        self._every = every
        self._stop = threading.Event()
        self._runner = Runnable("demo-fleet-line", self._run, self._stop.set)
        self._shown: object = None

    def __enter__(self) -> FleetLine:
        self._runner.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._runner.stop(5)
        self.show(always=True)  # the fleet as the play left it, whatever changed

    def show(self, *, always: bool = False) -> None:
        """Print the summary if a cluster's state (or the longest Degraded) changed."""
        try:
            rows = list_hub_copies(self._kube).rows
        except KubeError as error:
            text = f"cannot list the hub copies: {error}"
            shown: object = text
        else:
            summary = summarise(rows, self._now())
            longest = summary.longest_degraded
            shown = (tuple(summary.states.items()), longest and longest.cluster)
            text = summary_line(summary)
        if always or shown != self._shown:
            self._shown = shown
            self._view.line("fleet", text)

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self.show()
