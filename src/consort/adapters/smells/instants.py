"""The value of an expression built from literals, for the clock rule: a number, a string, or a
`date`/`datetime`/`timedelta` of literals, worked out through arithmetic (`1_700_000_000 +
86400 * 400`, `datetime(2026, 11, 20) + timedelta(days=13)`), conversions (`int("17648...")`,
`datetime.fromisoformat(...)`, `.timestamp()`) and names bound once to such an expression
(`START = ...` and `DEADLINE = START + DAY`). Nothing is executed: each operation is
interpreted here, on literals only; anything else gives None.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any

from consort.adapters.smells.folding import fold
from consort.adapters.smells.syntax import qualified_name

MAX_DEPTH = 12
LARGEST = 10**15
ARITHMETIC: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Div: operator.truediv,
    ast.Mod: operator.mod,
}
TIMEDELTA_UNITS = frozenset(
    {"days", "seconds", "microseconds", "milliseconds", "minutes", "hours", "weeks"}
)


def bound_once(tree: ast.AST) -> dict[str, ast.expr]:
    """Names assigned exactly once in the module (anywhere), to the expression assigned."""
    counts: dict[str, int] = {}
    values: dict[str, ast.expr] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for name in (n for n in ast.walk(target) if isinstance(n, ast.Name)):
                    counts[name.id] = counts.get(name.id, 0) + 1
                    if isinstance(target, ast.Name):
                        values[name.id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            counts[node.target.id] = counts.get(node.target.id, 0) + 1
            if node.value is not None:
                values[node.target.id] = node.value
        elif isinstance(node, ast.AugAssign | ast.NamedExpr) and isinstance(node.target, ast.Name):
            counts[node.target.id] = counts.get(node.target.id, 0) + 2
        elif isinstance(node, ast.For | ast.comprehension | ast.With | ast.FunctionDef):
            for bound in _bound_by(node):
                counts[bound] = counts.get(bound, 0) + 2
    return {name: values[name] for name, n in counts.items() if n == 1 and name in values}


def _bound_by(node: ast.AST) -> list[str]:
    if isinstance(node, ast.For | ast.comprehension):
        return [n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)]
    if isinstance(node, ast.With):
        return [
            n.id
            for item in node.items
            if item.optional_vars is not None
            for n in ast.walk(item.optional_vars)
            if isinstance(n, ast.Name)
        ]
    if isinstance(node, ast.FunctionDef):
        return [a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)]
    return []


def constant(
    node: ast.AST, aliases: dict[str, str], names: dict[str, ast.expr], depth: int = 0
) -> Any:
    """The value `node` stands for when it is built from literals only, else None."""
    if depth > MAX_DEPTH:
        return None
    try:
        value = _value(node, aliases, names, depth)
    except (ArithmeticError, TypeError, ValueError, OverflowError):
        return None
    if isinstance(value, int | float) and not isinstance(value, bool) and abs(value) > LARGEST:
        return None
    return value


def _value(node: ast.AST, aliases: dict[str, str], names: dict[str, ast.expr], depth: int) -> Any:  # noqa: PLR0911
    def inner(n: ast.AST) -> Any:
        return constant(n, aliases, names, depth + 1)

    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, int | float | str) else None
    if isinstance(node, ast.Name):
        return inner(names[node.id]) if node.id in names and node.id not in aliases else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = inner(node.operand)
        if operand is None or isinstance(operand, str | date):
            return None
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Pow):
            base, exponent = inner(node.left), inner(node.right)
            if type(base) in (int, float) and type(exponent) is int and 0 <= exponent <= 64:
                return base**exponent
            return None
        function = ARITHMETIC.get(type(node.op))
        left, right = inner(node.left), inner(node.right)
        if function is None or left is None or right is None:
            return fold(node, aliases)
        if isinstance(left, str) or isinstance(right, str):
            return fold(node, aliases)
        return function(left, right)
    if isinstance(node, ast.Call):
        return _call(node, aliases, inner)
    if isinstance(node, ast.JoinedStr | ast.Subscript):
        return fold(node, aliases)
    return None


def _call(node: ast.Call, aliases: dict[str, str], inner: Callable[[ast.AST], Any]) -> Any:  # noqa: PLR0911
    name = qualified_name(node.func, aliases) or ""
    if isinstance(node.func, ast.Attribute) and node.func.attr == "timestamp" and not node.args:
        made = inner(node.func.value)
        if isinstance(made, datetime):
            return (made if made.tzinfo else made.replace(tzinfo=UTC)).timestamp()
        return None
    short = name.rsplit(".", 1)[-1]
    args = [inner(a) for a in node.args]
    if any(a is None for a in args):
        return fold(node, aliases)
    if name in ("int", "float") and len(args) == 1 and not node.keywords:
        return (int if name == "int" else float)(args[0])
    if name in ("datetime.date", "datetime.datetime") and not node.keywords:
        if len(args) >= 3 and all(type(a) is int for a in args):
            return (date if name == "datetime.date" else datetime)(*args)
        return None
    if name == "datetime.timedelta":
        units = {k.arg: inner(k.value) for k in node.keywords}
        if not all(k in TIMEDELTA_UNITS and type(v) in (int, float) for k, v in units.items()):
            return None
        if not all(type(a) in (int, float) for a in args):
            return None
        return timedelta(*args, **units)  # type: ignore[arg-type]
    if short == "fromisoformat" and len(args) == 1 and isinstance(args[0], str):
        return (date if name.endswith("date.fromisoformat") else datetime).fromisoformat(args[0])
    if short in ("fromtimestamp", "utcfromtimestamp") and len(args) == 1:
        return datetime.fromtimestamp(float(args[0]), UTC)
    return fold(node, aliases)
