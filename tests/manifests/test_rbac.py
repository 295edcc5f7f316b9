"""The RBAC of manifests/ against what the code actually calls. A replica of the controller,
built by `controller.spoke.app.Replica` from the options the Deployment gives it (leader election
on, the hub kubeconfig, the reporters' grants from the ConfigMap), runs against an embedded
spoke API server and an embedded hub API server while the endpoint operator and the collectors
report through the report API with their own tokens. Each server's audit log then holds every
call: each must be allowed by the rules bound to the caller (the controller's service account
on the spoke, the spoke's hub identity on the hub), and each privilege those rules grant must
have been used by some call. The rule matcher itself is checked first, one row per RBAC rule
it implements.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest
import yaml
from kubernetes import client

from controller.kube.kubeconfig import kubeconfig_yaml
from controller.report_api.auth import Authorizer
from controller.reporter.client import ReportClient
from controller.spoke.addon import GROUP, KIND, PLURAL, VERSION, AddonRef
from controller.spoke.app import Replica
from controller.spoke.options import Address, RunOptions
from kubesim import APIServer, UserInfo
from statemachines.vocabulary import SEED
from tests.kubesim.test_upstream_crd import UPSTREAM_CRD
from tests.manifests.kustomize import MANIFESTS, build, find
from tests.manifests.pod import POD_NAME, flag_value, options_of
from tests.manifests.rbac import (
    Grant,
    Request,
    ServiceAccount,
    grants_for,
    unauthorized,
    unused,
)
from tests.support import api_client, connection, eventually

pytestmark = pytest.mark.integration

Obj = dict[str, Any]
CRD: Final = MANIFESTS / "base" / "crd.yaml"
LOOPBACK: Final = Address(host="127.0.0.1", port=0)
WAIT: Final = 10.0
ADMIN: Final = UserInfo("kubernetes-admin", groups=("system:masters",))


# --- the rule matcher ------------------------------------------------------------------------

ADDONS = {"apiGroups": [GROUP], "resources": [PLURAL], "verbs": ["get"]}


def _req(verb: str = "get", resource: str = PLURAL, **fields: str) -> Request:
    fields.setdefault("api_group", GROUP)
    fields.setdefault("namespace", "ns")
    return Request(verb, resource=resource, **fields)


@pytest.mark.parametrize(
    ("rule", "namespace", "request_", "allowed"),
    [
        pytest.param(ADDONS, "ns", _req(), True, id="exact-match"),
        pytest.param(ADDONS, "ns", _req("update"), False, id="other-verb"),
        pytest.param(ADDONS, "ns", _req(api_group=""), False, id="other-group"),
        pytest.param(ADDONS, "other", _req(), False, id="role-only-in-its-namespace"),
        pytest.param(ADDONS, None, _req(namespace="other"), True, id="cluster-binding-anywhere"),
        pytest.param(
            ADDONS, "ns", _req(subresource="status"), False, id="subresource-needs-its-own-rule"
        ),
        pytest.param(
            {**ADDONS, "resources": [f"{PLURAL}/status"]},
            "ns",
            _req(subresource="status"),
            True,
            id="resource-slash-subresource",
        ),
        pytest.param(
            {**ADDONS, "resources": [f"{PLURAL}/status"]},
            "ns",
            _req(),
            False,
            id="status-rule-not-the-resource",
        ),
        pytest.param(
            {**ADDONS, "resources": ["*/status"]},
            "ns",
            _req(subresource="status"),
            True,
            id="star-slash-subresource",
        ),
        pytest.param(
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            "ns",
            _req("delete", subresource="status"),
            True,
            id="wildcards",
        ),
        pytest.param(
            {**ADDONS, "resourceNames": ["a"]},
            "ns",
            _req(name="a"),
            True,
            id="named-object",
        ),
        pytest.param(
            {**ADDONS, "resourceNames": ["a"]},
            "ns",
            _req(name="b"),
            False,
            id="other-name",
        ),
        pytest.param(
            {**ADDONS, "resourceNames": ["a"]},
            "ns",
            _req("list"),
            False,
            id="names-never-allow-an-unnamed-request",
        ),
        pytest.param(
            {**ADDONS, "verbs": ["create"], "resourceNames": ["a"]},
            "ns",
            _req("create"),
            False,
            id="names-never-allow-a-create",
        ),
    ],
)
def test_rule_matching(rule: Obj, namespace: str | None, request_: Request, allowed: bool) -> None:
    assert Grant(rule, namespace, "rule").allows(request_) is allowed


def _binding(role: tuple[str, str], subject: Obj, namespace: str | None = None) -> Obj:
    """A RoleBinding in `namespace`, or a ClusterRoleBinding when it is None."""
    kind = "RoleBinding" if namespace else "ClusterRoleBinding"
    meta = {"name": f"{role[1]}-{namespace}", **({"namespace": namespace} if namespace else {})}
    return {
        "kind": kind,
        "metadata": meta,
        "roleRef": {"kind": role[0], "name": role[1]},
        "subjects": [subject],
    }


def test_rules_reach_a_service_account_only_through_its_bindings() -> None:
    me = {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}
    objects = [
        {"kind": "Role", "metadata": {"name": "r", "namespace": "ns"}, "rules": [ADDONS]},
        {"kind": "ClusterRole", "metadata": {"name": "c"}, "rules": [ADDONS]},
        {"kind": "ClusterRole", "metadata": {"name": "d"}, "rules": [ADDONS]},
        _binding(("Role", "r"), me, "ns"),
        _binding(("ClusterRole", "c"), me, "other"),  # c, but only in `other`
        _binding(("ClusterRole", "c"), {**me, "name": "someone-else"}),
        _binding(("ClusterRole", "d"), {"kind": "Group", "name": "system:serviceaccounts:ns"}),
    ]
    reach = {(g.source, g.namespace) for g in grants_for(ServiceAccount("ns", "sa"), objects)}
    assert reach == {
        ("Role r rules[0]", "ns"),
        ("ClusterRole c rules[0]", "other"),
        ("ClusterRole d rules[0]", None),
    }


def test_unused_names_each_idle_verb_of_a_rule() -> None:
    grant = Grant({**ADDONS, "verbs": ["get", "list"]}, "ns", "Role r rules[0]")
    assert unused([_req("get")], [grant]) == [f"Role r rules[0]: list {PLURAL}.{GROUP}"]
    assert unauthorized([_req("watch")], [grant]) == [f"watch {PLURAL}.{GROUP} in ns"]


# --- the controller's calls -------------------------------------------------------------------


@dataclass(frozen=True)
class Calls:
    """What one run of a replica asked of each API server, and whose rules apply."""

    spoke: list[Request]
    hub: list[Request]
    spoke_grants: list[Grant]
    hub_grants: list[Grant]


def _create_addon(server: APIServer, ref: AddonRef) -> None:
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "metadata": {"name": ref.name},
        "spec": {"enableMetrics": True},
    }
    with api_client(server, "admin") as admin:
        client.CustomObjectsApi(admin).create_namespaced_custom_object(
            GROUP, VERSION, ref.namespace, PLURAL, body
        )


def _reporters(spoke: list[Obj], deployment: Obj) -> tuple[Obj, str]:
    """The grants file the controller reads (`--authorization`, from its ConfigMap)."""
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    key = Path(flag_value(container, "--authorization")).name
    text = find(spoke, "ConfigMap", "addon-status-reporters")["data"][key]
    return yaml.safe_load(text), text


@dataclass(frozen=True)
class Identities:
    """Who calls whom: the controller's service account on the spoke, its hub identity, and
    the reporters of the grants file (username, the collector it speaks for or None)."""

    controller: ServiceAccount
    hub: ServiceAccount
    speakers: list[tuple[str, str | None]]

    def tokens(self) -> dict[str, UserInfo]:
        table = {f"token-{i}": UserInfo(user) for i, (user, _) in enumerate(self.speakers)}
        table["admin"] = ADMIN
        for token, account in (("controller", self.controller), ("hub", self.hub)):
            table[token] = UserInfo(account.username, groups=tuple(account.groups))
        return table


def identities(spoke_objects: list[Obj], hub_objects: list[Obj], deployment: Obj) -> Identities:
    pod = deployment["spec"]["template"]["spec"]
    controller = ServiceAccount(deployment["metadata"]["namespace"], pod["serviceAccountName"])
    [subject] = find(hub_objects, "RoleBinding", "addon-status-hub")["subjects"]
    grants, _ = _reporters(spoke_objects, deployment)
    speakers: list[tuple[str, str | None]] = [(s, None) for s in grants["operator"][:1]]
    speakers += [(subjects[0], name) for name, subjects in grants["collectors"].items()]
    return Identities(controller, ServiceAccount(subject["namespace"], subject["name"]), speakers)


def run_replica(tmp_path: Path, *, create_missing: bool = False, overlay: str = "base") -> Calls:
    """Boot the addon through the report API with leader election and hub replication on,
    wait until the hub copy and the Events are there, stop; the calls each server saw.
    `overlay` is the spoke's kustomization (`acm`: the spoke serves the upstream CRD)."""
    spoke_objects = build(MANIFESTS / overlay).objects
    spoke_crd = UPSTREAM_CRD if overlay == "acm" else CRD
    hub_objects = build(MANIFESTS / "hub").objects
    if create_missing:
        hub_objects += build(MANIFESTS / "hub" / "create-missing").objects
    deployment = find(spoke_objects, "Deployment")
    who = identities(spoke_objects, hub_objects, deployment)
    options = options_of(spoke_objects, deployment, files=tmp_path)
    hub_ref = options.hub_ref
    assert hub_ref is not None
    tokens = who.tokens()
    with (
        APIServer(
            [spoke_crd], tokens=tokens, namespaces=("default", options.ref.namespace)
        ) as spoke,
        APIServer([CRD], tokens=tokens, namespaces=("default", hub_ref.namespace)) as hub,
    ):
        _create_addon(spoke, options.ref)
        if not create_missing:
            _create_addon(hub, hub_ref)
        (tmp_path / "reporters.yaml").write_text(
            _reporters(spoke_objects, deployment)[1], encoding="utf-8"
        )
        # The shipped configuration, so that the health watches make their calls too.
        (tmp_path / "config.yaml").write_text(
            find(spoke_objects, "ConfigMap", "addon-status-config")["data"]["config.yaml"],
            encoding="utf-8",
        )
        (tmp_path / "hub.kubeconfig").write_text(
            kubeconfig_yaml(server=hub.url, token="hub"), encoding="utf-8"
        )
        local = {
            "metrics_address": LOOPBACK,
            "probe_address": LOOPBACK,
            "report_address": "127.0.0.1:0",
            "authorization": tmp_path / "reporters.yaml",
            "config_file": tmp_path / "config.yaml",
            "hub_kubeconfig": tmp_path / "hub.kubeconfig",
            "hub_create_missing": create_missing,
            # Plain HTTP here: the stand-in files hold no certificate, and the RBAC is the same
            # either way (tests/report_api/test_tls.py serves the report API over TLS).
            "tls_cert_file": None,
            "tls_key_file": None,
        }
        _exercise(spoke, hub, options.model_copy(update=local), who)
        # Discovery (/api, /apis: the dynamic client's) is every authenticated user's right
        # (the system:discovery ClusterRole), not the controller's Roles'.
        return Calls(
            spoke=[
                Request.audited(r)
                for r in spoke.audit
                if r.user == who.controller.username and not r.path
            ],
            hub=[Request.audited(r) for r in hub.audit if r.user == who.hub.username],
            spoke_grants=grants_for(who.controller, spoke_objects),
            hub_grants=grants_for(who.hub, hub_objects),
        )


def _exercise(spoke: APIServer, hub: APIServer, options: RunOptions, who: Identities) -> None:
    hub_ref = options.hub_ref
    assert hub_ref is not None
    with connection(spoke, "controller") as api:
        replica = Replica(options, api_client=api, identity=POD_NAME, hub_backoff=(0.02, 0.2))
        replica.start()
        try:
            _boot(replica, who.speakers)
            _repeat_a_move(replica, who.speakers)
            eventually(
                lambda: _conditions(hub, hub_ref) == _conditions(spoke, options.ref),
                "the hub copy",
            )
            eventually(
                lambda: (
                    spoke.count_requests(
                        verbs=("create",), resource="events", user=who.controller.username
                    )
                    > 0
                    and spoke.count_requests(
                        verbs=("patch",), resource="events", user=who.controller.username
                    )
                    > 0
                ),
                "Events, and a repeat patched onto one",
            )
            eventually(
                lambda: all(
                    spoke.count_requests(
                        verbs=(verb,), resource="deployments", user=who.controller.username
                    )
                    > 0
                    for verb in ("list", "watch")
                ),
                "the health watches on the collectors' Deployments",
            )
        finally:
            replica.stop()


def _boot(replica: Replica, speakers: list[tuple[str, str | None]]) -> None:
    eventually(lambda: replica.leading, "leadership")
    for index, (_, collector) in enumerate(speakers):
        reporter = ReportClient(replica.report_url, token=f"token-{index}", deadline=WAIT)
        try:
            reason = "ForwardSuccessful" if collector else "UpdateSuccessful"
            verdict = reporter.report(collector, reason=reason)
        finally:
            reporter.close()
        assert verdict["verdict"] == "accepted", verdict


def _repeat_a_move(replica: Replica, speakers: list[tuple[str, str | None]]) -> None:
    """The operator's update fails, succeeds, fails and succeeds: the second success is the
    same move as the first, so its Event is a repeat (a patch of the first)."""
    operator = next(index for index, (_, collector) in enumerate(speakers) if collector is None)
    reporter = ReportClient(replica.report_url, token=f"token-{operator}", deadline=WAIT)
    try:
        for reason in ("UpdateFailure", "UpdateSuccessful") * 2:
            assert reporter.report(None, reason=reason)["verdict"] == "accepted"
    finally:
        reporter.close()


def _conditions(server: APIServer, ref: AddonRef) -> object:
    obj = server.get_object(GROUP, VERSION, PLURAL, ref.namespace, ref.name)
    return ((obj or {}).get("status") or {}).get("conditions")


@pytest.fixture(scope="module")
def calls(tmp_path_factory: pytest.TempPathFactory) -> Calls:
    return run_replica(tmp_path_factory.mktemp("replica"))


def test_the_replica_called_both_servers_as_itself(calls: Calls) -> None:
    for requests in (calls.spoke, calls.hub):
        assert any(r.subresource == "status" and r.verb == "update" for r in requests)
    assert any(r.resource == "tokenreviews" for r in calls.spoke)
    assert any(r.resource == "leases" for r in calls.spoke)


def test_every_spoke_call_is_allowed_by_the_controllers_roles(calls: Calls) -> None:
    assert unauthorized(calls.spoke, calls.spoke_grants) == []


def test_every_privilege_of_the_controllers_roles_is_used(calls: Calls) -> None:
    assert unused(calls.spoke, calls.spoke_grants) == []


def test_every_hub_call_is_allowed_by_the_hub_role(calls: Calls) -> None:
    assert unauthorized(calls.hub, calls.hub_grants) == []


def test_every_privilege_of_the_hub_role_is_used(calls: Calls) -> None:
    assert unused(calls.hub, calls.hub_grants) == []


def test_creating_the_missing_hub_copy_needs_exactly_the_create_missing_grant(
    tmp_path: Path,
) -> None:
    calls = run_replica(tmp_path, create_missing=True)
    assert any(r.verb == "create" and r.resource == PLURAL for r in calls.hub)
    assert unauthorized(calls.hub, calls.hub_grants) == []
    assert unused(calls.hub, calls.hub_grants) == []
    without = [g for g in calls.hub_grants if "addon-status-hub-create" not in g.source]
    namespace = calls.hub[0].namespace
    assert unauthorized(calls.hub, without) == [f"create {PLURAL}.{GROUP} in {namespace}"]


def test_the_acm_overlay_grants_exactly_the_bookkeeping_configmaps_calls(tmp_path: Path) -> None:
    """manifests/acm: `create` of ConfigMaps in the namespace (it cannot name one), `get` and
    `update` of `observability-addon-status` only; every call allowed, every grant used."""
    calls = run_replica(tmp_path, overlay="acm")
    bookkeeping = [r for r in calls.spoke if r.resource == "configmaps"]
    assert {r.verb for r in bookkeeping} == {"create", "get", "update"}
    assert {r.name for r in bookkeeping if r.verb != "create"} == {"observability-addon-status"}
    assert unauthorized(calls.spoke, calls.spoke_grants) == []
    assert unused(calls.spoke, calls.spoke_grants) == []


def test_the_reporters_grants_load_and_cover_every_collector(
    spoke: list[Obj], deployment: Obj
) -> None:
    """The ConfigMap is the binding that lets the operator's and the collectors' service
    accounts report; `Authorizer.from_mapping` is what `--authorization` loads it with."""
    grants, _ = _reporters(spoke, deployment)
    Authorizer.from_mapping(grants, profile=SEED, source="reporters.yaml")
    assert set(grants["collectors"]) == {c.name for c in SEED.collectors}
    assert grants["operator"]
    prefix = f"system:serviceaccount:{deployment['metadata']['namespace']}:"
    for subject in [*grants["operator"], *(s for v in grants["collectors"].values() for s in v)]:
        assert subject.startswith(prefix), subject
