"""The hub side on a fleet: N cluster namespaces on one embedded hub (kubesim serving the upstream
ManagedClusterAddOn CRD), each with a hub copy and a ManagedClusterAddOn; one real `HubReplica`
(the real client over HTTP) mirrors them all, then every hub copy changes once (a visible change:
a reason), then once more with nothing the mirror owns changed (a collector condition only),
then a resync re-reads everything.

Printed: seconds to the first full mirror, the ManagedClusterAddOn writes of each phase per hub
copy change (goal: exactly 1 for a visible change, 0 otherwise) and the reads of the resync.
Real: the hub side, the client, HTTP, kubesim. Simulated: the spokes (the hub copies are written
straight to the server's storage, as replication would through the API).

    .venv/bin/python tests/bench/hub_side.py [--clusters 300]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from controller.hub.mirror import MANAGED_CLUSTER_ADDON as MCA
from controller.hub.mirror import managed_cluster_addon
from controller.spoke.addon import GROUP, KIND, PLURAL, VERSION
from tests.hub.hubside import ADDON, COPY, Hub, hub_server, replica, seed
from tests.support import eventually


def _put_copy(hub: Hub, cluster: str, conditions: list[dict[str, object]]) -> None:
    hub.server.put_object(GROUP, VERSION, PLURAL, {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": KIND,
        "metadata": {"name": COPY, "namespace": cluster},
        "spec": {"enableMetrics": True}, "status": {"conditions": conditions},
    })


def _mirrored(hub: Hub, clusters: list[str], reason: str) -> bool:
    for cluster in clusters:
        obj = hub.server.get_object(MCA.group, MCA.version, MCA.plural, cluster, ADDON) or {}
        conditions = (obj.get("status") or {}).get("conditions") or []
        if not conditions or conditions[0]["reason"] != reason:
            return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clusters", type=int, default=300)
    args = parser.parse_args()
    clusters = [f"cluster{i}" for i in range(args.clusters)]
    wait = 60.0 + args.clusters / 10
    with hub_server() as hub:
        for cluster in clusters:
            hub.server.put_object("", "v1", "namespaces", {"metadata": {"name": cluster}})
            hub.server.put_object(MCA.group, MCA.version, MCA.plural,
                                  managed_cluster_addon(cluster, ADDON))
            _put_copy(hub, cluster, seed())
        started = time.perf_counter()
        with replica(hub, resync=3600.0) as made:
            eventually(lambda: _mirrored(hub, clusters, "UpdateSuccessful"), "first", timeout=wait)
            first = time.perf_counter() - started
            assert made.side.wait_idle(wait)
            phases = {"first mirror": hub.writes()}
            for cluster in clusters:
                _put_copy(hub, cluster, seed(reason="ForwardFailed"))
            eventually(lambda: _mirrored(hub, clusters, "ForwardFailed"), "change", timeout=wait)
            assert made.side.wait_idle(wait)
            phases["visible change"] = hub.writes() - sum(phases.values())
            quiet = seed(reason="ForwardFailed")
            quiet[-1] = {**quiet[-1], "reason": "ForwardFailure"}  # a collector's: not mirrored
            for cluster in clusters:
                _put_copy(hub, cluster, quiet)
            time.sleep(1.0)
            assert made.side.wait_idle(wait)
            phases["collector-only change"] = hub.writes() - sum(phases.values())
            reads = hub.server.count_requests(verbs=("get",), resource=MCA.plural)
            resync_started = time.perf_counter()
            made.side.resync()
            time.sleep(0.1)
            assert made.side.wait_idle(wait)
            resync = time.perf_counter() - resync_started
            resync_reads = hub.server.count_requests(verbs=("get",), resource=MCA.plural) - reads
            phases["resync"] = hub.writes() - sum(phases.values())
    print(f"hub side: {args.clusters} clusters, one replica, kubesim over HTTP")
    print(f"  first full mirror (s):           {first:8.2f}")
    print(f"  resync of every cluster (s):     {resync:8.2f}")
    print(f"  resync reads per cluster:        {resync_reads / args.clusters:8.2f}")
    for phase, writes in phases.items():
        print(f"  writes per cluster, {phase + ':':22}{writes / args.clusters:6.2f}")


if __name__ == "__main__":
    main()
