"""`addon-status fleet`: one row per cluster from the hub copies, once or live (`--watch`).

`--watch` lists once and then watches from the list's resourceVersion (the one list-then-watch
loop, `controller.kube.reflector`) rather than listing periodically: on a hub with 5,000
clusters a list is the whole fleet each time, a watch only what changed; 410 Gone or a broken
watch lists again. On a
terminal the screen is redrawn in place every `--interval` seconds (the ages move); elsewhere
(a pipe, a file) a frame is printed only when a hub copy changed, JSON as one line per frame.

The client (`controller.kube`) is imported when the command runs, so `--help` stays light.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from shutil import get_terminal_size
from typing import TYPE_CHECKING, Any, TextIO

from controller.fleet.view import OUTPUTS, SORT_KEYS, UNKNOWN, Filters, Output, render, render_rows
from controller.terminal import escaped
from statemachines.names import ConditionType

if TYPE_CHECKING:
    from controller.kube.api import Kube

__all__ = ["add_fleet_parser", "run_fleet", "watch_fleet"]

_CLEAR = "\x1b[H\x1b[2J"  # cursor home, clear screen: a redraw in place
_STATES = [*(t.value for t in ConditionType), UNKNOWN]
_BY_CASE = {state.lower(): state for state in _STATES}


def _state(text: str) -> str:
    """A state in any case (`degraded`, `DEGRADED`), as kubectl reads a kind."""
    return _BY_CASE.get(text.lower(), text)  # an unknown one is refused by `choices`


def _seconds(text: str) -> float:
    """A positive number of seconds; argparse reports anything else (exit 2)."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:  # NaN included
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text!r}")
    return value


def add_fleet_parser(sub: Any) -> None:
    fleet = sub.add_parser(
        "fleet",
        help="one row per cluster from the hub copies of the addon, and a summary",
        description="Reads every cluster's hub copy in one list call; exit 0, 1 when the hub "
        "cannot be read, 2 for a bad kubeconfig or flag.",
    )
    fleet.add_argument(
        "--kubeconfig", help="the hub's kubeconfig (default: $KUBECONFIG, then ~/.kube/config)"
    )
    fleet.add_argument(
        "cluster_name", nargs="?", metavar="CLUSTER",
        help="one cluster described: its conditions, resources, versions and history",
    )  # fmt: skip
    fleet.add_argument(
        "--context", metavar="NAME", help="the kubeconfig's context to use (default: current)"
    )
    fleet.add_argument(
        "--copy-name", default="observability-addon", metavar="NAME",
        help="the hub copies: the ObservabilityAddon of this name in each cluster namespace "
        "(objects of other names are no cluster's)",
    )  # fmt: skip
    fleet.add_argument("--watch", action="store_true", help="keep the view live until Ctrl-C")
    fleet.add_argument(
        "--interval", type=_seconds, default=1.0, help="seconds between redraws with --watch"
    )
    fleet.add_argument(
        "-o", "--output", "--format", dest="format", choices=OUTPUTS, default="table",
        help="table (default), wide (lines not cut to the terminal), json, yaml (the same "
        "document), name (one cluster a line)",
    )  # fmt: skip
    fleet.add_argument(
        "--no-headers", action="store_true", help="table and wide: the rows alone, no summary"
    )
    fleet.add_argument(
        "--sort-by", choices=SORT_KEYS, default="cluster",
        help="cluster (default), state, or since (the longest in its state first)",
    )  # fmt: skip
    fleet.add_argument(
        "--state",
        action="append",
        default=[],
        type=_state,
        choices=_STATES,
        metavar="STATE",
        help="only clusters in STATE (one of: %(choices)s)",
    )
    fleet.add_argument(
        "--not", dest="excluded", action="append", default=[], type=_state, choices=_STATES,
        metavar="STATE", help="leave out clusters in STATE (e.g. --not Available)",
    )  # fmt: skip
    fleet.add_argument(
        "-l", "--selector", default="", metavar="SELECTOR",
        help="only clusters whose ManagedCluster has these labels (e.g. env=prod,cloud=aws); "
        "listed once, also under --watch",
    )  # fmt: skip
    fleet.add_argument(
        "--cluster", action="append", default=[], metavar="PATTERN",
        help="only clusters whose name matches the glob PATTERN (e.g. 'prod-*')",
    )  # fmt: skip
    fleet.set_defaults(handler=run_fleet)


def run_fleet(args: argparse.Namespace) -> int:
    from controller.fleet.clock import HubClock
    from controller.fleet.copies import list_clusters, list_hub_copies
    from controller.kube.api import KubeError
    from controller.kube.kubeconfig import KubeconfigError, KubeconfigSource, kubeconfig_path
    from controller.kube.rest import RestKube

    try:
        client = KubeconfigSource(kubeconfig_path(args.kubeconfig), args.context).current()
    except KubeconfigError as error:
        print(f"addon-status fleet: {escaped(error)}", file=sys.stderr)
        return 2
    kube = RestKube(client, request_timeout=30.0)
    hub_now = HubClock(client)
    filters = Filters(frozenset(args.state), frozenset(args.excluded), tuple(args.cluster))
    output = Output(args.format, headers=not args.no_headers, sort_by=args.sort_by)
    width = get_terminal_size((160, 24)).columns
    if args.cluster_name:
        return _one_cluster(kube, args.cluster_name, args.copy_name, args.format, hub_now)
    chosen, code = _selected(kube, args.selector)
    if code:
        return code
    if args.watch:

        def show(copies: Iterable[Mapping[str, Any]], now: datetime) -> str:
            if chosen is not None:
                copies = [c for c in copies if (c.get("metadata") or {}).get("namespace") in chosen]
            return render(copies, now, filters=filters, output=output, width=width)

        with contextlib.suppress(KeyboardInterrupt, BrokenPipeError):  # how a watch ends
            watch_fleet(kube, show, out=sys.stdout, interval=args.interval, name=args.copy_name,
                        now=hub_now)  # fmt: skip
        return _closed_quietly()
    try:
        listing = list_hub_copies(kube, args.copy_name)
        clusters = list_clusters(kube)
    except KubeError as error:
        print(f"addon-status fleet: {escaped(error)}", file=sys.stderr)
        return 1
    rows = [
        r for r in listing.rows if r.cluster in clusters and (chosen is None or r.cluster in chosen)
    ]
    with contextlib.suppress(BrokenPipeError):  # `fleet | head`: the reader has seen enough
        view = render_rows(rows, hub_now(), filters=filters, output=output, width=width)
        print(view)
    return _closed_quietly()


def _selected(kube: Kube, selector: str) -> tuple[frozenset[str] | None, int]:
    """The ManagedClusters `selector` picks (one list, kept for a --watch; None without one),
    or the exit code when they cannot be read."""
    from controller.fleet.copies import selected_clusters
    from controller.kube.api import InvalidError, KubeError

    try:
        return (selected_clusters(kube, selector) if selector else None), 0
    except InvalidError as error:  # the hub parses the selector, as for kubectl: a bad flag
        print(f"addon-status fleet: -l/--selector: {escaped(error)}", file=sys.stderr)
        return None, 2
    except KubeError as error:
        print(f"addon-status fleet: {escaped(error)}", file=sys.stderr)
        return None, 1


def _one_cluster(
    kube: Kube, cluster: str, name: str, output: str, now: Callable[[], datetime]
) -> int:
    """`fleet CLUSTER`: 0 with the cluster described, 1 when its copy cannot be read."""
    from controller.fleet.cluster import cluster_document, describe
    from controller.kube.api import ADDON, KubeError

    try:
        copy = kube.get(ADDON, cluster, name)
    except KubeError as error:
        print(f"addon-status fleet: {escaped(error)}", file=sys.stderr)
        return 1
    if output in ("json", "yaml"):
        document = cluster_document(copy)
        if output == "json":
            print(json.dumps(document))
        else:
            import yaml

            print(yaml.safe_dump(document, sort_keys=False).rstrip())
    elif output == "name":
        print(cluster)
    else:
        print(describe(copy, now()))
    return _closed_quietly()


def _closed_quietly() -> int:
    """0; stdout pointed at /dev/null if its reader went away, so that the interpreter's
    final flush does not fail on the broken pipe (Python's documented recipe)."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 0


def watch_fleet(
    kube: Kube,
    show: Callable[[Iterable[Mapping[str, Any]], datetime], str],
    *,
    out: TextIO,
    err: TextIO | None = None,
    interval: float,
    stop: threading.Event | None = None,
    watch_seconds: int = 300,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    name: str = "observability-addon",
) -> None:
    """Draw `show(copies, now)` until `stop` is set (or Ctrl-C): on a terminal every
    `interval` seconds in place, elsewhere once per change. Read failures are retried with
    backoff and the last good view stays; on a terminal the failure shows under the view,
    elsewhere it goes once to `err` (so that `out` stays one frame after another)."""
    from controller.hub.ocm import CLUSTER_LABEL
    from controller.kube.api import ADDON, NAMESPACE
    from controller.kube.backoff import Backoff
    from controller.kube.reflector import Reflector, Selection

    stop, err = stop or threading.Event(), err or sys.stderr
    updates: queue.Queue[tuple[str, Any]] = queue.Queue()
    clusters = Reflector(
        kube,
        Selection(NAMESPACE, label_selector=CLUSTER_LABEL),
        name="fleet-clusters",
        on_listed=lambda items, version: updates.put(("clusters", items)),
        on_event=lambda event: updates.put((f"cluster-{event.type}", event.object)),
        on_failed=lambda error: updates.put(("error", f"hub unreachable, retrying: {error}")),
        backoff=Backoff(initial=0.5, maximum=30.0),
        watch_seconds=watch_seconds,
    )
    reader = Reflector(
        kube,
        Selection(ADDON, name=name),
        name="fleet",
        on_listed=lambda items, version: updates.put(("list", items)),
        on_event=lambda event: updates.put((event.type, event.object)),
        on_failed=lambda error: updates.put(("error", f"hub unreachable, retrying: {error}")),
        backoff=Backoff(initial=0.5, maximum=30.0),
        watch_seconds=watch_seconds,
    )
    clusters.start()
    reader.start()
    try:
        _draw(updates, show, out=out, err=err, interval=interval, stop=stop, now=now)
    finally:
        reader.stop(timeout=1.0)
        clusters.stop(timeout=1.0)


def _draw(
    updates: queue.Queue[tuple[str, Any]],
    show: Callable[[Iterable[Mapping[str, Any]], datetime], str],
    *,
    out: TextIO,
    err: TextIO,
    interval: float,
    stop: threading.Event,
    now: Callable[[], datetime],
) -> None:
    fleet = _Fleet()
    drawn: dict[tuple[str, str], Mapping[str, Any]] | None = None  # the copies last drawn
    problem, tty = "", out.isatty()
    while not stop.is_set():
        changed = _drain(updates, fleet, timeout=interval)
        if changed is None:
            continue
        copies = fleet.shown()
        if isinstance(changed, str):
            if changed != problem and not tty:
                print(f"addon-status fleet: {escaped(changed)}", file=err, flush=True)
            problem = changed
        elif changed:
            problem = ""
        if tty:
            frame = show(copies.values(), now())
            out.write(_CLEAR + frame + (f"\n{escaped(problem)}\n" if problem else "\n"))
        elif changed is True and copies != drawn:  # a fresh list of the same copies: nothing new
            out.write(show(copies.values(), now()) + "\n\n")
            drawn = dict(copies)
        out.flush()


class _Fleet:
    """What `--watch` has seen: the hub copies and the cluster namespaces (None: not listed)."""

    def __init__(self) -> None:
        self.copies: dict[tuple[str, str], Mapping[str, Any]] = {}
        self.clusters: set[str] | None = None
        self.listed = False  # the copies, once

    def shown(self) -> dict[tuple[str, str], Mapping[str, Any]]:
        clusters = self.clusters or set()
        return {key: copy for key, copy in self.copies.items() if key[0] in clusters}

    def cluster_event(self, kind: str, payload: Any) -> None:
        if kind == "clusters":
            self.clusters = {_key(item)[1] for item in payload}
        elif kind == "cluster-DELETED":
            (self.clusters or set()).discard(_key(payload)[1])
        else:
            self.clusters = (self.clusters or set()) | {_key(payload)[1]}


def _drain(
    updates: queue.Queue[tuple[str, Any]],
    fleet: _Fleet,
    *,
    timeout: float,
) -> bool | str | None:
    """Apply what the readers sent within `timeout`: True when a copy or the clusters changed,
    False when nothing did, an error's text, or None before both first lists arrived."""
    changed: bool | str = False
    copies = fleet.copies
    try:
        kind, payload = updates.get(timeout=timeout)
        while True:
            if kind.startswith("cluster"):
                fleet.cluster_event(kind, payload)
                changed = True
            elif kind == "list":
                fleet.listed = True
                copies.clear()
                copies.update((_key(c), c) for c in payload)
                changed = True
            elif kind == "error":
                changed = str(payload)
            elif kind == "DELETED":
                copies.pop(_key(payload), None)
                changed = True
            else:
                copies[_key(payload)] = payload
                changed = True
            kind, payload = updates.get_nowait()
    except queue.Empty:
        pass
    if fleet.clusters is None or not fleet.listed:
        return changed if isinstance(changed, str) else None
    return changed


def _key(copy: Mapping[str, Any]) -> tuple[str, str]:
    meta = copy.get("metadata") or {}
    return str(meta.get("namespace", "")), str(meta.get("name", ""))
