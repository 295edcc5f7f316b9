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
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import UTC, datetime
from shutil import get_terminal_size
from typing import TYPE_CHECKING, Any, TextIO

from controller.flags import (
    ADDON_KIND,
    ADDON_KINDS,
    AGENT_ADDON,
    CONTEXT,
    COPY_NAME,
    KUBECONFIG,
    MANAGED_ADDON_NAME,
    Flag,
    add_flags,
)
from controller.fleet.view import (
    OUTPUTS,
    SORT_KEYS,
    UNKNOWN,
    Filters,
    Output,
    Row,
    name_of,
    render_rows,
)
from controller.hub.path import PATH_REASONS
from controller.terminal import escaped
from statemachines.names import ConditionType
from statemachines.object_names import ADDON_CR, COPY_NAMES, MANAGED_ADDON, SHOWN_COPY_NAME

if TYPE_CHECKING:
    from controller.kube.api import ApiResource, Kube

__all__ = ["add_fleet_parser", "run_fleet", "watch_fleet"]

_CLEAR = "\x1b[H\x1b[2J"  # cursor home, clear screen: a redraw in place
_STATES = [*(t.value for t in ConditionType), UNKNOWN, *PATH_REASONS]
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


FLEET_FLAGS = (
    Flag("cluster_name", "CLUSTER",
         "one cluster described: its conditions, resources, versions and history", "CLUSTER",
         kind="positional", nargs="?", shown="every cluster, a row each"),
    KUBECONFIG,
    CONTEXT,
    replace(COPY_NAME, shown=SHOWN_COPY_NAME),
    replace(ADDON_KIND, choices=ADDON_KINDS, default=ADDON_KINDS[0]),
    replace(MANAGED_ADDON_NAME, default=MANAGED_ADDON,
            help=MANAGED_ADDON_NAME.help + ": its verdict on a broken path"),
    AGENT_ADDON,
    Flag("watch", "--watch", "keep the view live until Ctrl-C", kind="toggle", aliases=("-w",)),
    Flag("interval", "--interval", "seconds between redraws with --watch", "SECONDS",
         default=1.0, type=_seconds),
    Flag("format", "--output", "table, wide (lines not cut to the terminal), json, yaml (the "
         "same document, indented 4), name (kubectl's kind/name: "
         "managedcluster.cluster.open-cluster-management.io/CLUSTER)", "FORMAT",
         default="table", choices=OUTPUTS, aliases=("-o", "--format")),
    Flag("no_headers", "--no-headers", "table and wide: the rows alone, no summary",
         kind="toggle"),
    Flag("sort_by", "--sort-by", "cluster, state, or since (the longest in its state first)",
         "KEY", default="cluster", choices=SORT_KEYS),
    Flag("state", "--state", f"only clusters in STATE (one of: {', '.join(_STATES)})", "STATE",
         kind="list", type=_state, choices=_STATES, shown="every state"),
    Flag("excluded", "--not", "leave out clusters in STATE (e.g. --not Available)", "STATE",
         kind="list", type=_state, choices=_STATES),
    Flag("selector", "--selector", "only clusters whose ManagedCluster has these labels (e.g. "
         "env=prod,cloud=aws); listed once, also under --watch", "SELECTOR", default="",
         aliases=("-l",), shown="every cluster"),
    Flag("cluster", "--cluster", "only clusters whose name matches the glob PATTERN (e.g. "
         "'prod-*'; repeatable)", "PATTERN", kind="list", shown="every cluster"),
)  # fmt: skip
EXAMPLES = """examples:
  addon-status fleet --kubeconfig hub.kubeconfig
  addon-status fleet --not Available -o wide
  addon-status fleet cluster1
  addon-status fleet -w -l env=prod
  addon-status fleet --addon-kind AddonStatus --managed-addon addon-status"""


def add_fleet_parser(sub: Any) -> None:
    fleet = sub.add_parser(
        "fleet", help="one row per cluster from the hub copies of the addon, and a summary",
        description="Reads every cluster's hub copy in one list call; exit 0, 1 when the hub "
        "cannot be read, 2 for a bad kubeconfig or flag.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    add_flags(fleet, FLEET_FLAGS, variables=False)
    fleet.set_defaults(handler=run_fleet)


def run_fleet(args: argparse.Namespace) -> int:
    from controller.fleet.clock import HubClock
    from controller.fleet.copies import list_clusters, list_hub_copies, list_ocm
    from controller.fleet.paths import join
    from controller.kube.api import ADDON_KINDS, KubeError
    from controller.kube.kubeconfig import KubeconfigError, KubeconfigSource, kubeconfig_path
    from controller.kube.rest import RestKube

    args.copy_name = args.copy_name or COPY_NAMES[args.addon_kind]
    try:
        client = KubeconfigSource(kubeconfig_path(args.kubeconfig), args.context).current()
    except KubeconfigError as error:
        print(f"addon-status fleet: {escaped(error)}", file=sys.stderr)
        return 2
    kube = RestKube(client, request_timeout=30.0)
    hub_now = HubClock(RestKube(client, request_timeout=5.0))
    filters = Filters(frozenset(args.state), frozenset(args.excluded), tuple(args.cluster))
    output = Output(args.format, headers=not args.no_headers, sort_by=args.sort_by)
    width = get_terminal_size((160, 24)).columns
    if args.cluster_name:
        return _one_cluster(kube, args, hub_now)
    chosen, code = _selected(kube, args.selector)
    if code:
        return code
    if args.watch:

        def show(rows: Iterable[Row], now: datetime) -> str:
            if chosen is not None:
                rows = [r for r in rows if r.cluster in chosen]
            return render_rows(list(rows), now, filters=filters, output=output, width=width)

        with contextlib.suppress(KeyboardInterrupt, BrokenPipeError):  # how a watch ends
            watch_fleet(kube, show, out=sys.stdout, interval=args.interval, name=args.copy_name,
                        addon=args.addon_name, agent_addon=args.agent_addon,
                        now=hub_now, kind=ADDON_KINDS[args.addon_kind])  # fmt: skip
        return _closed_quietly()
    try:
        listing = list_hub_copies(kube, args.copy_name, kind=ADDON_KINDS[args.addon_kind])
        clusters = list_clusters(kube)
    except KubeError as error:
        print(f"addon-status fleet: {escaped(error)}", file=sys.stderr)
        return 1
    ocm = list_ocm(kube, args.addon_name, args.agent_addon)
    if ocm.problem:
        print(f"addon-status fleet: {escaped(ocm.problem)}", file=sys.stderr)
    now = hub_now()
    rows = [
        r for r in join(listing.rows, clusters, ocm, now) if chosen is None or r.cluster in chosen
    ]
    with contextlib.suppress(BrokenPipeError):  # `fleet | head`: the reader has seen enough
        view = render_rows(rows, now, filters=filters, output=output, width=width)
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


def _one_cluster(kube: Kube, args: argparse.Namespace, now: Callable[[], datetime]) -> int:
    """`fleet CLUSTER`: 0 with the cluster described (its copy, and OCM's conditions beside),
    1 when neither its copy nor its ManagedClusterAddOn can be read."""
    from controller.fleet.cluster import ClusterOcm, cluster_document, describe
    from controller.hub.ocm import MANAGED_CLUSTER, MANAGED_CLUSTER_ADDON
    from controller.kube.api import ADDON_KINDS, KubeError, NotFoundError

    cluster, output = args.cluster_name, args.format

    def read(resource: ApiResource, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return kube.get(resource, namespace, name)
        except NotFoundError:
            return None

    try:
        copy = read(ADDON_KINDS[args.addon_kind], cluster, args.copy_name)
        addon = read(MANAGED_CLUSTER_ADDON, cluster, args.addon_name)
    except KubeError as error:
        print(f"addon-status fleet: {escaped(error)}", file=sys.stderr)
        return 1
    if copy is None and addon is None:
        neither = f"cluster {cluster} has neither a hub copy {args.copy_name}"
        print(f"addon-status fleet: {escaped(neither)} nor a ManagedClusterAddOn {args.addon_name}",
              file=sys.stderr)  # fmt: skip
        return 1
    agent = addon
    try:
        if args.agent_addon and args.agent_addon != args.addon_name:
            agent = read(MANAGED_CLUSTER_ADDON, cluster, args.agent_addon)
        managed = read(MANAGED_CLUSTER, "", cluster)
    except KubeError:
        agent, managed = addon, None  # OCM's kinds not served or not readable: the copy alone
    ocm = ClusterOcm(args.addon_name, addon, agent, managed)
    if output in ("json", "yaml"):
        document = cluster_document(cluster, copy, ocm, now())
        if output == "json":
            print(json.dumps(document, indent=4))
        else:
            import yaml

            print(yaml.safe_dump(document, sort_keys=False).rstrip())
    elif output == "name":
        print(name_of(cluster))
    else:
        print(describe(cluster, copy, ocm, now()))
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
    show: Callable[[Iterable[Row], datetime], str],
    *,
    out: TextIO,
    err: TextIO | None = None,
    interval: float,
    stop: threading.Event | None = None,
    watch_seconds: int = 300,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    name: str = ADDON_CR,
    addon: str = MANAGED_ADDON,
    agent_addon: str = "",
    kind: ApiResource | None = None,
) -> None:
    """Draw `show(rows, now)` until `stop` is set (or Ctrl-C): on a terminal every `interval`
    seconds in place, elsewhere once per change of a row. The hub copies, the cluster
    namespaces and OCM's word on each cluster are each followed by an informer (paged lists,
    then a watch). Read failures are retried with backoff and the last good view stays; on a
    terminal the failure shows under the view, elsewhere it goes once to `err` (so that `out`
    stays one frame after another). A hub that serves no OCM kind shows the copies' states."""
    from controller.fleet.paths import OcmListing, join, keep_addon, keep_cluster
    from controller.fleet.view import row_of
    from controller.hub.ocm import CLUSTER_LABEL, MANAGED_CLUSTER, MANAGED_CLUSTER_ADDON
    from controller.kube.api import ADDON, NAMESPACE
    from controller.kube.backoff import Backoff
    from controller.kube.informer import Handlers, Informer
    from controller.kube.reflector import Selection

    stop, err = stop or threading.Event(), err or sys.stderr
    updates: queue.Queue[str] = queue.Queue()  # "": something changed; else a failure's words
    changed = Handlers[Any](
        added=lambda *_: updates.put(""), deleted=lambda *_: updates.put(""),
        updated=lambda key, old, new: updates.put("") if old != new else None,
        listed=lambda version: updates.put(""),
    )  # fmt: skip
    common: dict[str, Any] = {"backoff": Backoff(initial=0.5, maximum=30.0),
                              "watch_seconds": watch_seconds, "handlers": changed}  # fmt: skip
    told: dict[str, Any] = {"on_failed": lambda e: updates.put(f"hub unreachable, retrying: {e}")}
    clusters: Informer[bool] = Informer(
        kube, Selection(NAMESPACE, label_selector=CLUSTER_LABEL), name="fleet-clusters",
        keep=lambda obj: True, **common, **told,
    )  # fmt: skip
    copies = Informer(
        kube, Selection(kind or ADDON, name=name), name="fleet", keep=row_of, **common, **told
    )

    def addons(name: str, called: str) -> Informer[Any]:  # OCM's kinds: a hub may serve none
        return Informer(kube, Selection(MANAGED_CLUSTER_ADDON, name=name), name=called,
                        keep=lambda obj: keep_addon(obj)[1], **common)  # fmt: skip

    verdicts = agents = addons(addon, "fleet-addons")
    if agent_addon and agent_addon != addon:
        agents = addons(agent_addon, "fleet-agents")
    managed = Informer(kube, Selection(MANAGED_CLUSTER), name="fleet-managed-clusters",
                       keep=lambda obj: keep_cluster(obj)[1] or {}, **common)  # fmt: skip
    informers = {clusters, copies, verdicts, agents, managed}

    def rows() -> list[Row] | None:
        if not (clusters.synced and copies.synced):
            return None
        ocm = OcmListing(
            {key.split("/")[0]: v for key, v in verdicts.items().items()},
            {key.split("/")[0]: v for key, v in agents.items().items()},
            {key: v or None for key, v in managed.items().items()},
        )
        return join(list(copies.items().values()), frozenset(clusters.items()), ocm, now())

    for informer in informers:
        informer.start()
    try:
        _draw(updates, rows, show, out=out, err=err, interval=interval, stop=stop, now=now)
    finally:
        for informer in informers:
            informer.stop(timeout=1.0)


def _draw(
    updates: queue.Queue[str],
    rows: Callable[[], list[Row] | None],
    show: Callable[[Iterable[Row], datetime], str],
    *,
    out: TextIO,
    err: TextIO,
    interval: float,
    stop: threading.Event,
    now: Callable[[], datetime],
) -> None:
    drawn: list[Row] | None = None  # the rows last drawn
    problem, tty = "", out.isatty()
    while not stop.is_set():
        told = _drain(updates, timeout=interval)
        if not told and not tty:
            continue
        for words in told:  # in order: a failure is told once, a change after it clears it
            if words and words != problem and not tty:
                print(f"addon-status fleet: {escaped(words)}", file=err, flush=True)
            problem = words
        current = rows()
        if current is None:
            continue
        if tty:
            frame = show(current, now())
            out.write(_CLEAR + frame + (f"\n{escaped(problem)}\n" if problem else "\n"))
        elif "" in told and current != drawn:  # a fresh list of the same rows: nothing new
            out.write(show(current, now()) + "\n\n")
            drawn = current
        out.flush()


def _drain(updates: queue.Queue[str], *, timeout: float) -> list[str]:
    """What the informers told within `timeout`, in order: "" a change, else a failure's
    words."""
    told: list[str] = []
    try:
        told.append(updates.get(timeout=timeout))
        while True:
            told.append(updates.get_nowait())
    except queue.Empty:
        return told
