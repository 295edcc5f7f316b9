"""ACM's observability operator's (MCO's) status code, as it writes (measured against MCO's own
code: docs/spec.md §12.1), so that tests and the demo run the project beside it.

Its placementrule controller's status copy (`placementrule_copy`, its status.go): from each hub
copy labelled `owner=multicluster-observability-operator` (`MCO_OWNER`; no other copy) onto
`observability-controller`, `Available`, `Degraded` and `Progressing`, each only where the
True/False value differs from the ManagedClusterAddOn's (set in its place, as
meta.SetStatusCondition does); a standard type that leaves the copy stays.
(`controller.demo.ocm_writers` runs it.)

Its endpoint operator's status reconciler (`EndpointStatus`, its
endpointmetrics/controllers/status/status_controller.go), on a change of a component condition
(`MetricsCollector`, `UwlMetricsCollector`: what MCO's collectors write on the spoke
ObservabilityAddon) and every 5 minutes after each pass:

- it aggregates the components' reasons by priority (`aggregate`): the highest-priority reason
  leads to its standard type, `True`; a reason it does not know (the project's `NoReportYet`,
  `ReportsStale`, `ResourceUnhealthy`, ...) counts as `Degraded` at the lowest priority;
- when that differs from the newest standard condition, it sets every standard condition
  `False`, puts the aggregate in, and writes the spoke CR with a full status update (a PUT of
  the whole status under the resourceVersion it read; a 409 reads again);
- then, when the hub copy's status differs from the spoke CR's, it writes the hub copy with a
  full status update: the spoke CR's status, whole (every other condition dropped).

Pure rules at the top; `EndpointStatus` runs them on the project's informer and controller loop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from controller.kube.api import ADDON, ConflictError, Kube, NotFoundError
from controller.kube.controller import Controller, Result
from controller.kube.informer import Handlers, Informer
from controller.kube.ratelimit import default_rate_limiter
from controller.kube.reflector import Selection
from statemachines.conditions import format_time
from statemachines.object_names import ADDON_CR

__all__ = [
    "COMPONENTS",
    "MCO_OWNER",
    "REQUEUE",
    "EndpointStatus",
    "aggregate",
    "placementrule_copy",
    "spoke_conditions",
]

Obj = dict[str, Any]
COMPONENTS: Final = ("MetricsCollector", "UwlMetricsCollector")
STANDARD: Final = ("Available", "Progressing", "Degraded")
REQUEUE: Final = 300.0  # seconds: `ctrl.Result{RequeueAfter: 5 * time.Minute}` after each pass
_REASONS: Final = {  # MCO's newReason: reason -> (priority, standard type)
    "Disabled": (1, "Degraded"),
    "ForwardSuccessful": (2, "Available"),
    "CMOReconcileLoopStopped": (3, "Progressing"),
    "UpdateSuccessful": (4, "Progressing"),
    "ForwardFailed": (5, "Degraded"),
    "CMOReconcileLoopDetected": (6, "Degraded"),
    "UpdateFailed": (7, "Degraded"),
    "NotSupported": (8, "Degraded"),
}
_UNKNOWN: Final = (-1, "Degraded")
MCO_OWNER: Final = "owner=multicluster-observability-operator"
_FIELDS: Final = ("type", "status", "reason", "message", "lastTransitionTime")
_MESSAGES: Final = {
    "Available": "observability-controller add-on is available.",
    "Progressing": "observability-controller add-on is progressing.",
}


def aggregate(conditions: Sequence[Mapping[str, Any]], now: datetime) -> Obj | None:
    """The standard condition MCO makes of the component conditions; None without any."""
    components = [c for c in conditions if c.get("type") in COMPONENTS]
    if not components:
        return None
    first = min(
        components,
        key=lambda c: (-_REASONS.get(str(c.get("reason")), _UNKNOWN)[0], str(c.get("type"))),
    )
    reason = str(first.get("reason"))
    kind = _REASONS.get(reason, _UNKNOWN)[1]
    message = _MESSAGES.get(kind) or f"{first.get('type')}: {first.get('message') or ''}"
    if reason == "Disabled":
        message = "observability-controller add-on is disabled."
    if len(message) > 256:
        message = message[:253] + "..."
    return {"type": kind, "status": "True", "reason": reason, "message": message,
            "lastTransitionTime": format_time(now)}  # fmt: skip


def placementrule_copy(
    copy: Sequence[Mapping[str, Any]], conditions: Sequence[Mapping[str, Any]]
) -> list[Obj]:
    """The ManagedClusterAddOn's `conditions` after MCO's copy of the hub copy's."""
    result = [dict(c) for c in conditions]
    for source in (c for c in copy if c.get("type") in STANDARD):
        current = next((c for c in result if c.get("type") == source.get("type")), None)
        if current is not None and current.get("status") == source.get("status"):
            continue
        kept = {k: source.get(k) for k in _FIELDS}
        if current is None:
            result.append(kept)
        else:
            result[result.index(current)] = kept
    return result


def _should_update(conditions: Sequence[Mapping[str, Any]], new: Mapping[str, Any]) -> bool:
    """MCO's shouldUpdateConditions: the newest standard condition (True after False, then by
    transition time) differs from `new` in type, status, reason or message."""
    standard = [c for c in conditions if c.get("type") in STANDARD]
    if not standard:
        return True
    last = max(
        standard,
        key=lambda c: (c.get("status") == "True", str(c.get("lastTransitionTime") or "")),
    )
    return any(last.get(k) != new.get(k) for k in ("type", "status", "reason", "message"))


def spoke_conditions(conditions: Sequence[Mapping[str, Any]], now: datetime) -> list[Obj] | None:
    """The spoke CR's conditions after MCO's pass, or None when it writes nothing."""
    new = aggregate(conditions, now)
    if new is None or not _should_update(conditions, new):
        return None
    reset = [{**c, "status": "False"} if c.get("type") in STANDARD else dict(c)
             for c in conditions]  # fmt: skip
    if any(c.get("type") == new["type"] for c in reset):
        return [new if c.get("type") == new["type"] else c for c in reset]
    return [*reset, new]


class EndpointStatus:
    """MCO's endpoint status reconciler for the spoke CR `namespace`/`name` on `spoke` and its
    hub copy `hub_namespace`/`name` on `hub`; `writes` counts its status writes."""

    def __init__(
        self,
        spoke: Kube,
        hub: Kube,
        *,
        namespace: str,
        hub_namespace: str,
        name: str = ADDON_CR,
        time_scale: float = 1.0,
    ) -> None:
        self._spoke, self._hub = spoke, hub
        self._namespace, self._hub_namespace, self._name = namespace, hub_namespace, name
        self._requeue = REQUEUE / time_scale
        self.writes = 0
        self.loop: Controller[str] = Controller(
            "mco-endpoint-status", self._reconcile, rate_limiter=default_rate_limiter()
        )
        self.informer: Informer[Obj] = Informer(
            spoke, Selection(ADDON, namespace, name=name), name="mco-endpoint",
            watch_seconds=60, handlers=Handlers(updated=self._updated),
        )  # fmt: skip

    def start(self) -> None:
        self.loop.start()
        self.informer.start()

    def stop(self) -> None:
        self.informer.stop()
        self.loop.stop()

    def _updated(self, key: str, old: Obj, new: Obj) -> None:
        """Its predicate: updates whose non-standard conditions changed (never a create)."""
        if _others(old) != _others(new):
            self.loop.queue.add(key)

    def _reconcile(self, key: str) -> Result | None:
        status = self._update_spoke()
        self._update_hub(status)
        return Result(requeue_after=self._requeue)

    def _update_spoke(self) -> Obj:
        for _ in range(5):
            obj = self._spoke.get(ADDON, self._namespace, self._name)
            conditions = (obj.get("status") or {}).get("conditions") or []
            wanted = spoke_conditions(conditions, datetime.now(UTC))
            if wanted is None:
                return dict(obj.get("status") or {})
            try:
                stored = self._spoke.replace_status(
                    ADDON, self._namespace, self._name,
                    {**obj, "status": {**(obj.get("status") or {}), "conditions": wanted}},
                )  # fmt: skip
            except ConflictError:
                continue
            self.writes += 1
            return dict(stored.get("status") or {})
        raise ConflictError("MCO: the spoke ObservabilityAddon kept changing", status=409)

    def _update_hub(self, status: Obj) -> None:
        for _ in range(5):
            try:
                copy = self._hub.get(ADDON, self._hub_namespace, self._name)
            except NotFoundError:
                return
            if copy.get("status") == status:
                return
            try:
                self._hub.replace_status(
                    ADDON, self._hub_namespace, self._name, {**copy, "status": status}
                )
            except ConflictError:
                continue
            self.writes += 1
            return


def _others(obj: Mapping[str, Any]) -> list[Any]:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return [c for c in conditions if c.get("type") not in STANDARD]
