"""A test that replaces what it checks: it asserts what its own stand-in returns.

`monkeypatch.setattr(answers, "answer", lambda: 42)` and then `assert answers.answer() == 42`
checks the lambda, not the code: once the module can be imported, the test passes whatever
`answer` does. Patching a dependency of the code under test is how honest tests isolate it;
what makes a check vacuous is that every call of the project's it makes (directly, or through
a name bound to one) is to something the test itself put in place: `monkeypatch.setattr`,
`mock.patch`/`mocker.patch` (with `.object`), as a call, a `with` or a decorator, or an
assignment `module.name = ...` in the test.
"""

from __future__ import annotations

import ast

from consort.adapters.smells.syntax import qualified_name

# What a check may call besides the code under test without checking anything of its own.
NEUTRAL_CALLS = frozenset(
    {
        "len", "sorted", "list", "set", "dict", "tuple", "str", "int", "float", "bool", "abs",
        "round", "min", "max", "sum", "any", "all", "isinstance", "type", "repr", "frozenset",
        "pytest.approx",
    }
)  # fmt: skip


def patched_names(function: ast.AST, aliases: dict[str, str]) -> set[str]:
    """The dotted names the test puts a stand-in at (`app.answers.answer`)."""
    found: set[str] = set()
    decorators = getattr(function, "decorator_list", [])
    for node in [*ast.walk(function), *decorators]:
        if isinstance(node, ast.Call):
            target = _patch_target(node, aliases)
            if target:
                found.add(target)
        elif isinstance(node, ast.Assign):
            for target_node in node.targets:
                if isinstance(target_node, ast.Attribute):
                    name = qualified_name(target_node, aliases)
                    if name:
                        found.add(name)
    return found


def _patch_target(call: ast.Call, aliases: dict[str, str]) -> str | None:
    """`monkeypatch.setattr(obj, "name", ...)` or `("pkg.mod.name", ...)`, `patch("pkg.mod.
    name")`, `patch.object(obj, "name")`: the dotted name given a stand-in, or None."""
    func = call.func
    last = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    # `monkeypatch.setattr`, not the builtin `setattr` (an assignment's other spelling)
    setattr_call = last == "setattr" and isinstance(func, ast.Attribute)
    object_call = (
        last == "object" and isinstance(func, ast.Attribute) and _last(func.value) == "patch"
    )
    if not call.args or not (setattr_call or object_call or last == "patch"):
        return None
    first = call.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value if not object_call else None
    owner = qualified_name(first, aliases)
    attribute = call.args[1] if len(call.args) > 1 else None
    named = isinstance(attribute, ast.Constant) and isinstance(attribute.value, str)
    if owner and named and (setattr_call or object_call):
        return f"{owner}.{attribute.value}"  # type: ignore[union-attr]
    return None


def _last(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def stand_in_values(function: ast.AST, aliases: dict[str, str], patched: set[str]) -> set[str]:
    """Local names bound to what a stand-in returned (`result = answers.answer()`), and the
    locals bound to the project's real code (`real = other.answer()`), as `name` and
    `!name`."""
    names: set[str] = set()
    for _ in range(3):
        for node in ast.walk(function):
            if not isinstance(node, ast.Assign):
                continue
            stand_in, real = _reads(node.value, aliases, patched, names)
            targets = {t.id for t in node.targets if isinstance(t, ast.Name)}
            if real:
                names |= {f"!{t}" for t in targets}
            elif stand_in:
                names |= targets
    return {n for n in names if n.startswith("!") or f"!{n}" not in names}


def checks_a_stand_in(
    test: ast.expr, aliases: dict[str, str], patched: set[str], values: set[str]
) -> bool:
    """Whether an assert's expression reads the project only through the test's stand-ins."""
    if not patched:
        return False
    stand_in, real = _reads(test, aliases, patched, values)
    return stand_in and not real


def _reads(
    node: ast.AST, aliases: dict[str, str], patched: set[str], values: set[str]
) -> tuple[bool, bool]:
    """(reads a stand-in, reads the project's own code or a value made from it)."""
    if isinstance(node, ast.Call):
        return _call_reads(node, aliases, patched, values)
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
        name = qualified_name(node, aliases) or ""
        if name in patched:
            return True, False
        if name.split(".", 1)[0] in aliases:
            return False, True  # a module's value, read as it is
        return _reads(node.value, aliases, patched, values)
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        real = f"!{node.id}" in values or node.id in aliases
        return node.id in values, real  # neither: a value of the test's own
    return _either([_reads(c, aliases, patched, values) for c in ast.iter_child_nodes(node)])


def _call_reads(
    node: ast.Call, aliases: dict[str, str], patched: set[str], values: set[str]
) -> tuple[bool, bool]:
    name = qualified_name(node.func, aliases) or ""
    arguments = [*node.args, *(k.value for k in node.keywords)]
    parts = [_reads(a, aliases, patched, values) for a in arguments]
    if name in patched and isinstance(node.func, ast.Attribute):
        parts.append((True, False))  # a bare name imported before the patch is the original
    elif isinstance(node.func, ast.Attribute) and not name:
        parts.append(_reads(node.func.value, aliases, patched, values))  # `x.method()`
    elif name not in NEUTRAL_CALLS:
        parts.append((False, True))
    return _either(parts)


def _either(parts: list[tuple[bool, bool]]) -> tuple[bool, bool]:
    return any(p[0] for p in parts), any(p[1] for p in parts)
