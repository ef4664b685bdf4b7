"""Rigged comparisons: objects made to pass an assertion without being the answer.

`assert answer() == 42` holds for an object whose `__eq__` returns True whatever it is given,
`assert x in allowed` for one whose `__contains__` does, `assert isinstance(x, int)` for one
whose `__class__` says `int`. Production code has no use for a comparison that does not
compare: such an object exists to satisfy tests. A comparison is rigged when its result cannot
depend on the other operand (it never reads it, or it only ever returns True/False literals,
or it compares and calls nothing at all), or on the object and the other operand together (no
comparison reads both, or a value it returns reads only one of them: `other == other`,
`isinstance(other, int)`, `... or True`), or its arithmetic throws both away whatever they
hold (`self.v * 0 == other.v * 0`, `smells/constant_result.py`), when a class takes a
different comparison for it (`__eq__ = int.__ne__`), or when one is put on a class from
outside its body (`setattr`, `Cls.__eq__ = ...`, a `type(...)` namespace).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from consort.adapters.smells.constant_result import constant_result
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
    if not any(isinstance(n, ast.Compare | ast.Call) for n in nodes):
        return True
    own = positional[0].arg if positional else None
    # reading both is not enough: arithmetic can throw them away (`self.v * 0 == other.v * 0`)
    return not _weighs_both(own, others, body) or constant_result(own, others, body)


def _weighs_both(own: str | None, others: set[str], body: list[ast.stmt]) -> bool:
    """Whether the comparison's result can depend on the object and the other operand together:
    some comparison or call reads both (`self.v == other.v`, `super().__eq__(other)`, through
    local names bound from either), and no value it returns is true whatever they are (an
    `or` with a constant, or with a side that reads only one of them: `other == other`,
    `bool(other) or not other`, `isinstance(other, int)` read no `self`)."""
    mine = {"super", *([own] if own else [])}
    theirs = set(others)
    nodes = [n for part in body for n in ast.walk(part)]
    for _ in range(3):  # locals bound from either side take that side
        for node in nodes:
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                read = _names(node.value)
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                bound = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
                if read & mine:
                    mine |= bound
                if read & theirs:
                    theirs |= bound
    if not any(
        isinstance(n, ast.Compare | ast.Call) and _names(n) & mine and _names(n) & theirs
        for n in nodes
    ):
        return False
    returned = [
        n.value
        for n in nodes
        if isinstance(n, ast.Return)
        and n.value is not None
        and not (isinstance(n.value, ast.Constant) and isinstance(n.value.value, bool))
        and not (isinstance(n.value, ast.Name) and n.value.id == "NotImplemented")
    ]
    return all(_both_sides(value, mine, theirs) for value in returned) and _true_when_both(
        body, mine, theirs
    )


def _true_when_both(body: list[ast.stmt], mine: set[str], theirs: set[str]) -> bool:
    """Every `return True` sits under an `if` that reads both sides (`if self is other:`), not
    one that holds for any other operand (`if other == other:`)."""

    def visit(statements: list[ast.stmt], guarded: bool) -> bool:
        for statement in statements:
            if isinstance(statement, ast.Return):
                value = statement.value
                if isinstance(value, ast.Constant) and value.value is True and not guarded:
                    return False
            elif isinstance(statement, ast.If):
                both = guarded or _both_sides(statement.test, mine, theirs)
                if not (visit(statement.body, both) and visit(statement.orelse, both)):
                    return False
            elif isinstance(statement, ast.With | ast.For | ast.While | ast.Try):
                inner = [
                    s
                    for field in ("body", "orelse", "finalbody")
                    for s in getattr(statement, field, [])
                ]
                inner += [s for h in getattr(statement, "handlers", []) for s in h.body]
                if not visit(inner, guarded):
                    return False
        return True

    return visit(body, guarded=False)


def _both_sides(value: ast.expr, mine: set[str], theirs: set[str]) -> bool:
    """A returned value that reads both sides, every alternative of an `or` included."""
    if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or):
        return all(_both_sides(v, mine, theirs) for v in value.values)
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.BitOr):
        return _both_sides(value.left, mine, theirs) and _both_sides(value.right, mine, theirs)
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not):
        return _both_sides(value.operand, mine, theirs)
    if isinstance(value, ast.IfExp):
        return _both_sides(value.body, mine, theirs) and _both_sides(value.orelse, mine, theirs)
    read = _names(value)
    return bool(read & mine and read & theirs)


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


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
