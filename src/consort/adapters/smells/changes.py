"""The checks that compare two versions: what a change added, not what was already there.

- New skip or xfail markers in a test file: a test that no longer runs cannot fail.
- New literals in production code equal to a value a test expects: `return 42` because a test
  asserts `== 42` passes the test without implementing anything.

Both are pure: they take the texts of a file at the base and at the head commit.
"""

from __future__ import annotations

import ast
from collections.abc import Hashable, Iterator
from dataclasses import dataclass

from consort.adapters.smells.model import Smell, SmellKind
from consort.adapters.smells.syntax import (
    Occurrence,
    import_aliases,
    line_text,
    new_occurrences,
    parse,
    qualified_name,
)

SKIP_MARKERS = frozenset(
    {
        "pytest.mark.skip",
        "pytest.mark.skipif",
        "pytest.mark.xfail",
        "pytest.skip",
        "pytest.xfail",
        "pytest.importorskip",
        "unittest.skip",
        "unittest.skipIf",
        "unittest.skipUnless",
        "unittest.expectedFailure",
        "unittest.SkipTest",
    }
)
SKIP_METHODS = frozenset({"skipTest"})  # self.skipTest(...) in a unittest.TestCase
TRIVIAL_NUMBERS = frozenset({-1, 0, 1, 2})
MIN_STRING_LENGTH = 3
SHOWN_LITERAL_CHARS = 60


# ---- skip and xfail markers ---------------------------------------------------------------------


def added_skip_markers(path: str, head_text: str, base_text: str | None) -> list[Smell]:
    """Skip/xfail markers in the test file `path` that the head has and the base had not.

    Only a file with more markers than before is reported (swapping one marker for another, or
    editing a reason, is not an addition), and then each marker that is new. A file absent at
    the base, or one that did not parse there, had no working markers: all of the head's count.
    """
    head = skip_markers(head_text)
    base = (skip_markers(base_text) if base_text is not None else None) or []
    if head is None or len(head) <= len(base):
        return []
    return [
        Smell(
            SmellKind.SKIP_MARKER_ADDED,
            path,
            marker.line,
            f"`{marker.key}` added: the test it marks no longer has to pass",
        )
        for marker in new_occurrences(head, base)
    ]


def skip_markers(text: str) -> list[Occurrence] | None:
    """Every reference to a skip or xfail marker in `text`, in order; None if it does not parse.

    References rather than decorators: a marker also works in `pytestmark = ...`, in
    `pytest.param(..., marks=...)` or through `request.applymarker(...)`.
    """
    tree = parse(text)
    if tree is None:
        return None
    aliases = import_aliases(tree)
    lines = text.splitlines()
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Name | ast.Attribute):
            continue
        name = _marker_name(node, aliases)
        if name:
            found.append(Occurrence(node.lineno, name, line_text(lines, node.lineno)))
    return sorted(found, key=lambda occurrence: occurrence.line)


def _marker_name(node: ast.Name | ast.Attribute, aliases: dict[str, str]) -> str | None:
    if isinstance(node, ast.Attribute) and node.attr in SKIP_METHODS:
        return node.attr
    name = qualified_name(node, aliases)
    return name if name in SKIP_MARKERS else None


# ---- hard-coded answers -------------------------------------------------------------------------


@dataclass(frozen=True)
class Expected:
    """A value a test compares against, and where."""

    shown: str  # the literal as written in the test
    path: str
    line: int


def expected_values(path: str, text: str) -> dict[Hashable, Expected]:
    """The non-trivial literals the asserts of test file `path` compare against, by value.

    `assert x == LIT`, `assert LIT == x`, `assert x is LIT` and `assert x in (LIT, ...)`; the
    first place each value is expected is kept. {} when the file does not parse.
    """
    tree = parse(text)
    if tree is None:
        return {}
    expected: dict[Hashable, Expected] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare)):
            continue
        for literal in _compared_literals(node.test):
            value = literal_value(literal)
            if value is not _NOT_LITERAL and not is_trivial(value):
                shown = _shorten(ast.unparse(literal))
                expected.setdefault(literal_key(value), Expected(shown, path, node.lineno))
    return expected


def _compared_literals(compare: ast.Compare) -> Iterator[ast.expr]:
    operands = [compare.left, *compare.comparators]
    for left, operator, right in zip(operands, compare.ops, operands[1:], strict=False):
        if isinstance(operator, ast.Eq | ast.Is):
            yield left
            yield right
        elif isinstance(operator, ast.In) and isinstance(right, ast.Tuple | ast.List | ast.Set):
            yield from right.elts


def hard_coded_answers(
    path: str, head_text: str, base_text: str | None, expected: dict[Hashable, Expected]
) -> list[Smell]:
    """Literals the production file `path` gained since the base that equal an expected value."""
    head = _expected_constants(head_text, expected)
    base = _expected_constants(base_text, expected) if base_text is not None else []
    smells = []
    for constant in new_occurrences(head, base):
        where = expected[constant.key]
        detail = (
            f"the literal {where.shown} is what {where.path}:{where.line} expects: "
            "is it computed, or hard-coded to pass?"
        )
        smells.append(Smell(SmellKind.HARD_CODED_ANSWER, path, constant.line, detail))
    return smells


def _expected_constants(text: str, expected: dict[Hashable, Expected]) -> list[Occurrence]:
    tree = parse(text)
    if tree is None:
        return []
    lines = text.splitlines()
    found = []
    for node, value in _literals(tree):
        key = literal_key(value)
        if key in expected:
            found.append(Occurrence(node.lineno, key, line_text(lines, node.lineno)))
    return sorted(found, key=lambda occurrence: occurrence.line)


def _literals(node: ast.AST) -> Iterator[tuple[ast.expr, object]]:
    """Every literal in the tree: containers and also the literals inside them, because
    `return {"total": 42}` answers a test of `result["total"] == 42` as well."""
    if isinstance(node, ast.expr):
        value = literal_value(node)
        if value is not _NOT_LITERAL:
            yield node, value
            if isinstance(node, ast.UnaryOp | ast.BinOp):
                return  # -5 is one literal; its 5 is not another
    for child in ast.iter_child_nodes(node):
        yield from _literals(child)


# ---- literal values -----------------------------------------------------------------------------

_NOT_LITERAL = object()
_LITERAL_NODES = (ast.Constant, ast.UnaryOp, ast.BinOp, ast.Tuple, ast.List, ast.Set, ast.Dict)


def literal_value(node: ast.expr) -> object:
    """The value of a literal expression (1, -1, "x", [1, 2], {"a": 1}), else `_NOT_LITERAL`."""
    if not isinstance(node, _LITERAL_NODES):
        return _NOT_LITERAL
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NOT_LITERAL


def is_trivial(value: object) -> bool:
    """Values too common to mean anything when they appear in both the tests and the code."""
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, int | float | complex):
        return value in TRIVIAL_NUMBERS
    if isinstance(value, str | bytes):
        return len(value) < MIN_STRING_LENGTH
    if isinstance(value, list | tuple | set | frozenset | dict):
        return not value
    return True  # `...`, the one other literal


def literal_key(value: object) -> Hashable:
    """A hashable key under which equal literals meet: 42 and 42.0 do, "42" and 42 do not.

    Sets and dicts are keyed in a fixed order so that {1, 2} and {2, 1} meet.
    """
    if value is None or isinstance(value, bool):
        return ("constant", value)
    if isinstance(value, int | float | complex):
        return ("number", value)
    if isinstance(value, list | tuple):
        return (type(value).__name__, tuple(literal_key(item) for item in value))
    if isinstance(value, set | frozenset):
        return ("set", tuple(sorted((literal_key(item) for item in value), key=repr)))
    if isinstance(value, dict):
        pairs = ((literal_key(k), literal_key(v)) for k, v in value.items())
        return ("dict", tuple(sorted(pairs, key=repr)))
    return (type(value).__name__, value)


def _shorten(text: str) -> str:
    if len(text) <= SHOWN_LITERAL_CHARS:
        return text
    return text[: SHOWN_LITERAL_CHARS - 3] + "..."
