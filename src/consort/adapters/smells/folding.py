"""Strings spelled in pieces, put back together: what a constant expression evaluates to.

A rule that looks for the name `"pytest"` or `"sys.modules"` in string literals is blind to
`"py" + "test"`, `"tset"[::-1]`, `"".join(["PY", "TEST_"])`, `chr(112) + ...`,
`bytes.fromhex("...").decode()` or `codecs.decode("clgrfg", "rot13")`. Each of those is a
constant: it can be evaluated without running the program. `fold` evaluates the small set of
pure operations such spellings use, on literals only, and gives up (None) on anything else.
Nothing is executed: every operation is interpreted here, and results are capped in size.
"""

from __future__ import annotations

import ast
import base64
import binascii
import codecs
import re
from collections.abc import Callable

MAX_LENGTH = 4096
# A width or precision this long, or one taken from the arguments, could build a huge string.
WIDE_FORMAT = re.compile(r"\d{4,}|\*")
# str methods that are pure and take only constant arguments.
STR_METHODS = frozenset(
    {
        "lower",
        "upper",
        "casefold",
        "strip",
        "lstrip",
        "rstrip",
        "replace",
        "removeprefix",
        "removesuffix",
        "title",
        "capitalize",
        "swapcase",
        "format",
    }
)
BASE64_DECODERS: dict[str, Callable[[str | bytes], bytes]] = {
    "base64.b64decode": base64.b64decode,
    "base64.b32decode": base64.b32decode,
    "base64.b16decode": base64.b16decode,
    "base64.b85decode": base64.b85decode,
    "base64.a85decode": base64.a85decode,
    "base64.urlsafe_b64decode": base64.urlsafe_b64decode,
    "base64.standard_b64decode": base64.standard_b64decode,
    "binascii.unhexlify": binascii.unhexlify,
    "binascii.a2b_hex": binascii.a2b_hex,
    "binascii.a2b_base64": binascii.a2b_base64,
}

Value = str | bytes | int


def fold(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """The string `node` evaluates to when it is built from literals only, else None."""
    try:
        value = _value(node, aliases)
    except (ValueError, TypeError, LookupError, binascii.Error, OverflowError):
        return None
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return value if isinstance(value, str) else None


def _value(node: ast.AST, aliases: dict[str, str]) -> Value | None:  # noqa: PLR0911, PLR0912
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str | bytes | int) else None
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Mod) and isinstance(node.right, ast.Tuple):
            return _format_tuple(node.left, node.right, aliases)
        left, right = _value(node.left, aliases), _value(node.right, aliases)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Add) and type(left) is type(right):
            return _capped(left + right)  # type: ignore[operator]
        if isinstance(node.op, ast.Mult) and isinstance(right, int) and not isinstance(left, int):
            return _capped(left * right) if len(left) * right <= MAX_LENGTH else None
        if isinstance(node.op, ast.Mod) and isinstance(left, str) and not WIDE_FORMAT.search(left):
            return _capped(left % right)
        return None
    if isinstance(node, ast.JoinedStr):
        parts = []
        for part in node.values:
            inner = part.value if isinstance(part, ast.FormattedValue) else part
            value = _value(inner, aliases)
            if value is None:
                return None
            parts.append(value if isinstance(value, str) else str(value))
        return _capped("".join(parts))
    if isinstance(node, ast.Subscript):
        base = _value(node.value, aliases)
        if not isinstance(base, str | bytes):
            return None
        if isinstance(node.slice, ast.Slice):
            bounds = [
                None if part is None else _value(part, aliases)
                for part in (node.slice.lower, node.slice.upper, node.slice.step)
            ]
            numbers = [b if isinstance(b, int) else None for b in bounds]
            if numbers != bounds:
                return None
            return base[slice(*numbers)]
        index = _value(node.slice, aliases)
        return base[index] if isinstance(index, int) and isinstance(base, str) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _value(node.operand, aliases)
        return -value if isinstance(value, int) else None
    if isinstance(node, ast.Call):
        return _call(node, aliases)
    return None


def _format_tuple(template: ast.expr, values: ast.Tuple, aliases: dict[str, str]) -> Value | None:
    pattern = _value(template, aliases)
    items = [_value(e, aliases) for e in values.elts]
    if not isinstance(pattern, str) or WIDE_FORMAT.search(pattern) or None in items:
        return None
    return _capped(pattern % tuple(items))


def _call(node: ast.Call, aliases: dict[str, str]) -> Value | None:
    if node.keywords and not all(k.arg == "encoding" for k in node.keywords):
        return None
    if isinstance(node.func, ast.Attribute) and node.func.attr == "join" and len(node.args) == 1:
        return _join(node.func.value, node.args[0], aliases)
    args = [_value(a, aliases) for a in node.args]
    if any(a is None for a in args):
        return None
    if isinstance(node.func, ast.Name) and node.func.id not in aliases:
        return _builtin(node.func.id, args)
    if isinstance(node.func, ast.Attribute):
        return _method(node, node.func, args, aliases)
    return None


def _builtin(name: str, args: list[Value | None]) -> Value | None:
    if len(args) != 1:
        return None
    value = args[0]
    if name == "chr" and isinstance(value, int):
        return chr(value)
    if name == "str" and isinstance(value, str):
        return value
    if name == "bytes" and isinstance(value, bytes):
        return value
    return None


def _method(  # noqa: PLR0911 -- one return per operation
    node: ast.Call, func: ast.Attribute, args: list[Value | None], aliases: dict[str, str]
) -> Value | None:
    dotted = _dotted(func, aliases)
    first = args[0] if args else None
    if dotted in BASE64_DECODERS and len(args) == 1 and isinstance(first, str | bytes):
        return _capped(BASE64_DECODERS[dotted](first))
    if dotted == "codecs.decode" and len(args) == 2 and isinstance(args[1], str):
        decoded = codecs.decode(first, args[1])  # type: ignore[arg-type]
        return decoded if isinstance(decoded, str | bytes) else None
    if dotted == "bytes.fromhex" and len(args) == 1 and isinstance(first, str):
        return bytes.fromhex(first)
    receiver = _value(func.value, aliases)
    if func.attr == "decode" and isinstance(receiver, bytes):
        return receiver.decode(*(a for a in args if isinstance(a, str)))
    if func.attr in STR_METHODS and isinstance(receiver, str):
        if func.attr == "format" and WIDE_FORMAT.search(receiver):
            return None
        return _capped(getattr(receiver, func.attr)(*args))
    return None


def _join(separator_node: ast.expr, items: ast.expr, aliases: dict[str, str]) -> Value | None:
    separator = _value(separator_node, aliases)
    if not isinstance(separator, str) or not isinstance(items, ast.List | ast.Tuple):
        return None
    pieces = [_value(e, aliases) for e in items.elts]
    if not all(isinstance(p, str) for p in pieces):
        return None
    return _capped(separator.join(p for p in pieces if isinstance(p, str)))


def _dotted(node: ast.AST, aliases: dict[str, str]) -> str | None:
    if isinstance(node, ast.Name):
        return aliases.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value, aliases)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _capped(value: Value) -> Value:
    if isinstance(value, str | bytes) and len(value) > MAX_LENGTH:
        raise ValueError("too long")
    return value
