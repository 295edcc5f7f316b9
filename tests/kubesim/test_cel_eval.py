"""kubesim's CEL evaluator (kubesim/cel_eval.py, which kube-apiserver's cost limits need) gives
the values the CEL project's own runtime gives (cel-expr-python, cel-cpp), across the standard
library kubesim's environment declares: the oracle is in-process, so these call both directly.
Where they disagree on purpose it is to do as cel-go does (a comprehension past cel-cpp's
iteration budget; tests/kubesim/test_admission_cost.py)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from cel_expr_python import cel

from kubesim.admission_kinds import compiled, environment, program
from kubesim.cel_eval import CelError, CostExceeded, Evaluation, Joined

OBJECT = {
    "metadata": {"name": "web-1", "labels": {"app": "web"}},
    "spec": {"replicas": 3, "ratio": 0.5, "ports": [80, 443], "flag": True, "none": None,
             "names": ["a", "bb", "ccc"], "nested": {"x": {"y": [1, 2, {"z": "w"}]}}},
}  # fmt: skip
EXPRESSIONS = """
object.metadata.name.startsWith('web') && object.spec.replicas > 2
object.spec.replicas * 2 - 7 / 2 % 3
-object.spec.replicas
object.spec.ports.all(p, p > 0)
object.spec.ports.exists(p, p == 443)
object.spec.ports.exists_one(p, p > 100)
object.spec.ports.map(p, p * 2)
object.spec.names.filter(n, n.contains('b')).map(n, size(n))
object.metadata.labels.exists(k, object.metadata.labels[k] == 'web')
'app' in object.metadata.labels && !('zzz' in object.metadata.labels) && 80 in object.spec.ports
has(object.spec.none) && !has(object.spec.missing)
object.spec.none == null
object.spec.missing
object.spec.nested.x.y[2].z
object.spec.nested.x.y[5]
object.metadata.name.matches('^web-[0-9]+$') && object.metadata.name.endsWith('-1')
string(object.spec.replicas) + string(object.spec.ratio) + string(true) + string(b'abc')
int('42') + int(3.9) + int(-3.9)
double(1) / 0.0
1 / 0
5 % 0
7 / -2 + -7 % 3
9223372036854775807 + 1
18446744073709551615u + 1u
2u - 3u
string(1e6) + ' ' + string(123456.0) + ' ' + string(0.00001) + ' ' + string(1.0 / 3.0)
size(b'abc') + size('héllo')
type(1) == int && type('a') == string && type([]) == list && type(null) == null_type
timestamp('2024-02-29T12:34:56Z').getDayOfYear() + timestamp('2024-02-29T12:34:56Z').getMonth()
timestamp('2024-02-29T12:34:56Z').getHours('America/New_York')
string(timestamp('2024-02-29T12:34:56Z') + duration('1h'))
string(duration('1h30m') + duration('15s'))
string(timestamp('2024-01-02T00:00:00Z') - timestamp('2024-01-01T00:00:00Z'))
timestamp('not a time')
[1, 2] + [3] == [1, 2, 3] && {'a': 1} != {'a': 2}
dyn(1) == dyn(1u) && dyn(1) < dyn(1.5) && dyn('a') != dyn(1)
{'a': [1, {'b': 2}]}['a'][1]['b']
{'a': 1}['b']
object.spec.ports.size() > 1 ? 'many' : 'one'
object.spec.missing == 1 || true
object.spec.missing == 1 && true
[0, 1].exists(x, 1 / x > 0)
[0, 1].all(x, 1 / x > 0)
'abc' < 'abd' && b'a' < b'b' && false < true
bool('true') && !bool('0') && double('1.5e3') > 1.0
int('x')
[1, 2, 3].map(x, [x, x * x])
object.spec.names + object.spec.ports
'x' + object.spec.replicas
uint(-1)
""".strip().splitlines()


def _plain(value: Any) -> Any:
    if isinstance(value, list | Joined):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, datetime.datetime):
        stamp = value if value.tzinfo else value.replace(tzinfo=datetime.UTC)
        return stamp.timestamp()
    if isinstance(value, bytearray | bytes):
        return bytes(value)
    if hasattr(value, "name") and callable(value.name):  # cel-expr-python's type value
        return str(value.name()).lower()
    return value


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_the_evaluator_agrees_with_cel_cpp(expression: str) -> None:
    try:
        ours: Any = _plain(Evaluation({"object": OBJECT}).run(program(expression)))
    except (CelError, CostExceeded):
        ours = "error"
    found = compiled(expression).eval(environment().Activation(data={"object": OBJECT}))
    theirs = "error" if found.type() == cel.Type.ERROR else _plain(found.plain_value())
    assert (ours, type(ours)) == (theirs, type(theirs))
