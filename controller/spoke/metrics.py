"""The spoke controller's Prometheus metrics: what an operator of a fleet asks of a spoke.

What state each collector is in, how often it moves (flapping shows as a high transition rate),
whether the controller keeps up (queue depth, reconcile duration, write conflicts), and whether
the hub copy is current (`ReplicationMetrics`). Every metric is registered on the registry
passed in, so that tests and two controllers in one process never share counters.

Every labelled counter is exported from the start with the label values it can take, at zero:
a series that appears only when it first counts is invisible to `increase()` and `rate()` for
that first count, and an alert on "no sample" cannot tell a healthy controller from a broken
scrape. The values come from the same tables the core runs (the machine rows, the vocabulary,
the configured collectors).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from controller.kube.api import ErrorKind
from statemachines import AddonState, Cause, Change, Config, Verdict, VerdictKind
from statemachines.conditions import STANDARD_TYPES
from statemachines.errors import StoredStateError
from statemachines.health import Health, HealthReason, Resource
from statemachines.machines import COLLECTOR_ROWS, OPERATOR_ROWS, WINDOW_ELAPSED
from statemachines.vocabulary import READY, Actor, Rule, State

__all__ = [
    "ADDON_CONDITIONS",
    "EVENT_OUTCOMES",
    "LAG_BUCKETS",
    "REFUSAL_RULES",
    "TRIGGERS",
    "ControllerMetrics",
    "ReplicationMetrics",
]

log = logging.getLogger("controller.spoke.reconcile")  # where the stored fields are read

_PREFIX = "addon_status"
# The label values the shell produces (the worker's item kinds and the timer, the watch loop's
# restart causes, the Event recorder's outcomes) and the core's own rule and cause names.
TRIGGERS = ("report", "watch", "object", "tick", "leader", "timer")
STORED_FIELDS = (
    "status",
    "conditions",
    "collectors",
    "history",
    "lastKnownGood",
    "resources",
    "bookkeeping",
)
EVENT_OUTCOMES = ("recorded", "aggregated", "failed", "dropped")
REFUSAL_RULES = tuple(rule.value for rule in Rule)
_EVERY_COLLECTOR = "all"  # the collector label of an operator's report about every collector
_DURATIONS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class ControllerMetrics:
    """The instruments, named once; the worker and the watch call the small methods below.

    With `config`, the per-collector counters start at zero for every collector it configures.
    """

    def __init__(self, registry: CollectorRegistry, config: Config | None = None) -> None:
        self.registry = registry
        self._told: set[tuple[str, str]] = set()  # stored fields ignored and logged
        self.collector_state = Gauge(
            f"{_PREFIX}_collector_state",
            "1 for the state each collector's machine is in, 0 for the others",
            ["collector", "state"],
            registry=registry,
        )
        self.collector_stale = Gauge(
            f"{_PREFIX}_collector_stale",
            "1 while nothing was reported about the collector for staleAfter",
            ["collector"],
            registry=registry,
        )
        self.transitions = Counter(
            f"{_PREFIX}_collector_transitions",
            "Moves of a collector's machine (state, reason or staleness), by cause",
            ["collector", "from", "to", "cause"],
            registry=registry,
        )
        self.resource_health = Gauge(
            f"{_PREFIX}_resource_health",
            "1 for the counted health of each watched object (health rules), 0 for the others",
            ["resource", "health"],
            registry=registry,
        )
        self.resource_evaluations = Counter(
            f"{_PREFIX}_resource_evaluations",
            "Watched objects judged by their health rule, by the result's reason"
            " (EvaluationError: a CEL expression failed on the object)",
            ["resource", "reason"],
            registry=registry,
        )
        self.reports = Counter(
            f"{_PREFIX}_reports",
            "Reports judged by the worker, by verdict",
            ["collector", "verdict"],
            registry=registry,
        )
        self.refused = Counter(
            f"{_PREFIX}_reports_refused",
            "Reports the machines refused, by the reported reason and the refusing rule",
            ["collector", "reason", "rule"],
            registry=registry,
        )
        self.reconciles = Counter(
            f"{_PREFIX}_reconciles",
            "Items the worker handled, by what triggered them",
            ["trigger"],
            registry=registry,
        )
        self.reconcile_duration = Histogram(
            f"{_PREFIX}_reconcile_duration_seconds",
            "Time the worker spent on one item, the status write included",
            ["trigger"],
            buckets=_DURATIONS,
            registry=registry,
        )
        self.status_writes = Counter(
            f"{_PREFIX}_status_writes",
            "Successful writes of the addon CR's status subresource",
            registry=registry,
        )
        self.status_conflicts = Counter(
            f"{_PREFIX}_status_write_conflicts",
            "409 Conflict answers to a status write (each was retried on a fresh read)",
            registry=registry,
        )
        self.status_rejections = Counter(
            f"{_PREFIX}_status_writes_rejected",
            "Status writes the API server refused (400, 413, 422, request is too large); each was "
            "rolled back to the stored status and its report answered 422",
            registry=registry,
        )
        self.status_failures = Counter(
            f"{_PREFIX}_status_write_failures",
            "Status writes that failed for another reason and wait for a retry",
            registry=registry,
        )
        self.queue_depth = Gauge(
            f"{_PREFIX}_queue_depth",
            "Items waiting for the reconcile worker",
            registry=registry,
        )
        self.stored_ignored = Counter(
            f"{_PREFIX}_stored_fields_ignored",
            "Fields of the stored status (or the acm bookkeeping) read back out of the rules'"
            " bounds and taken as absent, by the status field they are in",
            ["field"],
            registry=registry,
        )
        self.events = Counter(
            f"{_PREFIX}_kube_events",
            "Kubernetes Events about the addon CR, by outcome (recorded: a new Event; "
            "aggregated: the count of an existing one raised; failed; dropped)",
            ["outcome"],
            registry=registry,
        )
        self._start_at_zero(config)

    def _start_at_zero(self, config: Config | None) -> None:
        for trigger in TRIGGERS:
            self.reconciles.labels(trigger)
            self.reconcile_duration.labels(trigger)
        for outcome in EVENT_OUTCOMES:
            self.events.labels(outcome)
        for field in STORED_FIELDS:
            self.stored_ignored.labels(field)
        if config is None:
            return
        collectors = [c.name for c in config.collectors]
        for collector in [*collectors, _EVERY_COLLECTOR]:
            for kind in VerdictKind:
                self.reports.labels(collector, kind.value)
        for collector, reason in _reporters(config, collectors):
            for rule in REFUSAL_RULES:
                self.refused.labels(collector, reason, rule)
        for collector in collectors:
            for before, after, cause in _moves():
                self.transitions.labels(collector, before, after, cause)
        for resource in config.resources:
            for reason in _results(resource):
                self.resource_evaluations.labels(resource.name, reason)

    def count_verdict(self, reason: str, verdict: Verdict) -> None:
        """One judged report; `reason` is the reason it reported."""
        collector = verdict.collector or "all"  # the operator's report about every collector
        self.reports.labels(collector, verdict.kind.value).inc()
        if verdict.kind is VerdictKind.REFUSED:
            self.refused.labels(collector, reason, verdict.rule or "unknown").inc()

    def count_ignored(self, path: str) -> None:
        """A stored field taken as absent: `status.collectors[0].pendingSince` counts under
        `collectors`, a bookkeeping that is no JSON under `bookkeeping`."""
        field = path.removeprefix("status.").split("[")[0].split(".")[0]
        self.stored_ignored.labels(field if field in STORED_FIELDS else "bookkeeping").inc()

    def stored_ignored_once(self, ignored: Iterable[StoredStateError]) -> None:
        """Each stored field taken as absent: counted every time, logged once per problem."""
        for problem in ignored:
            self.count_ignored(problem.field)
            if (problem.field, problem.problem) not in self._told:
                self._told.add((problem.field, problem.problem))
                log.warning(
                    "a stored field is out of bounds; taken as absent",
                    extra={"field": problem.field, "problem": problem.problem},
                )

    def count_moves(self, changes: Iterable[Change]) -> None:
        for change in changes:
            before, after = change.before.state.value, change.after.state.value
            self.transitions.labels(change.collector, before, after, change.cause.value).inc()

    def show_resources(self, counted: Iterable[tuple[str, Health]]) -> None:
        """Set the per-resource gauges from (resource, counted health) pairs."""
        for resource, current in counted:
            for health in Health:
                self.resource_health.labels(resource, health.value).set(
                    1 if health is current else 0
                )

    def show_states(self, states: Iterable[tuple[str, State, bool]]) -> None:
        """Set the per-collector gauges from (collector, state, stale) triples."""
        for collector, current, stale in states:
            for state in State:
                self.collector_state.labels(collector, state.value).set(
                    1 if state is current else 0
                )
            self.collector_stale.labels(collector).set(1 if stale else 0)


def _results(resource: Resource) -> list[str]:
    """The reasons a resource's rule can give (docs/spec.md §8), `NotFound` for every one."""
    rule = resource.health_rule
    if rule.always_healthy is not None:
        reasons: list[str] = [HealthReason.ALWAYS_HEALTHY]
    elif rule.single_condition_type is not None:
        reasons = [f"{rule.single_condition_type}Condition"]
    elif rule.multi_match is not None:
        reasons = [HealthReason.MATCHED_CONDITION, HealthReason.MATCHED_FIELD]
        reasons += [HealthReason.NO_MATCHES_FULFILLED, HealthReason.EVALUATION_ERROR]
    else:
        reasons = [HealthReason.IN_PROGRESS, HealthReason.FAILED, HealthReason.CURRENT]
        reasons.append(HealthReason.EVALUATION_ERROR)
    return [str(r) for r in (*reasons, HealthReason.NOT_FOUND)]


def _reporters(config: Config, collectors: list[str]) -> Iterator[tuple[str, str]]:
    """(collector label, reason) of every report that can be judged: a collector's reasons
    about itself, the endpoint operator's about one collector or about every one."""
    for spec in config.profile.reasons:
        if spec.reported_by is None:
            continue
        reason = config.profile.name_of(spec.reason)  # as the profile writes it
        for collector in collectors:
            yield collector, reason
        if spec.reported_by is Actor.ENDPOINT_OPERATOR:
            yield _EVERY_COLLECTOR, reason


def _moves() -> set[tuple[str, str, str]]:
    """(from, to, cause) of every move a collector's machine can make: a row taken on a report,
    a row a dampening window guards taken when the window runs out, staleness (which keeps the
    state) wherever reports are expected."""
    moves = set()
    for row in OPERATOR_ROWS + COLLECTOR_ROWS:
        moves.add((row.source.value, row.dest.value, Cause.REPORT.value))
        if WINDOW_ELAPSED in row.guards:
            moves.add((row.source.value, row.dest.value, Cause.DAMPENING_WINDOW.value))
    for state in State:
        if state not in (State.DISABLED, State.NOT_SUPPORTED):
            moves.add((state.value, state.value, Cause.STALENESS.value))
    return moves


LAG_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)
"""From a healthy write (tens of ms) to a hub that was down for an hour."""


class ReplicationMetrics:
    """Hub writes, skipped (already equal) syncs, errors by kind, lag and time since sync."""

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._monotonic = monotonic
        self._last_sync = monotonic()
        self.writes = Counter(
            "addon_status_hub_writes_total",
            "Writes of the addon status to the hub copy.",
            registry=registry,
        )
        self.unchanged = Counter(
            "addon_status_hub_unchanged_total",
            "Hub syncs that found the hub copy already equal and wrote nothing.",
            registry=registry,
        )
        self.errors = Counter(
            "addon_status_hub_errors_total",
            "Failed hub reads or writes, by kind (conflict, not_found, unauthorized, ...).",
            ["kind"],
            registry=registry,
        )
        for kind in ErrorKind:
            self.errors.labels(kind=kind.value)
        self.lag = Histogram(
            "addon_status_hub_replication_lag_seconds",
            "From the first spoke status change not yet on the hub to the hub holding it "
            "(or a newer one).",
            buckets=LAG_BUCKETS,
            registry=registry,
        )
        self.since_sync = Gauge(
            "addon_status_hub_seconds_since_last_sync",
            "Seconds since the hub copy was last confirmed equal to the spoke status "
            "(since start while it never was).",
            registry=registry,
        )
        self.since_sync.set_function(lambda: self._monotonic() - self._last_sync)

    def wrote(self) -> None:
        self.writes.inc()

    def found_unchanged(self) -> None:
        self.unchanged.inc()

    def failed(self, kind: ErrorKind) -> None:
        self.errors.labels(kind=kind).inc()

    def synced(self, *, lag: float | None) -> None:
        """The hub copy equals the newest spoke status; `lag` when that status was new."""
        self._last_sync = self._monotonic()
        if lag is not None:
            self.lag.observe(max(lag, 0.0))


ADDON_CONDITIONS = (*STANDARD_TYPES, READY)
_STATUSES = ("true", "false", "unknown")


class AddonConditions(Collector):
    """`addon_status_addon_condition{condition, status}`, as kube-state-metrics exports a
    condition (`kube_node_status_condition`): for each of the addon's standard types and `Ready`,
    one series per status, 1 for the one it has. Read from the worker's state at each scrape, so
    it is never behind the CR and never outlives a condition."""

    def __init__(self, state: Callable[[], AddonState]) -> None:
        self._state = state

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            f"{_PREFIX}_addon_condition",
            "1 for the status each of the addon's standard conditions and Ready has, 0 for the "
            "others (a condition not written yet has none)",
            labels=["condition", "status"],
        )
        found = {c.type: c.status.lower() for c in self._state().conditions}
        for condition in ADDON_CONDITIONS:
            if condition in found:
                for status in _STATUSES:
                    family.add_metric(
                        [condition, status], 1.0 if found[condition] == status else 0.0
                    )
        yield family
