"""Rigged comparisons: objects made to pass an assertion without being the answer.

`assert answer() == 42` holds for an object whose `__eq__` returns True whatever it is given,
`assert x in allowed` for one whose `__contains__` does, `assert isinstance(x, int)` for one
whose `__class__` says `int`. Production code has no use for a comparison that does not
compare: such an object exists to satisfy tests. A comparison is rigged when its result cannot
depend on the other operand (it never reads it, or it only ever returns True/False literals,
or it compares and calls nothing at all), when a class takes a different comparison for it
(`__eq__ = int.__ne__`), or when one is put on a class from outside its body (`setattr`,
`Cls.__eq__ = ...`, a `type(...)` namespace).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from consort.adapters.smells.folding import fold

RIGGED_DUNDERS = frozenset(
    {
        "__eq__",
        "__ne__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__contains__",
        "__instancecheck__",
        "__subclasscheck__",
    }
)
LYING_IDENTITY = "__class__"
Function = ast.FunctionDef | ast.AsyncFunctionDef


def rigged_comparisons(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, what) for every rigged comparison in a module."""
    functions = {n.name: n for n in ast.walk(tree) if isinstance(n, Function)}
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for statement in node.body:
                what = _class_statement(statement, functions)
                if what:
                    found.append((statement.lineno, what))
        else:
            found += [(getattr(node, "lineno", 0), what) for what in _from_outside(node)]
    return found


def _class_statement(statement: ast.stmt, functions: dict[str, Function]) -> str | None:
    if isinstance(statement, Function):
        if statement.name == LYING_IDENTITY:
            return "defines `__class__`: the object claims a type it does not have"
        if statement.name in RIGGED_DUNDERS and _ignores_other(statement.args, statement.body):
            return f"defines `{statement.name}` whose result ignores what it is compared with"
        return None
    for name, value in _class_bindings(statement):
        if name == LYING_IDENTITY:
            return "sets `__class__`: the object claims a type it does not have"
        if name in RIGGED_DUNDERS:
            what = _bound_comparison(name, value, functions)
            if what:
                return what
    return None


def _bound_comparison(name: str, value: ast.expr, functions: dict[str, Function]) -> str | None:
    """Why `name = value` in a class body rigs the comparison `name`, or None."""
    if isinstance(value, ast.Lambda):
        rigged = _ignores_other(value.args, [ast.Return(value=value.body)])
    elif isinstance(value, ast.Attribute):
        # `__eq__ = int.__eq__` reuses a real one; `__eq__ = int.__ne__` lies.
        return None if value.attr == name else f"makes `{name}` the comparison `{value.attr}`"
    elif isinstance(value, ast.Name) and value.id in functions:
        function = functions[value.id]
        rigged = _ignores_other(function.args, function.body)
    else:
        return f"binds `{name}` to something that is not a comparison"
    return f"defines `{name}` whose result ignores what it is compared with" if rigged else None


def _class_bindings(statement: ast.stmt) -> Iterator[tuple[str, ast.expr]]:
    if isinstance(statement, ast.Assign):
        for target in statement.targets:
            if isinstance(target, ast.Name):
                yield target.id, statement.value
    elif (
        isinstance(statement, ast.AnnAssign)
        and statement.value is not None
        and isinstance(statement.target, ast.Name)
    ):
        yield statement.target.id, statement.value


def _ignores_other(arguments: ast.arguments, body: list[ast.stmt]) -> bool:
    positional = [*arguments.posonlyargs, *arguments.args]
    other = positional[1].arg if len(positional) >= 2 else None
    others = {n for n in (other, *(a.arg for a in (arguments.vararg, arguments.kwarg) if a)) if n}
    nodes = [n for part in body for n in ast.walk(part)]
    read = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    if not others & read:
        return True
    returned = [n.value for n in nodes if isinstance(n, ast.Return)]
    if returned and all(
        isinstance(r, ast.Constant) and isinstance(r.value, bool) for r in returned
    ):
        return True
    # A comparison compares something, or asks something else to (a call).
    return not any(isinstance(n, ast.Compare | ast.Call) for n in nodes)


def _from_outside(node: ast.AST) -> list[str]:
    """A comparison or `__class__` put on a class from outside its body."""
    names = RIGGED_DUNDERS | {LYING_IDENTITY}
    if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [
            f"sets `{t.attr}` on an object from outside its class"
            for t in targets
            if isinstance(t, ast.Attribute) and t.attr in names
        ]
    if isinstance(node, ast.Dict):
        return [
            f"builds a namespace with `{k.value}`"
            for k in node.keys
            if isinstance(k, ast.Constant) and k.value in names
        ]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "setattr"
        and len(node.args) >= 2
    ):
        attribute = fold(node.args[1], {})
        if attribute in names:
            return [f"sets `{attribute}` with setattr"]
    return []
