"""Whether each cluster's agent may write its hub copy (docs/spec.md §12.2): OCM never tells the
hub that an agent's writes fail, so the hub side asks the API server, with a SubjectAccessReview
for the agent's identity (its user and groups as OCM's registration names them), whether it may
update the copy's status.

Bounded: a cluster is asked at most once every `interval` (a refusal again after `recheck`, the
window it must hold for before it counts, so that a refusal OCM soon lifts never shows), and the
fleet at most `rate` times a second (a cluster whose turn comes while the fleet's budget is spent
waits for a slot of its own, so a hub of 10,000 clusters is asked over minutes, never in one burst).
A review the hub side may not ask (no grant) proves nothing: told once, and the cluster counts as
allowed.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from controller.kube.api import ADDON, ApiResource, Kube, KubeError

__all__ = ["SUBJECT_ACCESS_REVIEW", "AccessReviews", "agent_identity", "refusal"]

log = logging.getLogger(__name__)

SUBJECT_ACCESS_REVIEW: Final = ApiResource(
    "authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", namespaced=False
)


def agent_identity(cluster: str, addon: str) -> tuple[str, list[str]]:
    """The user and groups of `addon`'s agent on `cluster`, as OCM's registration issues its
    client certificate (a template addon's agent is `<addon>-agent`)."""
    prefix = "system:open-cluster-management"
    user = f"{prefix}:cluster:{cluster}:addon:{addon}:agent:{addon}-agent"
    groups = [f"{prefix}:cluster:{cluster}:addon:{addon}", f"{prefix}:addon:{addon}",
              "system:authenticated"]  # fmt: skip
    return user, groups


@dataclass(slots=True)
class _Asked:
    due: float  # monotonic: when to ask next
    booked: bool = False  # `due` is a slot of the fleet's budget, already taken
    denied: tuple[datetime, str] | None = None
    allowed: bool = False  # the last review answered that it may


class AccessReviews:
    """`check(cluster)` asks when due; `denied(cluster)` is the last answer (since when the
    agent may not write, and why), None while it may (or nothing is known)."""

    def __init__(
        self,
        kube: Kube,
        *,
        addon: str,
        copy_name: str,
        resource: ApiResource = ADDON,
        interval: float,
        recheck: float = 120.0,
        rate: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._kube, self._addon, self._copy = kube, addon, copy_name
        self._resource = resource
        self._interval, self._recheck, self._gap = interval, recheck, 1.0 / rate
        self._clock, self._now = clock, now
        self._lock = threading.Lock()
        self._asked: dict[str, _Asked] = {}
        self._free_at = 0.0  # monotonic: the fleet's next free slot
        self._told = False

    def denied(self, cluster: str) -> tuple[datetime, str] | None:
        with self._lock:
            asked = self._asked.get(cluster)
            return asked.denied if asked is not None else None

    def allowed(self, cluster: str) -> bool:
        """The last review answered that the agent may write (False: it may not, or unknown)."""
        with self._lock:
            asked = self._asked.get(cluster)
            return asked is not None and asked.allowed

    def check(self, cluster: str) -> float | None:
        """Ask for `cluster` if it is due and the fleet's budget allows; the seconds until it
        is due again (None: never asked, `interval` is 0)."""
        if self._interval <= 0:
            return None
        with self._lock:
            now = self._clock()
            asked = self._asked.setdefault(cluster, _Asked(due=now))
            if now < asked.due:
                return asked.due - now
            if not asked.booked and self._free_at > now:  # the budget is spent: book a slot
                asked.due, asked.booked = self._free_at, True
                self._free_at += self._gap
                return asked.due - now
            self._free_at = max(self._free_at, now) + (0.0 if asked.booked else self._gap)
            # a little jitter, so that clusters asked together drift apart
            asked.due, asked.booked = now + self._interval * random.uniform(0.9, 1.1), False
            wait = asked.due - now
        answered, denied = self._ask(cluster)
        with self._lock:
            asked.allowed = answered and denied is None
            if denied is None:
                if asked.denied is not None:
                    log.info("the agent of cluster %s may write its hub copy again", cluster)
                asked.denied = None
                return wait
            if asked.denied is None:
                log.info("the agent of cluster %s may not write its hub copy: %s", cluster, denied)
                asked.denied = (self._now(), denied)
            # a refusal is asked again at its window's end: one the API server soon lifts (OCM
            # binds the agent's role a moment after it makes the ManagedClusterAddOn) never counts
            asked.due = now + self._recheck
            return self._recheck

    def soon(self, cluster: str, seconds: float) -> float | None:
        """A refusal is asked again within `seconds` (the hub side has just written it: OCM
        re-creates a missing agent RoleBinding on the ManagedClusterAddOn's next change, which
        that write is); the seconds until it is due, None when nothing is refused."""
        with self._lock:
            asked = self._asked.get(cluster)
            if asked is None or asked.denied is None:
                return None
            asked.due, asked.booked = min(asked.due, self._clock() + seconds), False
            return asked.due - self._clock()

    def forget(self, cluster: str) -> None:
        with self._lock:
            self._asked.pop(cluster, None)

    def _ask(self, cluster: str) -> tuple[bool, str | None]:
        """(whether the review was answered, why the agent may not update its copy's status:
        None when it may or when the review cannot be asked)."""
        try:
            return True, refusal(self._kube, cluster, self._addon, self._copy, self._resource)
        except KubeError as error:
            if not self._told:
                self._told = True
                log.warning(
                    "cannot ask whether the agents may write their hub copies (a "
                    "SubjectAccessReview): %s; a cluster whose agent may not is not seen",
                    error.detail,
                )
            return False, None


def refusal(
    kube: Kube, cluster: str, addon: str, copy_name: str, resource: ApiResource = ADDON
) -> str | None:
    """Why `addon`'s agent on `cluster` may not update its hub copy's status, as the API
    server's SubjectAccessReview answers; None when it may. Raises KubeError."""
    user, groups = agent_identity(cluster, addon)
    attributes = {
        "namespace": cluster, "verb": "update", "group": resource.group,
        "resource": resource.plural, "subresource": "status", "name": copy_name,
    }  # fmt: skip
    review = {
        "apiVersion": SUBJECT_ACCESS_REVIEW.api_version,
        "kind": SUBJECT_ACCESS_REVIEW.kind,
        "spec": {"resourceAttributes": attributes, "user": user, "groups": groups},
    }
    status = kube.create(SUBJECT_ACCESS_REVIEW, "", review).get("status")
    if isinstance(status, dict) and status.get("allowed") is True:
        return None
    reason = status.get("reason") if isinstance(status, dict) else None
    what = f"update {resource.plural}/status {copy_name} in {cluster}"
    return f"{user} may not {what}" + (f": {reason}" if isinstance(reason, str) else "")
