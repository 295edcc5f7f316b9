"""`watch_fleet` on the in-memory seam (FakeKube): written to a pipe or a file, a frame is
drawn once per change of a hub copy, never because the ages moved nor for a fresh list of the
same copies; a copy deleted on the hub leaves the view; a failed list is told once on stderr
and retried, the view following once the hub answers again."""

from __future__ import annotations

import io
import itertools
import json
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from itertools import count
from typing import Any

from controller.fleet.command import watch_fleet
from controller.fleet.view import Filters, Output, Row, render_rows
from controller.hub.mirror import cluster_namespace
from controller.kube.api import ADDON, NAMESPACE, UnavailableError
from controller.kube.fake import FakeKube
from tests.support import eventually

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def hub_copy(cluster: str, state: str) -> dict[str, Any]:
    condition = {"type": state, "status": "True", "reason": "Because", "message": "",
                 "lastTransitionTime": "2026-03-01T11:00:00Z"}  # fmt: skip
    return {"apiVersion": ADDON.api_version, "kind": ADDON.kind,
            "metadata": {"name": "observability-addon", "namespace": cluster},
            "status": {"conditions": [condition]}}  # fmt: skip


def fleet_kube(*clusters: tuple[str, str]) -> FakeKube:
    """A hub with a cluster namespace (as OCM labels it) and a hub copy per (cluster, state)."""
    kube = FakeKube()
    for cluster, state in clusters:
        add(kube, cluster, state)
    return kube


def add(kube: FakeKube, cluster: str, state: str) -> None:
    kube.put(NAMESPACE, cluster_namespace(cluster))
    kube.create(ADDON, cluster, hub_copy(cluster, state))


def copy_calls(kube: FakeKube, op: str) -> int:
    return sum(1 for c in kube.calls if c.op == op and c.resource == ADDON)


def states(frame: str) -> dict[str, str]:
    return {c["cluster"]: c["state"] for c in json.loads(frame)["clusters"]}


class Pipe(io.StringIO):
    def frames(self) -> list[str]:
        return [f for f in self.getvalue().split("\n\n") if f.strip()]


@contextmanager
def watching(kube: FakeKube, err: io.StringIO | None = None) -> Iterator[Pipe]:
    seconds = count()  # every frame a second later: the ages always move

    def now() -> datetime:
        return START + timedelta(seconds=next(seconds))

    def show(rows: Iterable[Row], at: datetime) -> str:
        return render_rows(list(rows), at, filters=Filters(), output=Output("json"))  # one line

    out, stop = Pipe(), threading.Event()
    thread = threading.Thread(
        target=watch_fleet, args=(kube, show),
        kwargs={"out": out, "err": err or io.StringIO(), "interval": 0.01, "stop": stop,
                "watch_seconds": 1, "now": now},
        daemon=True,
    )  # fmt: skip
    thread.start()
    try:
        yield out
    finally:
        stop.set()
        thread.join(5)


def test_a_pipe_gets_a_frame_per_change_not_per_tick() -> None:
    kube = fleet_kube(("c1", "Available"))
    with watching(kube) as out:
        eventually(lambda: len(out.frames()) == 1, what="the first frame")
        threading.Event().wait(0.2)  # some twenty redraw intervals, each a second later
        assert len(out.frames()) == 1
        add(kube, "c2", "Degraded")
        eventually(lambda: len(out.frames()) == 2, what="a frame for the new copy")
    assert states(out.frames()[-1]) == {"c1": "Available", "c2": "Degraded"}


def test_a_fresh_list_of_the_same_copies_draws_nothing() -> None:
    kube = fleet_kube(("c1", "Available"))
    kube.fail_next("watch", 410, resource=ADDON)  # the copies' first watch is told Gone
    with watching(kube) as out:
        eventually(lambda: copy_calls(kube, "list") == 2, what="a second list")
        eventually(lambda: copy_calls(kube, "watch") >= 2, what="a new watch")
        add(kube, "c2", "Degraded")
        # Updates are drawn in order: once c2 shows, the second list was drawn, or skipped.
        eventually(lambda: any("c2" in states(f) for f in out.frames()), what="c2 on the screen")
    shown = [json.loads(frame)["clusters"] for frame in out.frames()]
    assert all(before != after for before, after in itertools.pairwise(shown)), shown


def test_a_deleted_copy_leaves_the_view() -> None:
    kube = fleet_kube(("c1", "Available"), ("c2", "Available"))
    with watching(kube) as out:
        eventually(lambda: bool(out.frames()), what="the first frame")
        kube.delete(ADDON, "c2", "observability-addon")
        eventually(lambda: states(out.frames()[-1]) == {"c1": "Available"},
                   what="the view without c2")  # fmt: skip


def test_a_failed_list_is_told_once_and_retried() -> None:
    kube = fleet_kube(("c1", "Available"))
    kube.fail_next("list", UnavailableError("list: 503", status=503), resource=ADDON)
    err = io.StringIO()
    with watching(kube, err) as out:
        eventually(lambda: bool(out.frames()), what="the view after the retry")
    assert err.getvalue().count("hub unreachable, retrying") == 1


def test_a_namespace_that_is_no_clusters_is_not_shown_and_a_new_cluster_is() -> None:
    """The hub's own namespaces (a hub that manages itself) hold a copy but are no cluster:
    only namespaces OCM labelled `open-cluster-management.io/cluster-name` are
    (docs/spec.md §12)."""
    kube = fleet_kube(("c1", "Available"))
    kube.create(ADDON, "open-cluster-management-addon-observability",
                hub_copy("open-cluster-management-addon-observability", "Degraded"))  # fmt: skip
    with watching(kube) as out:
        eventually(lambda: bool(out.frames()), what="the first frame")
        assert states(out.frames()[-1]) == {"c1": "Available"}
        add(kube, "c2", "Degraded")
        eventually(lambda: states(out.frames()[-1]) == {"c1": "Available", "c2": "Degraded"},
                   what="the new cluster")  # fmt: skip
