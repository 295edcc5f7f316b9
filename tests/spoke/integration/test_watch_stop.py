"""Stopping the list-and-watch loop on a quiet watch ends its thread at once, instead of
waiting for the server's watch timeout: a stopped controller leaves no reader behind."""

from __future__ import annotations

import time

from kubernetes import client

from controller.kube.addons import AddonRef, AddonStore
from controller.kube.official import OfficialKube
from controller.spoke.watch import AddonWatch
from tests.spoke.integration.conftest import NAME, NAMESPACE, Addon


def test_stopping_a_quiet_watch_ends_its_thread_at_once(
    api: client.ApiClient, addon: Addon
) -> None:
    seen: list[str] = []
    watch = AddonWatch(
        AddonStore(OfficialKube(api), AddonRef(namespace=NAMESPACE, name=NAME)),
        lambda event: seen.append(event.type),
        watch_seconds=300,
    )
    watch.start()
    deadline = time.monotonic() + 10
    while not seen and time.monotonic() < deadline:  # the first list, then a quiet watch
        time.sleep(0.01)
    assert seen
    time.sleep(0.2)
    started = time.monotonic()
    watch.stop(timeout=5.0)
    assert not watch.alive
    assert time.monotonic() - started < 2.0
