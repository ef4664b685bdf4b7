"""Code that lists the project it sits in: the tests are there, and with them their answers.

A run's export holds the whole commit, the tests beside the code, and the test process reads
them (it imports them). Code that walks the project's root (`Path(__file__).parent.parent
.rglob("*.py")`, `os.walk(".")`, `glob.glob("**/*.py", recursive=True)`) finds the test that
checks it and reads the answer off its `assert answer() == 42`, without naming a test, a test
folder or a test file. An application reads files it knows by name (`BASE_DIR / "templates"`,
Django's settings idiom, goes up to the root and names what it wants) and lists folders of its
own data; it has no need to list the folder its package sits in, or the one the process
started in (a run starts in the export's root).

What a listing lists is worked out from the code's own location: `__file__` is the file,
each `.parent`, `parents[n]`, `os.path.dirname` or `..` goes one folder up, and a file at
`app/answers.py` reaches the project's root two steps up. The working folder (`"."`,
`os.getcwd()`, `Path.cwd()`, a relative glob pattern that starts with a wildcard) is the
root too.
"""

from __future__ import annotations

import ast

from consort.adapters.smells.syntax import qualified_name

LISTING_METHODS = frozenset({"iterdir", "glob", "rglob", "walk"})
LISTING_FUNCTIONS = frozenset(
    {"os.listdir", "os.scandir", "os.walk", "os.fwalk", "glob.glob", "glob.iglob"}
)
PATTERN_FUNCTIONS = frozenset({"glob.glob", "glob.iglob"})
# Calls that keep the folder a path names, or join names to it.
SAME_FOLDER_CALLS = frozenset(
    {
        "pathlib.Path",
        "pathlib.PurePath",
        "pathlib.PosixPath",
        "os.path.abspath",
        "os.path.realpath",
        "os.path.normpath",
        "os.fspath",
        "str",
        "os.path.join",
        "posixpath.join",
    }
)
SAME_FOLDER_METHODS = frozenset({"resolve", "absolute", "joinpath"})
UP_CALLS = frozenset({"os.path.dirname", "posixpath.dirname"})
WORKING_FOLDER_CALLS = frozenset({"os.getcwd", "os.getcwdb", "pathlib.Path.cwd"})
WILDCARDS = ("*", "?", "[")


def project_listings(tree: ast.AST, aliases: dict[str, str], path: str) -> list[tuple[int, str]]:
    """(line, what) for each listing of the project's root or a folder above it, seen from
    the module at `path` (relative to the project's root)."""
    places = _Places(aliases, root=path.count("/") + 1)
    places.bind(tree)
    return [
        (
            node.lineno,
            "lists the project it sits in (the tests are there, and in them the answers they "
            "expect)",
        )
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and (places.listed(node) or 0) >= places.root
    ]


class _Places:
    """Where path expressions lead, as folders above the module's file (0: the file itself,
    `root`: the project's root, which is also the working folder a run starts in)."""

    def __init__(self, aliases: dict[str, str], root: int) -> None:
        self.aliases, self.root = aliases, root
        self.names: dict[str, int] = {}

    def bind(self, tree: ast.AST) -> None:
        """Names bound to a placed path (`ROOT = Path(__file__).parent.parent`), and so on."""
        for _ in range(5):
            before = dict(self.names)
            for node in ast.walk(tree):
                if isinstance(node, ast.Assign):
                    value, targets = node.value, node.targets
                elif isinstance(node, ast.AnnAssign) and node.value is not None:
                    value, targets = node.value, [node.target]
                else:
                    continue
                levels = self.levels(value)
                for target in targets:
                    if levels is not None and isinstance(target, ast.Name):
                        self.names[target.id] = max(levels, self.names.get(target.id, levels))
            if self.names == before:
                break

    def listed(self, node: ast.Call) -> int | None:
        """The folder a listing call lists; None when it lists nothing the rule can place."""
        called = qualified_name(node.func, self.aliases) or ""
        if called in LISTING_FUNCTIONS:
            if not node.args:
                return self.root if called in ("os.listdir", "os.scandir", "os.walk") else None
            if called in PATTERN_FUNCTIONS:
                return self._pattern(node.args[0])
            return self.levels(node.args[0])
        if isinstance(node.func, ast.Attribute) and node.func.attr in LISTING_METHODS:
            base = self.levels(node.func.value)
            pattern = node.args[0] if node.args else None
            if base is not None and isinstance(pattern, ast.Constant):
                base += str(pattern.value).split("/").count("..")
            return base
        return None

    def _pattern(self, node: ast.AST) -> int | None:
        """A glob pattern: relative and starting with a wildcard, it lists the working folder."""
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            return self.levels(node)
        first = node.value.split("/", 1)[0]
        if first == "..":
            return self.root + 1
        if node.value.startswith("/") or not (first in (".", "") or first.startswith(WILDCARDS)):
            return None
        return self.root

    def levels(self, node: ast.AST) -> int | None:  # noqa: PLR0911
        if isinstance(node, ast.Name):
            return 0 if node.id == "__file__" else self.names.get(node.id)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return self._relative(node.value)
        if isinstance(node, ast.Attribute):
            if node.attr == "parent":
                return _plus(self.levels(node.value), 1)
            return self.root if qualified_name(node, self.aliases) == "os.curdir" else None
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute):
            step = node.slice.value if isinstance(node.slice, ast.Constant) else None
            if node.value.attr == "parents" and isinstance(step, int):
                return _plus(self.levels(node.value.value), step + 1)
            return None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            return self._joined(self.levels(node.left), [node.right])
        if isinstance(node, ast.Call):
            return self._call(node)
        return None

    def _call(self, node: ast.Call) -> int | None:
        called = qualified_name(node.func, self.aliases) or ""
        if called in WORKING_FOLDER_CALLS:
            return self.root
        if called in UP_CALLS and node.args:
            return _plus(self.levels(node.args[0]), 1)
        if called in SAME_FOLDER_CALLS:
            if not node.args:
                return self.root if called.startswith("pathlib.") else None  # `Path()` is "."
            return self._joined(self.levels(node.args[0]), node.args[1:])
        if isinstance(node.func, ast.Attribute) and node.func.attr in SAME_FOLDER_METHODS:
            return self._joined(self.levels(node.func.value), node.args)
        return None

    def _relative(self, text: str) -> int | None:
        """A relative path's text, from the working folder: `"."`, `"../x"`, `"static"`."""
        if text.startswith(("/", "~")):
            return None
        return self._walk(self.root, text)

    def _joined(self, base: int | None, parts: list[ast.expr]) -> int | None:
        for part in parts:
            if base is None or not (isinstance(part, ast.Constant) and isinstance(part.value, str)):
                return None  # a name joined that the rule cannot read: somewhere below, unknown
            base = self._walk(base, part.value)
        return base

    @staticmethod
    def _walk(base: int, text: str) -> int:
        for piece in text.split("/"):
            if piece == "..":
                base += 1
            elif piece not in ("", "."):
                base -= 1
        return base


def _plus(levels: int | None, step: int) -> int | None:
    return None if levels is None else levels + step
