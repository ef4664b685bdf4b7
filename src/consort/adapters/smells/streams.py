"""The standard streams used, never asked what they are.

pytest's capture stands in for the standard streams of the process it runs the tests in:
`sys.stdout` is a text file over a temporary file of its own (`sys.stdout.fileno() != 1`, its
`name`, its `repr`), descriptor 1 is that temporary file (`os.fstat(1)` says a regular file,
where a service's is a pipe, a socket or a terminal), and `sys.stdin` refuses to be read (an
`OSError` where a service reads an empty `/dev/null`). Code that asks any of this tells a run
from production without naming the runner, and answers right only in the run.

An application uses its streams: it writes them, flushes them, reads them, reconfigures them and
hands them to what writes for it (`print(file=...)`, a logging handler). So the rule is a list
of uses, not of questions (`runner_state_questions` adds these to its own):

* a stream's attributes beyond `write`, `writelines`, `flush`, `read`, `readline`,
  `readlines`, `reconfigure`, `close` and `buffer` (itself a stream) are questions (`fileno()`,
  `isatty()`, `name`, `mode`, `encoding`, `errors`, `readable()`, `seekable()`, ...);
* a stream given to what tells what an object is (`repr`, `str`, `format`, an f-string, `%`,
  `getattr`, `hasattr`, `dir`, `vars`, `hash`), or to a function of the module's own, whose
  parameter is then a stream inside it;
* the standard descriptors (0, 1, 2) given to `os`, `fcntl`, `termios`, `tty`, `select`,
  `socket`, `io` or `open` (`os.fstat(1)`, `os.isatty(2)`, `open(1)`), the terminal asked
  about at all (`os.get_terminal_size`, `shutil.get_terminal_size`, `os.ttyname`, `os.getlogin`,
  `os.ctermid`), and the streams' device files (`/dev/stdout`, `/dev/tty`, `smells/tamper.py`);
* a use of a stream whose failure the code can see: a read of the standard input (or a stream
  handed to a call) inside a `try` whose handler catches `OSError`, `ValueError` or broader, or
  `contextlib.suppress` of one, or a function of the module's own that does so, called there;
  and such a function, a lambda that reads a stream, or a stream's own method handed on
  uncalled (`Thread(target=sys.stdin.read)`): where it runs, its failure is another's to see.

Writing never fails under capture, so a write inside any `try` is a use.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Iterator

from consort.adapters.smells.folding import fold
from consort.adapters.smells.syntax import qualified_name

STREAMS = frozenset({"sys.stdout", "sys.stderr", "sys.stdin"})
STDIN = frozenset({"sys.stdin"})
WRITES = frozenset({"write", "writelines", "flush"})
USES = WRITES | {"read", "readline", "readlines", "reconfigure", "close", "buffer"}
# What tells what an object is, given it: its text, its attributes, its identity.
REVEALING_CALLS = frozenset(
    {"repr", "str", "ascii", "format", "hash", "dir", "vars", "getattr", "hasattr", "callable"}
)
# Every function of these takes a descriptor first; of `os`, the ones listed do.
DESCRIPTOR_MODULES = ("fcntl", "termios", "tty")
DESCRIPTOR_CALLS = frozenset(
    {
        "open",
        "builtins.open",
        "io.open",
        "io.FileIO",
        "socket.fromfd",
        "socket.socket",
        *(
            f"{module}.{name}"
            for module in ("os", "posix")
            for name in (
                "fstat",
                "stat",
                "fstatvfs",
                "statvfs",
                "fdopen",
                "lseek",
                "device_encoding",
                "get_blocking",
                "get_inheritable",
                "fpathconf",
                "fsync",
                "fdatasync",
                "ftruncate",
                "fchmod",
                "fchown",
                "fchdir",
                "pread",
                "preadv",
                "readv",
                "sendfile",
                "login_tty",
                "set_blocking",
                "listdir",
                "scandir",
            )
        ),
    }
)
# A descriptor read (stdin is /dev/null under capture, as a service's is) tells nothing.
DESCRIPTOR_USES = frozenset({"os.read", "posix.read"})
# ... though a number tried on them (`os.read(fd, 0)`, `os.close(fd)`) finds what is open.
PROBES = frozenset({"os.read", "posix.read", "os.close", "posix.close", "os.write"})
DESCRIPTORS = frozenset({0, 1, 2})
TERMINAL_QUESTIONS = frozenset(
    {
        "os.get_terminal_size",
        "shutil.get_terminal_size",
        "os.isatty",
        "os.ttyname",
        "os.getlogin",
        "os.ctermid",
        "os.tcgetpgrp",
        "posix.isatty",
        "posix.ttyname",
    }
)
# Failures a capture never raises: a handler that catches only these sees nothing of it.
NARROW_HANDLERS = frozenset(
    {
        "EOFError",
        "KeyboardInterrupt",
        "BrokenPipeError",
        "UnicodeError",
        "UnicodeEncodeError",
        "UnicodeDecodeError",
    }
)
INPUT_CALLS = frozenset({"input", "builtins.input"})
SUPPRESS = frozenset({"contextlib.suppress"})

Finding = tuple[int, str]
_CAPTURE = "a runner's capture"
_FORMATS = "formats a standard stream (a runner's capture has a name of its own)"


def stream_questions(tree: ast.AST, aliases: dict[str, str]) -> list[Finding]:
    """(line, what) for each question the code puts to a standard stream or descriptor."""
    names = _bound_names(tree, aliases)

    def stream(node: ast.AST, extra: frozenset[str] = frozenset()) -> bool:
        return _is_stream(node, aliases, names | extra)

    found: list[Finding] = []
    found += _questions(tree, aliases, stream)
    parameters = _stream_parameters(tree, aliases, stream)
    for function, params in parameters.items():
        found += _questions(function, aliases, functools.partial(stream, extra=params))
    found += _descriptor_questions(tree, aliases)
    # Of what a stream does, only the standard input's reads fail under capture (writes never
    # do): the uses whose failure the code may see are those of stdin.
    stdin_names = _bound_names(tree, aliases, STDIN)

    def stdin(node: ast.AST, extra: frozenset[str] = frozenset()) -> bool:
        return _is_stream(node, aliases, stdin_names | extra, STDIN)

    found += _failures_seen(tree, aliases, stdin, _stream_parameters(tree, aliases, stdin))
    return found


def _is_stream(
    node: ast.AST, aliases: dict[str, str], names: frozenset[str], kinds: frozenset[str] = STREAMS
) -> bool:
    if isinstance(node, ast.Name) and node.id in names:
        return True
    if isinstance(node, ast.Attribute) and node.attr == "buffer":
        return _is_stream(node.value, aliases, names, kinds)
    if qualified_name(node, aliases) in kinds:
        return True
    # getattr(sys, "std" + "out")
    if (
        isinstance(node, ast.Call)
        and qualified_name(node.func, aliases) in ("getattr", "builtins.getattr")
        and len(node.args) >= 2
        and qualified_name(node.args[0], aliases) == "sys"
    ):
        return f"sys.{fold(node.args[1], aliases)}" in kinds
    return False


def _bound_names(
    tree: ast.AST, aliases: dict[str, str], kinds: frozenset[str] = STREAMS
) -> frozenset[str]:
    """Names assigned a stream (`out = sys.stdout`, `raw = sys.stdin.buffer`), to a fixpoint."""
    names: frozenset[str] = frozenset()
    while True:
        more = set(names)
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                value, targets = node.value, node.targets
            elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
                value, targets = node.value, [node.target]
            else:
                continue
            if _is_stream(value, aliases, names, kinds):
                more |= {t.id for t in targets if isinstance(t, ast.Name)}
        if more == names:
            return names
        names = frozenset(more)


def _questions(
    scope: ast.AST, aliases: dict[str, str], stream: Callable[[ast.AST], bool]
) -> list[Finding]:
    found: list[Finding] = []
    for node in ast.walk(scope):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Attribute) and node.attr not in USES and stream(node.value):
            if not isinstance(node.ctx, ast.Store):
                found.append((line, f"asks a standard stream its `{node.attr}` ({_CAPTURE})"))
        elif isinstance(node, ast.Call):
            called = qualified_name(node.func, aliases) or ""
            if called.removeprefix("builtins.") in REVEALING_CALLS and any(
                stream(a) for a in node.args
            ):
                found.append((line, f"asks `{called}` of a standard stream ({_CAPTURE})"))
        elif isinstance(node, ast.FormattedValue) and stream(node.value):
            found.append((line, _FORMATS))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            values = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
            if any(stream(v) for v in values):
                found.append((line, _FORMATS))
    return found


def _functions(tree: ast.AST) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {
        node.name: node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }


def _stream_parameters(
    tree: ast.AST, aliases: dict[str, str], stream: Callable[..., bool]
) -> dict[ast.AST, frozenset[str]]:
    """The module's own functions given a stream, and the parameters that receive it (followed
    from function to function, to a fixpoint)."""
    functions = _functions(tree)
    given: dict[ast.AST, frozenset[str]] = {}
    changed = True
    while changed:
        changed = False
        scopes: list[tuple[ast.AST, frozenset[str]]] = [(tree, frozenset())]
        scopes += [(f, p) for f, p in given.items()]
        for scope, params in scopes:
            for node in ast.walk(scope):
                if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                    continue
                function = functions.get(node.func.id)
                if function is None:
                    continue
                positional = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
                receiving = {
                    positional[i]
                    for i, a in enumerate(node.args)
                    if i < len(positional) and stream(a, params)
                }
                receiving |= {
                    k.arg for k in node.keywords if k.arg is not None and stream(k.value, params)
                }
                before = given.get(function, frozenset())
                if receiving - before:
                    given[function] = before | receiving
                    changed = True
    return given


def _descriptor_questions(tree: ast.AST, aliases: dict[str, str]) -> list[Finding]:
    counted = _counted_names(tree)
    found: list[Finding] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        called = qualified_name(node.func, aliases) or ""
        if called in TERMINAL_QUESTIONS:
            found.append((node.lineno, f"asks about the terminal (`{called}`: a runner's capture)"))
        elif _takes_descriptor(called) and _standard_descriptor(node):
            found.append(
                (node.lineno, f"asks `{called}` about a standard descriptor (a runner's capture)")
            )
        elif (_takes_descriptor(called) or called in PROBES) and _numbered(node, counted):
            # the descriptors a process holds, found by trying numbers: pytest's capture holds
            # copies of the standard ones and files of its own (three or more open past 2)
            found.append(
                (node.lineno, f"gives `{called}` a descriptor by its number (a runner's capture)")
            )
    return found


def _counted_names(tree: ast.AST) -> frozenset[str]:
    """Names a loop counts through (`for fd in range(3, 64)`, `fd += 1`)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            counts = isinstance(node.iter, ast.Call) and (
                isinstance(node.iter.func, ast.Name) and node.iter.func.id == "range"
            )
            if counts:
                names |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
        elif (
            isinstance(node, ast.AugAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(node.op, ast.Add | ast.Sub)
            and isinstance(node.value, ast.Constant)
            and type(node.value.value) is int
        ):
            names.add(node.target.id)  # `fd += 1`
    return frozenset(names)


def _numbered(call: ast.Call, counted: frozenset[str]) -> bool:
    """A descriptor given as a number past the standard ones, or one a loop counts through."""
    candidates = [*call.args[:1], *(k.value for k in call.keywords if k.arg in ("fd", "fileno"))]
    for candidate in candidates:
        if isinstance(candidate, ast.Constant) and type(candidate.value) is int:
            if candidate.value not in DESCRIPTORS:
                return True
        elif any(isinstance(n, ast.Name) and n.id in counted for n in ast.walk(candidate)):
            return True
    return False


def _takes_descriptor(called: str) -> bool:
    return called in DESCRIPTOR_CALLS or called.partition(".")[0] in DESCRIPTOR_MODULES


def _standard_descriptor(call: ast.Call) -> bool:
    candidates = [*call.args[:1], *(k.value for k in call.keywords if k.arg in ("fd", "fileno"))]
    return any(
        isinstance(c, ast.Constant) and type(c.value) is int and c.value in DESCRIPTORS
        for c in candidates
    )


def _touches(node: ast.AST, aliases: dict[str, str], stream: Callable[[ast.AST], bool]) -> bool:
    """Whether this expression uses the standard input (`stream`), which refuses to be read
    under capture: `input()`, a read of descriptor 0, the stream read, iterated or handed to a
    call."""
    if isinstance(node, ast.Call):
        called = qualified_name(node.func, aliases) or ""
        if called in INPUT_CALLS:
            return True
        if called in DESCRIPTOR_USES and _standard_descriptor(node):
            return True
        return any(stream(a) for a in [*node.args, *(k.value for k in node.keywords)])
    if isinstance(node, ast.Attribute) and stream(node.value):
        return True
    return isinstance(node, ast.For | ast.AsyncFor | ast.comprehension) and stream(node.iter)


def _walk_own(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a body, not those of the functions and classes defined in it (their code
    runs where they are called)."""
    yield node
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        yield from _walk_own(child)


def _failures_seen(
    tree: ast.AST,
    aliases: dict[str, str],
    stream: Callable[..., bool],
    parameters: dict[ast.AST, frozenset[str]],
) -> list[Finding]:
    functions = _functions(tree)

    def inside(function: ast.AST | None) -> Callable[[ast.AST], bool]:
        extra = parameters.get(function, frozenset()) if function is not None else frozenset()
        return functools.partial(stream, extra=extra)

    touching = _touching_functions(functions, aliases, inside)
    found: list[Finding] = []
    scopes: list[tuple[ast.AST, ast.AST | None]] = [(tree, None)]
    scopes += [(f, f) for f in functions.values()]
    for scope, function in scopes:
        reads = inside(function)
        nodes = _walk_own(scope) if function is None else _walk_function(scope)
        for node in nodes:
            found += _seen_failure(node, scope, aliases, reads, touching)
    return found


def _touching_functions(
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef],
    aliases: dict[str, str],
    inside: Callable[[ast.AST | None], Callable[[ast.AST], bool]],
) -> set[str]:
    """The module's own functions that read the standard input, directly or through each other
    (to a fixpoint)."""
    touching: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, function in functions.items():
            if name not in touching and _touched(
                function.body, aliases, inside(function), touching
            ):
                touching.add(name)
                changed = True
    return touching


def _touched(
    body: list[ast.stmt],
    aliases: dict[str, str],
    stream: Callable[[ast.AST], bool],
    touching: set[str],
) -> int | None:
    """The line of the first read of the standard input in a body, or None."""
    for statement in body:
        for node in _walk_own(statement):
            calls = (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in touching
            )
            if calls or _touches(node, aliases, stream):
                return getattr(node, "lineno", getattr(statement, "lineno", 0))
    return None


def _seen_failure(
    node: ast.AST,
    scope: ast.AST,
    aliases: dict[str, str],
    stream: Callable[[ast.AST], bool],
    touching: set[str],
) -> list[Finding]:
    catches = isinstance(node, ast.Try | ast.TryStar) and any(
        _broad(h.type, aliases) for h in node.handlers
    )
    suppresses = isinstance(node, ast.With | ast.AsyncWith) and any(
        _suppresses(item.context_expr, aliases) for item in node.items
    )
    guarded: list[ast.stmt] = getattr(node, "body", []) if catches or suppresses else []
    if guarded:
        line = _touched(guarded, aliases, stream, touching)
        return [] if line is None else [(line, _SEEN)]
    handed_on = (
        (
            isinstance(node, ast.Lambda)
            and _touched([ast.Expr(node.body)], aliases, stream, touching)
        )
        or (isinstance(node, ast.Name) and node.id in touching and _uncalled(node, scope))
        or (
            isinstance(node, ast.Attribute)
            and node.attr in USES - WRITES - {"buffer"}
            and stream(node.value)
            and _uncalled(node, scope)
        )
    )
    return [(getattr(node, "lineno", 0), _HANDED_ON)] if handed_on else []


_SEEN = "catches what a standard stream does under a runner's capture (stdin refuses to be read)"
_HANDED_ON = (
    "hands on a use of a standard stream uncalled, for its failure to be seen elsewhere "
    "(stdin refuses to be read under a runner's capture)"
)


def _walk_function(function: ast.AST) -> Iterator[ast.AST]:
    for statement in getattr(function, "body", []):
        yield from _walk_own(statement)


def _uncalled(node: ast.AST, scope: ast.AST) -> bool:
    """Whether a name or attribute is read as a value rather than called (`target=probe`)."""
    if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
        return False
    return not any(
        isinstance(parent, ast.Call) and parent.func is node for parent in ast.walk(scope)
    )


def _broad(kind: ast.expr | None, aliases: dict[str, str]) -> bool:
    """Whether a handler catches more than the failures a capture never raises."""
    if kind is None:
        return True
    kinds = kind.elts if isinstance(kind, ast.Tuple) else [kind]
    return any(
        (qualified_name(k, aliases) or "").removeprefix("builtins.") not in NARROW_HANDLERS
        for k in kinds
    )


def _suppresses(expression: ast.expr, aliases: dict[str, str]) -> bool:
    if not isinstance(expression, ast.Call):
        return False
    if qualified_name(expression.func, aliases) not in SUPPRESS:
        return False
    return not expression.args or any(_broad(a, aliases) for a in expression.args)
