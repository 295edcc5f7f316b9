"""Whole lists a page at a time (`controller.kube.pager`) and each page decoded an item at a
time (`controller.kube.listing`), against kubesim over HTTP (which pages as kube-apiserver does:
`limit`, `continue`, 410 once the first page's version left the history) and against servers
that are not kube-apiserver: a continue chain that never ends is cut in one line, an answer that
is no list is refused, and decoding a page keeps what the reader keeps, not the page."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.kube.api import NAMESPACE, GoneError, KubeError, Page, whole
from controller.kube.listing import decode_event, decode_page
from controller.kube.pager import list_all
from controller.kube.reads import conditions_only
from controller.kube.rest import RestKube
from kubesim import APIServer
from tests.kube.test_hostile_server import serve  # noqa: F401 - a fixture
from tests.support import connection

pytestmark = pytest.mark.integration
CRD = Path(__file__).resolve().parents[2] / "manifests" / "base" / "crd.yaml"
CLUSTERS = [f"cluster{i:02d}" for i in range(7)]


@pytest.fixture
def hub() -> Iterator[tuple[APIServer, RestKube]]:
    with APIServer([CRD], namespaces=CLUSTERS) as server, connection(server) as api:
        yield server, RestKube(api, request_timeout=5.0)


def name_of(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["name"])


def test_every_page_is_asked_and_the_items_come_in_order_at_the_lists_version(
    hub: tuple[APIServer, RestKube],
) -> None:
    server, kube = hub
    listed = list_all(kube, NAMESPACE, "", keep=name_of, page=2)
    # kube-apiserver: a list with limit=2 answers 2 items and a continue token until the last
    assert [n for n in listed.items if n.startswith("cluster")] == CLUSTERS
    assert listed.pages == -(-len(listed.items) // 2)
    assert listed.resource_version == server.resource_version


def test_a_continue_the_server_has_forgotten_starts_the_list_again(
    hub: tuple[APIServer, RestKube],
) -> None:
    server, kube = hub
    calls = 0

    def keep(obj: dict[str, Any]) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:  # while the first page is read: the history moves past its version
            server.put_object("", "v1", "namespaces", {"metadata": {"name": "late"}})
            server.compact()
        return name_of(obj)

    listed = list_all(kube, NAMESPACE, "", keep=keep, page=3)
    # kube-apiserver answers the continue of a compacted version 410 Expired; a fresh list
    # from the first page holds the namespace made meanwhile, once
    assert sorted(n for n in listed.items if n.startswith(("cluster", "late"))) == [
        *CLUSTERS,
        "late",
    ]


def test_a_list_that_meets_410_at_every_restart_fails_as_gone(
    hub: tuple[APIServer, RestKube],
) -> None:
    server, kube = hub

    def keep(obj: dict[str, Any]) -> str:
        server.put_object("", "v1", "namespaces", {"metadata": {"name": "busy"}})
        server.compact()
        return name_of(obj)

    with pytest.raises(GoneError):
        list_all(kube, NAMESPACE, "", keep=keep, page=1)


def endless_chain(handler: Any) -> None:
    """A list whose every page names a next one."""
    body = json.dumps({
        "kind": "NamespaceList", "apiVersion": "v1", "items": [{"metadata": {"name": "x" * 900}}],
        "metadata": {"resourceVersion": "7", "continue": "more"},
    }).encode()  # fmt: skip
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def test_a_continue_chain_that_never_ends_is_cut_in_one_line(
    serve: Callable[[Any], RestKube],  # noqa: F811 - the fixture
) -> None:
    kube = serve(endless_chain)
    with pytest.raises(KubeError) as raised:
        list_all(kube, NAMESPACE, "", keep=name_of, max_pages=40)
    assert "continue chain went past 40 pages" in str(raised.value)
    assert "\n" not in str(raised.value)
    with pytest.raises(KubeError, match="continue chain went past 2 pages and 2,"):
        list_all(kube, NAMESPACE, "", keep=name_of, max_bytes=2_000)  # ~1 KiB a page


@pytest.mark.parametrize(
    "answer",
    [b"[]", b'{"items": 7}', b'{"metadata": "x", "items": []}', b"not json"],
    ids=["an-array", "items-not-a-list", "metadata-not-an-object", "not-json"],
)
def test_an_answer_that_is_no_list_is_refused_in_one_line(answer: bytes) -> None:
    with pytest.raises(KubeError) as raised:
        decode_page(answer, whole, "list X")
    assert str(raised.value).startswith("list X: ") and "\n" not in str(raised.value)


def test_a_page_is_read_whatever_the_order_of_its_fields_and_items_not_objects_are_skipped() -> (
    None
):
    # kube-apiserver writes a custom resource list's fields in Go's map order: items before
    # metadata
    answer = json.dumps({
        "apiVersion": "v1", "items": [{"metadata": {"name": "a"}}, 7, None, {"metadata": {}}],
        "kind": "List", "metadata": {"continue": "t", "resourceVersion": "12"},
    }).encode()  # fmt: skip
    page = decode_page(answer, lambda obj: obj["metadata"].get("name"), "list")
    assert page == Page(["a"], "12", "t", len(answer))


def test_an_item_with_a_lone_surrogate_escape_is_decoded_as_the_standard_library_does() -> None:
    answer = b'{"items": [{"metadata": {"name": "a\\ud800"}}], "metadata": {}}'
    assert decode_page(answer, name_of, "list").items == ["a\ud800"]


def test_decoding_a_page_holds_what_is_kept_not_the_page_decoded() -> None:
    condition = {"type": "T", "status": "True", "reason": "R", "message": "m" * 80}
    entry = {"type": "Available", "reason": "R", "message": "h" * 200}
    status = {"conditions": [condition] * 9, "history": [entry] * 10}
    items = [{"metadata": {"name": f"c{i}", "namespace": f"c{i}"}, "status": status}
             for i in range(500)]  # fmt: skip
    answer = json.dumps({"items": items, "metadata": {"resourceVersion": "1"}}).encode()
    peak = _traced_peak(lambda: decode_page(answer, name_of, "list"))
    decoded_whole = _traced_peak(lambda: json.loads(answer))
    assert peak < len(answer) < decoded_whole  # one item at a time, not the page


def _traced_peak(work: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)
objects = st.fixed_dictionaries(
    {},
    optional={
        "apiVersion": json_values, "kind": json_values, "spec": json_values,
        "metadata": json_values | st.fixed_dictionaries(
            {"name": st.text(max_size=5)},
            optional={"managedFields": json_values, "labels": json_values},
        ),
        "status": json_values | st.fixed_dictionaries(
            {}, optional={"conditions": json_values, "history": json_values}
        ),
    },
)  # fmt: skip


@given(objects)
def test_a_conditions_reader_decodes_exactly_what_conditions_only_keeps(
    obj: dict[str, Any],
) -> None:
    """Field by field, without decoding the rest, a page's item and a watch line's object come
    out as `conditions_only` keeps the whole object: a metadata or status that is no object
    included (what the reader refuses, it must see)."""
    wire = json.dumps(obj).encode()
    page = decode_page(b'{"metadata":{},"items":[' + wire + b"]}", whole, "list", "conditions")
    assert page.items == [conditions_only(obj)]
    event = decode_event(b'{"type":"MODIFIED","object":' + wire + b"}", "conditions")
    assert event == ("MODIFIED", conditions_only(obj))


def test_an_error_event_is_decoded_whole_for_a_conditions_reader() -> None:
    line = b'{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}}'
    assert decode_event(line, "conditions") == (
        "ERROR", {"kind": "Status", "code": 410, "reason": "Expired"},
    )  # fmt: skip
