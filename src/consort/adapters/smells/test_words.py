"""Where production code may say "test", "tests" or "testing": where the word cannot decide what
the code does.

Code that answers right only in a test run looks for the run by such a word: the tests beside it
(`os.path.isdir("tests")`), a test environment (`APP_ENV == "test"`, `env in ("test", "ci")`,
`MODES["test"]`), a word in a path or a name. So the word is refused wherever it can reach a
comparison, a key, a path, another function, a value returned, or a name another module can
read; it is let through only where it can change nothing but what is shown: a docstring or a
statement of its own, what a message is made of (`print`, logging, `warnings.warn`, an
exception raised with it), and what a route handler returns (`@app.get(...)`: the response's
body, `{"kind": "test"}`), through the strings and local names that only ever lead there.

The rule follows the word's value, within one module: into containers and strings built from
it, into the local names bound to it (and every place each is read), and out of them. A name
bound at a module's or class's top level, a value returned or yielded, an argument of any call
but a message's, and anything the rule does not know is a place the word can decide from, and
refused: another module, or a function it cannot see into, may compare it there.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

TEST_WORDS = frozenset({"test", "tests", "testing"})

# Calls whose arguments are only shown: printed, logged, warned, written to a stream.
MESSAGE_CALLS = frozenset({"print", "warnings.warn", "click.echo", "typer.echo", "rich.print"})
MESSAGE_METHODS = frozenset(
    {"debug", "info", "warning", "warn", "error", "exception", "critical", "log", "echo"}
)
# Calls and operations that make a new value from the word: the value goes on where that one
# goes.
CARRIER_CALLS = frozenset(
    {"str", "repr", "format", "list", "tuple", "set", "frozenset", "dict", "sorted"}
)
CARRIER_METHODS = frozenset({"format", "join", "upper", "lower", "title", "capitalize", "strip"})
MAX_ROUNDS = 20


def is_test_word(value: str) -> bool:
    return value.lower().strip("./") in TEST_WORDS


def deciding_uses(tree: ast.AST, words: list[ast.AST]) -> list[tuple[int, str]]:
    """(line, how) for each of `words` (nodes that evaluate to a test word) whose value can
    decide what the code does; [] when each only ever reaches a message."""
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found: dict[int, tuple[int, str]] = {}
    for word in words:
        how = _first_decision(word, parents, tree)
        if how is not None:
            line = getattr(word, "lineno", 0)
            found[id(word)] = (line, how)
    return sorted(found.values())


def _first_decision(word: ast.AST, parents: dict[int, ast.AST], tree: ast.AST) -> str | None:
    """How the value of `word` can decide what the code does, following local names; None
    when it only reaches messages."""
    pending: list[ast.AST] = [word]
    names_seen: set[str] = set()
    for _ in range(MAX_ROUNDS):
        if not pending:
            return None
        bound: list[str] = []
        for node in pending:
            outcome = _follow(node, parents)
            if isinstance(outcome, _Bound):
                bound += [name for name in outcome.names if name not in names_seen]
            elif outcome is not None:
                return outcome
        names_seen.update(bound)
        pending = list(_reads_of(tree, set(bound)))
    return "it reaches further than the rule follows it"


class _Bound:
    """The value was bound to local names: follow every place each is read."""

    def __init__(self, names: list[str]):
        self.names = names


def _follow(node: ast.AST, parents: dict[int, ast.AST]) -> str | _Bound | None:  # noqa: PLR0911, PLR0912
    """Where the value of `node` goes next: a decision (a string saying how), names it is
    bound to, or None where it ends in a message."""
    while True:
        parent = parents.get(id(node))
        if parent is None or isinstance(parent, ast.Expr):
            return None  # a docstring, or a statement of its own
        if isinstance(parent, ast.Tuple | ast.List | ast.Set | ast.Starred | ast.JoinedStr):
            node = parent
        elif isinstance(parent, ast.FormattedValue | ast.BoolOp | ast.IfExp | ast.BinOp):
            if isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Div):
                return "it builds a path"
            if isinstance(parent, ast.IfExp) and parent.test is node:
                return "it decides a branch"
            node = parent
        elif isinstance(parent, ast.Dict):
            if node in parent.keys:
                return "it is a key to look up"
            node = parent
        elif isinstance(parent, ast.Compare):
            return "it is compared"
        elif isinstance(parent, ast.Subscript):
            if parent.value is not node:
                return "it is a key to look up"
            node = parent
        elif isinstance(parent, ast.keyword):
            node = parent
            call = parents.get(id(parent))
            if not isinstance(call, ast.Call):
                return "it is an argument"
            verdict = _call(call, node, parents)
            if verdict is not _CARRIED:
                return verdict
            node = call
        elif isinstance(parent, ast.Call):
            verdict = _call(parent, node, parents)
            if verdict is not _CARRIED:
                return verdict
            node = parent
        elif isinstance(parent, ast.Attribute):
            node = parent  # a method of the value: what it makes carries it on
        elif isinstance(parent, ast.Raise):
            return None  # an exception's message
        elif isinstance(parent, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.NamedExpr):
            return _binding(parent, node, parents)
        elif isinstance(parent, ast.Return) and _in_route_handler(parent, parents):
            return None  # the body of an HTTP response: shown to the client, not decided on
        elif isinstance(parent, ast.Return | ast.Yield | ast.YieldFrom | ast.Lambda):
            return "it is returned to code the rule does not follow"
        elif isinstance(parent, ast.comprehension | ast.For):
            if parent.iter is not node:
                return "it reaches further than the rule follows it"
            names = _target_names(parent.target)
            return _Bound(names) if names else "it is iterated"
        elif isinstance(parent, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            node = parent
        elif isinstance(parent, ast.match_case | ast.MatchValue | ast.Match):
            return "it is matched"
        else:
            return "it reaches further than the rule follows it"


_CARRIED = "carried"


def _call(call: ast.Call, argument: ast.AST, parents: dict[int, ast.AST]) -> str | None:
    """What a call does with an argument holding the word: None for a message, _CARRIED when
    the call's result carries it on, else how it can decide."""
    if call.func is argument:
        return _CARRIED  # the word's own method (`"test".upper()`): its result carries it
    name = _callee(call.func)
    if name in MESSAGE_CALLS or (
        isinstance(call.func, ast.Attribute) and call.func.attr in MESSAGE_METHODS
    ):
        return None
    if isinstance(parents.get(id(call)), ast.Raise):
        return None  # `raise ValueError("test ...")`
    if name in CARRIER_CALLS or (
        isinstance(call.func, ast.Attribute) and call.func.attr in CARRIER_METHODS
    ):
        return _CARRIED
    return f"it is passed to `{name or 'a call'}`"


def _callee(func: ast.AST) -> str:
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    return ".".join(reversed(parts))


def _binding(parent: ast.AST, node: ast.AST, parents: dict[int, ast.AST]) -> str | _Bound:
    """A value bound by an assignment: to local names (followed), or to anything else."""
    targets: list[ast.AST]
    if isinstance(parent, ast.Assign):
        if parent.value is not node:
            return "it is a key to look up"
        targets = list(parent.targets)
    elif isinstance(parent, ast.AnnAssign):
        if parent.value is not node:
            return "it is a type"
        targets = [parent.target]
    elif isinstance(parent, ast.AugAssign):
        targets = [parent.target]
    else:
        assert isinstance(parent, ast.NamedExpr)  # noqa: S101 -- the caller's isinstance
        targets = [parent.target]
    if not _inside_function(parent, parents):
        return "it is bound where another module can read it"
    names = [name for target in targets for name in _target_names(target)]
    if len(names) != sum(len(_target_names(t)) for t in targets) or not all(
        isinstance(t, ast.Name | ast.Tuple | ast.List) for t in targets
    ):
        return "it is stored where the rule does not follow it"
    return _Bound(names)


def _target_names(target: ast.AST) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        names = [name for element in target.elts for name in _target_names(element)]
        return names if len(names) == len(target.elts) else []
    return []


# Decorators that make a function a web framework's route handler (FastAPI, Starlette, Flask,
# Litestar, aiohttp's route table): what it returns is the response sent to the client.
ROUTE_DECORATORS = frozenset(
    {"get", "post", "put", "patch", "delete", "head", "options", "route", "api_route", "websocket"}
)


def _in_route_handler(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """Whether `node` sits directly in a function decorated as a route (`@app.get("/x")`)."""
    current = parents.get(id(node))
    while current is not None and not isinstance(
        current, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef
    ):
        current = parents.get(id(current))
    if not isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    return any(
        isinstance(d, ast.Call)
        and isinstance(d.func, ast.Attribute)
        and d.func.attr in ROUTE_DECORATORS
        for d in current.decorator_list
    )


def _inside_function(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """Whether `node` sits in a function's body (not a module's or a class's top level)."""
    current = parents.get(id(node))
    while current is not None:
        if isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return True
        if isinstance(current, ast.ClassDef | ast.Module):
            return False
        current = parents.get(id(current))
    return False


def _reads_of(tree: ast.AST, names: set[str]) -> Iterator[ast.AST]:
    """Every place one of `names` is read (any scope: a same-named name elsewhere is followed
    too, which refuses more, never less)."""
    if not names:
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in names:
            yield node
        elif isinstance(node, ast.Global | ast.Nonlocal) and names.intersection(node.names):
            yield node  # a name another scope reads: nowhere the rule can follow
