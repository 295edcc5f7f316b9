"""Hub copies and ManagedClusterAddOns as large as real ones, for the hub-side and fleet-view
benchmarks (`--copy-size realistic`).

A hub copy is what a spoke replicates with `--hub-copy status` (docs/spec.md §7, §9), made by
the real core, not by hand: the spoke's configuration as `addon-status run --leader-elect
--config FILE` builds it from the shipped file (manifests/base/configuration.yaml: the two
collectors' Deployments under its CEL rule, `for: 2m`; the addon CR and the Lease as related
objects); a seeded life played through `statemachines.core` (boot, forwarding outages longer and
shorter than the window, upgrades with versions and spec changes, update failures, Deployments
losing their replicas, every timer fired when due, the collectors repeating themselves) until
the history is full; then `statemachines.stored.to_status` and `statemachines.hub_copy.for_hub(
status, "status")`. So: the seed profile's conditions (five standard types, the two
collectors', `Ready`, `ResourcesHealthy`), a history of 10, versions, four related objects and
two resources with their conditions, about 8 KB (`status.collectors[]` is bookkeeping the hub
never gets). One copy in 100 is near the §6 budget: the largest lists the CRD allows (64
resources, 256 related objects, a history of 1,000), every text past its limit, so that the
core cuts each at its limit and then fits the whole status to 256 KiB (BIG_POOL distinct ones,
each taking seconds to play, shared in turn).

A ManagedClusterAddOn is left as OCM v1.3 leaves a template addon's (read from its source:
addon-framework's registration, agentdeploy and health-check controllers, OCM's addon
configuration controller): owned by its ClusterManagementAddOn, the conditions
`RegistrationApplied`, `ManifestApplied`, `Available` (workload health, "<addon> add-on is
available."), `Progressing` and `Configured`, `registrations` (the agent's subject),
`supportedConfigs` and `configReferences` (AddOnDeploymentConfig and AddOnTemplate with their
spec hashes), `namespace`, `healthCheck` and `relatedObjects` (the ClusterManagementAddOn, as
addon-framework's `MergeRelatedObjects` names it; v1.3's controllers no longer call it). What a
real API server adds, `managedFields`, is left out: kubesim does not keep them.

Each cluster's life is its own, seeded by its index; a life is played once per process.

    .venv/bin/python tests/bench/realistic.py [N]   # N lives: the sizes they come to
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any, Final

import yaml

from controller.hub.mirror import owned, standard_conditions
from controller.hub.ocm import MANAGED_CLUSTER_ADDON as MCA
from controller.spoke.app import related_objects
from controller.spoke.options import RunOptions
from statemachines import (
    Config,
    Report,
    advance,
    apply,
    next_wakeup,
    observe_generation,
    observe_object,
    start,
)
from statemachines.hub_copy import for_hub
from statemachines.size import BUDGET, encoded_size
from statemachines.state import AddonState
from statemachines.stored import to_status
from statemachines.vocabulary import Reason

__all__ = [
    "BIG_SHARE",
    "PHASES",
    "Life",
    "Lives",
    "fleet",
    "lives",
    "managed_cluster_addon",
]

ROOT: Final = Path(__file__).resolve().parents[2]
SHIPPED: Final = ROOT / "manifests" / "base" / "configuration.yaml"
EPOCH: Final = datetime(2026, 9, 1, tzinfo=UTC)
BIG_SHARE: Final = 100  # one copy in this many is near the budget
METRICS, UWL = "metrics-collector", "uwl-metrics-collector"
VERSIONS: Final = ("2.13.4", "2.14.0", "2.14.1", "2.15.0")
RECEIVE: Final = (
    "https://observatorium-api-open-cluster-management-observability.apps.hub.example.com"
    "/api/metrics/v1/default/api/v1/receive"
)

Status = dict[str, Any]


# --- the spoke's configuration, as `run` builds it ---------------------------------------------


def _options(config_text: str, **settings: Any) -> RunOptions:
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as file:
        file.write(config_text)
    return RunOptions(leader_elect=True, hub_copy="status", config_file=Path(file.name), **settings)


def _configured(config_text: str, **settings: Any) -> Config:
    options = _options(config_text, **settings)
    try:
        return options.config().with_related(*related_objects(options))
    finally:
        if options.config_file is not None:
            options.config_file.unlink()


@cache
def shipped_config() -> Config:
    """The shipped configuration file, loaded as `addon-status run --config` loads it."""
    manifest = yaml.safe_load(SHIPPED.read_text("utf-8"))
    return _configured(manifest["data"]["config.yaml"])


BIG_RESOURCES: Final = 64  # the CRD's maxItems of status.resources
BIG_RELATED: Final = 256 - 2 - BIG_RESOURCES  # with the CR, the Lease and each watched object
BIG_HISTORY: Final = 1000  # the CRD's maxItems of status.history


@cache
def big_config() -> Config:
    """The largest lists the CRD allows: 64 watched Deployments (the collectors' two under the
    shipped rule, 62 other workloads judged by their `Available` condition, whose message the
    resource entry carries), 256 related objects, a history of 1,000."""
    manifest = yaml.safe_load(SHIPPED.read_text("utf-8"))
    resources = yaml.safe_load(manifest["data"]["config.yaml"])["resources"]
    resources += [
        {
            "name": f"workload-{i:02d}-deployment",
            "collector": (METRICS, UWL)[i % 2],
            "object": {"apiVersion": "apps/v1", "kind": "Deployment", "name": f"workload-{i:02d}"},
            "for": "2m",
            "healthRule": {"singleConditionType": "Available"},
        }
        for i in range(len(resources), BIG_RESOURCES)
    ]
    related = [
        {"group": "monitoring.coreos.com", "resource": "servicemonitors",
         "namespace": "open-cluster-management-addon-observability",
         "name": f"observability-workload-{i:03d}-metrics-collector-service-monitor"}
        for i in range(BIG_RELATED)
    ]  # fmt: skip
    text = yaml.safe_dump({"resources": resources, "relatedObjects": related})
    return _configured(text, history_limit=BIG_HISTORY)


# --- a life through the core -----------------------------------------------------------------


def deployment(
    name: str, *, generation: int, available: bool, message: str = "", deadline: bool = False
) -> dict[str, Any]:
    """A Deployment as the API server returns it (what the health rule reads)."""
    replica_set = f'ReplicaSet "{name}-7d9c6b5f4d"'
    progressing = (
        ("False", "ProgressDeadlineExceeded", f"{replica_set} has timed out progressing.")
        if deadline
        else ("True", "NewReplicaSetAvailable", f"{replica_set} has successfully progressed.")
    )
    available_reason = "MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable"
    default = "Deployment has minimum availability." if available else (
        "Deployment does not have minimum availability.")  # fmt: skip
    return {
        "metadata": {"name": name, "generation": generation},
        "spec": {"replicas": 1},
        "status": {
            "observedGeneration": generation,
            "replicas": 1,
            "availableReplicas": 1 if available else 0,
            "conditions": [
                {"type": "Available", "status": "True" if available else "False",
                 "reason": available_reason, "message": message or default},
                {"type": "Progressing", "status": progressing[0], "reason": progressing[1],
                 "message": progressing[2]},
            ],
        },
    }  # fmt: skip


class Life:
    """One spoke's addon through the real core, on its own clock: reports and object changes,
    every timer fired at its due time as the worker's would be; `status()` is what the spoke
    writes, `copy()` what its replication sends to the hub."""

    def __init__(
        self, config: Config, rng: random.Random, start_at: datetime = EPOCH, *, long: bool = False
    ) -> None:
        self.config, self.rng, self.long = config, rng, long
        self.now = start_at
        self.state: AddonState = start(config, start_at)
        self.generation = 1
        self.heard = start_at
        self.signal: dict[str, tuple[Reason, str]] = {}  # what each collector says each interval

    def at(self, later: timedelta) -> None:
        """Time passes by `later`, every timer firing when due, the collectors repeating what
        they say often enough that none goes stale. A repeated report changes nothing a status
        holds, so once a minute before `staleAfter` writes what one every report interval would
        (and costs a third of the reports)."""
        end = self.now + later
        interval = self.config.settings[METRICS].staleness_limit - timedelta(minutes=1)
        while True:
            beat = self.heard + interval
            wakeup = next_wakeup(self.state, self.config)
            step = min(t for t in (beat, wakeup, end) if t is not None)
            self.now = step
            if wakeup is not None and wakeup <= step:
                self.state = advance(self.state, step, config=self.config).state
            if beat <= step:
                self.heartbeat()
            if step >= end:
                return

    def heartbeat(self) -> None:
        for collector, (reason, message) in self.signal.items():
            self.report(reason, collector, message)
        self.heard = self.now

    def says(self, collector: str, reason: Reason, message: str) -> None:
        """`collector` reports `reason` now, and again every interval until it says otherwise."""
        self.signal[collector] = (reason, message)
        self.report(reason, collector, message)

    def spec_changed(self) -> None:
        """The addon CR's spec changed: a new `metadata.generation` the reports then carry."""
        self.generation += 1
        moved = observe_generation(self.state, self.generation, self.now, config=self.config)
        self.state = moved.state

    def report(
        self,
        reason: Reason,
        collector: str | None = None,
        message: str | None = None,
        version: str | None = None,
    ) -> None:
        report = Report(reason, collector, message, self.generation, version)
        self.state = apply(self.state, report, self.now, config=self.config).state

    def observe(self, resource: str, obj: dict[str, Any] | None) -> None:
        self.state = observe_object(self.state, resource, obj, self.now, config=self.config).state

    def text(self, words: str) -> str:
        """`words`, or for a life near the budget, `words` and more until past every limit (the
        core cuts each where its limit is)."""
        if not self.long:
            return words
        more = " ".join(f"retry {i}: {words}" for i in range(40))  # past 1,024 and 256
        return f"{words}; {more}"[:1500]

    def status(self) -> Status:
        return to_status(self.state)

    def copy(self) -> Status:
        """As the hub receives it: JSON (the core's enums as strings)."""
        copied: Status = json.loads(json.dumps(for_hub(self.status(), "status")))
        return copied


def _sent(life: Life) -> str:
    rng = life.rng
    samples, took = rng.randint(12_000, 480_000), rng.randint(40, 900)
    return life.text(f"forwarded {samples} samples to observatorium-api (HTTP 200, {took} ms)")


def _failed(life: Life) -> str:
    rng = life.rng
    code = rng.choice(("503 Service Unavailable", "429 Too Many Requests", "502 Bad Gateway"))
    return life.text(f"remote write to {RECEIVE} failed after {rng.randint(3, 9)} attempts: {code}")


def _updated(life: Life, version: str) -> str:
    return life.text(f"metrics collectors {version} deployed")


COLLECTORS_OWN: Final = 2  # the shipped configuration's resources: the collectors' Deployments


def _deployed(life: Life, available: bool, *, deadline: bool = False, every: bool = False) -> None:
    """The collectors' Deployments (`every`: every watched one) as they are now."""
    for resource in life.config.resources[: None if every else COLLECTORS_OWN]:
        name = resource.object.name
        message = life.text(f"Deployment {name} has minimum availability.") if life.long else ""
        life.observe(
            resource.name,
            deployment(name, generation=life.generation, available=available, deadline=deadline,
                       message=message if available else ""),
        )  # fmt: skip


def _forwarding(life: Life) -> None:
    for collector in (METRICS, UWL):
        life.at(timedelta(seconds=life.rng.randint(10, 60)))
        life.says(collector, Reason.FORWARD_SUCCESSFUL, _sent(life))


def _boot(life: Life, version: str) -> None:
    life.report(Reason.UPDATE_SUCCESSFUL, None, _updated(life, version), version)
    life.at(timedelta(seconds=life.rng.randint(5, 40)))
    _deployed(life, True, every=True)
    _forwarding(life)


def _outage(life: Life, collector: str, minutes: int) -> None:
    """A forwarding outage of `minutes`: dampened when shorter than the window."""
    life.says(collector, Reason.FORWARD_FAILURE, _failed(life))
    life.at(timedelta(minutes=minutes))
    life.says(collector, Reason.FORWARD_SUCCESSFUL, _sent(life))


def _upgrade(life: Life, version: str) -> None:
    """The addon's spec asks for `version`: the operator rolls the collectors out again."""
    rng = life.rng
    life.spec_changed()
    _rolled_out(life, version)
    life.at(timedelta(seconds=rng.randint(10, 60)))
    _deployed(life, False)
    life.at(timedelta(seconds=rng.randint(30, 100)))
    _deployed(life, True)
    _forwarding(life)


def _rolled_out(life: Life, version: str) -> None:
    """The operator rolled `version` out: the collectors' new pods say nothing until they
    forward."""
    life.report(Reason.UPDATE_SUCCESSFUL, None, _updated(life, version), version)
    life.signal.clear()


def _update_failure(life: Life, version: str) -> None:
    """An update that fails for a while (forwarding reports refused meanwhile), then succeeds."""
    life.report(
        Reason.UPDATE_FAILURE,
        None,
        life.text(
            f"could not update metrics collectors to {version}: image pull secret "
            "multiclusterhub-operator-pull-secret not found"
        ),
    )
    life.at(timedelta(minutes=life.rng.randint(20, 90)))
    _upgrade(life, version)


def _replicas_lost(life: Life, minutes: int) -> None:
    """The collectors' Deployments unavailable for `minutes` (counted after `for: 2m`)."""
    _deployed(life, False, deadline=minutes > 10)
    life.at(timedelta(minutes=minutes))
    _deployed(life, True)


def _between(life: Life) -> None:
    life.at(timedelta(minutes=life.rng.randint(20, 40) if life.long else life.rng.randint(20, 240)))


def live(index: int, *, big: bool = False) -> Life:
    """Cluster `index`'s addon from boot to a seeded present: episodes that each add to its
    history, in a seeded order, until the history is full; then the fleet's mix of states."""
    rng = random.Random(index)
    config = big_config() if big else shipped_config()
    life = Life(config, rng, EPOCH + timedelta(minutes=rng.randint(0, 60 * 24 * 30)), long=big)
    _boot(life, VERSIONS[0])
    versions = iter([*VERSIONS[1:]] * config.history_limit)
    episodes: list[Callable[[], None]] = [
        lambda: _outage(life, rng.choice((METRICS, UWL)), rng.randint(12, 45)),
        lambda: _outage(life, UWL, rng.randint(1, 8)),  # absorbed by the window
        lambda: _replicas_lost(life, rng.randint(4, 30)),
        lambda: _upgrade(life, next(versions)),
        lambda: _update_failure(life, next(versions)),
    ]
    while len(life.state.history) < config.history_limit:
        _between(life)
        rng.choice(episodes)()
    _between(life)
    _present(life)
    return life


def _present(life: Life) -> None:
    """The state the cluster is in now, in the fleet's mix: most Available; some Degraded (a
    long outage), some Progressing (an update under way)."""
    pick = life.rng.random()
    if pick < 0.08:
        _outage(life, UWL, 15)
        life.says(UWL, Reason.FORWARD_FAILURE, _failed(life))
        life.at(timedelta(minutes=11))
    elif pick < 0.13:
        life.spec_changed()
        _rolled_out(life, "2.15.1")
        life.at(timedelta(seconds=30))


# --- what a run of the benchmarks needs --------------------------------------------------------


PHASES: Final = ("first", "visible", "quiet", "last")


@dataclass(frozen=True, slots=True)
class Lives:
    """A cluster's hub copy at each phase of a benchmark, as compact JSON (a fleet of them is a
    quarter of the memory of dicts): `first` (its life so far), `visible` (then a change the hub
    side mirrors: its `Degraded` moves), `quiet` (then a change it does not: the addon's spec
    changed, which moves every condition's `observedGeneration` and `Ready`), `last` (then a
    visible change again)."""

    copies: tuple[bytes, ...]

    def copy(self, phase: str) -> Status:
        found: Status = json.loads(self.copies[PHASES.index(phase)])
        return found


BIG_POOL: Final = 4  # distinct lives near the budget (2 s each), shared by that 1% of clusters


def lives(index: int) -> Lives:
    """Cluster `index`'s copies at each phase; 1 in `BIG_SHARE` near the budget (the
    `BIG_POOL` distinct ones in turn)."""
    big = index % BIG_SHARE == BIG_SHARE - 1
    return _lives(index // BIG_SHARE % BIG_POOL if big else index, big)


def fleet(count: int) -> list[Lives]:
    """Clusters 0 to `count - 1`'s copies; a large fleet's on every core (a life is ~7 ms)."""
    if count < 2000:
        return [lives(i) for i in range(count)]
    with ProcessPoolExecutor(os.cpu_count()) as pool:
        return list(pool.map(lives, range(count), chunksize=250))


@cache
def _lives(seed: int, big: bool) -> Lives:
    life = live(seed, big=big)
    first = life.copy()
    _visible_change(life)
    visible = life.copy()
    life.at(timedelta(minutes=1))
    life.spec_changed()
    quiet = life.copy()
    _visible_change(life)
    last = life.copy()
    if mirrored(quiet) != mirrored(visible) or mirrored(first) == mirrored(visible):
        raise AssertionError(f"life {seed}: the phases do not change what they claim")
    compact = (json.dumps(c, separators=(",", ":")).encode() for c in (first, visible, quiet, last))
    return Lives(tuple(compact))


def _visible_change(life: Life) -> None:
    """A next step that moves the addon's `Degraded`: an update fails; a Degraded addon
    forwards again or is updated."""
    life.at(timedelta(minutes=1))
    before = mirrored(life)
    degraded = next(c for c in life.state.conditions if c.type == "Degraded")
    if degraded.status.value == "True":
        life.says(UWL, Reason.FORWARD_SUCCESSFUL, _sent(life))
        if mirrored(life) == before:  # an update failure refuses it
            _rolled_out(life, "2.15.1")
    else:
        life.report(Reason.UPDATE_FAILURE, None, life.text("could not update: image pull"))
    if mirrored(life) == before:
        raise AssertionError("the step did not move what the hub side mirrors")


def mirrored(copy: Status | Life) -> list[Any]:
    """What the hub side mirrors of a copy, or of a life's copy now (its own reading)."""
    if isinstance(copy, Life):  # the conditions alone: a status is fitted only past the budget
        copy = {"conditions": [c.to_api() for c in copy.state.conditions]}
    return owned(standard_conditions(copy.get("conditions")))


# --- the ManagedClusterAddOn as OCM v1.3 leaves it ---------------------------------------------


def _hash(*parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()


def managed_cluster_addon(cluster: str, name: str, index: int) -> dict[str, Any]:
    """`name` in `cluster`'s namespace as OCM v1.3's controllers leave a template addon's (the
    conditions at their steady state; see the module docstring)."""
    rng = random.Random(index)
    since = (EPOCH + timedelta(minutes=rng.randint(0, 60 * 24 * 30))).strftime("%Y-%m-%dT%H:%M:%SZ")

    def cond(kind: str, status: str, reason: str, message: str) -> dict[str, Any]:
        return {"type": kind, "status": status, "reason": reason, "message": message,
                "lastTransitionTime": since, "observedGeneration": 1}  # fmt: skip

    group = "addon.open-cluster-management.io"
    config = [("addondeploymentconfigs", "open-cluster-management-observability",
               f"{name}-deploy-config"),
              ("addontemplates", "", f"{name}-0.3.0")]  # fmt: skip
    agent = f"system:open-cluster-management:cluster:{cluster}:addon:{name}"
    return {
        "apiVersion": MCA.api_version,
        "kind": MCA.kind,
        "metadata": {
            "name": name, "namespace": cluster,
            "labels": {"open-cluster-management.io/addon-name": name},
            "annotations": {"addon.open-cluster-management.io/values": "{}"},
            "finalizers": ["addon.open-cluster-management.io/addon-pre-delete",
                           "cluster.open-cluster-management.io/addon-pre-delete"],
            "ownerReferences": [{"apiVersion": f"{group}/v1alpha1",
                                 "kind": "ClusterManagementAddOn", "name": name,
                                 "uid": f"5c3b1c1e-0d44-4c7e-9f0a-{index:012d}",
                                 "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": {"installNamespace": "open-cluster-management-agent-addon"},
        "status": {
            "conditions": [
                cond("RegistrationApplied", "True", "SetPermissionApplied",
                     "Registration of the addon agent is configured"),
                cond("ManifestApplied", "True", "AddonManifestApplied",
                     "manifests of addon are applied successfully"),
                cond("Available", "True", "ProbeAvailable", f"{name} add-on is available."),
                cond("Progressing", "False", "Completed", "completed with no errors."),
                cond("Configured", "True", "ConfigurationsConfigured",
                     "Configurations configured"),
            ],
            "relatedObjects": [{"group": group, "resource": "clustermanagementaddons",
                                "name": name}],
            "registrations": [{"signerName": "kubernetes.io/kube-apiserver-client",
                               "subject": {"user": f"{agent}:agent:{name}-agent",
                                           "groups": [agent, f"system:open-cluster-management:"
                                                             f"addon:{name}"]}}],
            "supportedConfigs": [{"group": group, "resource": r} for r, _, _ in config],
            "configReferences": [
                {"group": group, "resource": r, "namespace": ns, "name": n,
                 "lastObservedGeneration": 1,
                 "desiredConfig": {"namespace": ns, "name": n, "specHash": _hash(r, n)},
                 "lastAppliedConfig": {"namespace": ns, "name": n, "specHash": _hash(r, n)}}
                for r, ns, n in config
            ],
            "namespace": "open-cluster-management-agent-addon",
            "healthCheck": {"mode": "Customized"},
        },
    }  # fmt: skip


def wire_size(obj: Any) -> int:
    """Bytes of `obj` as compact JSON, as the API server sends it."""
    return len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode())


def describe(count: int) -> str:
    """What `count` lives come to (bytes as the API server sends each copy, compact; a copy near
    the budget also as the spoke's client counts it against the budget) and a
    ManagedClusterAddOn's size."""
    began = time.perf_counter()
    made = fleet(count)
    took = time.perf_counter() - began
    sizes = [len(m.copies[0]) for m in made]
    regular = [n for i, n in enumerate(sizes) if i % BIG_SHARE != BIG_SHARE - 1]
    big = [lives(i) for i in range(BIG_SHARE - 1, count, BIG_SHARE)][:BIG_POOL]
    budget = [encoded_size(b.copy("first")) for b in big]
    mca = managed_cluster_addon("cluster00001", "addon-status", 1)
    return "\n".join((
        f"{count} lives played in {took:.1f} s",
        f"  copy bytes, median: {statistics.median(regular):.0f}",
        f"  copy bytes, lowest and highest: {min(regular)} {max(regular)}",
        f"  copies near the budget: {len(big)} distinct",
        *(f"  near the budget, bytes as sent and as the client counts: {len(b.copies[0])} {n}"
          for b, n in zip(big, budget, strict=True)),
        f"  the budget: {BUDGET}",
        f"  ManagedClusterAddOn bytes: {wire_size(mca)}",
    ))  # fmt: skip


if __name__ == "__main__":
    print(describe(int(sys.argv[1]) if len(sys.argv) > 1 else 1000))
