"""Comparisons whose arithmetic throws the operands away: `self.v * 0 == other.v * 0`.

Such a comparison reads both sides, so a rule that asks only whether both are read lets it
through; its result is the same whatever the two objects hold. It is found by working it out:
the returned expression, where it is made of numbers, arithmetic, comparisons and the two
objects' attributes alone, is evaluated with those attributes set to many values, the same on
both sides and different ones; a result that is true whatever they hold does not compare
anything. An expression with anything else in it (a method of the object's, `is`,
`isinstance`) is not judged here. Tuples, `operator.eq`, `a.__eq__(b)`, `math.isclose`, `str`
and a few other pure builtins are worked out too: `(0 * self.v,) == (0 * other.v,)` is no more
a comparison than its element.
"""

from __future__ import annotations

import ast
import operator
import random
from collections.abc import Callable
from typing import Any

TRIALS = 24
LARGEST_EXPONENT = 64
Function = ast.FunctionDef | ast.AsyncFunctionDef

BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Div: operator.truediv,
    ast.Mod: operator.mod,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
}
COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


def unary(op: ast.unaryop, operand: Any) -> Any:
    """`op` applied to an operand already evaluated."""
    if isinstance(op, ast.Not):
        return not operand
    if isinstance(op, ast.USub):
        return -operand
    if isinstance(op, ast.UAdd):
        return +operand
    return ~operand


CALLS: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "min": min,
    "max": max,
    "int": int,
    "float": float,
    "round": round,
    "bool": bool,
    "str": str,
    "hash": hash,
    "len": len,
    "sum": sum,
    "tuple": tuple,
    "sorted": lambda *a: tuple(sorted(*a)),
    "frozenset": frozenset,
    "math.isclose": __import__("math").isclose,
    "operator.eq": operator.eq,
    "operator.ne": operator.ne,
    "operator.lt": operator.lt,
    "operator.le": operator.le,
    "operator.gt": operator.gt,
    "operator.ge": operator.ge,
    "operator.add": operator.add,
    "operator.sub": operator.sub,
    "operator.mul": operator.mul,
    "operator.mod": operator.mod,
}
# `a.__eq__(b)` and its kin, called on a value worked out here
DUNDER_CALLS: dict[str, Callable[[Any, Any], Any]] = {
    "__eq__": operator.eq,
    "__ne__": operator.ne,
    "__lt__": operator.lt,
    "__le__": operator.le,
    "__gt__": operator.gt,
    "__ge__": operator.ge,
    "__mul__": operator.mul,
    "__add__": operator.add,
    "__sub__": operator.sub,
    "__mod__": operator.mod,
}


class _Unknown(Exception):
    """The expression holds something this evaluation does not model."""


def constant_result(own: str | None, others: set[str], body: list[ast.stmt]) -> bool:
    """Whether some value the comparison returns is true for every pair of objects."""
    if own is None or not others:
        return False
    bound = _single_bindings(body)
    for node in (n for part in body for n in ast.walk(part)):
        if not isinstance(node, ast.Return) or node.value is None:
            continue
        if isinstance(node.value, ast.Constant):
            continue  # literal results are the other rules' business
        if _never_changes(node.value, own, others, bound):
            return True
    return False


def _single_bindings(body: list[ast.stmt]) -> dict[str, ast.expr]:
    """Local names bound once, to the expression they stand for."""
    counts: dict[str, int] = {}
    values: dict[str, ast.expr] = {}
    for node in (n for part in body for n in ast.walk(part)):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                counts[target.id] = counts.get(target.id, 0) + 1
                values[target.id] = node.value
        elif isinstance(node, ast.AugAssign | ast.AnnAssign | ast.NamedExpr) and isinstance(
            node.target, ast.Name
        ):
            counts[node.target.id] = counts.get(node.target.id, 0) + 2
    return {name: values[name] for name, n in counts.items() if n == 1}


def _never_changes(value: ast.expr, own: str, others: set[str], bound: dict[str, ast.expr]) -> bool:
    chance = random.Random(0)  # noqa: S311 -- sample values, not secrets
    results = set()
    reads: set[str] = set()
    for trial in range(2 * TRIALS):
        same = trial % 2 == 0  # both objects hold the same values in every other trial
        leaves: dict[tuple[str, str], int] = {}
        try:
            result = _evaluate(value, _Scope(own, others, bound, leaves, same, chance))
        except (_Unknown, ArithmeticError, TypeError, ValueError, RecursionError):
            return False
        results.add(bool(result))
        reads |= {side for side, _ in leaves}
    # True whatever the objects hold: the comparison passes every assertion made with it (one
    # always False passes none). It must read both: one side alone is the other rules' finding.
    return results == {True} and reads == {"own", "other"}


class _Scope:
    def __init__(  # noqa: PLR0917 -- one evaluation's state
        self,
        own: str,
        others: set[str],
        bound: dict[str, ast.expr],
        leaves: dict[tuple[str, str], int],
        same: bool,
        chance: random.Random,
    ) -> None:
        self.own, self.others, self.bound = own, others, bound
        self.leaves, self.same, self.chance = leaves, same, chance
        self.depth = 0

    def leaf(self, side: str, path: str) -> int:
        key = (side, path)
        if key not in self.leaves:
            twin = ("other" if side == "own" else "own", path)
            if self.same and twin in self.leaves:
                self.leaves[key] = self.leaves[twin]
            else:
                taken = set(self.leaves.values())
                choice = self.chance.randint(-500, 500)
                while choice in taken:
                    choice = self.chance.randint(-500, 500)
                self.leaves[key] = choice
        return self.leaves[key]


def _evaluate(node: ast.expr, scope: _Scope) -> Any:  # noqa: PLR0911, PLR0912 -- one per kind
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool | int | float | str):
            return node.value
        raise _Unknown
    path = _path(node, scope)
    if path is not None:
        return scope.leaf(*path)
    if isinstance(node, ast.Name) and node.id in scope.bound:
        scope.depth += 1
        if scope.depth > 20:
            raise _Unknown
        return _evaluate(scope.bound[node.id], scope)
    if isinstance(node, ast.BinOp):
        left, right = _evaluate(node.left, scope), _evaluate(node.right, scope)
        if isinstance(node.op, ast.Pow):
            if abs(right) > LARGEST_EXPONENT:
                raise _Unknown
            return left**right
        if isinstance(node.op, ast.LShift | ast.RShift):
            if not 0 <= right <= LARGEST_EXPONENT:
                raise _Unknown
            return left << right if isinstance(node.op, ast.LShift) else left >> right
        function = BINARY.get(type(node.op))
        if function is None:
            raise _Unknown
        return function(left, right)
    if isinstance(node, ast.UnaryOp):
        return unary(node.op, _evaluate(node.operand, scope))
    if isinstance(node, ast.BoolOp):
        values = [_evaluate(v, scope) for v in node.values]
        if isinstance(node.op, ast.And):
            return all(values)
        return any(values)
    if isinstance(node, ast.Compare):
        left = _evaluate(node.left, scope)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            function = COMPARE.get(type(op))
            if function is None:
                raise _Unknown
            right = _evaluate(comparator, scope)
            if not function(left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        chosen = node.body if _evaluate(node.test, scope) else node.orelse
        return _evaluate(chosen, scope)
    if isinstance(node, ast.Tuple | ast.List):
        return tuple(_evaluate(e, scope) for e in node.elts)
    if isinstance(node, ast.Set):
        return frozenset(_evaluate(e, scope) for e in node.elts)
    if isinstance(node, ast.Call) and not node.keywords:
        return _call(node, scope)
    raise _Unknown


def _call(node: ast.Call, scope: _Scope) -> Any:
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in DUNDER_CALLS and len(node.args) == 1:
        receiver = _evaluate(func.value, scope)
        return DUNDER_CALLS[func.attr](receiver, _evaluate(node.args[0], scope))
    name = _dotted(func)
    if name not in CALLS:
        raise _Unknown
    if name == "len":
        (value,) = (_evaluate(a, scope) for a in node.args)
        if not isinstance(value, tuple | frozenset | str):
            raise _Unknown
        return len(value)
    return CALLS[name](*[_evaluate(a, scope) for a in node.args])


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return ""


def _path(node: ast.expr, scope: _Scope) -> tuple[str, str] | None:
    """("own" | "other", the attribute path) for `self.v`, `other.v.w`, `other[0]`, `self`."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute | ast.Subscript):
        if isinstance(node, ast.Attribute):
            parts.append("." + node.attr)
        elif isinstance(node.slice, ast.Constant):
            parts.append(f"[{node.slice.value!r}]")
        else:
            return None
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    if node.id == scope.own:
        side = "own"
    elif node.id in scope.others:
        side = "other"
    else:
        return None
    return side, "".join(reversed(parts))
