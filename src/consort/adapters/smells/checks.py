"""The checks that need one file only: pure functions from a file's source to its smells.

Which checks apply depends on whether the file is a test file (it matches a protected glob) or
production code:

- production code must not import pytest or the test modules: code that only works under the
  test runner, or that reads the tests' own data, passes tests without doing the work;
- no file may end the process at import time: a test run that exits while collecting looks
  finished without running the tests;
- every test must check something that can fail (`vacuity`), or it passes whatever the code
  does;
- production code must not swallow every error: a broad `except` that does nothing turns a
  failure the tests should see into a silent success.
"""

from __future__ import annotations

import ast
import builtins
import math

from consort.adapters.smells.model import Smell, SmellKind
from consort.adapters.smells.self_patch import checks_a_stand_in, patched_names, stand_in_values
from consort.adapters.smells.syntax import import_aliases, parse, qualified_name
from consort.adapters.smells.vacuity import (
    broad_raises,
    swallowing_context,
    swallows_assertions,
    vacuous_assert,
    vacuous_check_call,
)
from consort.adapters.smells.worked_out import Guard, holds_anyway, raises_anyway

# Calls that end the process (or the test session) on the spot.
EXIT_CALLS = frozenset(
    {
        "sys.exit",
        "os._exit",
        "exit",
        "quit",
        "os.abort",
        "os.kill",
        "os.killpg",
        "pytest.exit",
    }
)
# Uses that make a test assert without an `assert` statement.
PYTEST_CHECKS = frozenset({"pytest.raises", "pytest.warns", "pytest.fail"})
# Calls whose name says they check something, in the conventions of common test libraries.
ASSERTING_PREFIXES = ("assert", "expect", "check", "verify", "ensure", "should", "must")
BROAD_EXCEPTIONS = frozenset(
    {"Exception", "BaseException", "builtins.Exception", "builtins.BaseException"}
)
PYTEST_MODULES = frozenset({"pytest", "_pytest"})
BUILTIN_NAMES = frozenset(dir(builtins))


def check_source(path: str, text: str, *, is_test: bool) -> list[Smell]:
    """Every single-file smell in `text`, the content of `path`; [] when it does not parse."""
    tree = parse(text)
    if tree is None:
        return []
    aliases = import_aliases(tree)
    smells = exits_at_import(path, tree, aliases)
    if is_test:
        smells += tests_without_assertion(path, tree, aliases)
    else:
        smells += test_imports(path, tree)
        smells += swallowed_exceptions(path, tree, aliases)
    return sorted(smells, key=lambda smell: (smell.line, smell.kind.value))


# ---- pytest or the tests imported by production code ------------------------------------------


def test_imports(path: str, tree: ast.Module) -> list[Smell]:
    smells = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        for module in _imported_modules(node):
            what = _test_dependency(module)
            if what:
                detail = f"production code imports {what} `{module}`"
                smells.append(Smell(SmellKind.PYTEST_IN_PRODUCTION, path, node.lineno, detail))
                break  # one smell per import statement is enough
    return smells


def _imported_modules(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.ImportFrom) and node.module:
        return [node.module]
    # `import a, b`, or `from . import conftest` where the imported names are the modules.
    return [alias.name for alias in node.names]


def _test_dependency(module: str) -> str:
    """'pytest' or 'the test module' when `module` is one; '' otherwise."""
    parts = module.split(".")
    if parts[0] in PYTEST_MODULES:
        return "pytest"
    last = parts[-1]
    if parts[0] == "tests" or last == "conftest" or last.startswith("test_"):
        return "the test module"
    return ""


# ---- process exits at import time ---------------------------------------------------------------


def exits_at_import(path: str, tree: ast.Module, aliases: dict[str, str]) -> list[Smell]:
    finder = _ImportTimeExits(aliases)
    finder.visit(tree)
    return [
        Smell(SmellKind.EXIT_AT_IMPORT, path, line, f"`{what}` runs when the module is imported")
        for line, what in finder.found
    ]


class _ImportTimeExits(ast.NodeVisitor):
    """Walks only the code that runs when the module is imported.

    Function and lambda bodies run later, so they are skipped, but their decorators and default
    values run at import time and are visited. The body of `if __name__ == "__main__":` runs only
    when the file is executed as a script, never on import; its `else` branch does run.
    """

    def __init__(self, aliases: dict[str, str]):
        self.aliases = aliases
        self.found: list[tuple[int, str]] = []

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for expression in (*node.decorator_list, *_defaults(node.args)):
            self.visit(expression)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for expression in _defaults(node.args):
            self.visit(expression)

    def visit_If(self, node: ast.If) -> None:
        if _is_main_guard(node.test):
            for statement in node.orelse:
                self.visit(statement)
        else:
            self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = qualified_name(node.func, self.aliases)
        if name in EXIT_CALLS:
            self.found.append((node.lineno, f"{name}()"))
        self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise) -> None:
        # `raise SystemExit` is what sys.exit does.
        raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if raised is not None and qualified_name(raised, self.aliases) == "SystemExit":
            self.found.append((node.lineno, "raise SystemExit"))
        self.generic_visit(node)


def _defaults(arguments: ast.arguments) -> list[ast.expr]:
    return [*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)]


def _is_main_guard(test: ast.expr) -> bool:
    if not (
        isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
    ):
        return False
    sides = [test.left, test.comparators[0]]
    has_name = any(isinstance(side, ast.Name) and side.id == "__name__" for side in sides)
    has_main = any(isinstance(side, ast.Constant) and side.value == "__main__" for side in sides)
    return has_name and has_main


# ---- tests without assertions -------------------------------------------------------------------


def tests_without_assertion(path: str, tree: ast.Module, aliases: dict[str, str]) -> list[Smell]:
    return [
        Smell(
            SmellKind.TEST_WITHOUT_ASSERTION,
            path,
            function.lineno,
            f"`{function.name}` asserts nothing: it passes whatever the code does",
        )
        for function in unasserted_tests(tree, aliases)
    ]


def unasserted_tests(
    tree: ast.Module, aliases: dict[str, str]
) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The module's test functions that assert nothing, directly or through a helper of the
    same module that does (`check_rows(...)` whose body asserts)."""
    candidates = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and not node.name.startswith("test")
    ]
    # A helper of the module's own is judged by its body, not its name (`check_answer` that
    # asserts nothing checks nothing): helpers that call helpers, to a fixpoint. One that calls
    # what this module does not define (`is_true(...)`, a library's own checks) keeps the
    # benefit of its name.
    elsewhere = {node.name for node in candidates if _calls_elsewhere(node, candidates)}
    defined = frozenset(node.name for node in candidates) - elsewhere
    helpers: frozenset[str] = frozenset()
    while True:
        found = frozenset(
            node.name for node in candidates if _asserts(node, aliases, helpers, defined)
        )
        if found <= helpers:
            break
        helpers |= found
    return [
        function
        for function in _test_functions(tree, aliases)
        if not _asserts(function, aliases, helpers, defined)
    ]


def _test_functions(
    tree: ast.Module, aliases: dict[str, str]
) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Functions named test* at module level or directly in a class (what the runners collect).

    Fixtures are left out: `@pytest.fixture def test_user()` provides data, it tests nothing.
    """
    candidates: list[ast.stmt] = list(tree.body)
    for statement in tree.body:
        if isinstance(statement, ast.ClassDef):
            candidates += statement.body
    return [
        node
        for node in candidates
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test")
        and not _is_fixture(node, aliases)
    ]


def _is_fixture(function: ast.FunctionDef | ast.AsyncFunctionDef, aliases: dict[str, str]) -> bool:
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if qualified_name(target, aliases) == "pytest.fixture":
            return True
    return False


def _asserts(
    function: ast.AST,
    aliases: dict[str, str],
    helpers: frozenset[str] | set[str] = frozenset(),
    defined: frozenset[str] = frozenset(),
) -> bool:
    """Whether `function` holds a check that can fail (`smells.vacuity`: `assert True`,
    `is not None`, `pytest.raises(Exception)` or a swallowed `AssertionError` cannot) and can
    run: not after a `return` of the function's own (the test may end before it), not under
    `if False`, not in a function defined inside it and never used."""
    used = {n.id for n in ast.walk(function) if isinstance(n, ast.Name)}
    scan = _Scan(aliases, helpers, _first_return_line(function), used, function)
    scan.defined = defined
    return scan.holds_check(function)


def _checks_only_stand_ins(scan: _Scan, node: ast.AST) -> bool:
    """An assert, or an assertion call, that reads the project only through what the test
    itself put in place (`smells.self_patch`)."""
    if not scan.patched:
        return False
    if isinstance(node, ast.Assert):
        return checks_a_stand_in(node.test, scan.aliases, scan.patched, scan.values)
    if isinstance(node, ast.Call) and _called_name(node).startswith(ASSERTING_PREFIXES):
        arguments = ast.Tuple(elts=[*node.args, *(k.value for k in node.keywords)], ctx=ast.Load())
        return checks_a_stand_in(arguments, scan.aliases, scan.patched, scan.values)
    return False


class _Scan:
    def __init__(
        self,
        aliases: dict[str, str],
        helpers: frozenset[str] | set[str],
        cutoff: float,
        used: set[str],
        root: ast.AST,
    ) -> None:
        self.aliases, self.helpers, self.cutoff, self.used, self.root = (
            aliases,
            helpers,
            cutoff,
            used,
            root,
        )
        self.patched = patched_names(root, aliases)
        self.values = stand_in_values(root, aliases, self.patched) if self.patched else set()
        self.opaque = _bound_more_than_once(root)
        self.defined: frozenset[str] = frozenset()

    def holds_check(self, node: ast.AST, guards: tuple[Guard, ...] = ()) -> bool:
        if getattr(node, "lineno", 0) > self.cutoff:
            return False  # after the function may have returned: it need not run
        if (
            node is not self.root
            and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name not in self.used
        ):
            return False  # defined in the test and never called
        if (
            _is_check(node, self.aliases, self.helpers, self.defined)
            and not (isinstance(node, ast.Call) and broad_raises(node, self.aliases))
            and not _checks_only_stand_ins(self, node)
            and self._can_fail(node, guards)
        ):
            return True
        if isinstance(node, ast.If | ast.While) and not isinstance(node.test, ast.Constant):
            # what runs only where the condition holds (or fails) is judged with it
            return (
                self.holds_check(node.test, guards)
                or any(self.holds_check(s, (*guards, (node.test, True))) for s in node.body)
                or any(self.holds_check(s, (*guards, (node.test, False))) for s in node.orelse)
            )
        return any(self.holds_check(child, guards) for child in self._live_children(node))

    def _can_fail(self, node: ast.AST, guards: tuple[Guard, ...]) -> bool:
        """Whether the check fails for some value of what it reads (`smells.worked_out`): an
        `assert` that holds for whatever the code returns, or a check under conditions that
        never let it run, fails for none."""
        if isinstance(node, ast.Assert):
            return not holds_anyway(node.test, self.aliases, guards, self.opaque)
        return not guards or not holds_anyway(None, self.aliases, guards, self.opaque)

    def _live_children(self, node: ast.AST) -> list[ast.AST]:
        aliases = self.aliases
        if isinstance(node, ast.Try) and swallows_assertions(node, aliases):
            # what a check in the body raises is caught: only the handlers and the rest can fail
            return [*node.handlers, *node.orelse, *node.finalbody]
        dropped = _dropped(node, aliases)
        if dropped is not None:
            return dropped
        if isinstance(node, ast.Call) and broad_raises(node, aliases):
            return list(node.keywords)
        if isinstance(node, ast.With | ast.AsyncWith):
            swallowing = [i for i in node.items if swallowing_context(i.context_expr, aliases)]
            if swallowing and any(self.holds_check(s) for s in node.body):
                # the test's own failed check is what the block waits for, or throws away
                return [i.context_expr for i in node.items if i not in swallowing]
        if isinstance(node, ast.If | ast.While) and isinstance(node.test, ast.Constant):
            return list(node.body if node.test.value else node.orelse)  # the other never runs
        return list(ast.iter_child_nodes(node))


def _dropped(node: ast.AST, aliases: dict[str, str]) -> list[ast.AST] | None:
    """The children of a node that can fail the test, where the node drops the failures of the
    rest; None where it drops none."""
    if isinstance(node, ast.Try | ast.TryStar) and _leaves(node.finalbody):
        # a `finally` that returns, breaks or continues drops whatever the rest raised
        return list(node.finalbody)
    if (
        isinstance(node, ast.With | ast.AsyncWith)
        and all(_expects_an_error(i.context_expr, aliases) for i in node.items)
        and _raises_itself(node.body, aliases)
    ):
        # `with pytest.raises(E): answer(); raise E`: the block waits for an error of the
        # test's own, whatever the code does; only the body's other checks can fail (beside a
        # context manager of the code's, `with pytest.raises(E), lock():`, the error is what
        # the manager must let through, and a check of it)
        return [s for s in node.body if not isinstance(s, ast.Raise)]
    if isinstance(node, ast.For | ast.AsyncFor) and _empty(node.iter):
        return [node.iter, *node.orelse]  # `for x in []:` never runs its body
    return None


def _calls_elsewhere(
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    module_functions: list[ast.FunctionDef | ast.AsyncFunctionDef],
) -> bool:
    """Whether a helper calls anything but builtins and the module's own functions."""
    own = {f.name for f in module_functions}
    for node in ast.walk(function):
        if not isinstance(node, ast.Call):
            continue
        name = _called_name(node)
        builtin = isinstance(node.func, ast.Name) and name in BUILTIN_NAMES
        if not builtin and name not in own:
            return True
    return False


def _own_statements(body: list[ast.stmt]) -> list[ast.AST]:
    """The nodes of a body outside the functions and classes it defines."""
    found: list[ast.AST] = []
    pending: list[ast.AST] = list(body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        found.append(node)
        pending += ast.iter_child_nodes(node)
    return found


def _leaves(finalbody: list[ast.stmt]) -> bool:
    """A `finally` with a `return`, `break` or `continue` of its own."""
    return any(
        isinstance(n, ast.Return | ast.Break | ast.Continue) for n in _own_statements(finalbody)
    )


def _expects_an_error(expression: ast.expr, aliases: dict[str, str]) -> bool:
    """`pytest.raises(...)`, `self.assertRaises(...)`."""
    if not isinstance(expression, ast.Call):
        return False
    if qualified_name(expression.func, aliases) == "pytest.raises":
        return True
    return isinstance(expression.func, ast.Attribute) and expression.func.attr in (
        "assertRaises",
        "assertRaisesRegex",
    )


def _raises_itself(body: list[ast.stmt], aliases: dict[str, str]) -> bool:
    """A block that raises by itself: a `raise` of its own (outside a `try`), or a statement of
    constants that cannot be worked out without an error (`1 / 0`, `[][0]`)."""
    for statement in body:
        if isinstance(statement, ast.Raise):
            return True
        if isinstance(statement, ast.Expr | ast.Assign) and raises_anyway(statement.value, aliases):
            return True
    return False


def _empty(node: ast.expr) -> bool:
    """A literal that holds nothing: `[]`, `()`, `{}`, `""`."""
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return not node.elts
    if isinstance(node, ast.Dict):
        return not node.keys
    return isinstance(node, ast.Constant) and node.value in ("", b"")


def _bound_more_than_once(function: ast.AST) -> frozenset[str]:
    """Names a test binds more than once, or as a loop's target: they hold more than one value,
    so a check of one is not worked out."""
    counts: dict[str, int] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            for target in ast.walk(node.target):
                if isinstance(target, ast.Name):
                    counts[target.id] = counts.get(target.id, 0) + 2
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            counts[node.id] = counts.get(node.id, 0) + 1
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            counts[node.target.id] = counts.get(node.target.id, 0) + 2
        elif isinstance(node, ast.Global | ast.Nonlocal):
            for name in node.names:
                counts[name] = counts.get(name, 0) + 2
    return frozenset(name for name, count in counts.items() if count > 1)


def _first_return_line(function: ast.AST) -> float:
    """The line of the function's first own `return` (not a nested function's); inf if none."""
    lines = [math.inf]
    pending = list(ast.iter_child_nodes(function))
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        if isinstance(node, ast.Return):
            lines.append(node.lineno)
        pending += ast.iter_child_nodes(node)
    return min(lines)


def _is_check(
    node: ast.AST,
    aliases: dict[str, str],
    helpers: frozenset[str] | set[str],
    defined: frozenset[str] = frozenset(),
) -> bool:
    if isinstance(node, ast.Assert):
        return not vacuous_assert(node.test, aliases)
    if isinstance(node, ast.Raise):
        return True
    if isinstance(node, ast.Call):
        if qualified_name(node.func, aliases) in PYTEST_CHECKS:
            return True
        # self.assertEqual(...), mock.assert_called_once(), a helper such as assert_valid(...),
        # Playwright's expect(...).to_have_text(...), or a helper of the module that asserts
        called = _called_name(node)
        if called in defined:
            return called in helpers  # the module's own: judged by what it does
        return called in helpers or (
            called.startswith(ASSERTING_PREFIXES) and not vacuous_check_call(node, called)
        )
    # `fail = pytest.fail`, `raises=` handed on
    return isinstance(node, ast.Name | ast.Attribute) and (
        qualified_name(node, aliases) in PYTEST_CHECKS
    )


def _called_name(call: ast.Call) -> str:
    """The last part of what is called: `assertEqual` for `self.assertEqual(...)`."""
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return call.func.id if isinstance(call.func, ast.Name) else ""


# ---- swallowed exceptions -----------------------------------------------------------------------


def swallowed_exceptions(path: str, tree: ast.Module, aliases: dict[str, str]) -> list[Smell]:
    smells = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ExceptHandler) and _is_broad(node.type, aliases):
            if all(_does_nothing(statement) for statement in node.body):
                caught = "except:" if node.type is None else f"except {ast.unparse(node.type)}:"
                detail = f"`{caught}` does nothing with the error: failures vanish silently"
                smells.append(Smell(SmellKind.SWALLOWED_EXCEPTION, path, node.lineno, detail))
        elif isinstance(node, ast.Call) and _suppresses_everything(node, aliases):
            detail = f"`{ast.unparse(node)}` silences every error in its block"
            smells.append(Smell(SmellKind.SWALLOWED_EXCEPTION, path, node.lineno, detail))
    return smells


def _is_broad(caught: ast.expr | None, aliases: dict[str, str]) -> bool:
    if caught is None:  # a bare `except:`
        return True
    if isinstance(caught, ast.Tuple):
        return any(_is_broad(element, aliases) for element in caught.elts)
    return qualified_name(caught, aliases) in BROAD_EXCEPTIONS


def _does_nothing(statement: ast.stmt) -> bool:
    """pass, continue, break, `return` / `return None`, or a bare constant such as `...`."""
    if isinstance(statement, ast.Pass | ast.Continue | ast.Break):
        return True
    if isinstance(statement, ast.Return):
        value = statement.value
        return value is None or (isinstance(value, ast.Constant) and value.value is None)
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)


def _suppresses_everything(call: ast.Call, aliases: dict[str, str]) -> bool:
    """`contextlib.suppress(Exception)` is a broad `except: pass` in another form."""
    if qualified_name(call.func, aliases) != "contextlib.suppress":
        return False
    return any(_is_broad(argument, aliases) for argument in call.args)
