"""`addon-status demo` runs the hub side on its embedded hub beside OCM's own writers: while the
demo plays, each cluster's `ManagedClusterAddOn` carries the conditions the hub side owns as its
hub copy says them, and OCM's `Available`, `Progressing`, `RegistrationApplied` and
`ManifestApplied` as OCM writes them, so that
`kubectl get managedclusteraddons -A` shows the fleet live."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from controller.hub.mirror import MANAGED_CLUSTER_ADDON as MCA
from controller.hub.mirror import OWNED_TYPES, owned, standard_conditions
from controller.kube.api import ADDON, NotFoundError
from controller.kube.kubeconfig import client_for
from controller.kube.rest import RestKube
from tests.demo.test_fleet_demo import Demo
from tests.support import KUBECTL, eventually

pytestmark = pytest.mark.slow
# what the demo's model of OCM writes once the agent is registered, deployed and running
OCM_WRITES = {"Available": "ProbeAvailable", "Progressing": "Completed",
              "RegistrationApplied": "SetPermissionApplied",
              "ManifestApplied": "AddonManifestApplied"}  # fmt: skip


def test_the_demo_mirrors_every_hub_copy_onto_its_managed_cluster_addon() -> None:
    demo = Demo("--clusters", "2", "--time-scale", "100", "--duration", "120")
    try:
        kubeconfig = demo.hub_kubeconfig()
        with client_for(kubeconfig) as api:
            kube = RestKube(api)

            def mirrored(cluster: str) -> bool:
                try:  # each spoke creates its copy on its first write (--hub-create-missing)
                    copy: dict[str, Any] = kube.get(ADDON, cluster, "observability-addon")
                except NotFoundError:
                    return False
                addon = kube.get(MCA, cluster, "addon-status")
                wanted = owned(
                    standard_conditions((copy.get("status") or {}).get("conditions") or [])
                )
                found = (addon.get("status") or {}).get("conditions") or []
                ocm = {c["type"]: c["reason"] for c in found if c["type"] not in OWNED_TYPES}
                return bool(wanted) and owned(found) == wanted and ocm == OCM_WRITES

            for cluster in ("cluster1", "cluster2"):
                eventually(lambda c=cluster: mirrored(c), f"{cluster}'s ManagedClusterAddOn",  # type: ignore[misc]
                           timeout=60)  # fmt: skip
        # what the demo tells its viewer to run: the CRDs' printer columns, from kubesim's Table
        for kind in ("managedclusteraddons", "observabilityaddons"):
            header = _kubectl(kubeconfig, "get", kind, "-A").splitlines()[0].split()
            assert header[2:5] == ["AVAILABLE", "DEGRADED", "PROGRESSING"], header
    finally:
        code, _, err = demo.end()
    assert code == 0, err
    assert "Traceback" not in err


def _kubectl(kubeconfig: Path, *args: str) -> str:
    assert KUBECTL is not None, "kubectl: pip install -e '.[test]' installs it"
    done = subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), *args],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout
