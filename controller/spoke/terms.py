"""The hub copy across leadership terms: the port the worker publishes each written status to.
Each term replicates with a `HubReplicator` of its own (a new term must not resume an earlier
term's publications); the first exists before the first term, so that the status read at start
is published too."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from controller.spoke.replication import HubReplicator

__all__ = ["Replication"]

log = logging.getLogger(__name__)


class Replication:
    def __init__(self, make: Callable[[], HubReplicator]) -> None:
        self._make = make
        self.replicator = make()  # the current (or the last) term's
        self._terms = 0

    def publish(self, status: Mapping[str, Any]) -> None:
        """The worker's hook after every status write (and the status read on leading)."""
        self.replicator.publish(status)

    def problems(self, stuck_after: float) -> list[str]:
        """The current term's replicator's (none between terms: it is stopped)."""
        return self.replicator.problems(stuck_after)

    def begin_term(self) -> None:
        if self._terms:
            self.replicator = self._make()
        self._terms += 1
        self.replicator.start()

    def end_term(self, *, hand_over: float | None, drain: float) -> None:
        """Stop this term's replication; with `hand_over`, first wait that long for the hub
        copy to catch up (a graceful stop that releases the Lease)."""
        replicator = self.replicator
        if hand_over is not None and not replicator.wait_synced(hand_over):
            log.warning("stopping before the hub copy caught up; the next leader will")
        if not replicator.stop(timeout=drain):
            log.warning("hub replication is still inside a hub call; it ends with it")
