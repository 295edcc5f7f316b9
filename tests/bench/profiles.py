"""API calls per visible change in each profile: the seed's (everything on the CR's status) and
acm's (the conditions on a CR served by the upstream CRD, the bookkeeping in the ConfigMap).

One replica of `controller.spoke.app.Replica` (no hub, no leader election) on an embedded API
server; a reporter plays the same story in both profiles, and the server's audit log counts, per
kind of step, the status PUTs on the CR and the writes (create/update) of the ConfigMap:

    .venv/bin/python tests/bench/profiles.py [--rounds 20]

Steps: `change` (a visible move: the collector fails and recovers, no window), `window` (a
failure that only opens a dampening window, then recovery), `heartbeat` (the current reason
again). Exits 1 with FAILED when a figure breaks the rule it shows (a heartbeat writes nothing).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from controller import ReportClient  # noqa: E402
from controller.spoke.app import Replica  # noqa: E402
from controller.spoke.options import Address, RunOptions  # noqa: E402
from kubesim import APIServer  # noqa: E402
from tests.clock import FakeClock  # noqa: E402
from tests.names import MC  # noqa: E402
from tests.support import connection  # noqa: E402
from tests.system.conftest import SPOKE_NAMESPACE, SPOKE_TOKENS, create_addon  # noqa: E402

CRDS = {
    "seed": ROOT / "manifests" / "base" / "crd.yaml",
    "acm": ROOT / "tests" / "data" / "upstream" / "observabilityaddons.crd.yaml",
}
NAMES = {
    "seed": {"fail": "ForwardFailure", "ok": "ForwardSuccessful"},
    "acm": {"fail": "ForwardFailed", "ok": "ForwardSuccessful"},
}


def counts(server: APIServer) -> tuple[int, int]:
    cr = server.count_requests(
        verbs=("update",), resource="observabilityaddons", subresource="status"
    )
    kept = server.count_requests(verbs=("create", "update"), resource="configmaps")
    return cr, kept


def measure(profile: str, rounds: int) -> dict[str, tuple[float, float]]:
    clock = FakeClock()
    loopback = Address(host="127.0.0.1", port=0)
    with APIServer([CRDS[profile]], tokens=SPOKE_TOKENS) as server, tempfile.TemporaryDirectory():
        create_addon(server, SPOKE_NAMESPACE)
        options = RunOptions(
            profile=profile,  # type: ignore[arg-type]
            metrics_address=loopback,
            probe_address=loopback,
            report_address="127.0.0.1:0",
            insecure=True,
            stale_after=timedelta(days=30),
        )
        api = connection(server, "spoke-token-a")
        replica = Replica(options, api_client=api, clock=clock, identity="a")
        replica.start()
        try:
            reporter = ReportClient(replica.report_url, deadline=10.0)
            names = NAMES[profile]
            send: Any = lambda reason: reporter.report(MC, reason=reason, message="m")  # noqa: E731
            reporter.report(None, reason="UpdateSuccessful", message="m")
            send(names["ok"])
            result: dict[str, tuple[float, float]] = {}
            for step in ("heartbeat", "window", "change"):
                before = counts(server)
                for _ in range(rounds):
                    clock.move(minutes=1)
                    if step == "heartbeat":
                        send(names["ok"])
                    elif step == "window":
                        send(names["fail"])  # degradeAfter 10m: pending
                        send(names["ok"])  # cancels the window
                    else:
                        clock.move(minutes=11)
                        send(names["fail"])
                        clock.move(minutes=11)
                        replica.worker.tick().result(10)  # the window ends: Degraded
                        send(names["ok"])
                after = counts(server)
                per = 2 * rounds if step != "heartbeat" else rounds
                result[step] = ((after[0] - before[0]) / per, (after[1] - before[1]) / per)
            reporter.close()
            return result
        finally:
            replica.stop()
            api.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    failed = False
    print(
        f"{'profile':8} {'step':10} {'CR status PUTs':>15} {'ConfigMap writes':>17}  (per report)"
    )
    for profile in ("seed", "acm"):
        for step, (cr, kept) in measure(profile, args.rounds).items():
            print(f"{profile:8} {step:10} {cr:15.2f} {kept:17.2f}")
            if step == "heartbeat" and (cr, kept) != (0, 0):
                print(f"FAILED {profile}: a heartbeat wrote")
                failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
