"""Beside ACM's observability operator (docs/spec.md §12.1): `run --addon-kind AddonStatus`
keeps its verdict in the project's own kind, on a spoke that serves no ObservabilityAddon: it
reads and writes the AddonStatus CR alone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client
from prometheus_client import CollectorRegistry

from controller.kube.api import OWN_ADDON
from kubesim import APIServer
from tests.clock import FakeClock
from tests.own_kind import own_kind_crd
from tests.spoke.fakes import NAMESPACE
from tests.spoke.integration.conftest import OPTIONS
from tests.spoke.support import spoke_replica
from tests.support import api_client, connection, eventually

pytestmark = pytest.mark.integration

NAME = "addon-status"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[APIServer]:
    with APIServer([own_kind_crd(tmp_path)], watch_history=200) as srv:
        yield srv


def test_the_verdict_is_kept_in_the_projects_own_kind(server: APIServer) -> None:
    g, v, p = OWN_ADDON.group, OWN_ADDON.version, OWN_ADDON.plural
    with api_client(server) as api:
        client.CoreV1Api(api).create_namespace({"metadata": {"name": NAMESPACE}})
        objects = client.CustomObjectsApi(api)
        body = {"apiVersion": OWN_ADDON.api_version, "kind": OWN_ADDON.kind,
                "metadata": {"name": NAME}, "spec": {}}  # fmt: skip
        objects.create_namespaced_custom_object(g, v, NAMESPACE, p, body)
        options = OPTIONS.model_copy(update={"addon_kind": "AddonStatus", "addon_name": NAME})
        replica = spoke_replica(options, api_client=connection(server), clock=FakeClock(),
                                registry=CollectorRegistry())  # fmt: skip
        replica.start()
        try:

            def conditions() -> list[str]:
                obj = objects.get_namespaced_custom_object(g, v, NAMESPACE, p, NAME)
                return [c["type"] for c in (obj.get("status") or {}).get("conditions") or []]

            eventually(lambda: "Progressing" in conditions(), "the first status write")
        finally:
            replica.stop()
