"""Checks that hold whatever the code returns, found by working them out.

A RED test's check is meant to fail for code that does the wrong thing. Some checks read the
code and still cannot fail: `assert answer() == 42 or answer() != 42`, `assert not (x is None
and x is not None)`, `assert (answer() == 42) if answer() == 42 else True`, `assert
len(repr(answer())) > 0`, `assert hasattr(answer(), "__class__")`, `assert answer() == ANY`,
`assert all(answer() == 42 for _ in [])`, and a check that runs only where it holds (`if
answer() == 42: assert answer() == 42`, `if answer() != answer(): raise AssertionError`).
Listing such shapes never ends; working them out does. Every part of the check that comes from
the code or the test's own names (a call, a name, an attribute, a subscript of one) is an
unknown, the same unknown wherever the same expression appears, and the check, with the
conditions the test put around it, is evaluated with the unknowns set to many values of many
kinds (numbers, strings, None, booleans, containers, an object of no kind). A check that is
true for every one of them, without an error, holds for whatever the code returns: it is no
check. A check that fails, or errors, for any of them is one (weak checks, `assert
isinstance(answer(), int)`, stay the reviewer's).

Only what is modelled is judged: literals and displays, operators, comparisons, `and`/`or`/
`not`, conditional expressions, `:=`, comprehensions over what is worked out, and pure builtins
(`len`, `repr`, `str`, `bool`, `isinstance`, `hasattr`, `all`, `any`, ...). Anything else (a
name bound more than once in the test, a lambda, more than three unknowns) leaves the check
unjudged, which counts it as a check.
"""

from __future__ import annotations

import ast
import itertools
import operator
import unittest.mock
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from consort.adapters.smells.constant_result import BINARY, unary
from consort.adapters.smells.constant_result import COMPARE as ARITHMETIC_COMPARE
from consort.adapters.smells.syntax import qualified_name

MAX_UNKNOWNS = 3
MAX_NAMED = 12
LARGEST_SIZE = 10_000
LARGEST_EXPONENT = 64


class _Opaque:
    """A value of no kind the code could return: an instance of a class of its own."""

    def __repr__(self) -> str:
        return "<opaque>"


PROBES: tuple[Any, ...] = (
    0,
    1,
    -1,
    42,
    2.5,
    "",
    "a",
    "42",
    None,
    True,
    False,
    (),
    (0,),
    [],
    [1, "a"],
    {},
    {"a": 1},
    _Opaque(),
)

# The operators both rules evaluate are `constant_result`'s; a check also compares by identity
# and membership.
COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    **ARITHMETIC_COMPARE,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
    ast.In: lambda a, b: operator.contains(b, a),
    ast.NotIn: lambda a, b: not operator.contains(b, a),
}
TYPES: dict[str, type] = {
    name: getattr(__import__("builtins"), name)
    for name in (
        "object",
        "int",
        "float",
        "str",
        "bool",
        "bytes",
        "list",
        "tuple",
        "dict",
        "set",
        "frozenset",
        "type",
    )
}
CALLS: dict[str, Callable[..., Any]] = {
    "len": len,
    "repr": repr,
    "str": str,
    "bool": bool,
    "abs": abs,
    "type": type,
    "isinstance": isinstance,
    "hasattr": hasattr,
    "callable": callable,
    "all": all,
    "any": any,
    "id": id,
    "list": list,
    "tuple": tuple,
    "set": set,
    "frozenset": frozenset,
    "dict": dict,
    "sorted": sorted,
    "min": min,
    "max": max,
    "sum": sum,
    "int": int,
    "float": float,
}
# Values the test may name that are what they are whatever the code does.
KNOWN: dict[str, Any] = {
    "unittest.mock.ANY": unittest.mock.ANY,
    "mock.ANY": unittest.mock.ANY,
    "math.inf": float("inf"),
    "math.nan": float("nan"),
    "None": None,
    "True": True,
    "False": False,
}


class _Unjudged(Exception):
    """The expression holds something this evaluation does not model."""


Guard = tuple[ast.expr, bool]


def holds_anyway(
    test: ast.expr | None,
    aliases: dict[str, str],
    guards: Sequence[Guard] = (),
    opaque: frozenset[str] = frozenset(),
) -> bool:
    """Whether the check `test` (None: a check that fails whenever it is reached, a `raise`)
    passes for every value of the unknowns it and its `guards` read, where each guard is a
    condition the test put around it and whether the check runs where it is true or false.
    `opaque`: names the test binds more than once, which are not judged."""
    expressions: list[ast.expr] = [g for g, _ in guards] + ([test] if test is not None else [])
    unknowns: dict[str, ast.expr] = {}
    try:
        for expression in expressions:
            _collect(expression, aliases, opaque, unknowns)
    except _Unjudged:
        return False
    if len(unknowns) > MAX_UNKNOWNS:
        return False
    keys = list(unknowns)
    probes = _probes(expressions)
    for values in itertools.product(probes, repeat=len(keys)):
        scope = _Scope(aliases, dict(zip(keys, values, strict=True)))
        try:
            reached = all(bool(_evaluate(g, scope)) is want for g, want in guards)
            if reached and (test is None or not _evaluate(test, scope)):
                return False
        except _Unjudged:
            return False
        except Exception:
            return False
    return True


def _probes(expressions: list[ast.expr]) -> tuple[Any, ...]:
    """The probes, and the constants the check and its conditions name with their neighbours:
    `if answer() == "id1":` is reached only where the code returns "id1"."""
    named: list[Any] = []
    for expression in expressions:
        for node in ast.walk(expression):
            if not isinstance(node, ast.Constant) or isinstance(node.value, bool):
                continue
            value = node.value
            near = [value - 1, value + 1] if isinstance(value, int | float) else []
            for candidate in (value, *near):
                if isinstance(candidate, int | float | str | bytes) and not any(
                    type(candidate) is type(p) and candidate == p for p in (*PROBES, *named)
                ):
                    named.append(candidate)
    return (*PROBES, *named[:MAX_NAMED])


def raises_anyway(expression: ast.expr, aliases: dict[str, str]) -> bool:
    """Whether an expression of constants and operators alone raises when worked out (`1 / 0`,
    `[][0]`; a call, even of a builtin, may stand for the code under test)."""
    if any(isinstance(n, ast.Call) for n in ast.walk(expression)):
        return False
    unknowns: dict[str, ast.expr] = {}
    try:
        _collect(expression, aliases, frozenset(), unknowns)
        if unknowns:
            return False
        _evaluate(expression, _Scope(aliases, {}))
    except _Unjudged:
        return False
    except Exception:
        return True
    return False


def _key(node: ast.expr) -> str:
    return ast.dump(node)


def _collect(
    node: ast.expr,
    aliases: dict[str, str],
    opaque: frozenset[str],
    unknowns: dict[str, ast.expr],
    bound: frozenset[str] = frozenset(),
) -> None:
    """Find the unknowns of an expression, or raise _Unjudged for what is not modelled. `bound`:
    the names a comprehension binds, which are its own values, not unknowns."""
    if isinstance(node, ast.Name) and node.id in bound:
        return
    if _is_unknown(node, aliases):
        if _root_name(node) in opaque:
            raise _Unjudged  # a name that holds more than one value: `col["name"]` in a loop
        unknowns.setdefault(_key(node), node)
        return
    if isinstance(node, ast.Lambda | ast.Await | ast.Yield | ast.YieldFrom | ast.Starred):
        raise _Unjudged
    if isinstance(node, ast.GeneratorExp | ast.ListComp | ast.SetComp | ast.DictComp):
        inner = bound
        for generator in node.generators:
            _collect(generator.iter, aliases, opaque, unknowns, inner)
            inner = inner | _targets(generator)
            for condition in generator.ifs:
                _collect(condition, aliases, opaque, unknowns, inner)
        elements = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        for element in elements:
            _collect(element, aliases, opaque, unknowns, inner)
        return
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.expr):
            _collect(child, aliases, opaque, unknowns, bound)


def _root_name(node: ast.expr) -> str | None:
    """`col` for `col["name"].strip()`: the name an attribute, subscript or call is made of."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _targets(generator: ast.comprehension) -> frozenset[str]:
    return frozenset(n.id for n in ast.walk(generator.target) if isinstance(n, ast.Name))


def _is_unknown(node: ast.expr, aliases: dict[str, str]) -> bool:
    """What comes from the code or the test's names: evaluated as one of the probes."""
    if isinstance(node, ast.Name):
        return qualified_name(node, aliases) not in KNOWN and node.id not in CALLS | TYPES
    if isinstance(node, ast.Attribute):
        return qualified_name(node, aliases) not in KNOWN
    if isinstance(node, ast.Subscript):
        return _is_unknown(node.value, aliases)
    if isinstance(node, ast.Call):
        return not _modelled_call(node, aliases)
    return False


def _modelled_call(node: ast.Call, aliases: dict[str, str]) -> bool:
    if isinstance(node.func, ast.Name) and node.func.id in CALLS and not node.keywords:
        return aliases.get(node.func.id, node.func.id) == node.func.id
    return False


class _Scope:
    def __init__(self, aliases: dict[str, str], values: dict[str, Any]) -> None:
        self.aliases, self.values = aliases, values
        self.bound: dict[str, Any] = {}


def _evaluate(node: ast.expr, scope: _Scope) -> Any:  # noqa: PLR0911, PLR0912 -- one per kind
    if isinstance(node, ast.Name) and node.id in scope.bound:
        return scope.bound[node.id]
    key = _key(node)
    if key in scope.values:
        return scope.values[key]
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name | ast.Attribute):
        name = qualified_name(node, scope.aliases) or ""
        if name in KNOWN:
            return KNOWN[name]
        if name in TYPES:
            return TYPES[name]
        raise _Unjudged
    if isinstance(node, ast.NamedExpr):
        value = _evaluate(node.value, scope)
        if not isinstance(node.target, ast.Name):
            raise _Unjudged
        scope.bound[node.target.id] = value
        scope.values[_key(ast.Name(id=node.target.id, ctx=ast.Load()))] = value
        return value
    if isinstance(node, ast.BinOp):
        return _binary(node, _evaluate(node.left, scope), _evaluate(node.right, scope))
    if isinstance(node, ast.UnaryOp):
        return unary(node.op, _evaluate(node.operand, scope))
    if isinstance(node, ast.BoolOp):
        result: Any = None
        for value in node.values:
            result = _evaluate(value, scope)
            if bool(result) is isinstance(node.op, ast.Or):
                return result
        return result
    if isinstance(node, ast.Compare):
        left = _evaluate(node.left, scope)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = _evaluate(comparator, scope)
            if not COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _evaluate(node.body if _evaluate(node.test, scope) else node.orelse, scope)
    if isinstance(node, ast.Tuple):
        return tuple(_evaluate(e, scope) for e in node.elts)
    if isinstance(node, ast.List):
        return [_evaluate(e, scope) for e in node.elts]
    if isinstance(node, ast.Set):
        return {_evaluate(e, scope) for e in node.elts}
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise _Unjudged
        return {
            _evaluate(k, scope): _evaluate(v, scope)
            for k, v in zip(node.keys, node.values, strict=True)
            if k is not None
        }
    if isinstance(node, ast.JoinedStr):
        return "".join(str(_evaluate(v, scope)) for v in node.values)
    if isinstance(node, ast.FormattedValue):
        if node.conversion != -1 or node.format_spec is not None:
            raise _Unjudged
        return format(_evaluate(node.value, scope))
    if isinstance(node, ast.Subscript):
        return _evaluate(node.value, scope)[_evaluate(node.slice, scope)]
    if isinstance(node, ast.GeneratorExp | ast.ListComp | ast.SetComp):
        return list(_comprehension(node, scope))
    if isinstance(node, ast.Call) and _modelled_call(node, scope.aliases):
        assert isinstance(node.func, ast.Name)  # noqa: S101 -- _modelled_call says so
        return CALLS[node.func.id](*[_evaluate(a, scope) for a in node.args])
    raise _Unjudged


def _comprehension(
    node: ast.GeneratorExp | ast.ListComp | ast.SetComp, scope: _Scope
) -> Iterator[Any]:
    if len(node.generators) != 1:
        raise _Unjudged
    generator = node.generators[0]
    if not isinstance(generator.target, ast.Name) or generator.is_async:
        raise _Unjudged
    items = list(_evaluate(generator.iter, scope))
    if len(items) > LARGEST_SIZE:
        raise _Unjudged
    for item in items:
        scope.bound[generator.target.id] = item
        if all(_evaluate(c, scope) for c in generator.ifs):
            yield _evaluate(node.elt, scope)
    scope.bound.pop(generator.target.id, None)


def _binary(node: ast.BinOp, left: Any, right: Any) -> Any:
    if isinstance(node.op, ast.Pow):
        if not isinstance(right, int | float) or abs(right) > LARGEST_EXPONENT:
            raise _Unjudged
        return left**right
    if isinstance(node.op, ast.Mult):
        for count, other in ((left, right), (right, left)):
            sized = isinstance(count, int) and hasattr(other, "__len__")
            if sized and count * max(len(other), 1) > LARGEST_SIZE:
                raise _Unjudged
    function = BINARY.get(type(node.op))
    if function is None:
        raise _Unjudged
    return function(left, right)
