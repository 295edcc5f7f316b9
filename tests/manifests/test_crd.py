"""The addon CR's CRD against what the controller writes, through the embedded API server that
serves it with kube-apiserver's rules for structural schemas (prune unknown fields, then
validate): the status of every state the scenarios of tests/scenarios/ reach is accepted and
stored unchanged, so the schema names every field the controller writes, and every field of
the status schema is one it writes; a condition that breaks Kubernetes' condition rules, or a
collector entry the core could not have written, is rejected with the field named; unknown
fields are pruned; the printer columns show the three standard conditions, Ready and the primary
collector's installed version; the CRD's names are the ones the code calls."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, Final

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from controller.kube import api as seam
from controller.spoke import addon as kube
from controller.spoke.options import DEFAULT_NAME, DEFAULT_NAMESPACE
from kubesim import APIServer
from statemachines import (
    Config,
    Reason,
    Report,
    advance,
    apply,
    next_wakeup,
    observe_object,
    start,
    to_status,
)
from statemachines.health.paths import FieldPath
from statemachines.related import RelatedObject
from statemachines.scenario import EPOCH, load
from statemachines.vocabulary import ConditionType
from tests.manifests.kustomize import MANIFESTS, ROOT, documents

pytestmark = pytest.mark.integration

Obj = dict[str, Any]
CRD: Final = MANIFESTS / "base" / "crd.yaml"
SCENARIOS: Final = sorted((ROOT / "tests" / "scenarios").glob("*.yaml"))


def statuses_reached(path: Path) -> list[Obj]:
    """The status after every change a scenario makes (timers, watched objects, reports), as
    JSON."""
    scenario = load(path.read_text(encoding="utf-8"), source=path.name)
    config = scenario.config
    state = start(config, EPOCH)
    reached = [to_status(state)]
    for step in scenario.steps:
        now = EPOCH + step.at
        while (wakeup := next_wakeup(state, config)) is not None and wakeup <= now:
            state = advance(state, wakeup, config=config).state
            reached.append(to_status(state))
        if step.object is not None:
            change = step.object
            state = observe_object(state, change.resource, change.value, now, config=config).state
            reached.append(to_status(state))
        if step.report is not None:
            state = apply(state, step.report, now, config=config).state
            reached.append(to_status(state))
    return _unique(reached)


def statuses_with_generations() -> list[Obj]:
    """Reports with generations and versions, and related objects: every field is filled
    (`observedGeneration`, `version`, `desiredVersion`, `versions`, `lastKnownGood`, ...)."""
    deployment = RelatedObject("apps", "deployments", "metrics-collector", DEFAULT_NAMESPACE)
    config = Config.create(related_objects=[deployment])
    state = start(config, EPOCH, generation=4)
    reached = [to_status(state)]
    for minutes, report in enumerate(
        [
            Report(Reason.UPDATE_SUCCESSFUL, None, "deployed", 4, "2.14.0"),
            Report(Reason.FORWARD_SUCCESSFUL, "metrics-collector", "sent", 4),
            Report(Reason.FORWARD_SUCCESSFUL, "uwl-metrics-collector", "sent", 4),
            Report(Reason.UPDATE_SUCCESSFUL, "metrics-collector", "update", 4, "2.15.0"),
        ]
    ):
        state = apply(state, report, EPOCH + timedelta(minutes=minutes), config=config).state
        reached.append(to_status(state))
    return _unique(reached)


def _unique(statuses: list[Obj]) -> list[Obj]:
    seen: dict[str, Obj] = {}
    for status in statuses:
        as_json = json.dumps(status, sort_keys=True)
        seen.setdefault(as_json, json.loads(as_json))
    return list(seen.values())


class Addon:
    """The one addon CR on the embedded server, its status replaced at will."""

    def __init__(self, api: client.ApiClient) -> None:
        self.objects = client.CustomObjectsApi(api)

    def create(self) -> None:
        body = {
            "apiVersion": f"{kube.GROUP}/{kube.VERSION}",
            "kind": kube.KIND,
            "metadata": {"name": DEFAULT_NAME},
            "spec": {"enableMetrics": True},
        }
        self.objects.create_namespaced_custom_object(
            kube.GROUP, kube.VERSION, DEFAULT_NAMESPACE, kube.PLURAL, body
        )

    def write_status(self, status: Obj) -> Obj:
        """PUT the status subresource with the read resourceVersion; the stored status."""
        current = self.objects.get_namespaced_custom_object(
            kube.GROUP, kube.VERSION, DEFAULT_NAMESPACE, kube.PLURAL, DEFAULT_NAME
        )
        assert isinstance(current, dict)
        current["status"] = status
        stored = self.objects.replace_namespaced_custom_object_status(
            kube.GROUP, kube.VERSION, DEFAULT_NAMESPACE, kube.PLURAL, DEFAULT_NAME, current
        )
        assert isinstance(stored, dict)
        return dict(stored.get("status") or {})


@pytest.fixture(scope="module")
def addon() -> Iterator[Addon]:
    with (
        APIServer([CRD], namespaces=("default", DEFAULT_NAMESPACE)) as server,
        client.ApiClient(client.Configuration(host=server.url)) as api,
    ):
        made = Addon(api)
        made.create()
        yield made


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_every_status_a_scenario_reaches_is_stored_unchanged(addon: Addon, path: Path) -> None:
    for status in statuses_reached(path):
        assert addon.write_status(status) == status


def test_statuses_with_observed_generations_are_stored_unchanged(addon: Addon) -> None:
    for status in statuses_with_generations():
        assert addon.write_status(status) == status


def _status_schema() -> Obj:
    [crd] = documents(CRD)
    [version] = crd["spec"]["versions"]
    schema: Obj = version["schema"]["openAPIV3Schema"]["properties"]["status"]
    return schema


def test_every_field_of_the_status_schema_is_one_the_controller_writes() -> None:
    lists = ("conditions", "collectors", "history", "versions", "relatedObjects", "resources")
    written: dict[str, set[str]] = {part: set() for part in ("status", *lists)}
    nested: dict[str, set[str]] = {"object": set(), "conditions": set(), "pending": set()}
    statuses = [s for path in SCENARIOS for s in statuses_reached(path)]
    for status in [*statuses, *statuses_with_generations()]:
        written["status"] |= set(status)
        for part in lists:
            for item in status.get(part, []):
                written[part] |= set(item)
        written.setdefault("lastKnownGood", set()).update(status.get("lastKnownGood", {}))
        for entry in status.get("resources") or []:
            nested["object"] |= set(entry["object"])
            nested["pending"] |= set(entry.get("pending") or {})
            for condition in entry["conditions"]:
                nested["conditions"] |= set(condition)
    schema = _status_schema()["properties"]
    assert written["status"] == set(schema)
    for part in lists:
        assert written[part] == set(schema[part]["items"]["properties"]), part
    assert written["lastKnownGood"] == set(schema["lastKnownGood"]["properties"])
    entry_schema = schema["resources"]["items"]["properties"]
    assert nested["object"] == set(entry_schema["object"]["properties"])
    assert nested["pending"] == set(entry_schema["pending"]["properties"])
    assert nested["conditions"] == set(entry_schema["conditions"]["items"]["properties"])


VALID: Final = statuses_with_generations()[-1]


def _first_condition(change: Callable[[Obj], None]) -> Callable[[Obj], None]:
    return lambda status: change(status["conditions"][0])


def _first_collector(change: Callable[[Obj], None]) -> Callable[[Obj], None]:
    return lambda status: change(status["collectors"][0])


REJECTED = [
    pytest.param(
        _first_condition(lambda c: c.update(reason="Not a reason")),
        "status.conditions[0].reason",
        id="reason-with-spaces",
    ),
    pytest.param(
        _first_condition(lambda c: c.update(reason="")),
        "status.conditions[0].reason",
        id="empty-reason",
    ),
    pytest.param(
        _first_condition(lambda c: c.update(status="Maybe")),
        "status.conditions[0].status",
        id="status-not-true-false-unknown",
    ),
    pytest.param(
        _first_condition(lambda c: c.pop("message")),
        "status.conditions[0].message",
        id="message-required",
    ),
    pytest.param(
        _first_condition(lambda c: c.update(lastTransitionTime="yesterday")),
        "status.conditions[0].lastTransitionTime",
        id="time-not-rfc3339",
    ),
    pytest.param(
        _first_condition(lambda c: c.update(observedGeneration=-1)),
        "status.conditions[0].observedGeneration",
        id="negative-generation",
    ),
    pytest.param(
        lambda s: s["conditions"].append(copy.deepcopy(s["conditions"][0])),
        f"status.conditions[{len(VALID['conditions'])}]",
        id="one-condition-per-type",
    ),
    pytest.param(
        _first_collector(lambda c: c.update(state="Broken")),
        "status.collectors[0].state",
        id="unknown-collector-state",
    ),
    pytest.param(
        _first_collector(lambda c: c.update(pendingReason="UpdateFailure")),
        "status.collectors[0].pendingReason",
        id="only-forwarding-is-dampened",
    ),
    pytest.param(
        _first_collector(lambda c: c.pop("state")),
        "status.collectors[0].state",
        id="collector-state-required",
    ),
    pytest.param(
        lambda s: s["versions"][0].update(version="v" * 65),
        "status.versions[0].version",
        id="version-at-most-64-characters",
    ),
    pytest.param(
        lambda s: s["history"][0].update(type="Ready"),
        "status.history[0].type",
        id="history-of-standard-types-only",
    ),
    pytest.param(
        lambda s: s["lastKnownGood"].pop("since"),
        "status.lastKnownGood.since",
        id="last-known-good-since-required",
    ),
    pytest.param(
        lambda s: s["relatedObjects"][0].pop("resource"),
        "status.relatedObjects[0].resource",
        id="related-object-resource-required",
    ),
]


@pytest.mark.parametrize(("spoil", "field"), REJECTED)
def test_a_status_the_core_could_not_write_is_rejected(
    addon: Addon, spoil: Callable[[Obj], None], field: str
) -> None:
    status = copy.deepcopy(VALID)
    spoil(status)
    with pytest.raises(ApiException) as raised:
        addon.write_status(status)
    assert raised.value.status == 422
    causes = json.loads(str(raised.value.body))["details"]["causes"]
    assert field in {c["field"] for c in causes}


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(lambda s: s.update(lastUpdated="now"), id="status-field"),
        pytest.param(_first_condition(lambda c: c.update(severity="high")), id="condition-field"),
        pytest.param(_first_collector(lambda c: c.update(restarts=3)), id="collector-field"),
        pytest.param(lambda s: s["history"][0].update(by="me"), id="history-field"),
        pytest.param(lambda s: s["lastKnownGood"].update(uid="x"), id="last-known-good-field"),
        pytest.param(lambda s: s["relatedObjects"][0].update(uid="x"), id="related-object-field"),
    ],
)
def test_an_unknown_field_is_pruned(addon: Addon, spoil: Callable[[Obj], None]) -> None:
    status = copy.deepcopy(VALID)
    spoil(status)
    assert addon.write_status(status) == VALID


def test_printer_columns_show_the_three_standard_conditions() -> None:
    [crd] = documents(CRD)
    [version] = crd["spec"]["versions"]
    columns = {c["name"]: c for c in version["additionalPrinterColumns"]}
    for name in ("Available", "Degraded", "Progressing"):
        assert ConditionType(name)
        path = f'.status.conditions[?(@.type=="{name}")].status'
        assert columns[name] == {"name": name, "type": "string", "jsonPath": path}


def test_printer_columns_show_ready_and_the_primary_collectors_installed_version() -> None:
    [crd] = documents(CRD)
    [version] = crd["spec"]["versions"]
    columns = {c["name"]: c for c in version["additionalPrinterColumns"]}
    assert columns["Ready"]["jsonPath"] == '.status.conditions[?(@.type=="Ready")].status'
    primary = Config.create().primary.name
    assert columns["Version"]["jsonPath"] == f'.status.versions[?(@.name=="{primary}")].version'


def test_the_ready_and_version_columns_read_a_written_status() -> None:
    """The columns' JSONPaths (kubectl's dialect) resolve on a status the core wrote."""
    [crd] = documents(CRD)
    [version] = crd["spec"]["versions"]
    columns = {c["name"]: c["jsonPath"] for c in version["additionalPrinterColumns"]}
    obj = {"status": VALID}
    assert FieldPath.compile(columns["Ready"]).values(obj) == ["False"]  # updating
    assert FieldPath.compile(columns["Version"]).values(obj) == ["2.14.0"]


def test_the_crd_serves_what_the_code_calls() -> None:
    [crd] = documents(CRD)
    spec = crd["spec"]
    assert spec["group"] == kube.GROUP == seam.ADDON.group
    assert spec["names"]["plural"] == kube.PLURAL == seam.ADDON.plural
    assert spec["names"]["kind"] == kube.KIND == seam.ADDON.kind
    assert crd["metadata"]["name"] == f"{kube.PLURAL}.{kube.GROUP}"
    assert spec["scope"] == "Namespaced"
    [version] = spec["versions"]
    assert version["name"] == kube.VERSION == seam.ADDON.version
    assert version["served"] and version["storage"]
    assert version["subresources"] == {"status": {}}
