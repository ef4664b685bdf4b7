"""The small pieces of AST handling every check shares: parsing, and naming what code refers to."""

from __future__ import annotations

import ast
import io
import tokenize
import warnings
from collections import Counter
from collections.abc import Hashable, Iterable
from dataclasses import dataclass


def parse(text: str) -> ast.Module | None:
    """The module's tree, or None when it does not parse.

    A file that does not parse is not checked at all: the test run reports the syntax error far
    better than a smell could. SyntaxWarnings (odd escapes, `is` with a literal) are the test
    run's business too, so they are silenced here rather than printed mid-review.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(text)
        except (SyntaxError, ValueError, RecursionError):  # ValueError: NUL bytes in the source
            return None


def import_aliases(tree: ast.AST) -> dict[str, str]:
    """Local name -> the dotted name it was imported as, over the whole module.

    `import os as o` gives o -> os, `from sys import exit` gives exit -> sys.exit, so that renamed
    imports are recognised too. Scopes are ignored on purpose: a name imported anywhere in the
    file is assumed to mean the same everywhere, which is how real code uses imports.
    """
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                # `import a.b` binds `a`, which already names itself.
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            for alias in node.names:
                full = f"{module}.{alias.name}" if node.module else f"{module}{alias.name}"
                aliases[alias.asname or alias.name] = full
    return aliases


def qualified_name(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """`pytest.mark.skip` for a Name or an Attribute chain, with imported aliases resolved."""
    if isinstance(node, ast.Name):
        return aliases.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        base = qualified_name(node.value, aliases)
        return None if base is None else f"{base}.{node.attr}"
    return None


@dataclass(frozen=True)
class Occurrence:
    """One thing found in a file, with what it takes to tell whether it is new since the base."""

    line: int
    key: Hashable  # what was found (a marker's name, a literal's value)
    line_text: str  # the stripped source line it sits on

    @property
    def signature(self) -> tuple[Hashable, str]:
        return self.key, self.line_text


def line_text(lines: list[str], lineno: int) -> str:
    return lines[lineno - 1].strip() if 0 < lineno <= len(lines) else ""


def new_occurrences(head: Iterable[Occurrence], base: Iterable[Occurrence]) -> list[Occurrence]:
    """The occurrences at head that base did not have.

    They are matched by what they are and the text of their line, not by line number, so code
    that only moved (lines added above it) does not count as new; an edited line does.
    """
    unmatched = Counter(occurrence.signature for occurrence in base)
    new = []
    for occurrence in head:
        if unmatched[occurrence.signature] > 0:
            unmatched[occurrence.signature] -= 1
        else:
            new.append(occurrence)
    return new


def python_source(data: bytes) -> tuple[str, str | None]:
    """A module's text as Python decodes it (PEP 263: a BOM or a `coding:` cookie decides), and
    the encoding it declares when that reading differs from UTF-8's, else None.

    A cookie such as `utf-7` makes `+AAo-` a line break to Python and a comment to everyone who
    reads the file as UTF-8 (an editor, a diff, a review): the code that runs is not the code
    that was read. Checks read the text Python reads; the difference itself is refused.
    """
    plain = data.removeprefix(b"\xef\xbb\xbf").decode("utf-8", errors="replace")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return plain, None  # Python cannot import it either: the test run says why
    text = text.removeprefix("\ufeff")
    return text, (None if text == plain else encoding)
