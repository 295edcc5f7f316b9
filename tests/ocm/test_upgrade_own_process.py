"""The upgrade from 0.1.0 (upgrade_world.py) with 0.1.0's own hub side: its code at the release's
commit, from this repository's history (skipped where there is none, as in a source tarball),
run as its Deployment runs it, bound only by 0.1.0's roles, until the upgrade replaces it.

0.1.0's hub side mirrored every standard condition of a hub copy onto the ManagedClusterAddOn
it named, `observability-controller`: on an ACM hub `Available`, `Progressing` and `Degraded`;
on a plain OCM hub (seed) there is no such ManagedClusterAddOn and it wrote nothing. What must
hold: 0.1.0's process needed nothing its role did not grant; the current hub side takes over
with at most one write per ManagedClusterAddOn (acm: none, the copy is unchanged; seed: its
first, on `addon-status`); and it leaves the `Available` and `Progressing` that 0.1.0 wrote to
their owners (OCM's lease controller, MCO), never removing a type it does not own
(docs/operations.md, "Upgrading from 0.1.0")."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.manifests.kustomize import find
from tests.ocm.releases import TlsHub, missing_history, release_code
from tests.ocm.upgrade_world import MCAS, SHOWN, Fleet, OldHubSide, before, upgrade_fleet
from tests.ocm.upgrade_world import conditions_on as shown
from tests.ocm.world import CLUSTERS, COPY, HUB_SIDE, Obj, copy_status
from tests.support import eventually

__all__ = ["before"]  # the world's fixture, with this module's old_hub_side

pytestmark = [pytest.mark.integration, pytest.mark.slow]


class _Release:
    """`addon-status hub` of 0.1.0's code, as its Deployment starts it, on loopback ports."""

    def __init__(self, code: Path, old: list[Obj], tls: TlsHub, log: Path) -> None:
        pod = find(old, "Deployment", "addon-status-hub-controller")["spec"]["template"]["spec"]
        [container] = pod["containers"]
        kubeconfig = log.with_suffix(".kubeconfig")
        kubeconfig.write_bytes(tls.kubeconfig("hub-side"))
        loopback = ["--metrics-address", "127.0.0.1:0", "--probe-address", "127.0.0.1:0"]
        where = ["--kubeconfig", str(kubeconfig), "--lease-namespace", "addon-status"]
        self.command = [sys.executable, "-m", "controller.cli", *container["args"], *loopback,
                        *where]  # fmt: skip
        environ = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
        self.environ = {**environ, "PYTHONPATH": str(code), "POD_NAME": "hub-side-0.1.0",
                        "POD_NAMESPACE": "addon-status"}  # fmt: skip
        self.code, self.log = code, log
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> _Release:
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(self.command, env=self.environ, cwd=self.code,
                                            stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """SIGTERM, as the kubelet stops a pod: it releases its Lease and exits."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            assert self.process.wait(timeout=60) == 0, self.log.read_text()


@pytest.fixture(scope="module")
def code(tmp_path_factory: pytest.TempPathFactory) -> Path:
    missing = missing_history()
    if missing is not None:
        pytest.skip(f"0.1.0's own code is read from the history: {missing}")
    return release_code(tmp_path_factory.mktemp("release-0.1.0"))


@pytest.fixture
def old_hub_side(code: Path, tmp_path: Path) -> Iterator[OldHubSide]:
    yield lambda flavour, old, tls: _Release(code, old, tls, tmp_path / f"hub-{flavour}.log")


def test_0_1_0s_own_hub_side_hands_over_and_its_conditions_are_left_to_their_owners(
    flavour: str, before: Fleet
) -> None:
    hub = before.tls.server
    standard = ("Available", "Degraded", "Progressing")
    if flavour == "acm":  # 0.1.0 copied the copy's standard conditions
        for cluster in CLUSTERS:
            eventually(lambda c=cluster: sorted(shown(hub, c, SHOWN["acm"])) == list(standard),
                       f"0.1.0's hub side wrote {cluster}'s ManagedClusterAddOn")  # fmt: skip
    else:
        assert all(shown(hub, c, n) == {} for c in CLUSTERS for n in MCAS["seed"])
    written = {c: shown(hub, c, SHOWN[flavour]) for c in CLUSTERS}
    mark = len(hub.audit)

    upgrade_fleet(flavour, before)

    writes = [(r.namespace, r.name) for r in hub.audit[mark:] if r.user == HUB_SIDE.username
              and r.resource == "managedclusteraddons" and r.verb in ("patch", "update")
              ]  # fmt: skip
    wanted = [(c, SHOWN["seed"]) for c in CLUSTERS] if flavour == "seed" else []
    assert sorted(writes) == wanted
    assert [r for r in hub.audit if r.code == 403] == []  # 0.1.0's process included
    if flavour == "acm":  # the same, 0.1.0's Available and Progressing still there
        for cluster in CLUSTERS:
            degraded = next(c for c in copy_status(hub, cluster)["conditions"]
                            if c["type"] == "Degraded")  # fmt: skip
            assert shown(hub, cluster, SHOWN["acm"]) == written[cluster]
            assert written[cluster]["Degraded"] == degraded["status"], COPY
