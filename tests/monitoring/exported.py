"""Every metric name the processes export, read from running ones: a spoke's controller (the
demo's assembly, on an embedded spoke and hub) and a hub side on a hub with one cluster. What
alerts and dashboards query must be among these names: a renamed metric fails the test that
reads it instead of an alert that never fires."""

from __future__ import annotations

from functools import cache

from prometheus_client import CollectorRegistry

from controller.demo.command import DEFAULT_SCENARIO, running
from controller.demo.scenario_file import EPOCH, read
from controller.demo.scenario_run import SteppedClock
from tests.hub.hubside import cond, hub_server, replica, seed
from tests.support import eventually

__all__ = ["exported_names"]


@cache
def exported_names() -> frozenset[str]:
    """The sample names (`..._total`, `..._bucket`, gauges) of both processes."""
    names: set[str] = set()
    with running(read(DEFAULT_SCENARIO), SteppedClock(EPOCH)) as demo:
        demo.system.report(reason="UpdateSuccessful", message="deployed")
        names |= _names(demo.controller.registry)
    registry = CollectorRegistry()
    with hub_server() as hub:
        hub.cluster("cluster1")
        hub.set_copy("cluster1", seed())
        hub.cluster("cluster2")  # a copy never came: its path's series too
        hub.delete_copy("cluster2")
        deployed = cond("ManifestApplied", "True", "AddonManifestApplied")  # in 2026-11-24
        hub.set_addon_conditions("cluster2", [deployed])
        with replica(hub, registry=registry) as side:
            eventually(lambda: side.side.path_reasons() != {}, "a broken path")
            assert side.side.wait_idle(5)
            names |= _names(registry)
    return frozenset(names)


def _names(registry: CollectorRegistry) -> set[str]:
    return {sample.name for family in registry.collect() for sample in family.samples}
