"""The two kinds of `admissionregistration.k8s.io/v1` as kube-apiserver stores them: decoded
into their Go types' shapes (a list where a string goes is encoding/json's 400), validated as
pkg/apis/admissionregistration/validation does (422), every expression compiled (type-checked)
with cel-expr-python, the CEL project's runtime, in the variables' environment, and of the
type it must evaluate to (a validation or match condition bool, a messageExpression string).
Compiled programs are cached, boundedly. Not served, and so refused: `paramKind` /
`paramRef`, namespace and object selectors."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, Final

from kubesim.cel_ast import Node, read
from kubesim.fields import FieldError
from kubesim.meta import coerce_metadata
from kubesim.resources import ResourceType, Strategy
from kubesim.typed import Field, GoType, ListOf, MapOf, Scalar, Struct, decode

__all__ = [
    "ADMISSION_GROUP",
    "REASONS",
    "admission_types",
    "compiled",
    "declare",
    "environment",
    "program",
    "well_formed",
]

Obj = dict[str, Any]
ADMISSION_GROUP: Final = "admissionregistration.k8s.io"
_ACTIONS: Final = ("Deny", "Warn", "Audit")
_CACHED: Final = 1024  # compiled expressions kept: a stream of new policies cannot grow it
# what each expression must evaluate to (validating/interface.go, matchconditions: ReturnTypes)
_RETURNS: Final = {("matchConditions", "expression"): "BOOL",
                   ("validations", "expression"): "BOOL",
                   ("validations", "messageExpression"): "STRING"}  # fmt: skip
_GO_TYPES: Final = {"BOOL": "bool", "INT": "int", "UINT": "uint", "DOUBLE": "double",
                    "STRING": "string", "BYTES": "bytes", "NULL": "null_type", "DYN": "dyn",
                    "TIMESTAMP": "google.protobuf.Timestamp",
                    "DURATION": "google.protobuf.Duration", "LIST": "list", "MAP": "map",
                    "TYPE": "type"}  # fmt: skip
_CEL_IDENTIFIER: Final = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*")
_RESERVED: Final = frozenset({"true", "false", "null", "in", "as", "break", "const",
                              "continue", "else", "for", "function", "if", "import", "let",
                              "loop", "package", "namespace", "return", "var", "void",
                              "while"})  # fmt: skip
REASONS: Final = {"Invalid": 422, "Forbidden": 403, "Unauthorized": 401,
                   "RequestEntityTooLarge": 413}  # fmt: skip
_UNSUPPORTED: Final = (
    ("spec.paramKind", ("spec", "paramKind")),
    ("spec.paramRef", ("spec", "paramRef")),
    ("spec.matchConstraints.namespaceSelector", ("spec", "matchConstraints", "namespaceSelector")),
    ("spec.matchConstraints.objectSelector", ("spec", "matchConstraints", "objectSelector")),
    ("spec.matchResources.namespaceSelector", ("spec", "matchResources", "namespaceSelector")),
    ("spec.matchResources.objectSelector", ("spec", "matchResources", "objectSelector")),
)


Declared = tuple[tuple[str, str], ...]  # the variables an expression sees: (name, type name)


@lru_cache(maxsize=256)
def environment(declared: Declared = ()) -> Any:
    """`object`, `request`... of type dyn, and each declared variable as `variables.<name>` of
    the type its expression returns (kube-apiserver's composition types `variables` so)."""
    from cel_expr_python import cel

    names = ("object", "oldObject", "request", "params", "namespaceObject")
    typed = {f"variables.{name}": _cel_type(type_name) for name, type_name in declared}
    return cel.NewEnv(variables=dict.fromkeys(names, cel.Type.DYN) | typed)


def _cel_type(name: str) -> Any:
    """The type cel-expr-python names `name` (`LIST<MAP<STRING, INT>>`); dyn for any other."""
    from cel_expr_python import cel

    outer, _, inner = name.partition("<")
    if outer == "LIST" and inner:
        return cel.Type.List(_cel_type(inner[:-1]))
    if outer == "MAP" and inner:
        depth = 0
        for at, char in enumerate(inner[:-1]):
            depth += {"<": 1, ">": -1}.get(char, 0)
            if char == "," and depth == 0:
                return cel.Type.Map(_cel_type(inner[:at]), _cel_type(inner[at + 1 : -1].strip()))
    plain = ("BOOL", "INT", "UINT", "DOUBLE", "STRING", "BYTES", "NULL", "TIMESTAMP", "DURATION")
    return getattr(cel.Type, name) if name in plain else cel.Type.DYN


@lru_cache(maxsize=_CACHED)
def compiled(expression: str, declared: Declared = ()) -> Any:
    """The program of `expression`; raises ValueError with cel's first error."""
    try:
        return environment(declared).compile(expression)
    except RuntimeError as error:
        first = str(error).splitlines()[0]
        raise ValueError(re.sub(r"^[A-Z_]+: (ERROR: )?", "", first)) from None


@lru_cache(maxsize=_CACHED)
def program(expression: str, declared: Declared = ()) -> Node:
    """The checked AST of `expression`, for kubesim/cel_eval.py; raises ValueError as compiled."""
    return read(compiled(expression, declared).serialize())


def declare(variables: Sequence[Any]) -> Declared:
    """Each variable with the type its expression returns, compiled with those before it (dyn
    where it does not compile), as composition.go's CompileAndStoreVariables declares them."""
    named = tuple((str(v["name"]), str(v.get("expression"))) for v in variables
                  if isinstance(v, Mapping) and isinstance(v.get("name"), str))  # fmt: skip
    return _declare(tuple((n, e) for n, e in named if _CEL_IDENTIFIER.fullmatch(n)))


@lru_cache(maxsize=_CACHED)
def _declare(named: tuple[tuple[str, str], ...]) -> Declared:
    if not named:
        return ()
    declared = _declare(named[:-1])
    name, text = named[-1]
    try:
        found = compiled(text, declared).return_type().name()
    except ValueError:
        found = "DYN"
    return (*declared, (name, found))


# --- the two kinds -------------------------------------------------------------------------


def _struct(name: str, *fields: tuple[str, GoType] | str) -> Struct:
    """A Go struct of string fields (named) and typed ones ((name, type))."""
    return Struct(name, tuple(Field(f, Scalar("string")) if isinstance(f, str) else Field(*f)
                              for f in fields))  # fmt: skip


_STRINGS = ListOf(Scalar("string"))
_SELECTOR = _struct(
    "LabelSelector",
    ("matchLabels", MapOf(Scalar("string"))),
    (
        "matchExpressions",
        ListOf(_struct("LabelSelectorRequirement", "key", "operator", ("values", _STRINGS))),
    ),
)
_RULE = _struct(
    "NamedRuleWithOperations",
    ("resourceNames", _STRINGS),
    ("operations", _STRINGS),
    ("apiGroups", _STRINGS),
    ("apiVersions", _STRINGS),
    ("resources", _STRINGS),
    "scope",
)
_MATCH = _struct(
    "MatchResources",
    ("namespaceSelector", _SELECTOR),
    ("objectSelector", _SELECTOR),
    ("resourceRules", ListOf(_RULE)),
    ("excludeResourceRules", ListOf(_RULE)),
    "matchPolicy",
)
_POLICY_SPEC = _struct(
    "ValidatingAdmissionPolicySpec",
    ("paramKind", _struct("ParamKind", "apiVersion", "kind")),
    ("matchConstraints", _MATCH),
    (
        "validations",
        ListOf(_struct("Validation", "expression", "message", "reason", "messageExpression")),
    ),
    "failurePolicy",
    ("auditAnnotations", ListOf(_struct("AuditAnnotation", "key", "valueExpression"))),
    ("matchConditions", ListOf(_struct("MatchCondition", "name", "expression"))),
    ("variables", ListOf(_struct("Variable", "name", "expression"))),
)
_BINDING_SPEC = _struct(
    "ValidatingAdmissionPolicyBindingSpec", "policyName",
    ("paramRef", _struct("ParamRef", "name", "namespace", ("selector", _SELECTOR),
                         "parameterNotFoundAction")),
    ("matchResources", _MATCH), ("validationActions", _STRINGS),
)  # fmt: skip


class _AdmissionStrategy(Strategy):
    """Keeps `spec` (and a policy's `status`); type-checks every expression of a policy."""

    policy = False

    def decode(self, body: Obj, version: str) -> tuple[Obj, list[str]]:
        metadata, dropped = coerce_metadata(body.get("metadata"))
        obj: Obj = {"kind": body.get("kind"), "apiVersion": body.get("apiVersion")}
        obj["metadata"] = metadata
        # the Go types' shapes: a list where a string goes is encoding/json's 400, as there
        decode(body.get("spec") or {}, _POLICY_SPEC if self.policy else _BINDING_SPEC, "spec", [])
        kept = ("spec", "status") if self.policy else ("spec",)
        for key, value in body.items():
            if key in kept:
                obj[key] = value
            elif key not in ("apiVersion", "kind", "metadata"):
                dropped.append(key)
        if isinstance(obj.get("spec"), dict):
            _default(obj["spec"], self.policy)
        return obj, dropped

    def validate(self, obj: Obj, version: str) -> list[FieldError]:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return [FieldError.required("spec", "")]
        errors = [
            FieldError.forbidden(path, "not served by kubesim (see kubesim/admission.py)")
            for path, keys in _UNSUPPORTED
            if _dig(obj, keys) not in (None, {})
        ]
        return errors + (_policy_errors(spec) if self.policy else _binding_errors(spec))


def _default(spec: Obj, policy: bool) -> None:
    """admissionregistration/v1's defaults (kubernetes pkg/apis/admissionregistration/v1/
    defaults.go), which kube-apiserver stores: a policy's failurePolicy Fail; in match
    resources matchPolicy Equivalent, namespaceSelector and objectSelector {}, and each rule's
    scope "*"; a paramRef's parameterNotFoundAction Deny. A manifest that leaves them out is
    patched by every `kubectl apply` (a rule list whose items differ is replaced whole)."""
    if policy:
        spec.setdefault("failurePolicy", "Fail")
    match = spec.get("matchConstraints" if policy else "matchResources")
    if isinstance(match, dict):
        match.setdefault("matchPolicy", "Equivalent")
        match.setdefault("namespaceSelector", {})
        match.setdefault("objectSelector", {})
        for key in ("resourceRules", "excludeResourceRules"):
            for rule in match.get(key) or ():
                if isinstance(rule, dict):
                    rule.setdefault("scope", "*")
    if isinstance(spec.get("paramRef"), dict):
        spec["paramRef"].setdefault("parameterNotFoundAction", "Deny")


def _policy_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    if spec.get("failurePolicy", "Fail") not in ("Fail", "Ignore"):
        errors.append(FieldError.not_supported("spec.failurePolicy", spec["failurePolicy"],
                                               ["Fail", "Ignore"]))  # fmt: skip
    if not (spec.get("matchConstraints") or {}).get("resourceRules"):
        errors.append(FieldError.required("spec.matchConstraints.resourceRules", ""))
    variables = spec.get("variables") or []
    declared = declare(variables)
    for index, variable in enumerate(variables):
        name = (variable or {}).get("name")
        where = f"spec.variables[{index}].name"
        if not name or not str(name).strip():
            errors.append(FieldError.required(where, "name is not specified"))
        elif not _CEL_IDENTIFIER.fullmatch(name) or name in _RESERVED:
            errors.append(FieldError.invalid(where, name, "must be a valid CEL identifier"))
    for section, keys in (("matchConditions", ("expression",)), ("variables", ("expression",)),
                          ("validations", ("expression", "messageExpression"))):  # fmt: skip
        for index, item in enumerate(spec.get(section) or []):
            # a variable sees those before it (composition.go), a match condition none (it is
            # compiled statelessly), the validations all of them
            seen = {"variables": declare(variables[:index]), "matchConditions": ()}.get(
                section, declared
            )
            for key in keys:
                text = (item or {}).get(key)
                where = f"spec.{section}[{index}].{key}"
                if not text and key == "expression":
                    errors.append(FieldError.required(where, ""))
                elif text:
                    errors += _expression_errors(where, text, _RETURNS.get((section, key)), seen)
    for index, item in enumerate(spec.get("validations") or []):
        reason = (item or {}).get("reason")
        if reason is not None and reason not in REASONS:
            errors.append(FieldError.not_supported(f"spec.validations[{index}].reason", reason,
                                                   list(REASONS)))  # fmt: skip
    return errors


def _expression_errors(
    where: str, text: str, returns: str | None, declared: Declared
) -> list[FieldError]:
    """Compiled (type-checked) as kube-apiserver compiles it, and of the type it must return
    (the checker's type, not what one evaluation happens to give)."""
    try:
        found = compiled(text, declared).return_type()
    except ValueError as error:
        return [FieldError.invalid(where, text, f"compilation failed: {error}")]
    if returns is not None and found.name() != returns:
        return [FieldError.invalid(where, text, f"must evaluate to {_GO_TYPES[returns]} but "
                                                f"got {_go_type(str(found))}")]  # fmt: skip
    return []


def _go_type(name: str) -> str:
    """cel-go's name of a checked type (`list(int)`, `map(string, dyn)`)."""
    return re.sub(r"[A-Z_]+", lambda m: _GO_TYPES.get(m[0], m[0].lower()), name).translate(
        str.maketrans("<>", "()")
    )


def _binding_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    if not spec.get("policyName"):
        errors.append(FieldError.required("spec.policyName", ""))
    actions = spec.get("validationActions") or []
    if not actions:
        errors.append(FieldError.required("spec.validationActions", ""))
    errors += [
        FieldError.not_supported(f"spec.validationActions[{i}]", a, list(_ACTIONS))
        for i, a in enumerate(actions) if a not in _ACTIONS
    ]  # fmt: skip
    return errors


def well_formed(obj: Any, policy: bool) -> bool:
    """What kube-apiserver's informer could decode and its validation would pass: anything
    else (stored by another writer of etcd) is no policy or binding to act on."""
    if not isinstance(obj, dict) or not isinstance(obj.get("spec"), dict):
        return False
    try:
        decode(obj["spec"], _POLICY_SPEC if policy else _BINDING_SPEC, "spec", [])
    except ValueError:
        return False
    return not (_policy_errors(obj["spec"]) if policy else _binding_errors(obj["spec"]))


def admission_types() -> list[ResourceType]:
    policy = _AdmissionStrategy()
    policy.policy = True
    return [
        ResourceType(ADMISSION_GROUP, ("v1",), "validatingadmissionpolicies",
                     "validatingadmissionpolicy", "ValidatingAdmissionPolicy",
                     "ValidatingAdmissionPolicyList", namespaced=False, strategy=policy),
        ResourceType(ADMISSION_GROUP, ("v1",), "validatingadmissionpolicybindings",
                     "validatingadmissionpolicybinding", "ValidatingAdmissionPolicyBinding",
                     "ValidatingAdmissionPolicyBindingList", namespaced=False,
                     strategy=_AdmissionStrategy()),
    ]  # fmt: skip


def _dig(obj: Mapping[str, Any], keys: Sequence[str]) -> Any:
    for key in keys:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)  # type: ignore[assignment]
    return obj
