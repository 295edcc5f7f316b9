"""Release 0.1.0's rollout beside the current one, for the upgrade tests: where 0.1.0's
manifests are pinned (tests/data/releases/0.1.0), each flavour's rollout overlay, and the parts
of the upgrade world that tests/ocm/world.py does not hold: `kubectl apply -k` with the real
kubectl, the work agent updating a spoke from one rendering to the next, the hub side started
from a Deployment, and what is kept of an object (its UID and conditions)."""

from __future__ import annotations

import argparse
import base64
import io
import json
import shutil
import subprocess
import tarfile
import urllib.request
from collections.abc import Iterable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from controller.demo.addon_manager import no_longer_applied
from controller.hub.app import HubReplica
from controller.hub.options import HubOptions, add_hub_flags
from controller.kube.connection import Connection
from controller.kube.rest import RestKube
from kubesim import APIServer, ServingTLS
from tests.certificates import Authority, write_whole
from tests.manifests.kustomize import ROOT, find
from tests.manifests.pod import pod_args, pod_environment
from tests.support import KUBECTL, apply_objects, kube_of

RELEASE: Final = "860eae7"  # 0.1.0, dated 2026-11-26 in the CHANGELOG
PREVIOUS: Final = ROOT / "tests" / "data" / "releases" / "0.1.0" / "manifests"
ROLLOUTS: Final = {"seed": "ocm", "acm": "ocm/acm"}  # under manifests/, either release
Obj = dict[str, Any]
Ident = tuple[str, str, str]  # resource, namespace, name


def missing_history() -> str | None:
    """Why 0.1.0's commit cannot be read from this checkout's history, or None when it can."""
    git = shutil.which("git")
    if git is None:
        return "no git on this machine"
    found = subprocess.run([git, "-C", str(ROOT), "cat-file", "-e", f"{RELEASE}^{{commit}}"],
                           capture_output=True, check=False, timeout=60)  # fmt: skip
    if found.returncode != 0:
        return f"commit {RELEASE} (0.1.0) is not in this checkout's history (a source tarball?)"
    return None


def git_show(name: str) -> bytes:
    """`git show RELEASE:name`."""
    git = shutil.which("git")
    assert git is not None
    shown = subprocess.run([git, "-C", str(ROOT), "show", f"{RELEASE}:{name}"],
                           capture_output=True, check=True, timeout=60)  # fmt: skip
    return shown.stdout


def release_code(directory: Path) -> Path:
    """0.1.0's Python packages (controller, statemachines) from the history, in `directory`."""
    git = shutil.which("git")
    assert git is not None
    command = [git, "-C", str(ROOT), "archive", RELEASE, "controller", "statemachines"]
    archive = subprocess.run(command, capture_output=True, check=True, timeout=120)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(directory, filter="data")
    return directory


@dataclass(frozen=True)
class TlsHub:
    """A hub served over TLS, as kubectl sends a token over nothing else; every client of it
    trusts `ca`."""

    server: APIServer
    ca: Path

    @classmethod
    def started(cls, stack: ExitStack, crds: list[Path], directory: Path, **options: Any) -> TlsHub:
        authority = Authority("hub")
        cert, key = authority.server().write(directory, stem="hub")
        server = stack.enter_context(APIServer(crds, tls=ServingTLS(cert, key), **options))
        return cls(server, write_whole(directory / "hub-ca.crt", authority.ca))

    def connection(self, token: str) -> Connection:
        return Connection(self.server.url, token=token, ca_file=self.ca)

    def kube(self, token: str) -> RestKube:
        return RestKube(self.connection(token))

    def kubeconfig(self, token: str) -> bytes:
        """A kubeconfig for the bearer of `token`, trusting the hub's CA."""
        ca = base64.b64encode(self.ca.read_bytes()).decode()
        return yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "hub",
            "clusters": [{"name": "hub", "cluster": {"server": self.server.url,
                                                     "certificate-authority-data": ca}}],
            "users": [{"name": "hub", "user": {"token": token}}],
            "contexts": [{"name": "hub", "context": {"cluster": "hub", "user": "hub"}}],
        }).encode()  # fmt: skip

    def kubectl(self, token: str, *args: str) -> list[str]:
        """The real kubectl as the bearer of `token`; its output's lines."""
        assert KUBECTL is not None, "kubectl: pip install -e '.[test]' installs it"
        done = subprocess.run([KUBECTL, "--server", self.server.url, "--certificate-authority",
                               str(self.ca), "--token", token, *args],
                              capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()

    def apply(self, overlay: Path, token: str = "admin") -> list[str]:
        """`kubectl apply -k overlay` (no --prune: what the overlay no longer lists stays);
        kubectl's lines ("... created", "configured", "unchanged")."""
        return self.kubectl(token, "apply", "-k", str(overlay))

    def items(self, plural: str) -> list[Obj]:
        return list(
            json.loads("\n".join(self.kubectl("admin", "get", plural, "-o", "json")))["items"]
        )


def work_agent_update(
    server: APIServer, token: str, before: list[Obj], after: list[Obj]
) -> list[Obj]:
    """What OCM's work agent does when a ManifestWork's manifests change from `before` to `after`:
    apply each manifest (create, or update in place), then delete what the work no longer lists
    and it owns (background propagation); returns what it deleted."""
    kube = kube_of(server, token)
    apply_objects(kube, after)
    gone = no_longer_applied(before, after)
    for obj in reversed(gone):
        resource = kube.discover(obj["apiVersion"], obj["kind"])
        path = f"{resource.path(obj['metadata'].get('namespace', ''))}/{obj['metadata']['name']}"
        request = urllib.request.Request(server.url + path, method="DELETE",
                                         headers={"Authorization": f"Bearer {token}"})  # fmt: skip
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 200, path
    return gone


def hub_side_of(rollout: list[Obj], api: Connection) -> HubReplica:
    """The hub side as the rollout's Deployment starts it (its args and environment), its Lease
    where its Role lets it lease, on `api`; not started."""
    deployment = find(rollout, "Deployment", "addon-status-hub-controller")
    command, *args = pod_args(deployment, {})
    assert command == "hub"
    parser = argparse.ArgumentParser()
    add_hub_flags(parser)
    environ = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", **pod_environment(rollout, deployment)}
    options = HubOptions.from_args(parser.parse_args(args), environ)
    options = options.model_copy(update={"lease_namespace": environ["POD_NAMESPACE"]})
    return HubReplica(options, api, serve=False)


def kept(server: APIServer, where: Iterable[Ident]) -> dict[Ident, tuple[str, list[Obj]]]:
    """Each object's UID and conditions (sorted by type), read as stored."""
    seen = {}
    for resource, namespace, name in where:
        group, version = _API[resource]
        found = server.get_object(group, version, resource, namespace, name)
        assert found is not None, f"{resource} {namespace}/{name} is gone"
        conditions = (found.get("status") or {}).get("conditions") or []
        seen[(resource, namespace, name)] = (
            str(found["metadata"]["uid"]),
            sorted(conditions, key=lambda c: str(c["type"])),
        )
    return seen


_API: Final[Mapping[str, tuple[str, str]]] = {
    "observabilityaddons": ("observability.open-cluster-management.io", "v1beta1"),
    "managedclusteraddons": ("addon.open-cluster-management.io", "v1alpha1"),
    "customresourcedefinitions": ("apiextensions.k8s.io", "v1"),
    "deployments": ("apps", "v1"),
    "rolebindings": ("rbac.authorization.k8s.io", "v1"),
    "secrets": ("", "v1"),
}
