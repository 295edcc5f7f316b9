"""CEL evaluated as kube-apiserver's cel-go evaluates it, with its runtime cost tracking
(interpreter/runtimecost.go): an identifier or a field costs 1, a list literal 10 and a map
literal 30 (unless all constant: cel-go folds those), a call what `cel_std.call_cost` says, a
comprehension whatever its iterations evaluate. Past the limit the evaluation stops with
cel-go's `operation cancelled: actual cost limit exceeded`.

Why an evaluator of our own, over the AST cel-expr-python checked (kubesim/cel_ast.py), and not
cel-expr-python's own evaluation (measured: docs/architecture.md, kubesim's line): cel-cpp
counts no cost, builds each value whole before anything could stop it (a chain of variables
each doubling the last reaches gigabytes), holds the GIL for as long (every other client of
kubesim waits), and stops any comprehension past its own iteration budget (`INTERNAL: Iteration
budget exceeded`) where kube-apiserver only counts cost. Here a call's cost is known from its
arguments and charged before the call builds its value, so no value grows past what the limit
allows; Python switches threads during a long evaluation, so other clients go on. cel-go
concatenates lists lazily, at cost 1: so does this (Joined), so a doubled list costs what it
costs there and no memory. A string concatenation is charged by its size even where the
checker left the overload to the runtime (cel-go charges those 1 and would build a doubling of
`object`'s data until its memory runs out): kubesim refuses that instead."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final, overload

from kubesim.cel_ast import Call, Comprehension, Const, Ident, ListLit, MapLit, Node, Select
from kubesim.cel_std import call, call_cost
from kubesim.cel_values import CelError, CelType

__all__ = ["PER_CALL_LIMIT", "CelError", "CostExceeded", "Evaluation", "Joined"]

PER_CALL_LIMIT: Final = 1_000_000  # k8s.io/apiserver/pkg/apis/cel/config.go: PerCallLimit
_LIST_COST: Final = 10  # cel-go common/cost.go: ListCreateBaseCost, MapCreateBaseCost
_MAP_COST: Final = 30
_COPIED: Final = 64  # a concatenation at most this long is copied; a longer one is Joined
_TYPES: Final = frozenset({"int", "uint", "double", "bool", "string", "bytes", "list", "map",
                           "null_type", "type", "google.protobuf.Timestamp",
                           "google.protobuf.Duration"})  # fmt: skip


class CostExceeded(Exception):  # noqa: N818 - cel-go's EvalCancelledError
    def __init__(self) -> None:
        super().__init__("operation cancelled: actual cost limit exceeded")


class Joined(Sequence[Any]):
    """Two lists concatenated without copying (cel-go's concatList): a doubling costs no
    memory; reading it costs its iterations, which are charged."""

    __slots__ = ("_left", "_right", "_size")

    def __init__(self, left: Sequence[Any], right: Sequence[Any]) -> None:
        self._left, self._right, self._size = left, right, len(left) + len(right)

    def __len__(self) -> int:
        return self._size

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Any]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            raise TypeError("Joined is not sliced")
        if not 0 <= index < self._size:
            raise IndexError(index)
        node: Sequence[Any] = self
        while isinstance(node, Joined):
            left = len(node._left)
            node, index = (node._left, index) if index < left else (node._right, index - left)
        return node[index]

    def __iter__(self) -> Iterator[Any]:
        stack: list[Sequence[Any]] = [self]
        while stack:
            node = stack.pop()
            if isinstance(node, Joined):
                stack += (node._right, node._left)
            else:
                yield from node


class Evaluation:
    """One evaluation of one expression: the values by name (`variables` may be a lazy
    mapping) and the cost limit; `cost` is what it has cost so far, also after it failed."""

    def __init__(self, values: Mapping[str, Any], limit: int = PER_CALL_LIMIT) -> None:
        self.values, self.limit, self.cost = values, limit, 0
        self._scopes: list[dict[str, Any]] = []
        self._owned: list[list[Any]] = []  # accumulators a comprehension may extend in place

    def run(self, node: Node) -> Any:
        """The value of `node`; raises CelError or CostExceeded."""
        try:
            return self._eval(node)
        except RecursionError:
            raise CelError("max recursion depth exceeded") from None

    def _charge(self, cost: int) -> None:
        self.cost += cost
        if self.cost > self.limit:
            raise CostExceeded

    def _eval(self, node: Node) -> Any:
        return _STEPS[type(node)](self, node)

    def _const(self, node: Const) -> Any:
        return node.value

    def _ident(self, node: Ident) -> Any:
        name = node.name
        if name.startswith("variables."):  # cel-go: `variables`, then its field
            self._charge(2)
            return self.values["variables"][name[10:]]
        self._charge(1)
        return self._resolve(name)

    def _list(self, node: ListLit) -> list[Any]:
        self._charge(_LIST_COST)
        return [self._eval(e) for e in node.elements]

    def _map(self, node: MapLit) -> dict[Any, Any]:
        self._charge(_MAP_COST)
        built: dict[Any, Any] = {}
        for key_node, value_node in node.entries:
            key = self._eval(key_node)
            if key in built:
                raise CelError(f"Failed with repeated key: {key}")
            built[key] = self._eval(value_node)
        return built

    def _resolve(self, name: str) -> Any:
        for scope in reversed(self._scopes):
            if name in scope:
                value = scope[name]
                if isinstance(value, CelError):
                    raise value
                return value
        if name in self.values:
            return self.values[name]
        if name in _TYPES:
            return CelType(name)
        raise CelError(f"no such attribute: {name}")

    def _select(self, node: Select) -> Any:
        operand = self._eval(node.operand)
        if node.test_only:  # has(): presence costs nothing in kube-apiserver
            if not isinstance(operand, Mapping):
                raise CelError("invalid type for field selection.")
            return node.field in operand
        self._charge(1)
        if not isinstance(operand, Mapping):
            raise CelError(f"no such key: {node.field}" if operand is None else "no such overload")
        if node.field not in operand:
            raise CelError(f"no such key: {node.field}")
        return operand[node.field]

    def _call(self, node: Call) -> Any:  # noqa: PLR0911
        function = node.function
        if function in ("_&&_", "_||_"):
            return self._logic(node.args, function == "_||_")
        if function == "_?_:_":
            condition = self._eval(node.args[0])
            if not isinstance(condition, bool):
                raise CelError("no such overload")
            return self._eval(node.args[1] if condition else node.args[2])
        if function == "@not_strictly_false":
            self._charge(1)
            try:
                value = self._eval(node.args[0])
            except CelError:
                return True
            return value if isinstance(value, bool) else True
        args = [self._eval(a) for a in node.args]
        if function == "_[_]":
            self._charge(1)
            return _index(args[0], args[1])
        folded = function == "@in" and isinstance(node.args[1], Const)  # cel-go: a set lookup
        self._charge(0 if folded else call_cost(function, args))
        if function == "_+_" and all(_is_list(a) for a in args):
            left, right = args
            if isinstance(node.args[0], Ident) and any(left is o for o in self._owned):
                left.extend(right)  # a macro's accumulator: nothing else holds it
                return left
            if len(left) + len(right) <= _COPIED:
                return [*left, *right]
            return Joined(left, right)
        return call(function, args)

    def _logic(self, args: Sequence[Node], is_or: bool) -> bool:
        """`&&` and `||` as CEL's commutative logic: a deciding side wins over an error."""
        error: CelError | None = None
        for arg in args:
            try:
                value = self._eval(arg)
            except CelError as failed:
                error = error or failed
                continue
            if not isinstance(value, bool):
                error = error or CelError("no such overload")
            elif value is is_or:
                return is_or
        if error is not None:
            raise error
        return not is_or

    def _fold(self, node: Comprehension) -> Any:
        iterated = self._eval(node.iter_range)
        if isinstance(iterated, Mapping):
            pairs: Iterator[tuple[Any, Any]] = iter(iterated.items())
        elif _is_list(iterated):
            pairs = enumerate(iterated)
        else:
            raise CelError("no such overload")
        accu = self._eval(node.accu_init)
        owned = isinstance(accu, list)
        if owned:
            accu = list(accu)  # the macro's own, extended in place (see _call)
            self._owned.append(accu)
        scope: dict[str, Any] = {node.accu_var: accu}
        self._scopes.append(scope)
        try:
            for first, second in pairs:
                if node.iter_var2:
                    scope[node.iter_var], scope[node.iter_var2] = first, second
                else:
                    scope[node.iter_var] = second if isinstance(iterated, Sequence) else first
                condition = self._eval(node.loop_condition)
                if condition is False:
                    break
                try:
                    scope[node.accu_var] = self._eval(node.loop_step)
                except CelError as error:
                    scope[node.accu_var] = error
            scope.pop(node.iter_var, None)
            scope.pop(node.iter_var2, None)
            return self._eval(node.result)
        finally:
            self._scopes.pop()
            if owned:
                self._owned.pop()


_STEPS: Final[dict[type, Callable[[Evaluation, Any], Any]]] = {
    Const: Evaluation._const, Ident: Evaluation._ident, Select: Evaluation._select,
    Call: Evaluation._call, Comprehension: Evaluation._fold, ListLit: Evaluation._list,
    MapLit: Evaluation._map,
}  # fmt: skip


def _is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def _index(container: Any, key: Any) -> Any:
    if isinstance(container, Mapping):
        if key not in container:
            raise CelError(f"no such key: {key}")
        return container[key]
    if _is_list(container):
        if isinstance(key, float) and key.is_integer():
            key = int(key)
        if isinstance(key, bool) or not isinstance(key, int):
            raise CelError(f"unsupported index type '{type(key).__name__}' in list")
        if not 0 <= key < len(container):
            raise CelError(f"index '{key}' out of range in list size '{len(container)}'")
        return container[key]
    raise CelError("no such overload")
