"""docs/spec.md §8, the rules themselves: each health rule on the objects of the seeds
(Cartographer's matchers, Flux RFC-0009's CEL checks) gives exactly the health, reason and
message the rules say; a missing object is `Unknown`/`NotFound`; Kubernetes JSONPath keys as
kubectl writes them; and a configuration mistake is one line naming the path, the resource and
the expression. Counting (`for`), what is written and the overlay are in
`test_health_counting.py`; the invariants in `test_health_properties.py`.
"""

from __future__ import annotations

import gc
from typing import Any

import pytest

from statemachines.health.paths import FieldPath, normalise
from statemachines.health.rules import Result, evaluate
from statemachines.health.vocabulary import Health, HealthReason
from tests.core.health import (
    CERTIFICATE_RULE,
    KAPP_RULE,
    certificate,
    kapp_app,
    resource,
)
from tests.support import condition

H, R = Health, HealthReason
OK, BAD, UNKNOWN = H.HEALTHY, H.UNHEALTHY, H.UNKNOWN
CERT = CERTIFICATE_RULE["cel"]
DEPLOYMENT_CEL = {
    "current": "self.status.conditions.exists(c, c.type == 'Available' && c.status == 'True')",
    "failed": "self.status.conditions.exists(c, (c.type == 'Progressing' && c.reason == "
    "'ProgressDeadlineExceeded') || (c.type == 'Available' && c.status == 'False'))",
}
DEADLINE_EXCEEDED = {
    "metadata": {"generation": 1},
    "status": {
        "conditions": [
            {
                "type": "Available",
                "status": "False",
                "message": "Deployment does not have minimum availability.",
            },
            {
                "type": "Progressing",
                "status": "False",
                "reason": "ProgressDeadlineExceeded",
                "message": 'ReplicaSet "m-5d4" has timed out progressing.',
            },
        ]
    },
}
SERVICE_RULE = {  # Cartographer's `servicer` ClusterTemplate
    "multiMatch": {
        "healthy": {"matchFields": [{"key": ".status.loadBalancer", "operator": "Exists"}]},
        "unhealthy": {"matchFields": [{"key": ".status.loadBalancer", "operator": "DoesNotExist"}]},
    }
}
BOTH_MATCH = {
    "multiMatch": {
        "healthy": {"matchConditions": [{"type": "Ready", "status": "True"}]},
        "unhealthy": {
            "matchConditions": [{"type": "Stalled", "status": "True"}],
            "matchFields": [{"key": "status.phase", "operator": "In", "values": ["Failed"]}],
        },
    }
}
TWO_HEALTHY = {
    "multiMatch": {
        "healthy": {
            "matchConditions": [{"type": "Ready", "status": "True"}],
            "matchFields": [{"key": "status.phase", "operator": "NotIn", "values": ["Pending"]}],
        },
        "unhealthy": {"matchConditions": [{"type": "Ready", "status": "False"}]},
    }
}
FAILED_KEY = 'status.conditions[?(@.type=="ReconcileFailed")].status'


def obj(*conditions: dict[str, Any], **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "x", "generation": 1},
        "status": {"conditions": list(conditions), **status},
    }


def field_rule(operator: str, values: list[str] | None = None) -> dict[str, Any]:
    matcher: dict[str, Any] = {"key": "status.phase", "operator": operator}
    if values is not None:
        matcher["values"] = values
    return {
        "multiMatch": {
            "healthy": {"matchFields": [matcher]},
            "unhealthy": {"matchConditions": [{"type": "Never", "status": "True"}]},
        }
    }


RULES = [
    # alwaysHealthy
    pytest.param(
        {"alwaysHealthy": {}},
        obj(),
        Result(OK, R.ALWAYS_HEALTHY),
        id="always-healthy-once-the-object-exists",
    ),
    # an object that does not exist, whatever the rule
    pytest.param(
        {"alwaysHealthy": {}},
        None,
        Result(UNKNOWN, R.NOT_FOUND, "Deployment observability/watched not found"),
        id="missing-object-is-unknown-not-found",
    ),
    pytest.param(
        CERTIFICATE_RULE,
        None,
        Result(UNKNOWN, R.NOT_FOUND, "Deployment observability/watched not found"),
        id="missing-object-is-not-found-before-any-expression",
    ),
    # singleConditionType
    pytest.param(
        {"singleConditionType": "Ready"},
        obj(condition("Ready", "True", message="Fetched revision: main/1")),
        Result(OK, "ReadyCondition", "Fetched revision: main/1"),
        id="single-condition-true-is-healthy",
    ),
    pytest.param(
        {"singleConditionType": "Available"},
        obj(condition("Available", "False", message="no replica")),
        Result(BAD, "AvailableCondition", "no replica"),
        id="single-condition-false-is-unhealthy",
    ),
    pytest.param(
        {"singleConditionType": "Ready"},
        obj(condition("Ready", "Unknown", message="checking")),
        Result(UNKNOWN, "ReadyCondition", "checking"),
        id="single-condition-unknown-is-unknown",
    ),
    pytest.param(
        {"singleConditionType": "Ready"},
        obj(condition("Other", "True")),
        Result(UNKNOWN, "ReadyCondition", "no condition Ready"),
        id="single-condition-absent-is-unknown",
    ),
    pytest.param(
        {"singleConditionType": "Ready"},
        {"metadata": {}},
        Result(UNKNOWN, "ReadyCondition", "no condition Ready"),
        id="single-condition-without-status-is-unknown",
    ),
    # multiMatch, on Cartographer's kapp App
    pytest.param(
        KAPP_RULE,
        kapp_app(
            condition("ReconcileFailed", "True"),
            usefulErrorMessage="Some kapp useful error message",
        ),
        Result(BAD, R.MATCHED_FIELD, f"{FAILED_KEY}: True: Some kapp useful error message"),
        id="matched-field-gives-key-value-and-message-path",
    ),
    pytest.param(
        KAPP_RULE,
        kapp_app(condition("ReconcileSucceeded", "True", message="applied")),
        Result(OK, R.MATCHED_CONDITION, "ReconcileSucceeded: True: applied"),
        id="matched-condition-gives-type-status-and-message",
    ),
    pytest.param(
        KAPP_RULE,
        kapp_app(condition("ReconcileSucceeded", "False")),
        Result(
            UNKNOWN,
            R.NO_MATCHES_FULFILLED,
            "healthy needs ReconcileSucceeded: True",
        ),
        id="no-matches-fulfilled-is-unknown",
    ),
    pytest.param(
        KAPP_RULE,
        kapp_app(condition("ReconcileFailed", "True")),
        Result(BAD, R.MATCHED_FIELD, f"{FAILED_KEY}: True"),
        id="message-path-resolving-to-nothing-adds-nothing",
    ),
    pytest.param(
        BOTH_MATCH,
        obj(condition("Ready", "True"), condition("Stalled", "True", message="stuck")),
        Result(BAD, R.MATCHED_CONDITION, "Stalled: True: stuck"),
        id="unhealthy-matchers-are-checked-first",
    ),
    pytest.param(
        BOTH_MATCH,
        obj(condition("Ready", "True"), phase="Failed"),
        Result(BAD, R.MATCHED_FIELD, "status.phase: Failed"),
        id="unhealthy-matchers-are-ored",
    ),
    pytest.param(
        TWO_HEALTHY,
        obj(condition("Ready", "True", message="up"), phase="Running"),
        Result(OK, R.MATCHED_CONDITION, "Ready: True: up"),
        id="healthy-matchers-are-anded",
    ),
    pytest.param(
        TWO_HEALTHY,
        obj(condition("Ready", "True"), phase="Pending"),
        Result(
            UNKNOWN,
            R.NO_MATCHES_FULFILLED,
            "healthy needs status.phase NotIn [Pending]",
        ),
        id="one-healthy-matcher-missing-is-unknown",
    ),
    # multiMatch, on Cartographer's Service
    pytest.param(
        SERVICE_RULE,
        {"status": {"loadBalancer": {}}},
        Result(OK, R.MATCHED_FIELD, ".status.loadBalancer: {}"),
        id="exists-on-an-empty-object-matches",
    ),
    pytest.param(
        SERVICE_RULE,
        {"status": {}},
        Result(BAD, R.MATCHED_FIELD, ".status.loadBalancer: <absent>"),
        id="does-not-exist-matches-a-missing-key",
    ),
    # a key that resolves to nothing
    pytest.param(
        field_rule("Exists"),
        obj(),
        Result(
            UNKNOWN,
            R.NO_MATCHES_FULFILLED,
            "healthy needs status.phase Exists",
        ),
        id="unresolved-key-exists-is-false",
    ),
    pytest.param(
        field_rule("DoesNotExist"),
        obj(),
        Result(OK, R.MATCHED_FIELD, "status.phase: <absent>"),
        id="unresolved-key-does-not-exist-is-true",
    ),
    pytest.param(
        field_rule("In", ["Running"]),
        obj(),
        Result(
            UNKNOWN,
            R.NO_MATCHES_FULFILLED,
            "healthy needs status.phase In [Running]",
        ),
        id="unresolved-key-in-is-false",
    ),
    pytest.param(
        field_rule("NotIn", ["Failed"]),
        obj(),
        Result(OK, R.MATCHED_FIELD, "status.phase: <absent>"),
        id="unresolved-key-not-in-is-true",
    ),
    pytest.param(
        field_rule("In", ["Running", "Succeeded"]),
        obj(phase="Succeeded"),
        Result(OK, R.MATCHED_FIELD, "status.phase: Succeeded"),
        id="in-matches-any-listed-value",
    ),
    pytest.param(
        field_rule("NotIn", ["Failed"]),
        obj(phase="Failed"),
        Result(
            UNKNOWN,
            R.NO_MATCHES_FULFILLED,
            "healthy needs status.phase NotIn [Failed]",
        ),
        id="not-in-fails-on-a-listed-value",
    ),
    pytest.param(
        field_rule("Exists"),
        obj(phase=None),
        Result(
            UNKNOWN,
            R.NO_MATCHES_FULFILLED,
            "healthy needs status.phase Exists",
        ),
        id="a-null-field-does-not-exist",
    ),
    pytest.param(
        field_rule("In", ["3"]),
        obj(phase=3),
        Result(OK, R.MATCHED_FIELD, "status.phase: 3"),
        id="non-string-values-compare-as-json",
    ),
    # cel, on Flux RFC-0009's Certificate
    pytest.param(
        CERTIFICATE_RULE,
        certificate(issuing="False", ready="True"),
        Result(OK, R.CURRENT, "Ready: True"),
        id="cel-current-is-healthy",
    ),
    pytest.param(
        CERTIFICATE_RULE,
        certificate(issuing="False", ready="False"),
        Result(BAD, R.FAILED, "Ready: False"),
        id="cel-failed-is-unhealthy",
    ),
    # CEL's `all` is true on an empty list: RFC-0009's inProgress holds with no Issuing condition
    pytest.param(
        CERTIFICATE_RULE,
        certificate(ready="True"),
        Result(UNKNOWN, R.IN_PROGRESS, "the inProgress expression is true"),
        id="cel-all-on-an-empty-filter-is-true",
    ),
    pytest.param(
        CERTIFICATE_RULE,
        certificate(issuing="True", ready="True"),
        Result(UNKNOWN, R.IN_PROGRESS, "Issuing: True"),
        id="cel-in-progress-is-evaluated-first",
    ),
    # the object's own words, not the expression: a Deployment past its progress deadline
    pytest.param(
        {"cel": DEPLOYMENT_CEL},
        DEADLINE_EXCEEDED,
        Result(BAD, R.FAILED, 'Progressing: False: ReplicaSet "m-5d4" has timed out progressing.'),
        id="cel-message-is-the-condition-the-expression-names",
    ),
    pytest.param(
        {"cel": {"current": "true", "failed": "true"}},
        obj(),
        Result(BAD, R.FAILED, "the failed expression is true"),
        id="cel-failed-before-current",
    ),
    pytest.param(
        {"cel": {"current": "false", "failed": "false"}},
        obj(),
        Result(UNKNOWN, R.IN_PROGRESS, "no expression is true"),
        id="cel-none-true-is-in-progress",
    ),
    pytest.param(
        CERTIFICATE_RULE,
        certificate(generation=2, ready="True", observedGeneration=1),
        Result(UNKNOWN, R.IN_PROGRESS, "status.observedGeneration 1 is not metadata.generation 2"),
        id="cel-observed-generation-checked-first",
    ),
    pytest.param(
        {"cel": {"current": "status.nope == 1"}},
        obj(observedGeneration=0),
        Result(UNKNOWN, R.IN_PROGRESS, "status.observedGeneration 0 is not metadata.generation 1"),
        id="cel-stale-generation-evaluates-no-expression",
    ),
    pytest.param(
        {"cel": {"current": "status.ready"}},
        obj(observedGeneration=1, ready=True),
        Result(OK, R.CURRENT, "the current expression is true"),
        id="cel-equal-generations-go-on-to-the-expressions",
    ),
    pytest.param(
        {"cel": {"current": "status.replicas == 1"}},
        obj(),
        Result(
            BAD,
            R.EVALUATION_ERROR,
            "current 'status.replicas == 1': Key not found in map : \"replicas\"",
        ),
        id="cel-missing-field-is-an-evaluation-error",
    ),
    pytest.param(
        {"cel": {"current": "metadata.name + 1 == 2"}},
        obj(),
        Result(
            BAD,
            R.EVALUATION_ERROR,
            "current 'metadata.name + 1 == 2': No matching overloads found : _+_(string, int64)",
        ),
        id="cel-wrong-type-is-an-evaluation-error",
    ),
    pytest.param(
        {"cel": {"current": "status.conditions"}},
        obj(),
        Result(
            BAD, R.EVALUATION_ERROR, "current 'status.conditions': returned list<dyn>, not bool"
        ),
        id="cel-non-boolean-value-is-an-evaluation-error",
    ),
    pytest.param(
        {"cel": {"current": "spec.replicas == 1"}},
        obj(),
        Result(
            BAD,
            R.EVALUATION_ERROR,
            "current 'spec.replicas == 1': No value with name \"spec\" found in Activation",
        ),
        id="cel-missing-top-level-field-is-an-evaluation-error",
    ),
    pytest.param(
        {"cel": {"current": "has(self.status) && status.ready"}},
        {"metadata": {"generation": 1}},
        Result(UNKNOWN, R.IN_PROGRESS, "no expression is true"),
        id="cel-self-guards-a-missing-status",
    ),
    pytest.param(
        {"cel": {"current": "self.data.mode == 'on'"}},
        {"metadata": {}, "data": {"mode": "on"}},
        Result(OK, R.CURRENT, "the current expression is true"),
        id="cel-self-reads-other-top-level-fields",
    ),
    pytest.param(
        {"cel": {"inProgress": "status.nope", "current": "true"}},
        obj(),
        Result(
            BAD, R.EVALUATION_ERROR, "inProgress 'status.nope': Key not found in map : \"nope\""
        ),
        id="cel-error-stops-the-evaluation",
    ),
    pytest.param(
        {"cel": {"current": "false || true", "failed": "false && status.nope"}},
        obj(),
        Result(OK, R.CURRENT, "the current expression is true"),
        id="cel-logic-absorbs-errors-as-cel-does",
    ),
]


@pytest.mark.parametrize(("rule", "value", "expected"), RULES)
def test_health_rule(rule: dict[str, Any], value: dict[str, Any] | None, expected: Result) -> None:
    assert evaluate(resource(rule), value) == expected


MACROS = [
    pytest.param("status.conditions.filter(c, c.type == 'Ready').size() == 1", True, id="filter"),
    pytest.param("status.conditions.all(c, c.status == 'True')", False, id="all"),
    pytest.param(
        "status.conditions.exists(c, c.type == 'Issuing' && c.status == 'False')", True, id="exists"
    ),
    pytest.param("has(status.conditions) && !has(status.failedIssuanceAttempts)", True, id="has"),
    pytest.param("status.conditions.exists_one(c, c.type == 'Ready')", True, id="exists-one"),
    pytest.param("status.conditions.map(c, c.type) == ['Issuing', 'Ready']", True, id="map"),
    pytest.param(
        "timestamp(status.notAfter) > timestamp('2025-01-01T00:00:00Z')", True, id="timestamp"
    ),
]


@pytest.mark.parametrize(("expression", "holds"), MACROS)
def test_cel_macros_on_the_certificate(expression: str, holds: bool) -> None:
    """The macros Flux's library of health checks uses, on RFC-0009's Certificate."""
    cert = certificate(issuing="False", ready="True", notAfter="2026-01-01T00:00:00Z")
    result = evaluate(resource({"cel": {"current": expression}}), cert)
    assert result.health is (OK if holds else UNKNOWN), result


KEYS = [
    pytest.param("{.status.replicas}", "$.status.replicas", id="braces-optional"),
    pytest.param(".status.replicas", "$.status.replicas", id="leading-dot"),
    pytest.param("status.replicas", "$.status.replicas", id="no-leading-dot"),
    pytest.param("$.status.replicas", "$.status.replicas", id="rfc-9535-as-is"),
    pytest.param(FAILED_KEY, "$." + FAILED_KEY, id="filter-kept"),
    pytest.param(
        r"metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration",
        "$.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']",
        id="escaped-dots",
    ),
    pytest.param(
        "metadata.labels['app.kubernetes.io/name']",
        "$.metadata.labels['app.kubernetes.io/name']",
        id="quoted-name-kept",
    ),
    pytest.param(
        'status.conditions[?(@.message=="a ] b")].type',
        '$.status.conditions[?(@.message=="a ] b")].type',
        id="bracket-inside-quotes",
    ),
    pytest.param("spec.template..image", "$.spec.template..image", id="recursive-descent"),
]


@pytest.mark.parametrize(("key", "rfc"), KEYS)
def test_kubernetes_jsonpath_keys_are_normalised(key: str, rfc: str) -> None:
    assert normalise(key) == rfc
    FieldPath.compile(key)  # and it compiles


def test_a_key_over_a_long_list_leaves_no_cycles_for_the_collector() -> None:
    """python-jsonpath links each match to its parent and back; left so, the matches of a
    20,000-item list held hundreds of MiB until a full collection ran (tests/bench/churn.py).
    Unlinked, they go as they are dropped: a collection right after finds next to nothing
    (8,083 objects before, for these 2,000 items)."""
    obj = {"status": {"conditions": [{"type": f"c{i}", "status": "True"} for i in range(2000)]}}
    path = FieldPath.compile("status.conditions[*].status")
    gc.collect()
    assert len(path.values(obj)) == 2000
    assert gc.collect() < 100


def test_jsonpath_filter_finds_the_condition_by_type() -> None:
    app = kapp_app(condition("ReconcileSucceeded", "False"), condition("ReconcileFailed", "True"))
    assert FieldPath.compile(FAILED_KEY).values(app) == ["True"]
    assert FieldPath.compile("{.status.conditions[*].type}").values(app) == [
        "ReconcileSucceeded",
        "ReconcileFailed",
    ]


def test_long_messages_are_cut_never_refused() -> None:
    """A message path may point at a whole object: a resource's message is cut to 1,024
    characters, ending in `…` (docs/spec.md §6)."""
    app = kapp_app(condition("ReconcileFailed", "True"), usefulErrorMessage="x" * 40000)
    result = evaluate(resource(KAPP_RULE), app)
    assert len(result.message) == 1024 and result.message.endswith("x…")
