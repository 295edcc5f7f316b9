"""Built-in types through the typed client, which deserialises and validates every answer:
Leases (with 409), Events, Namespaces, TokenReviews, /version and discovery."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from kubernetes import client, dynamic, watch

from kubesim import POD_NAME, APIServer, UserInfo
from tests.kubesim.conftest import CRD, GROUP, NAME, VERSION, status_of
from tests.support import api_client

pytestmark = pytest.mark.integration
LEASE = "addon-status-controller"
RENEWED = datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)


@pytest.fixture
def leases(api: client.ApiClient) -> client.CoordinationV1Api:
    return client.CoordinationV1Api(api)


def _lease(holder: str = "pod-a") -> client.V1Lease:
    return client.V1Lease(
        metadata=client.V1ObjectMeta(name=LEASE),
        spec=client.V1LeaseSpec(
            holder_identity=holder,
            lease_duration_seconds=15,
            acquire_time=RENEWED,
            renew_time=RENEWED,
            lease_transitions=0,
        ),
    )


def test_a_lease_is_created_read_and_replaced(
    leases: client.CoordinationV1Api, namespace: str
) -> None:
    created = leases.create_namespaced_lease(namespace, _lease())
    assert created.spec.holder_identity == "pod-a"
    assert created.spec.renew_time == RENEWED
    read = leases.read_namespaced_lease(LEASE, namespace)
    assert read.metadata.resource_version == created.metadata.resource_version
    read.spec.holder_identity = "pod-b"
    read.spec.lease_transitions = 1
    replaced = leases.replace_namespaced_lease(LEASE, namespace, read)
    assert replaced.spec.holder_identity == "pod-b"
    assert int(replaced.metadata.resource_version) > int(read.metadata.resource_version)
    assert replaced.metadata.generation is None  # leases have no generation


def test_replacing_a_lease_from_a_stale_read_is_409(
    leases: client.CoordinationV1Api, namespace: str
) -> None:
    stale = leases.create_namespaced_lease(namespace, _lease())
    fresh = leases.read_namespaced_lease(LEASE, namespace)
    fresh.spec.holder_identity = "pod-b"
    leases.replace_namespaced_lease(LEASE, namespace, fresh)
    stale.spec.holder_identity = "pod-c"
    with pytest.raises(client.ApiException) as caught:
        leases.replace_namespaced_lease(LEASE, namespace, stale)
    status = status_of(caught.value)
    assert (status["code"], status["reason"]) == (409, "Conflict")
    assert status["message"].startswith(
        f'Operation cannot be fulfilled on leases.coordination.k8s.io "{LEASE}"'
    )


def test_a_lease_renew_time_must_have_microseconds(
    leases: client.CoordinationV1Api, namespace: str
) -> None:
    leases.create_namespaced_lease(namespace, _lease())
    with pytest.raises(client.ApiException) as caught:
        leases.patch_namespaced_lease(
            LEASE, namespace, {"spec": {"renewTime": "2026-01-01T12:00:00+00:00"}}
        )
    assert caught.value.status == 400  # metav1.MicroTime: exactly six fractional digits
    patched = leases.patch_namespaced_lease(
        LEASE, namespace, {"spec": {"renewTime": "2026-01-01T13:00:00.000001+01:00"}}
    )
    assert patched.spec.renew_time == datetime(2026, 1, 1, 12, 0, 0, 1, tzinfo=UTC)


def test_a_lease_duration_must_be_positive(
    leases: client.CoordinationV1Api, namespace: str
) -> None:
    lease = _lease()
    lease.spec.lease_duration_seconds = 0
    with pytest.raises(client.ApiException) as caught:
        leases.create_namespaced_lease(namespace, lease)
    [cause] = status_of(caught.value)["details"]["causes"]
    assert cause["field"] == "spec.leaseDurationSeconds"


def test_leases_are_listed_watched_and_deleted(
    leases: client.CoordinationV1Api, namespace: str
) -> None:
    created = leases.create_namespaced_lease(namespace, _lease())
    assert [item.metadata.name for item in leases.list_namespaced_lease(namespace).items] == [LEASE]
    watcher = watch.Watch()
    for event in watcher.stream(leases.list_namespaced_lease, namespace, timeout_seconds=5):
        assert (event["type"], event["object"].spec.holder_identity) == ("ADDED", "pod-a")
        watcher.stop()
    leases.delete_namespaced_lease(LEASE, namespace)
    with pytest.raises(client.ApiException) as caught:
        leases.read_namespaced_lease(LEASE, namespace)
    assert caught.value.status == 404
    assert created.metadata.uid


def _event(namespace: str, involved_namespace: str) -> client.CoreV1Event:
    return client.CoreV1Event(
        metadata=client.V1ObjectMeta(name=f"{NAME}.1"),
        involved_object=client.V1ObjectReference(
            api_version=f"{GROUP}/{VERSION}",
            kind="ObservabilityAddon",
            name=NAME,
            namespace=involved_namespace,
        ),
        reason="Degraded",
        message="metrics-collector: ForwardFailure",
        type="Warning",
        first_timestamp=RENEWED,
        last_timestamp=RENEWED,
        count=1,
        source=client.V1EventSource(component="addon-status"),
    )


def test_an_event_is_created_patched_and_listed(core: client.CoreV1Api, namespace: str) -> None:
    created = core.create_namespaced_event(namespace, _event(namespace, namespace))
    assert created.reporting_component == "" and created.event_time is None
    assert created.first_timestamp == RENEWED.replace(microsecond=0)  # metav1.Time: seconds
    patched = core.patch_namespaced_event(f"{NAME}.1", namespace, {"count": 2})
    assert patched.count == 2
    found = core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={NAME}")
    assert [e.count for e in found.items] == [2]


def test_a_repeat_is_a_strategic_merge_patch_of_count_last_time_and_message(
    core: client.CoreV1Api, namespace: str
) -> None:
    """kube-apiserver applies client-go's repeat patch to a core/v1 Event unconditionally (the
    Event strategy allows updates without a resourceVersion): count, lastTimestamp and message
    change, firstTimestamp and the object reference stay, the resourceVersion moves."""
    created = core.create_namespaced_event(namespace, _event(namespace, namespace))
    later = "2026-01-01T12:05:00Z"
    patched = core.patch_namespaced_event(
        f"{NAME}.1",
        namespace,
        {"count": 2, "lastTimestamp": later, "message": "again"},
        _content_type="application/strategic-merge-patch+json",
    )
    assert (patched.count, patched.message) == (2, "again")
    assert patched.last_timestamp == datetime(2026, 1, 1, 12, 5, tzinfo=UTC)
    assert patched.first_timestamp == created.first_timestamp
    assert patched.involved_object == created.involved_object
    assert int(patched.metadata.resource_version) > int(created.metadata.resource_version)


def test_patching_an_event_that_expired_is_404_not_found(
    core: client.CoreV1Api, namespace: str
) -> None:
    """An Event deleted (by its TTL) answers a patch with kube-apiserver's NotFound Status, which
    is what tells client-go's recorder to create it again."""
    with pytest.raises(client.ApiException) as caught:
        core.patch_namespaced_event(f"{NAME}.gone", namespace, {"count": 2})
    status = status_of(caught.value)
    assert (caught.value.status, status["reason"]) == (404, "NotFound")
    assert status["details"] == {"name": f"{NAME}.gone", "kind": "events"}
    assert status["message"] == f'events "{NAME}.gone" not found'


def test_an_event_about_an_object_elsewhere_is_422(core: client.CoreV1Api, namespace: str) -> None:
    with pytest.raises(client.ApiException) as caught:
        core.create_namespaced_event(namespace, _event(namespace, "default"))
    [cause] = status_of(caught.value)["details"]["causes"]
    assert (cause["field"], cause["message"]) == (
        "involvedObject.namespace",
        'Invalid value: "default": does not match event.namespace',
    )


def test_a_namespace_gets_what_kube_apiserver_adds(core: client.CoreV1Api, namespace: str) -> None:
    read = core.read_namespace(namespace)
    assert read.metadata.labels == {"kubernetes.io/metadata.name": namespace}
    assert read.spec.finalizers == ["kubernetes"] and read.status.phase == "Active"
    names = {ns.metadata.name for ns in core.list_namespace().items}
    assert {"default", "kube-system", namespace} <= names


def test_a_token_review_answers_from_the_token_table() -> None:
    user = UserInfo(
        "system:serviceaccount:obs:metrics-collector",
        uid="sa-1",
        groups=("system:serviceaccounts",),
    )
    with (
        APIServer([CRD], tokens={"reviewer": UserInfo("reviewer"), "collector": user}) as srv,
        api_client(srv, "reviewer") as api,
    ):
        reviews = client.AuthenticationV1Api(api)
        known = reviews.create_token_review(
            client.V1TokenReview(spec=client.V1TokenReviewSpec(token="collector"))
        )
        assert known.status.authenticated is True
        assert (known.status.user.username, known.status.user.uid) == (user.username, "sa-1")
        assert known.status.user.groups == ["system:serviceaccounts", "system:authenticated"]
        unknown = reviews.create_token_review(
            client.V1TokenReview(spec=client.V1TokenReviewSpec(token="nobody"))
        )
        assert not unknown.status.authenticated and unknown.status.user.username is None


def test_a_token_bound_to_a_pod_names_it_in_extra_and_in_the_audit_log() -> None:
    """kube-apiserver's ServiceAccount authenticator puts a bound token's pod in `user.extra`
    (`authentication.kubernetes.io/pod-name`), which a TokenReview shows and the audit log
    records: two replicas of one Deployment share their user and groups and differ there."""
    account = "system:serviceaccount:obs:addon-status-controller"
    tokens = {
        "reviewer": UserInfo("reviewer", groups=("system:masters",)),
        **{f"pod-{n}": UserInfo(account, extra=((POD_NAME, (f"controller-{n}",)),)) for n in "ab"},
    }
    with APIServer([CRD], tokens=tokens, rbac=True) as srv, api_client(srv, "reviewer") as api:
        review = client.AuthenticationV1Api(api).create_token_review(
            client.V1TokenReview(spec=client.V1TokenReviewSpec(token="pod-a"))
        )
        assert review.status.user.username == account
        assert review.status.user.extra == {POD_NAME: ["controller-a"]}
        for token in ("pod-a", "pod-b"):
            with api_client(srv, token) as pod, pytest.raises(client.ApiException):
                client.CoreV1Api(pod).list_namespace()  # no role: a 403, audited all the same
        refused = [(r.user, r.pod, r.code) for r in srv.audit if r.resource == "namespaces"]
        assert refused == [(account, "controller-a", 403), (account, "controller-b", 403)]
        assert srv.count_requests(verbs=("list",), pod="controller-b", successful=False) == 1


def test_version_is_complete_for_the_typed_client(api: client.ApiClient) -> None:
    info = client.VersionApi(api).get_code()
    assert info.git_version.startswith("v1.") and info.platform == "linux/amd64"


def test_discovery_serves_the_dynamic_client(
    api: client.ApiClient, server: APIServer, namespace: str
) -> None:
    groups = {g.name for g in client.ApisApi(api).get_api_versions().groups}
    assert {GROUP, "coordination.k8s.io", "authentication.k8s.io"} <= groups
    resources = {r.name for r in client.CoordinationV1Api(api).get_api_resources().resources}
    assert resources == {"leases"}
    addons = dynamic.DynamicClient(api).resources.get(
        api_version=f"{GROUP}/{VERSION}", kind="ObservabilityAddon"
    )
    assert addons.namespaced and addons.subresources["status"]
    assert addons.get(namespace=namespace).items == []
