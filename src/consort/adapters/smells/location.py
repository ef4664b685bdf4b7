"""Code that asks where it runs from: a run's export sits in a private folder of its own.

Consort runs a commit from an export it writes for the run (`consort-run-...` under the
temporary folder, or wherever the sandbox shows it), never from the developer's checkout or
an installed package. Code that tests its own location (`"/tmp/" in __file__`,
`os.getcwd().startswith(...)`, `Path(__file__).is_relative_to(...)`, `len(__file__) > 40`)
answers differently there, whatever it compares the location with, and nothing an
application does needs it to. Paths made from the location to find a file beside the code
(`Path(__file__).parent / "templates"`), and the names and suffixes of files there, are not
tests of where the code is.
"""

from __future__ import annotations

import ast

from consort.adapters.smells.syntax import qualified_name

OWN_LOCATION = frozenset({"__file__", "__spec__", "__path__", "__cached__"})
LOCATION_CALLS = frozenset(
    {
        "os.getcwd",
        "os.getcwdb",
        "pathlib.Path.cwd",
        "pathlib.Path.home",
        "os.path.expanduser",
        "tempfile.gettempdir",
        "tempfile.gettempdirb",
    }
)
LOCATION_ATTRIBUTES = frozenset({"sys.executable", "sys.prefix", "sys.exec_prefix"})
# The working folder as the process was started in it, by the variables a shell sets for it:
# read by its name, one variable like any other, and the export's folder all the same.
LOCATION_VARIABLES = frozenset({"PWD", "OLDPWD"})
ENVIRONMENT_READS = frozenset({"os.getenv", "os.environ.get", "os.environb.get", "os.getenvb"})
ENVIRONMENTS = frozenset({"os.environ", "os.environb"})
# Tests of a string or a path, made on a location.
TESTS = frozenset(
    {
        "startswith",
        "endswith",
        "find",
        "rfind",
        "index",
        "rindex",
        "count",
        "__contains__",
        "is_relative_to",
        "match",
        "full_match",
        "relative_to",
        "samefile",
    }
)
TESTING_FUNCTIONS = frozenset(
    {"re.search", "re.match", "re.fullmatch", "re.findall", "fnmatch.fnmatch", "os.path.commonpath"}
)
# What a location holds that is not where it is: its file's name.
NAME_PARTS = frozenset({"name", "suffix", "stem", "suffixes"})
# Calls that read what is at a location instead of saying where it is.
CONTENT_CALLS = frozenset(
    {
        "glob",
        "rglob",
        "iterdir",
        "listdir",
        "walk",
        "scandir",
        "open",
        "read",
        "readlines",
        "read_text",
        "read_bytes",
        "exists",
        "is_file",
        "is_dir",
        "stat",
        "load",
        "loads",
    }
)


# Folders whose contents tell a sandboxed run (a private, empty home and temporary folder) from
# a developer's machine or a server, or one machine from another.
SHARED_FOLDERS = frozenset(
    {"/", "/tmp", "/var/tmp", "/home", "/root", "/run", "/mnt", "/media", "/dev", "/sys"}  # noqa: S108
)
HOME_OR_TEMP_CALLS = frozenset(
    {"pathlib.Path.home", "os.path.expanduser", "tempfile.gettempdir", "tempfile.gettempdirb"}
)
LISTINGS = frozenset({"listdir", "scandir", "iterdir", "walk", "glob", "rglob", "iglob"})
# Calls that measure a filesystem: the sandbox's /tmp is a memory file system of its own.
FILESYSTEM_MEASURES = frozenset({"shutil.disk_usage", "os.statvfs", "os.fstatvfs"})


def folder_listings(tree: ast.AST, aliases: dict[str, str]) -> list[tuple[int, str]]:
    """(line, what) for each listing of the home or temporary folder, or of a shared system
    folder (`os.listdir(os.path.expanduser("~"))`, `Path("/tmp").iterdir()`), and each
    measure of a filesystem: what is there (nothing, in a sandboxed run) tells the run."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = qualified_name(node.func, aliases) or ""
        if name in FILESYSTEM_MEASURES:
            found.append((node.lineno, f"measures a filesystem (`{name}`)"))
            continue
        attribute = node.func.attr if isinstance(node.func, ast.Attribute) else ""
        short = name.rsplit(".", 1)[-1] if name else attribute
        if short not in LISTINGS:
            continue
        listed = [*node.args[:1]]
        if isinstance(node.func, ast.Attribute) and attribute in ("iterdir", "glob", "rglob"):
            listed.append(node.func.value)
        if any(_home_or_shared(arg, aliases) for arg in listed):
            found.append(
                (node.lineno, "lists the home, temporary or a system folder (a run's are its own)")
            )
    return found


def _home_or_shared(node: ast.AST, aliases: dict[str, str]) -> bool:
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call) and (qualified_name(inner.func, aliases) or "") in (
            HOME_OR_TEMP_CALLS
        ):
            return True
        if isinstance(inner, ast.Constant) and isinstance(inner.value, str):
            if inner.value.startswith("~"):
                return True
            if not inner.value.startswith("/"):
                continue
            # a pattern's folder: `/home/*` lists /home
            text = inner.value.split("*", 1)[0].split("?", 1)[0].rstrip("/") or "/"
            if text in SHARED_FOLDERS:
                return True
    return False


def location_tests(tree: ast.AST, aliases: dict[str, str]) -> list[tuple[int, str]]:
    """(line, what) for each test the code makes of where it runs from."""
    names: set[str] = set()
    for _ in range(5):  # names bound from a location, and from those
        before = len(names)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
                continue
            if _location(node.value, aliases, names):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        if len(names) == before:
            break
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            if all(isinstance(op, ast.Is | ast.IsNot) for op in node.ops):
                continue  # `folder is None`: whether there is one, not where
            sides = [node.left, *node.comparators]
            if any(_location(side, aliases, names) for side in sides):
                found.append(
                    (node.lineno, "tests where it runs from (a run's export is elsewhere)")
                )
        elif isinstance(node, ast.Call) and _tests_a_location(node, aliases, names):
            found.append((node.lineno, "tests where it runs from (a run's export is elsewhere)"))
    return found


def _tests_a_location(node: ast.Call, aliases: dict[str, str], names: set[str]) -> bool:
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in TESTS:
        return _location(func.value, aliases, names)
    if (qualified_name(func, aliases) or "") in TESTING_FUNCTIONS:
        return any(_location(arg, aliases, names) for arg in node.args)
    return False


def _location(node: ast.AST, aliases: dict[str, str], names: set[str]) -> bool:  # noqa: PLR0911, PLR0912
    """Whether `node` is a location, or made from one by shaping it (`Path(...)`, `.parent`,
    `str(...)`, a join), not by reading what is there or taking a file's name."""
    if isinstance(node, ast.Name):
        return node.id in OWN_LOCATION or node.id in names
    if isinstance(node, ast.Attribute):
        if node.attr in NAME_PARTS:
            return False
        if (qualified_name(node, aliases) or "") in LOCATION_ATTRIBUTES:
            return True
        return _location(node.value, aliases, names)
    if isinstance(node, ast.Subscript):
        if (qualified_name(node.value, aliases) or "") in ENVIRONMENTS:
            return _names_location_variable(node.slice)
        return _location(node.value, aliases, names)
    if isinstance(node, ast.BinOp):
        return _location(node.left, aliases, names) or _location(node.right, aliases, names)
    if isinstance(node, ast.BoolOp):  # `os.getenv("PWD") or ""`
        return any(_location(value, aliases, names) for value in node.values)
    if isinstance(node, ast.JoinedStr):
        return any(
            _location(v.value, aliases, names)
            for v in node.values
            if isinstance(v, ast.FormattedValue)
        )
    if isinstance(node, ast.Call):
        name = qualified_name(node.func, aliases) or ""
        if name in LOCATION_CALLS:
            return True
        if name in ENVIRONMENT_READS:
            return bool(node.args) and _names_location_variable(node.args[0])
        attribute = node.func.attr if isinstance(node.func, ast.Attribute) else name
        if attribute.rsplit(".", 1)[-1] in CONTENT_CALLS or attribute in TESTS:
            return False
        inner = [
            *node.args,
            *(node.func.value for _ in [0] if isinstance(node.func, ast.Attribute)),
        ]
        return any(_location(arg, aliases, names) for arg in inner)
    return False


def _names_location_variable(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value in LOCATION_VARIABLES
