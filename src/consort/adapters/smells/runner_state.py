"""Code that asks what the test runner did to the interpreter, or the sandbox to the machine.

A runner leaves marks on the process it runs the tests in, whatever it is called: pytest puts
its capture in place of the standard streams (`sys.stdout is not sys.__stdout__`, a stream of
another type, whatever a stream or a descriptor is asked beyond its uses: `smells/streams.py`),
wraps every test in hooks of its own (`threading.excepthook`, `sys.unraisablehook`), gives the
root logger handlers that keep each test's records and pushes warning filters; a sandboxed run
has loopback as its only network interface. Code that asks
any of this tells a run from production as surely as code that names the runner, and an
application has no need to ask: it writes to its streams, logs to its loggers and connects to
what it connects to. The attributes that read it are in `tamper.ATTRIBUTE_CAPABILITIES`
(`RUNNER_STATE`); this module finds the questions put to the streams and the root logger.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable

from consort.adapters.smells.streams import stream_questions
from consort.adapters.smells.syntax import qualified_name

# The original objects Python started with, the hooks a runner replaces, the filters and the
# network interfaces: each one read at all is a question about the process, not the program.
STATE_ATTRIBUTES = frozenset(
    {
        "sys.__stdout__",
        "sys.__stderr__",
        "sys.__stdin__",
        "sys.__excepthook__",
        "sys.__displayhook__",
        "sys.__breakpointhook__",
        "sys.__unraisablehook__",
        "sys.unraisablehook",
        "sys.breakpointhook",
        "sys.gettrace",
        "sys.getprofile",
        "threading.excepthook",
        "threading.__excepthook__",
        "threading.gettrace",
        "threading.getprofile",
        "warnings.filters",
        "signal.getsignal",
        "logging.Logger.manager",
        "logging.getHandlerNames",
        "logging.getHandlerByName",
        "socket.if_nameindex",
        "socket.if_nametoindex",
        "socket.if_indextoname",
    }
)
# Modules whose private state is the runner's as much as the program's (`logging._handlers`).
PRIVATE_STATE_OF = ("logging", "warnings", "threading")
STREAMS = frozenset({"sys.stdout", "sys.stderr", "sys.stdin"})
# Calls that ask what an object is rather than use it.
IDENTITY_CALLS = frozenset({"type", "isinstance", "id", "builtins.type", "builtins.isinstance"})
ROOT_LOGGER_CALLS = frozenset({"logging.getLogger"})
ROOT_LOGGERS = frozenset({"logging.root", "logging.Logger.root"})
# `logger.hasHandlers()` walks up to the root logger, where pytest's handlers are.
LOGGER_QUESTIONS = frozenset({"hasHandlers"})
ROOT_LOGGER_QUESTIONS = frozenset({"handlers"})
LOGGER_WAYS_UP = frozenset({"parent", "root", "manager"})


def is_state_attribute(name: str) -> bool:
    if name in STATE_ATTRIBUTES:
        return True
    module, _, attribute = name.partition(".")
    return module in PRIVATE_STATE_OF and attribute.startswith("_") and "." not in attribute


def runner_state_questions(tree: ast.AST, aliases: dict[str, str]) -> list[tuple[int, str]]:
    """(line, what) for each question the code puts to a standard stream or the root logger:
    a stream compared by identity or equality, or given to `type`/`isinstance`/`id`, or asked
    its `__class__`; the root logger's `handlers`, and any logger's `hasHandlers()`."""
    streams = _bound_to(tree, aliases, _is_stream)
    loggers = _loggers(tree, aliases)
    roots = _bound_to(tree, aliases, _is_root_logger) | _bound_to(
        tree, aliases, lambda node, _: _above(node, loggers, aliases)
    )

    def stream(node: ast.AST) -> bool:
        return _is_stream(node, aliases) or (isinstance(node, ast.Name) and node.id in streams)

    def root(node: ast.AST) -> bool:
        named = isinstance(node, ast.Name) and node.id in roots
        return _is_root_logger(node, aliases) or named or _above(node, loggers, aliases)

    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Compare):
            if any(stream(side) for side in [node.left, *node.comparators]) and any(
                isinstance(op, ast.Is | ast.IsNot | ast.Eq | ast.NotEq) for op in node.ops
            ):
                found.append((line, "compares a standard stream (a runner captures them)"))
        elif isinstance(node, ast.Call):
            called = qualified_name(node.func, aliases) or ""
            if called in IDENTITY_CALLS and any(stream(a) for a in node.args):
                found.append((line, f"asks `{called}` of a standard stream (a runner's capture)"))
            if isinstance(node.func, ast.Attribute) and node.func.attr in LOGGER_QUESTIONS:
                found.append(
                    (line, "asks whether loggers have handlers (a runner gives the root its own)")
                )
        elif isinstance(node, ast.Attribute):
            if node.attr == "__class__" and stream(node.value):
                found.append((line, "asks a standard stream its class (a runner's capture)"))
            reads = not isinstance(node.ctx, ast.Store)  # setting them is configuring logging
            if node.attr in ROOT_LOGGER_QUESTIONS and root(node.value) and reads:
                found.append((line, "reads the root logger's handlers (a runner gives it its own)"))
    return found + stream_questions(tree, aliases)


def _is_logger(node: ast.AST, aliases: dict[str, str], names: frozenset[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Call):
        return qualified_name(node.func, aliases) in ROOT_LOGGER_CALLS
    return isinstance(node, ast.Attribute) and _above(node, names, aliases)


def _above(node: ast.AST, loggers: frozenset[str], aliases: dict[str, str]) -> bool:
    """A logger's `parent`, `root` or `manager`: the way up to the root logger, where a
    runner's handlers are (`logging.getLogger("app").parent.handlers`)."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr in LOGGER_WAYS_UP
        and _is_logger(node.value, aliases, loggers)
    )


def _is_known_logger(node: ast.AST, aliases: dict[str, str], *, names: frozenset[str]) -> bool:
    return _is_logger(node, aliases, names)


def _loggers(tree: ast.AST, aliases: dict[str, str]) -> frozenset[str]:
    """Names bound to a logger, `getLogger(...)` or a logger's way up, to a fixpoint (a walk up,
    `log = log.parent`)."""
    names: frozenset[str] = frozenset()
    while True:
        found = _bound_to(tree, aliases, functools.partial(_is_known_logger, names=names))
        if found <= names:
            return names
        names |= found


def _is_stream(node: ast.AST, aliases: dict[str, str]) -> bool:
    return qualified_name(node, aliases) in STREAMS


def _is_root_logger(node: ast.AST, aliases: dict[str, str]) -> bool:
    """`logging.getLogger()`, `getLogger("")` or `getLogger(None)`: the root logger."""
    if qualified_name(node, aliases) in ROOT_LOGGERS:
        return True
    if not isinstance(node, ast.Call):
        return False
    if qualified_name(node.func, aliases) not in ROOT_LOGGER_CALLS:
        return False
    arguments = [*node.args, *(k.value for k in node.keywords)]
    return not arguments or (
        isinstance(arguments[0], ast.Constant) and arguments[0].value in ("", None)
    )


def _bound_to(
    tree: ast.AST, aliases: dict[str, str], test: Callable[[ast.AST, dict[str, str]], bool]
) -> set[str]:
    """Names assigned what `test` recognises (`out = sys.stdout`, `log = logging.getLogger()`)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            value, targets = node.value, node.targets
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            value, targets = node.value, [node.target]
        else:
            continue
        if test(value, aliases):
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names
