"""Both sides of the seam for the loop's tests (the reflector's, the informer's): `FakeKube`,
and `RestKube` against kubesim, with what other actors do to the objects done the same way on
each (`backend`, a fixture of tests/kube/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from controller.kube.api import ADDON, Kube
from controller.kube.backoff import Backoff
from controller.kube.connection import Connection
from controller.kube.fake import FakeKube
from controller.kube.rest import RestKube
from kubesim import APIServer, RequestInfo
from tests.support import connection, eventually

CRD = Path(__file__).resolve().parents[2] / "manifests" / "base" / "crd.yaml"
NAMESPACE = "addons"
NAME = "observability-addon"
FAST = Backoff(initial=0.01, maximum=0.05)


def addon(name: str = NAME, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": ADDON.api_version,
        "kind": ADDON.kind,
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    }


class Backend:
    """What other actors do to the objects, the same way on both sides of the seam."""

    kube: Kube

    def put(self, obj: dict[str, Any]) -> None: ...

    def change_spec(self, name: str, **spec: Any) -> None: ...

    def delete(self, name: str) -> None: ...

    def interrupt(self, change: Callable[[], object] | None = None, *, compact: bool) -> None:
        """Drop every watch, then `change` (and forget the history) before any can resume."""

    def fail(self, verb: str, n: int) -> None:
        """The next `n` list (or watch) requests fail with 503."""

    @property
    def open_watches(self) -> int:
        return 0


class FakeBackend(Backend):
    def __init__(self) -> None:
        self.fake = FakeKube()
        self.kube = self.fake

    def put(self, obj: dict[str, Any]) -> None:
        self.fake.put(ADDON, obj)

    def change_spec(self, name: str, **spec: Any) -> None:
        self.fake.edit(ADDON, NAMESPACE, name, lambda obj: obj.update(spec=spec))

    def delete(self, name: str) -> None:
        self.fake.delete(ADDON, NAMESPACE, name)

    def interrupt(self, change: Callable[[], object] | None = None, *, compact: bool) -> None:
        with self.fake.lock:
            self.fake.disconnect()
            if change is not None:
                change()
            if compact:
                self.fake.compact()

    def fail(self, verb: str, n: int) -> None:
        self.fake.fail_next(verb, 503, times=n)  # type: ignore[arg-type]

    @property
    def open_watches(self) -> int:
        return self.fake.open_watches


class ServerBackend(Backend):
    """kubesim; a dropped watch reconnects only after a short delay, so that a change made
    right after the drop is made before the watch resumes (as with the fake's lock)."""

    def __init__(self, server: APIServer, api: Connection) -> None:
        self.server = server
        self.kube = RestKube(api, request_timeout=5.0)

    def put(self, obj: dict[str, Any]) -> None:
        self.server.put_object(ADDON.group, ADDON.version, ADDON.plural, obj)

    def change_spec(self, name: str, **spec: Any) -> None:
        stored = self.server.get_object(ADDON.group, ADDON.version, ADDON.plural, NAMESPACE, name)
        assert stored is not None
        stored["spec"] = spec
        stored["metadata"]["generation"] += 1
        self.put(stored)

    def delete(self, name: str) -> None:
        self.server.delete_object(ADDON.group, ADDON.version, ADDON.plural, NAMESPACE, name)

    def interrupt(self, change: Callable[[], object] | None = None, *, compact: bool) -> None:
        self.server.faults.delay(0.3, n=1, match=_watching)
        self.server.drop_watches()
        if change is not None:
            change()
        if compact:
            self.server.compact()

    def fail(self, verb: str, n: int) -> None:
        match = _watching if verb == "watch" else _listing
        self.server.faults.fail_next(n, 503, match=match)

    @property
    def open_watches(self) -> int:
        return self.server.open_watches


def _watching(info: RequestInfo) -> bool:
    return info.verb == "watch"


def _listing(info: RequestInfo) -> bool:
    return info.verb == "list"


@pytest.fixture(params=["fake", "kubesim"])
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    if request.param == "fake":
        made: Backend = FakeBackend()
        made.put(addon())
        yield made
        return
    with ExitStack() as stack:
        server = stack.enter_context(APIServer([CRD], namespaces=["default", NAMESPACE]))
        api = stack.enter_context(connection(server))
        made = ServerBackend(server, api)
        made.put(addon())
        yield made


def watching(backend: Backend) -> None:
    eventually(lambda: backend.open_watches > 0, "a watch to open")
