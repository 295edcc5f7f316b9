"""What the hub side tells of each cluster's failed and contested writes (controller.hub.side):
the first failure of a kind, once; a burst of another writer's writes, quietly; a contest, once
until the cluster is mirrored again."""

from __future__ import annotations

import logging

from controller.hub.metrics import MirrorMetrics
from controller.hub.mirror import OWNED_TYPES
from controller.kube.api import ErrorKind, KubeError
from controller.kube.controller import Result

__all__ = ["Told"]

log = logging.getLogger("controller.hub.side")  # the hub side's own words, as before


class Told:
    """Per cluster, what was told; only the hub side's worker calls it."""

    def __init__(self, addon_name: str, metrics: MirrorMetrics) -> None:
        self.addon_name, self._metrics = addon_name, metrics
        self._failing: dict[str, ErrorKind] = {}
        self._outrun: set[str] = set()  # outrun once by another writer's burst of writes
        self._contested: set[str] = set()

    def succeeded(self, namespace: str) -> None:
        self._contested.discard(namespace)
        self._outrun.discard(namespace)
        if self._failing.pop(namespace, None) is not None:
            log.info("ManagedClusterAddOn %s/%s mirrored again", namespace, self.addon_name)

    def contest(self, namespace: str) -> None:
        """Someone changes an owned condition again after it was repaired: left to them until
        the hub copy changes (two writers that each repair the other's write loop for ever)."""
        if namespace not in self._contested:
            self._contested.add(namespace)
            self._metrics.contested.inc()
            log.warning(
                "ManagedClusterAddOn %s/%s: another writer changed %s again after it was "
                "repaired; not written until the hub copy changes",
                namespace, self.addon_name, ", ".join(OWNED_TYPES),
            )  # fmt: skip

    def failed(self, namespace: str, error: KubeError) -> Result:
        """`namespace` again after its backoff; the first failure of a kind is told, a refusal
        as a refusal."""
        self._metrics.errors.labels(kind=error.kind.value).inc()
        retry = Result(retry=True, retry_after=error.retry_after)
        if self._failing.get(namespace) is error.kind:
            return retry
        if error.kind is ErrorKind.CONFLICT and namespace not in self._outrun:
            # another writer's burst: OCM's addon manager writes a new ManagedClusterAddOn six
            # or seven times in its first half second (measured on OCM v1.3); told if it lasts
            self._outrun.add(namespace)
            log.debug("ManagedClusterAddOn %s/%s: %s", namespace, self.addon_name, error.detail)
            return retry
        self._failing[namespace] = error.kind
        where = f"ManagedClusterAddOn {namespace}/{self.addon_name}"
        if error.kind is ErrorKind.NOT_FOUND:
            log.warning(
                "no %s (the addon is not enabled for cluster %s, or its CRD is not installed on "
                "the hub); trying again with backoff", where, namespace,
            )  # fmt: skip
        elif error.kind is ErrorKind.FORBIDDEN:
            log.warning(
                "mirroring onto %s: the hub side was refused a request (403; the request and "
                "the server's words: %s); its ClusterRole must allow it (the "
                "ManagedClusterAddOn's name is --managed-addon); trying again with backoff",
                where, error.detail,
            )  # fmt: skip
        else:
            log.warning("cannot mirror onto %s (%s: %s)", where, error.kind, error.detail)
        return retry
