"""The one informer (`controller.kube.informer`), on both sides of the seam (`FakeKube`, and
`RestKube` against kubesim): a store of what the reader keeps of each object, keyed as client-go
keys it, and handlers told of each change — a list's objects added, a change updated with the old
and the new projection, a deletion deleted, a relist after an outage telling what changed
meanwhile, an object kept as nothing absent — and a write's own answer never taken back by a
late event or an older list (client-go's mutation cache)."""

from __future__ import annotations

import queue
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from controller.kube.api import ADDON, NAMESPACE
from controller.kube.informer import Handlers, Informer, key_of
from controller.kube.reflector import Selection
from tests.kube.backends import FAST, NAME, Backend, addon, watching
from tests.kube.backends import NAMESPACE as ADDONS
from tests.support import WAIT

Told = tuple[str, str, Any, Any]


def generation(obj: dict[str, Any]) -> int | None:
    """A projection: the generation alone; an object labelled `skip` is kept as nothing."""
    if (obj["metadata"].get("labels") or {}).get("skip"):
        return None
    return int(obj["metadata"].get("generation") or 0)


@contextmanager
def informing(backend: Backend) -> Iterator[tuple[Informer[int], queue.Queue[Told]]]:
    told: queue.Queue[Told] = queue.Queue()
    informer: Informer[int] = Informer(
        backend.kube,
        Selection(ADDON, ADDONS),
        name="test",
        keep=generation,
        handlers=Handlers(
            added=lambda key, new: told.put(("added", key, None, new)),
            updated=lambda key, old, new: told.put(("updated", key, old, new)),
            deleted=lambda key, old: told.put(("deleted", key, old, None)),
            listed=lambda version: told.put(("listed", version, None, None)),
        ),
        backoff=FAST,
        watch_seconds=30,
    )
    informer.start()
    try:
        yield informer, told
    finally:
        informer.stop(WAIT)


def next_told(told: queue.Queue[Told]) -> Told:
    return told.get(timeout=WAIT)


KEY = f"{ADDONS}/{NAME}"


def test_a_list_adds_then_each_change_is_told_with_the_old_and_the_new(backend: Backend) -> None:
    with informing(backend) as (informer, told):
        assert next_told(told) == ("added", KEY, None, 1)
        kind, version, _, _ = next_told(told)
        assert kind == "listed" and version
        assert informer.synced and informer.items() == {KEY: 1} and informer.get(KEY) == 1
        watching(backend)
        backend.change_spec(NAME, a=1)
        assert next_told(told) == ("updated", KEY, 1, 2)
        backend.put(addon("other"))
        assert next_told(told) == ("added", f"{ADDONS}/other", None, 1)


def test_an_object_kept_as_nothing_is_absent_and_leaving_the_store_is_a_deletion(
    backend: Backend,
) -> None:
    with informing(backend) as (informer, told):
        assert next_told(told)[0] == "added"
        assert next_told(told)[0] == "listed"
        watching(backend)
        skipped = addon()
        skipped["metadata"]["labels"] = {"skip": "yes"}
        backend.put(skipped)
        assert next_told(told) == ("deleted", KEY, 1, None)
        assert informer.get(KEY) is None


def test_a_relist_after_an_outage_tells_what_changed_meanwhile(backend: Backend) -> None:
    with informing(backend) as (_, told):
        assert next_told(told)[0] == "added"
        assert next_told(told)[0] == "listed"
        watching(backend)
        backend.interrupt(lambda: backend.put(addon("new")), compact=True)  # 410: a fresh list
        seen = {next_told(told)[:2] for _ in range(3)}
        assert seen == {
            ("updated", KEY),
            ("added", f"{ADDONS}/new"),
            ("listed", seen_version(seen)),
        }


def seen_version(seen: set[tuple[str, str]]) -> str:
    return next(version for kind, version in seen if kind == "listed")


def test_a_writes_answer_is_not_taken_back_by_a_late_event_or_an_older_list(
    backend: Backend,
) -> None:
    with informing(backend) as (informer, told):
        assert next_told(told)[0] == "added"
        assert next_told(told)[0] == "listed"
        answer = addon()
        answer["metadata"].update(generation=9, resourceVersion="999999")  # a later write's
        informer.remember(answer)
        assert informer.get(KEY) == 9
        watching(backend)
        backend.change_spec(NAME, a=1)  # an event older than the remembered answer
        backend.put(addon("marker"))
        assert next_told(told)[:2] == ("added", f"{ADDONS}/marker")  # in order: the older came
        assert informer.get(KEY) == 9


def test_a_writes_answer_that_comes_back_after_the_objects_deletion_does_not_revive_it(
    backend: Backend,
) -> None:
    """The hub side writes a ManagedClusterAddOn, OCM deletes it, the deletion's event comes
    first, then the write's answer: the store must not hold the object again (nothing would
    ever take it out: no event is left to come)."""
    with informing(backend) as (informer, told):
        assert next_told(told)[0] == "added"
        assert next_told(told)[0] == "listed"
        watching(backend)
        backend.change_spec(NAME, a=1)
        assert next_told(told)[0] == "updated"
        answer = backend.kube.get(ADDON, ADDONS, NAME)  # the write's answer, before the delete
        backend.delete(NAME)
        assert next_told(told) == ("deleted", KEY, 2, None)
        informer.remember(answer)
        assert informer.get(KEY) is None and informer.items() == {}
        backend.put(addon())  # created again: the store holds it as any new object
        assert next_told(told) == ("added", KEY, None, 1)


def test_keys_are_namespace_and_name_or_the_name_of_a_cluster_scoped_object() -> None:
    assert key_of({"metadata": {"name": "a", "namespace": "ns"}}) == "ns/a"
    assert key_of({"metadata": {"name": NAMESPACE.kind}}) == NAMESPACE.kind


WHO = [{"manager": "kubectl", "operation": "Update"}]


def test_a_conditions_reader_gets_metadata_and_conditions_alone_from_a_list_and_a_watch(
    backend: Backend,
) -> None:
    """The hub side's informers read `conditions` (docs/performance.md): what their `keep` gets
    is metadata with managedFields cut to who wrote (not their field sets) and status.conditions,
    whether the object came in a
    list's page or in a watch event, from the REST client or from the fake."""
    seen: queue.Queue[dict[str, Any]] = queue.Queue()

    def keep(obj: dict[str, Any]) -> int:
        seen.put(obj)
        return int(obj["metadata"].get("generation") or 0)

    big = addon("big", replicas=3)
    big["metadata"]["managedFields"] = [
        {"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:spec": {"f:replicas": {}}}}
    ]
    big["metadata"]["labels"] = {"team": "a"}
    condition = {"type": "Ready", "status": "True", "reason": "Up", "message": "",
                 "lastTransitionTime": "2026-11-28T00:00:00Z"}  # fmt: skip
    big["status"] = {"conditions": [condition], "history": [{"reason": "Up"}]}
    backend.put(big)
    informer: Informer[int] = Informer(
        backend.kube, Selection(ADDON, ADDONS, name="big", reads="conditions"), name="test",
        keep=keep, backoff=FAST, watch_seconds=30,
    )  # fmt: skip
    informer.start()
    try:
        listed = seen.get(timeout=WAIT)
        watching(backend)
        backend.change_spec("big", replicas=4)
        watched = seen.get(timeout=WAIT)
    finally:
        informer.stop(WAIT)
    for obj in (listed, watched):
        assert set(obj) == {"apiVersion", "kind", "metadata", "status"}
        assert obj["status"] == {"conditions": [condition]}
        assert obj["metadata"]["labels"] == {"team": "a"} and obj["metadata"]["name"] == "big"
        # kubesim, as it says, keeps no managedFields; the fake keeps what it was given
        assert obj["metadata"].get("managedFields", WHO) == WHO
