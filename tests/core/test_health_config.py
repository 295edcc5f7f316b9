"""docs/spec.md §8, the configuration of health rules: a resource's defaults (namespace,
`for`, collector), keys and expressions compiled when it is loaded, and every mistake one line
that names the path in the file, the resource and, for a key or an expression, the text that
does not compile (issue 10: a start-up error, or an invalid scenario).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from statemachines.errors import ConfigError
from statemachines.health.resources import load_resources
from tests.core.health import CERTIFICATE_RULE, COLLECTORS, KAPP_RULE

AT = "resources[0] (cert)"
EXACTLY_ONE = "exactly one of alwaysHealthy, singleConditionType, multiMatch and cel is needed"
SOME_SIDE = {"matchConditions": [{"type": "A", "status": "True"}]}


def rule_with(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "cert",
        "object": {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "name": "c"},
        "healthRule": {"alwaysHealthy": {}},
    }
    return {**base, **fields}


def cel(**expressions: str) -> list[dict[str, Any]]:
    return [rule_with(healthRule={"cel": expressions})]


def matching(*, healthy: Any = SOME_SIDE, unhealthy: Any = SOME_SIDE) -> list[dict[str, Any]]:
    return [rule_with(healthRule={"multiMatch": {"healthy": healthy, "unhealthy": unhealthy}})]


def fields(**matcher: Any) -> dict[str, Any]:
    return {"matchFields": [matcher]}


CONFIG_ERRORS = [
    pytest.param(
        [rule_with(healthRule={"alwaysHealthy": {}, "singleConditionType": "Ready"})],
        f"{AT}.healthRule: {EXACTLY_ONE}; got alwaysHealthy, singleConditionType",
        id="two-rules-in-one-resource",
    ),
    pytest.param(
        [rule_with(healthRule={})], f"{AT}.healthRule: {EXACTLY_ONE}; got none", id="no-rule"
    ),
    pytest.param(
        cel(current="status.conditions.filter(e,"),
        f"{AT}.healthRule.cel.current: CEL 'status.conditions.filter(e,' does not compile:"
        " at 1:28: Syntax error: mismatched input '<EOF>'",
        id="cel-that-does-not-compile-names-resource-and-expression",
    ),
    pytest.param(
        cel(current="true", failed="isReady(status)"),
        f"{AT}.healthRule.cel.failed: CEL 'isReady(status)' does not compile:"
        " at 1:8: undeclared reference to 'isReady'",
        id="cel-unknown-function-is-caught-at-load",
    ),
    pytest.param(
        cel(current="size(status.conditions)"),
        f"{AT}.healthRule.cel.current: CEL 'size(status.conditions)' is not a condition:"
        " it returns int, not bool",
        id="cel-that-cannot-be-a-boolean",
    ),
    pytest.param(
        cel(failed="true"), f"{AT}.healthRule.cel.current: Field required", id="cel-needs-current"
    ),
    pytest.param(
        matching(healthy=fields(key="status.conditions[?(@.type==", operator="Exists")),
        f"{AT}.healthRule.multiMatch.healthy.matchFields[0].key:"
        " JSONPath 'status.conditions[?(@.type==' does not compile",
        id="jsonpath-that-does-not-compile",
    ),
    pytest.param(
        matching(healthy=fields(key="a", operator="Exists", messagePath="b c")),
        f"{AT}.healthRule.multiMatch.healthy.matchFields[0].messagePath:"
        " JSONPath 'b c' does not compile",
        id="message-path-that-does-not-compile",
    ),
    pytest.param(
        matching(unhealthy=fields(key="a", operator="Equals", values=["x"])),
        f"{AT}.healthRule.multiMatch.unhealthy.matchFields[0].operator:"
        " Input should be 'In', 'NotIn', 'Exists' or 'DoesNotExist'",
        id="unknown-operator",
    ),
    pytest.param(
        matching(unhealthy=fields(key="a", operator="In")),
        f"{AT}.healthRule.multiMatch.unhealthy.matchFields[0]:"
        " operator In needs a non-empty `values`",
        id="in-without-values",
    ),
    pytest.param(
        matching(unhealthy=fields(key="a", operator="Exists", values=["x"])),
        f"{AT}.healthRule.multiMatch.unhealthy.matchFields[0]: operator Exists takes no `values`",
        id="exists-with-values",
    ),
    pytest.param(
        matching(unhealthy={}),
        f"{AT}.healthRule.multiMatch.unhealthy: needs at least one of matchConditions and"
        " matchFields",
        id="a-side-with-no-matcher",
    ),
    pytest.param(
        [rule_with(healthRule={"singleConditionType": "example.com/Ready"})],
        f"{AT}.healthRule: singleConditionType 'example.com/Ready' cannot make the reason",
        id="single-condition-type-that-cannot-be-a-reason",
    ),
    pytest.param(
        [rule_with(), rule_with()],
        "resources[1].name: 'cert' is already resources[0]",
        id="duplicate-name",
    ),
    pytest.param(
        [rule_with(name="Cert_1")],
        "resources[0] (Cert_1).name: 'Cert_1' is not a DNS label",
        id="name-not-a-dns-label",
    ),
    pytest.param(
        [rule_with(collector="logging-collector")],
        f"{AT}.collector: 'logging-collector' is not a configured collector"
        " (metrics-collector, uwl-metrics-collector)",
        id="collector-not-configured",
    ),
    pytest.param(
        [rule_with(**{"for": "two minutes"})],
        f"{AT}.for: 'two minutes' is not a duration (write e.g. 30s, 10m, 1h30m)",
        id="for-not-a-duration",
    ),
    pytest.param(
        [rule_with(object={"apiVersion": "v1", "kind": "ConfigMap"})],
        f"{AT}.object.name: Field required",
        id="object-without-name",
    ),
    pytest.param(
        [rule_with(healthrule={})],
        f"{AT}.healthrule: Extra inputs are not permitted",
        id="unknown-field",
    ),
    pytest.param(
        [{"name": "cert", "object": {"apiVersion": "v1", "kind": "Secret", "name": "s"}}],
        f"{AT}.healthRule: Field required",
        id="resource-without-rule",
    ),
    pytest.param(
        {"cert": {}}, "resources: expected a list of resources, not dict", id="not-a-list"
    ),
]


@pytest.mark.parametrize(("raw", "message"), CONFIG_ERRORS)
def test_bad_configuration_is_one_clear_line(raw: Any, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_resources(raw, namespace="observability", collectors=COLLECTORS)
    assert str(caught.value).startswith(message), str(caught.value)
    assert "\n" not in str(caught.value)


def test_configuration_defaults_namespace_collector_and_for() -> None:
    """The object's namespace defaults to the addon's, `for` to 0s, `collector` to none (the
    resource speaks for every counted collector)."""
    app = {"apiVersion": "v1", "kind": "App", "name": "a", "namespace": "apps"}
    first, second = load_resources(
        [
            rule_with(healthRule=CERTIFICATE_RULE),
            rule_with(name="app", object=app, healthRule=KAPP_RULE, collector="metrics-collector")
            | {"for": "2m"},
        ],
        namespace="observability",
        collectors=COLLECTORS,
    )
    assert first.object.namespace == "observability" and second.object.namespace == "apps"
    assert first.for_.total_seconds() == 0 and second.for_.total_seconds() == 120
    assert first.collector is None and first.speaks_for("uwl-metrics-collector")
    assert second.speaks_for("metrics-collector")
    assert not second.speaks_for("uwl-metrics-collector")
    assert load_resources(None, namespace="observability", collectors=COLLECTORS) == ()


def test_keys_and_expressions_are_compiled_at_load() -> None:
    (cert,) = load_resources([rule_with(healthRule=CERTIFICATE_RULE)], namespace="o", collectors=())
    (app,) = load_resources([rule_with(healthRule=KAPP_RULE)], namespace="o", collectors=())
    assert cert.health_rule.cel is not None
    assert cert.health_rule.cel.current.program is not None
    assert app.health_rule.multi_match is not None
    matcher = app.health_rule.multi_match.unhealthy.match_fields[0]
    assert matcher.key.query is not None
    assert matcher.message_path is not None and matcher.message_path.query is not None


def test_the_documented_example_of_every_rule_kind_loads() -> None:
    """The configuration docs/reference/health-rules.md documents is valid, one resource per
    rule kind."""
    page = Path(__file__).resolve().parents[2] / "docs" / "reference" / "health-rules.md"
    section = page.read_text()
    block = section[section.index("```yaml\n") + len("```yaml\n") : section.index("```\n")]
    resources = load_resources(
        yaml.safe_load(block)["resources"], namespace="observability", collectors=COLLECTORS
    )
    kinds = {
        name
        for r in resources
        for name, value in r.health_rule.model_dump(by_alias=True).items()
        if value is not None
    }
    assert kinds == {"alwaysHealthy", "singleConditionType", "multiMatch", "cel"}
