"""Code that measures how deep it is called, by how far it can go before the stack runs out.

A test runner calls the code under test from deep inside itself: a pytest test's frame sits
some forty frames down, a program's `main()` two. Code that finds how much room is left before
`RecursionError` tells a run from production without naming anything, and answers right only
in the run: `json.loads("[" * n + "]" * n)` for growing `n` until it fails (961 under pytest,
1001 from `python -c`), or a function of its own that calls itself. The frames themselves are
refused elsewhere (`sys._getframe`, `inspect`, `traceback`); these are the ways to the same
answer without reading a frame:

* `RecursionError` named at all (caught, compared, looked up): waiting for the stack to run
  out; and `sys.getrecursionlimit`/`setrecursionlimit` (`tamper.ATTRIBUTE_CAPABILITIES`);
* a structure made as deep as a count says, to be handed to what recurses through it (a
  parser, `json.dumps`, `==`, `repr`, `copy.deepcopy`): an opening bracket repeated (`"[" *
  n`), or a value wrapped in itself in a loop (`x = [x]`, `x = {"k": x}`) or by `reduce`;
* a function of the module's own that calls itself, directly or through others, called where
  a handler that catches `RecursionError` (`RuntimeError`, `Exception`, `BaseException`, a bare
  `except`) sees it fail.

Honest code recurses over data it was given and lets a `RecursionError` surface as the bug it is.
"""

from __future__ import annotations

import ast

from consort.adapters.smells.folding import fold
from consort.adapters.smells.syntax import qualified_name

# What catches a RecursionError: the class itself and the ones it is made from.
CATCHES_RECURSION = frozenset({"RecursionError", "RuntimeError", "Exception", "BaseException"})
OPENERS = frozenset("[({")
REDUCE = frozenset({"functools.reduce", "reduce"})

Finding = tuple[int, str]
_MEASURES = "measures the stack's room (a runner calls the code from deep inside itself)"


def stack_depth_findings(tree: ast.AST, aliases: dict[str, str]) -> list[Finding]:
    found: list[Finding] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if _names_recursion_error(node, aliases):
            found.append((line, f"waits for RecursionError: {_MEASURES}"))
        elif (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Mult)
            and _repeats_opener(node, aliases)
        ):
            found.append(
                (line, f"repeats an opening bracket, a structure as deep as a count: {_MEASURES}")
            )
        elif isinstance(node, ast.For | ast.While | ast.AsyncFor) and _wraps_itself(node.body):
            found.append((line, f"wraps a value in itself in a loop: {_MEASURES}"))
        elif isinstance(node, ast.Call) and _reduces_into_itself(node, aliases):
            found.append((line, f"wraps a value in itself by reduce: {_MEASURES}"))
    if isinstance(tree, ast.Module):
        found += _recursion_caught(tree, aliases)
    return found


def _names_recursion_error(node: ast.AST, aliases: dict[str, str]) -> bool:
    if isinstance(node, ast.Name | ast.Attribute):
        name = (qualified_name(node, aliases) or "").removeprefix("builtins.")
        return name == "RecursionError"
    return False


def _repeats_opener(node: ast.BinOp, aliases: dict[str, str]) -> bool:
    for text, count in ((node.left, node.right), (node.right, node.left)):
        value = fold(text, aliases)
        if not value or not set(value) <= OPENERS:
            continue
        literal = count.value if isinstance(count, ast.Constant) else None
        if not isinstance(literal, int) or literal >= 50:
            return True
    return False


def _holds_itself(display: ast.expr, name: str) -> bool:
    """A display with the name itself as one of its elements (not spread: `[*x, y]` is a
    longer list, not a deeper one)."""
    if isinstance(display, ast.List | ast.Tuple | ast.Set):
        elements = display.elts
    elif isinstance(display, ast.Dict):
        elements = [v for k, v in zip(display.keys, display.values, strict=True) if k is not None]
    else:
        return False
    return any(isinstance(e, ast.Name) and e.id == name for e in elements)


def _wraps_itself(body: list[ast.stmt]) -> bool:
    """`x = [x]`, `x = {"k": x}`, `x = (x, 1)` as a statement of a loop's own body, every time
    round (a scalar put in a list under a condition, `if isinstance(x, str): x = [x]`, is not
    nesting)."""
    for statement in body:
        if not isinstance(statement, ast.Assign):
            continue
        for target in statement.targets:
            if isinstance(target, ast.Name) and _holds_itself(statement.value, target.id):
                return True
    return False


def _reduces_into_itself(node: ast.Call, aliases: dict[str, str]) -> bool:
    """`reduce(lambda acc, _: [acc], range(n), [])`."""
    if qualified_name(node.func, aliases) not in REDUCE or not node.args:
        return False
    function = node.args[0]
    if not isinstance(function, ast.Lambda) or not function.args.args:
        return False
    return _holds_itself(function.body, function.args.args[0].arg)


def _recursion_caught(tree: ast.Module, aliases: dict[str, str]) -> list[Finding]:
    """Calls, under a handler that catches RecursionError, of the module's own top-level
    functions that call themselves, directly or through each other (by name)."""
    functions = {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    calls = {
        name: _called_names(function) & functions.keys() for name, function in functions.items()
    }
    recursive = {name for name in functions if name in _reachable(name, calls)}
    if not recursive:
        return []
    found: list[Finding] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try | ast.TryStar):
            continue
        if not any(_catches_recursion(h.type, aliases) for h in node.handlers):
            continue
        for statement in node.body:
            for inner in ast.walk(statement):
                if (
                    isinstance(inner, ast.Call)
                    and isinstance(inner.func, ast.Name)
                    and inner.func.id in recursive
                ):
                    found.append(
                        (inner.lineno, f"catches a function of its own that recurses: {_MEASURES}")
                    )
    return found


def _called_names(function: ast.AST) -> set[str]:
    return {
        node.func.id
        for node in ast.walk(function)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }


def _reachable(start: str, calls: dict[str, set[str]]) -> set[str]:
    """The functions `start` reaches through one call or more."""
    seen: set[str] = set()
    pending = list(calls.get(start, ()))
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        pending += calls.get(name, ())
    return seen


def _catches_recursion(kind: ast.expr | None, aliases: dict[str, str]) -> bool:
    if kind is None:
        return True
    kinds = kind.elts if isinstance(kind, ast.Tuple) else [kind]
    return any(
        (qualified_name(k, aliases) or "").removeprefix("builtins.") in CATCHES_RECURSION
        for k in kinds
    )
