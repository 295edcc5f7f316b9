"""Health rules: the CEL and JSONPath libraries measured side by side, and the project's own
rules measured per kind (evaluations per second).

For every candidate library that is installed, on the seeds' examples (Flux RFC-0009's
cert-manager Certificate, Cartographer's kapp App): the time to compile once and to evaluate
per object change, and the behaviour the rules need — the macros `filter`, `all`, `exists` and
`has()`, an error (not a value) for a missing field, a misspelt function caught when compiling,
filters in JSONPath keys — and the installed wheel's tag and dependencies. The chosen libraries
are dependencies of the project; the others are measured only where installed by hand:

    .venv/bin/pip install common-expression-language==0.10.0 cel-python==0.5.0 jsonpath-ng==1.16.0
    .venv/bin/python tests/bench/health_rules.py [--number 2000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import re
import sys
import time
import timeit
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from statemachines.config_file import load_configuration  # noqa: E402
from statemachines.errors import ConfigError  # noqa: E402
from statemachines.health.counted import CountedHealth, count  # noqa: E402
from statemachines.health.resources import Resource, load_resources  # noqa: E402
from statemachines.health.rules import evaluate  # noqa: E402


def observe(
    resource: Resource, counted: CountedHealth | None, obj: dict[str, Any], now: datetime
) -> CountedHealth:
    """What the spoke does with a watched object: evaluate its rule, count the result."""
    return count(counted, evaluate(resource, obj), now, for_=resource.for_)


from tests.core.health import (  # noqa: E402
    CERTIFICATE_RULE,
    KAPP_RULE,
    certificate,
    condition,
    kapp_app,
)

CERT = CERTIFICATE_RULE["cel"]
READY_CERT = certificate(issuing="False", ready="True", notAfter="2026-01-01T00:00:00Z")
CHECKS = {  # expression -> its value on READY_CERT
    CERT["current"]: True,
    CERT["failed"]: False,
    CERT["inProgress"]: False,
    "status.conditions.exists(e, e.type == 'Ready' && e.status == 'True')": True,
    "has(status.conditions) && !has(status.failedIssuanceAttempts)": True,
}
MISSING_FIELD = "status.renewalTime == 'soon'"
MISSPELT_FUNCTION = "isReady(status)"
KEY = 'status.conditions[?(@.type=="ReconcileFailed")].status'
FAILED_APP = kapp_app(condition("ReconcileFailed", "True"), usefulErrorMessage="boom")


@dataclass
class Cel:
    """One CEL library behind the three operations the rule needs."""

    distribution: str
    compile: Callable[[str], Any]
    evaluate: Callable[[Any, dict[str, Any]], Any]
    plain: Callable[[Any], Any]  # the Python value of a result; raises for an error value


def _cel_expr_plain(value: Any) -> Any:
    """cel-expr-python returns an error as a value of type ERROR, not as an exception."""
    if value.type().name() == "ERROR":
        raise RuntimeError(value.value())
    return value.value()


def cel_libraries() -> list[Cel]:
    found = []
    try:
        from cel_expr_python import cel

        any_map = cel.Type.Map(cel.Type.STRING, cel.Type.DYN)
        names = {n: any_map for n in ("metadata", "spec", "status")}
        env = cel.NewEnv(variables=names | {"apiVersion": cel.Type.STRING, "kind": cel.Type.STRING})
        found.append(
            Cel(
                "cel-expr-python",
                env.compile,
                lambda program, obj: program.eval(data=obj),
                _cel_expr_plain,
            )
        )
    except ImportError:
        pass
    try:
        import cel as cel_rust  # common-expression-language

        found.append(
            Cel(
                "common-expression-language",
                cel_rust.compile,
                lambda program, obj: program.execute(obj),
                lambda value: value,
            )
        )
    except ImportError:
        pass
    try:
        import celpy

        environment = celpy.Environment()
        found.append(
            Cel(
                "cel-python",
                lambda text: environment.program(environment.compile(text)),
                lambda program, obj: program.evaluate(celpy.json_to_cel(obj)),
                lambda value: value,
            )
        )
    except ImportError:
        pass
    return found


@dataclass
class JsonPath:
    distribution: str
    compile: Callable[[str], Any]
    find: Callable[[Any, dict[str, Any]], list[Any]]


def jsonpath_libraries() -> list[JsonPath]:
    found = []
    try:
        import jsonpath

        environment = jsonpath.JSONPathEnvironment()
        found.append(
            JsonPath("python-jsonpath", environment.compile, lambda q, obj: q.findall(obj))
        )
    except ImportError:
        pass
    try:
        import jsonpath_ng.ext

        found.append(
            JsonPath(
                "jsonpath-ng",
                jsonpath_ng.ext.parse,
                lambda q, obj: [match.value for match in q.find(obj)],
            )
        )
    except ImportError:
        pass
    return found


def microseconds(action: Callable[[], object], number: int, repeat: int) -> float:
    """The best of `repeat` runs of `number` calls, per call: the least disturbed figure."""
    return min(timeit.repeat(action, number=number, repeat=repeat)) / number * 1e6


def wheel(distribution: str) -> str:
    """`version, first wheel tag, requires: ...` of the installed distribution."""
    dist = importlib.metadata.distribution(distribution)
    lines = (dist.read_text("WHEEL") or "").splitlines()
    tags = [line.split(":", 1)[1].strip() for line in lines if line.startswith("Tag:")]
    requires = sorted(
        {
            re.split(r"[ ;<>=!~\[]", r, maxsplit=1)[0]
            for r in dist.requires or []
            if "extra" not in r
        }
    )
    return (
        f"{dist.version}, {tags[0] if tags else '?'}, requires: {', '.join(requires) or 'nothing'}"
    )


def outcome(lib: Cel, text: str, obj: dict[str, Any]) -> object:
    """The expression's value on `obj`, or `error` when evaluating it fails."""
    try:
        return bool(lib.plain(lib.evaluate(lib.compile(text), obj)))
    except Exception:  # each library raises its own kind
        return "error"


def cel_report(lib: Cel, number: int, repeat: int) -> None:
    slow = max(number // 20, 5)
    program = lib.compile(CERT["current"])
    programs = [lib.compile(CERT[k]) for k in ("inProgress", "failed", "current")]
    compiling = microseconds(lambda: lib.compile(CERT["current"]), slow, repeat)
    one = microseconds(lambda: lib.evaluate(program, READY_CERT), number, repeat)
    three = microseconds(lambda: [lib.evaluate(p, READY_CERT) for p in programs], number, repeat)
    print(f"{lib.distribution} ({wheel(lib.distribution)})")
    print(f"  compile, us: {compiling:.1f}")
    print(f"  evaluate one expression, us: {one:.1f}")
    print(f"  evaluate the three RFC-0009 expressions, us: {three:.1f}")
    agree = all(outcome(lib, text, READY_CERT) == value for text, value in CHECKS.items())
    print(f"  filter, all, exists, has() as CEL says: {agree}")
    print(f"  missing field: {outcome(lib, MISSING_FIELD, READY_CERT)}")
    try:
        lib.compile(MISSPELT_FUNCTION)
        caught = False
    except Exception:  # each library raises its own kind
        caught = True
    print(f"  misspelt function caught when compiling: {caught}")


def jsonpath_report(lib: JsonPath, number: int, repeat: int) -> None:
    query = lib.compile("$." + KEY)
    compiling = microseconds(lambda: lib.compile("$." + KEY), max(number // 20, 5), repeat)
    finding = microseconds(lambda: lib.find(query, FAILED_APP), number, repeat)
    print(f"{lib.distribution} ({wheel(lib.distribution)})")
    print(f"  compile, us: {compiling:.1f}")
    print(f"  find, us: {finding:.1f}")
    print(f"  filter finds the condition: {lib.find(query, FAILED_APP) == ['True']}")
    print(
        f"  missing key finds nothing: {lib.find(lib.compile('$.status.nope'), FAILED_APP) == []}"
    )


OBJECT = {"apiVersion": "v1", "kind": "X", "name": "r"}
RULE_KINDS = {
    "alwaysHealthy": ({"alwaysHealthy": {}}, kapp_app()),
    "singleConditionType": ({"singleConditionType": "Ready"}, READY_CERT),
    "multiMatch": (KAPP_RULE, FAILED_APP),
    "cel": (CERTIFICATE_RULE, READY_CERT),
}


def rules_report(number: int, repeat: int) -> None:
    """The project's `evaluate` and `observe` (evaluate + count with `for`) per rule kind."""
    now = datetime(2025, 1, 1, tzinfo=UTC)
    print("project rules (statemachines.health), evaluate and observe (evaluate + count):")
    later = now + timedelta(seconds=1)
    for kind, (rule, obj) in RULE_KINDS.items():
        raw = {"name": "r", "object": OBJECT, "for": "2m", "healthRule": rule}
        (resource,) = load_resources([raw], namespace="n", collectors=())
        counted = observe(resource, None, obj, now)
        per_evaluation = microseconds(lambda r=resource, o=obj: evaluate(r, o), number, repeat)
        per_observe = microseconds(
            lambda r=resource, c=counted, o=obj: observe(r, c, o, later), number, repeat
        )
        print(f"  {kind}, per second: {1e6 / per_evaluation:.0f} {1e6 / per_observe:.0f}")


def oversized_report(count: int = 5000) -> None:
    """A configuration of `count` resources (past the CRD's 64): refused, and how fast."""
    rule = {"cel": {"current": "status.conditions.exists(c, c.type == 'Ready')"}}
    resources = [{"name": f"r{i}", "object": {**OBJECT, "name": f"o{i}"}, "healthRule": rule}
                 for i in range(count)]  # fmt: skip
    text = yaml.safe_dump({"resources": resources})
    started = time.perf_counter()
    try:
        load_configuration(text, source="config.yaml", namespace="n")
    except ConfigError as error:
        said = str(error)
    seconds = time.perf_counter() - started
    print(f"a configuration of {count} resources, loaded and refused, s: {seconds:.2f} ({said})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=2000, help="calls per timing run")
    parser.add_argument("--repeat", type=int, default=5, help="timing runs; the best is shown")
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]}; best of {args.repeat} runs of {args.number} calls")
    print("CEL, on RFC-0009's Certificate:")
    for lib in cel_libraries():
        cel_report(lib, args.number, args.repeat)
    print("JSONPath, on Cartographer's ReconcileFailed key:")
    for path_lib in jsonpath_libraries():
        jsonpath_report(path_lib, args.number, args.repeat)
    rules_report(args.number, args.repeat)
    oversized_report()


if __name__ == "__main__":
    main()
