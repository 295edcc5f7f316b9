"""The hub side as its ServiceAccount, bound only by manifests/hub-controller's roles (issue 34):
an admin's hand edit of a ManagedClusterAddOn's `Degraded` with a later transition time makes the
hub side read the hub copy before writing over it (docs/spec.md §12.1) — a `get` the shipped
ClusterRole must grant — and the edit is repaired exactly once. Without that grant the read is a
403, and the log names the refused request in kube-apiserver's own whole sentence."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from tests.hub.hubside import (
    HUB_SIDE,
    HUB_USER,
    T1,
    Hub,
    cond,
    hub_server,
    replica,
    sample,
    seed,
    standard,
)
from tests.identities import ADMIN_TOKEN
from tests.support import eventually, kube_of

pytestmark = pytest.mark.integration

COPIES = "observabilityaddons"


@pytest.fixture
def hub() -> Iterator[Hub]:
    with hub_server() as made:
        yield made


def _hand_edit(hub: Hub, wanted: list[dict[str, object]]) -> list[dict[str, object]]:
    """An admin's `Degraded` later than the copy's: it looks written from a newer copy."""
    edited = [cond("Degraded", "False", "HandEdited", "an admin's edit", at=T1), *wanted[1:]]
    hub.set_addon_conditions("cluster1", edited)
    return edited


def test_a_hand_edit_with_a_later_time_is_repaired_once_as_the_service_account(hub: Hub) -> None:
    hub.cluster("cluster1")
    hub.set_copy("cluster1", seed("Degraded", "ForwardFailure"))
    wanted = standard(seed("Degraded", "ForwardFailure"))
    registry = CollectorRegistry()
    with replica(hub, registry=registry, resync=0.2) as made:
        eventually(lambda: hub.conditions("cluster1") == wanted, "the mirror")
        _hand_edit(hub, wanted)
        eventually(lambda: hub.conditions("cluster1") == wanted, "the repair")
        made.side.resync()
        assert made.side.wait_idle(5)
    assert hub.conditions("cluster1") == wanted
    assert sample(registry, "addon_status_hub_mirror_repairs_total") == 1
    assert hub.writes("cluster1", user=HUB_USER) == 2  # the mirror and one repair
    # the read of the copy before writing over the edit, allowed by the shipped role
    reads = {"resource": COPIES, "namespace": "cluster1", "user": HUB_USER, "verbs": ("get",)}
    allowed = hub.server.count_requests(**reads)
    assert allowed >= 1
    assert hub.server.count_requests(**reads, successful=False) == allowed  # none refused


def test_a_refused_read_is_logged_naming_the_request_in_the_servers_whole_sentence(
    hub: Hub, caplog: pytest.LogCaptureFixture
) -> None:
    """The ClusterRole as it shipped before issue 34 (copies: list and watch only). kubesim
    words the 403 as kube-apiserver's RBAC authorizer does (`forbidden` in
    k8s.io/apiserver/pkg/endpoints/handlers/responsewriters: `<kind> "<name>" is forbidden: User
    "<user>" cannot <verb> resource "<resource>" in API group "<group>" in the namespace
    "<ns>"`); the log keeps it whole, with the request the hub side made."""
    admin = kube_of(hub.server, ADMIN_TOKEN)
    roles = admin.discover("rbac.authorization.k8s.io/v1", "ClusterRole")
    role = admin.get(roles, "", "addon-status-hub-controller")
    for rule in role["rules"]:
        if rule["resources"] == [COPIES]:
            rule["verbs"] = ["list", "watch"]
    admin.replace(roles, "", "addon-status-hub-controller", role)
    hub.cluster("cluster1")
    hub.set_copy("cluster1", seed("Degraded", "ForwardFailure"))
    wanted = standard(seed("Degraded", "ForwardFailure"))
    with caplog.at_level("WARNING"), replica(hub):
        eventually(lambda: hub.conditions("cluster1") == wanted, "the mirror")
        edited = _hand_edit(hub, wanted)
        eventually(lambda: any("403" in m for m in caplog.messages), "the refusal told")
        assert hub.conditions("cluster1") == edited  # not written over blind
    [told] = [m for m in caplog.messages if "403" in m]
    sentence = (
        f"get ObservabilityAddon cluster1/observability-addon: 403 {COPIES}.observability."
        f'open-cluster-management.io "observability-addon" is forbidden: User "{HUB_USER}" '
        f'cannot get resource "{COPIES}" in API group "observability.open-cluster-management.io"'
        ' in the namespace "cluster1"'
    )
    assert sentence in told
    assert HUB_SIDE.namespace in told
