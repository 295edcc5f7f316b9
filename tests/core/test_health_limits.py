"""docs/spec.md §8 within bounds: nothing a rule or an object says can freeze the process or
pass in silence. A JSONPath filter's regular expression runs on RE2, in time linear in the text
(a pattern that backtracks exponentially in Python's `re` answers at once), and one RE2 cannot
run — or the backtracking `=~` operator — is refused when the configuration is loaded; a key
that cannot be followed through an object (nested deeper than `..` recurses) is
`Unhealthy`/`EvaluationError`, never the old result kept; CEL's iteration budget, which the
runtime fixes at 10,000, is named in the error it causes."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from statemachines.errors import ConfigError
from statemachines.health import Health, HealthReason, evaluate
from statemachines.health.expressions import ITERATION_BUDGET
from tests.core.health import resource

WAIT = 10.0  # backtracking (a+)+b on 40 characters would take longer than the universe is old


def _fields_rule(key: str, operator: str = "Exists") -> dict[str, Any]:
    matcher: dict[str, Any] = {"key": key, "operator": operator}
    return {
        "multiMatch": {
            "healthy": {"matchConditions": [{"type": "Ready", "status": "True"}]},
            "unhealthy": {"matchFields": [matcher]},
        }
    }


def test_a_backtracking_regex_in_a_jsonpath_filter_runs_in_linear_time() -> None:
    watched = resource(_fields_rule('status.items[?match(@.message, "(a+)+b")]'))
    obj = {"status": {"items": [{"message": "a" * 40 + "c"}]}, "metadata": {}}
    answer: list[Any] = []
    worker = threading.Thread(target=lambda: answer.append(evaluate(watched, obj)), daemon=True)
    worker.start()
    worker.join(WAIT)
    assert answer, "the evaluation did not end: the pattern backtracked"
    assert answer[0].reason == HealthReason.NO_MATCHES_FULFILLED  # no match, and no freeze


@pytest.mark.parametrize(
    "key",
    [
        pytest.param('status.items[?match(@.m, "(a)\\\\1")]', id="backreference"),
        pytest.param("status.items[?search(@.m, '(?=a)b')]", id="lookahead"),
        pytest.param("status.items[?@.m =~ /(a+)+b/]", id="regex-operator"),
    ],
)
def test_a_regex_re2_cannot_run_is_refused_at_load(key: str) -> None:
    with pytest.raises(ConfigError, match=r"RE2|=~"):
        resource(_fields_rule(key))


def test_a_key_too_deep_to_follow_is_an_evaluation_error_not_the_old_result() -> None:
    deep: dict[str, Any] = {}
    cursor = deep
    for _ in range(200):
        cursor["a"] = {}
        cursor = cursor["a"]
    result = evaluate(resource(_fields_rule("spec..a")), {"spec": deep, "metadata": {}})
    assert (result.health, result.reason) == (Health.UNHEALTHY, HealthReason.EVALUATION_ERROR)
    assert "..a" in result.message


def test_cels_iteration_budget_is_named_in_the_error_it_causes() -> None:
    rule = {"cel": {"current": "status.items.exists(i, i == 19999)"}}
    obj = {"status": {"items": list(range(20_000))}, "metadata": {}}
    result = evaluate(resource(rule), obj)
    assert (result.health, result.reason) == (Health.UNHEALTHY, HealthReason.EVALUATION_ERROR)
    assert f"{ITERATION_BUDGET:,} iterations" in result.message
