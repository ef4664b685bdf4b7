"""Checks in a test that cannot fail once the code under test imports and runs.

A RED test fails while the code is missing (an ImportError) and must then check what the code
does. These checks hold for any code that returns at all, so a test made of them proves
nothing at GREEN:

* an `assert` of a constant, or of constants compared (`assert True`, `assert 1 == 1`,
  `assert not None`, `assert "ok"`);
* an expression compared with itself (`assert x == x`, `assert f() is f()`);
* `is not None` / `!= None` (any returned value passes), `isinstance(x, object)`,
  `len(x) >= 0`, and an `or` of which one side is always true;
* `pytest.raises(Exception)` or `BaseException` without `match=`: any error at all passes, the
  code's own `raise NotImplementedError` included;
* a unittest assertion on constants only (`self.assertTrue(True)`,
  `self.assertEqual(1, 1)`) or `assertIsNotNone(...)`;
* any check inside a `try` whose handler catches `AssertionError` (or everything): the failure
  it would report is swallowed.

* a non-empty tuple, list, set or dict display, a non-empty f-string, a lambda: each is true
  whatever it holds (`assert (answer() == 42, "message")`, `assert [answer() == 42]`);
* a check the test waits to see fail, or throws away: inside `with pytest.raises(
  AssertionError)`, `pytest.raises(Exception)`, `self.assertRaises(AssertionError)` or
  `contextlib.suppress(AssertionError)`.

An `and` is vacuous only when each side is. (Checks that never run, after a `return` or in a
function the test never calls, are `checks._asserts`'.)
"""

from __future__ import annotations

import ast

from consort.adapters.smells.syntax import qualified_name

BROAD = frozenset({"Exception", "BaseException", "builtins.Exception", "builtins.BaseException"})
SWALLOWS_ASSERTIONS = BROAD | {"AssertionError", "builtins.AssertionError"}
RAISES = frozenset({"pytest.raises"})
NOT_NONE_CALLS = frozenset({"assertIsNotNone"})
ALWAYS_TRUE_TYPES = frozenset({"object", "builtins.object"})


def vacuous_assert(test: ast.expr, aliases: dict[str, str]) -> bool:
    """Whether `assert <test>` holds whatever the code under test returns."""
    if isinstance(test, ast.BoolOp):
        parts = [vacuous_assert(value, aliases) for value in test.values]
        return (
            all(parts)
            if isinstance(test.op, ast.And)
            else any(_always_true(value, aliases) for value in test.values)
        )
    return _always_true(test, aliases) or _only_not_none(test)


def _always_true(test: ast.expr, aliases: dict[str, str]) -> bool:
    if _constant(test) or _truthy_display(test):
        return True
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, right = test.left, test.comparators[0]
        if _constant(left) and _constant(right):
            return True
        if ast.dump(left) == ast.dump(right) and isinstance(
            test.ops[0], ast.Eq | ast.Is | ast.GtE | ast.LtE
        ):
            return True
        if (
            isinstance(test.ops[0], ast.GtE)
            and _is_call_to(left, "len", aliases)
            and isinstance(right, ast.Constant)
            and right.value == 0
        ):
            return True
    if isinstance(test, ast.Call) and _is_call_to(test, "isinstance", aliases) and test.args:
        kinds = test.args[1:2]
        return bool(kinds) and _names_only(kinds[0], ALWAYS_TRUE_TYPES, aliases)
    return False


def _truthy_display(node: ast.expr) -> bool:
    """A display that holds something whatever its values are, a lambda, a generator: true."""
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(not isinstance(e, ast.Starred) for e in node.elts)
    if isinstance(node, ast.Dict):
        return any(k is not None for k in node.keys)  # `{**d}` may be empty
    if isinstance(node, ast.JoinedStr):
        return any(isinstance(v, ast.Constant) and v.value for v in node.values)
    return isinstance(node, ast.Lambda | ast.GeneratorExp)


def _only_not_none(test: ast.expr) -> bool:
    """`x is not None` / `x != None`: true for every value a function can return."""
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.IsNot | ast.NotEq)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    )


def _constant(node: ast.expr) -> bool:
    """A literal, a container of literals, or `not`/`-` of one: no code under test involved."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp):
        return _constant(node.operand)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return all(_constant(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _constant(k) for k in node.keys) and all(
            _constant(v) for v in node.values
        )
    if isinstance(node, ast.BinOp):
        return _constant(node.left) and _constant(node.right)
    return False


def _is_call_to(node: ast.expr, name: str, aliases: dict[str, str]) -> bool:
    if not isinstance(node, ast.Call):
        return False
    called = node.func
    return isinstance(called, ast.Name) and aliases.get(called.id, called.id) in (
        name,
        f"builtins.{name}",
    )


def _names_only(node: ast.expr, names: frozenset[str], aliases: dict[str, str]) -> bool:
    if isinstance(node, ast.Tuple):
        return any(_names_only(e, names, aliases) for e in node.elts)
    return qualified_name(node, aliases) in names


def broad_raises(call: ast.Call, aliases: dict[str, str]) -> bool:
    """`pytest.raises(Exception)`: passes with any error, whatever the code does."""
    if qualified_name(call.func, aliases) not in RAISES or not call.args:
        return False
    if any(k.arg == "match" for k in call.keywords):
        return False  # the message is checked
    return _names_only(call.args[0], BROAD, aliases)


def vacuous_check_call(call: ast.Call, name: str) -> bool:
    """`self.assertTrue(True)`, `self.assertEqual(1, 1)`: a unittest assertion on constants
    only; and `assertIsNotNone(x)`. (A mock's `assert_called_once_with("hi")` checks its
    receiver, whatever its arguments.)"""
    if name in NOT_NONE_CALLS:
        return True
    on_self = (
        isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == "self"
    )
    arguments = [*call.args, *(k.value for k in call.keywords)]
    return on_self and bool(arguments) and all(_constant(a) for a in arguments)


def swallows_assertions(node: ast.Try, aliases: dict[str, str]) -> bool:
    """A `try` one of whose handlers catches what a failed check raises."""
    for handler in node.handlers:
        caught = handler.type
        if caught is None:
            return True
        kinds = caught.elts if isinstance(caught, ast.Tuple) else [caught]
        if any(qualified_name(k, aliases) in SWALLOWS_ASSERTIONS for k in kinds):
            return True
    return False


SWALLOWING_CONTEXTS = frozenset({"pytest.raises", "contextlib.suppress"})
SWALLOWING_METHODS = frozenset({"assertRaises", "assertRaisesRegex"})


def swallowing_context(expression: ast.expr, aliases: dict[str, str]) -> bool:
    """`pytest.raises(AssertionError)`, `contextlib.suppress(Exception)`,
    `self.assertRaises(AssertionError)`: a `with` whose body's own failed checks pass."""
    if not isinstance(expression, ast.Call) or not expression.args:
        return False
    called = qualified_name(expression.func, aliases)
    method = isinstance(expression.func, ast.Attribute) and (
        expression.func.attr in SWALLOWING_METHODS
    )
    if called not in SWALLOWING_CONTEXTS and not method:
        return False
    caught = expression.args if called == "contextlib.suppress" else expression.args[:1]
    return any(_names_only(kind, SWALLOWS_ASSERTIONS, aliases) for kind in caught)
