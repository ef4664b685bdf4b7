"""Tamper rules: production code may not reach into the test machinery.

Unlike the smells, these refuse the attempt. Code that imports the runner, rewires the import
system, patches builtins, registers exit handlers, walks the garbage collector or the stack for
the runner's objects, reads the runner's environment, leaves the process tree or runs code it
builds at run time can change what a test run reports without changing what the code does. Each
finding names its rule, file and line; only new occurrences (not in the baseline's version of the
file) count. A project that needs one of these capabilities lists it in `consort.toml`
(`[seal] allow = ["process"]`, or `"process:src/worker.py"` for one file), which only a person
changes.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from consort.adapters.scope import glob_match
from consort.adapters.smells.clock import clock_findings
from consort.adapters.smells.folding import fold
from consort.adapters.smells.location import folder_listings, location_tests
from consort.adapters.smells.project_walks import project_listings
from consort.adapters.smells.rigged import rigged_comparisons
from consort.adapters.smells.runner_state import is_state_attribute, runner_state_questions
from consort.adapters.smells.stack_depth import stack_depth_findings
from consort.adapters.smells.syntax import (
    Occurrence,
    import_aliases,
    line_text,
    new_occurrences,
    parse,
    qualified_name,
)
from consort.adapters.smells.test_words import deciding_uses, is_test_word
from consort.core.seal import SealRule, SealViolation


class Capability(StrEnum):
    RUNNER = "runner"  # importing pytest, _pytest, pluggy or the project's tests
    IMPORT_SYSTEM = "import-system"  # sys.meta_path, sys.path_hooks, sys.modules, loaders
    BUILTINS = "builtins"
    ATEXIT = "atexit"
    INTROSPECTION = "introspection"  # gc walking, frames, tracing, audit hooks
    RUNNER_ENVIRONMENT = "runner-environment"  # PYTEST_*, "pytest" in sys.modules, argv, /proc
    PROCESS = "process"  # fork, setsid, daemons, exec, new sessions
    DYNAMIC_CODE = "dynamic-code"  # exec, eval, compile, __import__, computed attribute names
    NATIVE = "native"  # ctypes, cffi
    # an object equal to whatever it is compared with (`__eq__` that ignores the other side,
    # `unittest.mock.ANY`): it passes an assertion without being the answer
    RIGGED_COMPARISON = "rigged-comparison"
    # an answer that depends on when it is asked: the clock compared with a fixed instant, or
    # the day of the run spelled in the code (`smells/clock.py`)
    CLOCK = "clock"
    # what the runner did to the interpreter (its capture of the standard streams, its hooks,
    # the root logger's handlers) or the sandbox to the machine (loopback alone):
    # `smells/runner_state.py`
    RUNNER_STATE = "runner-state"


RUNNER_MODULES = ("pytest", "_pytest", "pluggy", "py.test", "xdist", "conftest")
# Test doubles: production code that returns one passes any assertion made with `==`.
MOCK_MODULES = ("unittest.mock", "mock", "pytest_mock", "dirty_equals", "hamcrest")
MODULE_CAPABILITIES = {
    "atexit": Capability.ATEXIT,
    "builtins": Capability.BUILTINS,
    "__builtin__": Capability.BUILTINS,
    "gc": Capability.INTROSPECTION,
    "inspect": Capability.INTROSPECTION,
    # readers of the running stack or of source files by name: the calling test's lines
    "linecache": Capability.INTROSPECTION,
    "faulthandler": Capability.INTROSPECTION,
    "tracemalloc": Capability.INTROSPECTION,
    "trace": Capability.INTROSPECTION,
    "pdb": Capability.INTROSPECTION,
    "bdb": Capability.INTROSPECTION,
    "ctypes": Capability.NATIVE,
    "cffi": Capability.NATIVE,
    "_ctypes": Capability.NATIVE,
    "importlib.abc": Capability.IMPORT_SYSTEM,
    "importlib.machinery": Capability.IMPORT_SYSTEM,
    "importlib.util": Capability.IMPORT_SYSTEM,
    "zipimport": Capability.IMPORT_SYSTEM,
    "pkgutil": Capability.IMPORT_SYSTEM,
    "runpy": Capability.DYNAMIC_CODE,
    "daemon": Capability.PROCESS,
    "psutil": Capability.RUNNER_ENVIRONMENT,
    # the module the process was started with: `python -m pytest` makes it the runner's own
    # (`__main__.__package__`, its `__file__`); `if __name__ == "__main__"` asks nothing of it
    "__main__": Capability.RUNNER_ENVIRONMENT,
    "multiprocessing": Capability.PROCESS,
    "pty": Capability.PROCESS,
    # code loaded from data: unpickling calls whatever the data names
    "pickle": Capability.DYNAMIC_CODE,
    "_pickle": Capability.DYNAMIC_CODE,
    "cPickle": Capability.DYNAMIC_CODE,
    "marshal": Capability.DYNAMIC_CODE,
    "shelve": Capability.DYNAMIC_CODE,
    "copyreg": Capability.DYNAMIC_CODE,
    "dill": Capability.DYNAMIC_CODE,
    "cloudpickle": Capability.DYNAMIC_CODE,
    "jsonpickle": Capability.DYNAMIC_CODE,
    "joblib": Capability.DYNAMIC_CODE,
    "code": Capability.DYNAMIC_CODE,
    "codeop": Capability.DYNAMIC_CODE,
}
ATTRIBUTE_CAPABILITIES = {
    "sys.meta_path": Capability.IMPORT_SYSTEM,
    "sys.path_hooks": Capability.IMPORT_SYSTEM,
    "sys.path_importer_cache": Capability.IMPORT_SYSTEM,
    "sys.modules": Capability.IMPORT_SYSTEM,
    "sys.path": Capability.IMPORT_SYSTEM,  # puts an archive or a folder of unread code first
    "sys.pycache_prefix": Capability.IMPORT_SYSTEM,  # where byte-code is looked for first
    "sys.exception": Capability.INTROSPECTION,
    "sys.exc_info": Capability.INTROSPECTION,
    "traceback.walk_stack": Capability.INTROSPECTION,
    "traceback.walk_tb": Capability.INTROSPECTION,
    # the caller's source lines: the test's own `assert answer() == 42`, read by the code
    "traceback.extract_stack": Capability.INTROSPECTION,
    "traceback.format_stack": Capability.INTROSPECTION,
    "traceback.print_stack": Capability.INTROSPECTION,
    "traceback.StackSummary": Capability.INTROSPECTION,
    "traceback.FrameSummary": Capability.INTROSPECTION,
    # the stack walked for a caller by other means: a logger's `findCaller`, the frame logging
    # asks for, a warning charged to the caller's line and kept, or shown by a hook of its own
    "logging.currentframe": Capability.INTROSPECTION,
    "warnings.showwarning": Capability.INTROSPECTION,
    "warnings.formatwarning": Capability.INTROSPECTION,
    "warnings.WarningMessage": Capability.INTROSPECTION,
    "types.FunctionType": Capability.DYNAMIC_CODE,
    "types.LambdaType": Capability.DYNAMIC_CODE,
    "types.CodeType": Capability.DYNAMIC_CODE,
    "types.ModuleType": Capability.IMPORT_SYSTEM,
    "yaml.load": Capability.DYNAMIC_CODE,
    "yaml.load_all": Capability.DYNAMIC_CODE,
    "yaml.unsafe_load": Capability.DYNAMIC_CODE,
    "yaml.unsafe_load_all": Capability.DYNAMIC_CODE,
    "yaml.full_load": Capability.DYNAMIC_CODE,
    "sys.settrace": Capability.INTROSPECTION,
    "sys.setprofile": Capability.INTROSPECTION,
    "sys.addaudithook": Capability.INTROSPECTION,
    "sys._getframe": Capability.INTROSPECTION,
    # the stack's room: a runner calls the code from deep inside itself (`smells/stack_depth.py`)
    "sys.getrecursionlimit": Capability.INTROSPECTION,
    "sys.setrecursionlimit": Capability.INTROSPECTION,
    "sys._current_frames": Capability.INTROSPECTION,
    "sys.excepthook": Capability.INTROSPECTION,
    "sys.displayhook": Capability.INTROSPECTION,
    "sys.argv": Capability.RUNNER_ENVIRONMENT,
    # every installed distribution listed: a search for the test tools by a name no rule reads
    # (a production image has none); `version("name")` of one named package is not a search
    "importlib.metadata.distributions": Capability.RUNNER_ENVIRONMENT,
    "importlib.metadata.packages_distributions": Capability.RUNNER_ENVIRONMENT,
    "pkg_resources.working_set": Capability.RUNNER_ENVIRONMENT,
    "sys.orig_argv": Capability.RUNNER_ENVIRONMENT,
    # Python's start-up flags: where a run sets one (PYTHONNOUSERSITE, PYTHONDONTWRITEBYTECODE,
    # outside the sandbox), they tell it from a developer's own `pytest`
    "sys.flags": Capability.RUNNER_ENVIRONMENT,
    "sys.dont_write_bytecode": Capability.RUNNER_ENVIRONMENT,
    "threading.settrace": Capability.INTROSPECTION,
    "threading.setprofile": Capability.INTROSPECTION,
    "os.fork": Capability.PROCESS,
    "os.forkpty": Capability.PROCESS,
    "os.setsid": Capability.PROCESS,
    "os.setpgrp": Capability.PROCESS,
    "os.setpgid": Capability.PROCESS,
    "os.daemon": Capability.PROCESS,
    "os.register_at_fork": Capability.PROCESS,
    "os.posix_spawn": Capability.PROCESS,
    "os.posix_spawnp": Capability.PROCESS,
    "os.kill": Capability.PROCESS,
    "os.popen": Capability.PROCESS,
    "os.system": Capability.PROCESS,
    "os.killpg": Capability.PROCESS,
    "os.dup2": Capability.PROCESS,
    # a copy of an inherited descriptor, or a pipe of its own put in its place: the report's
    # pipe taken over, pytest's own report edited on its way to Consort
    "os.dup": Capability.PROCESS,
    "os.pipe": Capability.PROCESS,
    "os.pipe2": Capability.PROCESS,
    "os.set_inheritable": Capability.PROCESS,
    "fcntl.F_DUPFD": Capability.PROCESS,
    "fcntl.F_DUPFD_CLOEXEC": Capability.PROCESS,
    "os.write": Capability.PROCESS,
    "os.truncate": Capability.PROCESS,
    "signal.signal": Capability.PROCESS,
    "importlib.import_module": Capability.DYNAMIC_CODE,
    "importlib.reload": Capability.IMPORT_SYSTEM,
    "importlib.invalidate_caches": Capability.IMPORT_SYSTEM,
}
PREFIX_CAPABILITIES = {
    "os.exec": Capability.PROCESS,
    "os.spawn": Capability.PROCESS,
}
# `importlib` itself (`importlib.__import__`, `importlib._bootstrap`) is the import system;
# these two of its submodules only read packages' data.
IMPORTLIB_READERS = ("importlib.metadata", "importlib.resources")
BUILTIN_CALLS = {
    "exec": Capability.DYNAMIC_CODE,
    "eval": Capability.DYNAMIC_CODE,
    "compile": Capability.DYNAMIC_CODE,
    "__import__": Capability.DYNAMIC_CODE,
    "globals": Capability.DYNAMIC_CODE,
    "vars": Capability.DYNAMIC_CODE,
    "locals": Capability.DYNAMIC_CODE,  # at a module's top level, its globals
    "breakpoint": Capability.INTROSPECTION,
}
# Modules whose attributes, reached by a computed name, would get round the rules above.
GUARDED_MODULES = frozenset({"sys", "os", "builtins", "gc", "importlib", "atexit", "signal"})
DUNDER_ESCAPES = frozenset(
    {
        "__builtins__",
        "__subclasses__",
        "__globals__",
        "__code__",
        "__closure__",
        "__loader__",
        "__spec__",
        "f_back",
        "f_globals",
        "f_locals",
        "tb_frame",
        "gi_frame",
        "cr_frame",
        "ag_frame",
        "f_code",
        "__reduce__",
        "__reduce_ex__",
        "__setstate__",
        "__class_getitem__",
    }
)

# The standard streams' own device files, and the terminal's: what they lead to is what a
# runner's capture put there (`smells/streams.py`).
STREAM_DEVICES = ("/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/pts")
# What only Consort's runs set: Python's start-up flags (besides every CONSORT_* name).
RUN_FLAGS = frozenset({"PYTHONDONTWRITEBYTECODE", "PYTHONNOUSERSITE"})
TEST_WORDS = frozenset({"test", "tests", "testing"})
TEST_FILE = re.compile(r"(^|[/*])test_")  # "**/test_*.py", "test_t1.py"
ENVIRONMENTS = frozenset({"os.environ", "os.environb", "posix.environ", "nt.environ"})
# What code may do with the environment without reading all of it: one variable by its name
# (`os.environ["X"]`, `.get`, `in`), set or remove one, or hand it whole to a child process
# (`env=os.environ.copy()`, `env={**os.environ, ...}`).
ONE_VARIABLE = frozenset(
    {"get", "setdefault", "pop", "update", "__getitem__", "__contains__", "__setitem__"}
)
# SQL that asks the server which database, session or server the code runs on, or reads the
# catalog of every database and its records: the name of a run's throwaway child (named like a
# branch database, but a new one), its age, its neighbours and Consort's record of it would
# tell the run from a developer's branch database. The code under test stores and reads its
# own tables; it has no need to know which database holds them.
SERVER_IDENTITY = re.compile(
    r"\b(current_database|current_catalog|pg_database|pg_stat_\w+|pg_statio_\w+"
    r"|shobj_description|pg_shdescription|pg_description|obj_description"
    r"|pg_backend_pid|pg_postmaster_start_time|pg_conf_load_time|inet_server_(addr|port)"
    r"|inet_client_(addr|port)|pg_roles|pg_authid|pg_user|pg_shadow|pg_settings"
    r"|pg_ls_\w+|pg_stat_file|pg_read_file|pg_read_binary_file|pg_tablespace_databases"
    r"|pg_database_size|txid_current|pg_current_xact_id|pg_current_wal_\w+)\b",
    re.IGNORECASE,
)

# SQL that reads values the migrations keep outside every table the code writes: comments on
# objects (`COMMENT ON TABLE items IS '1'`), an enum's labels, the migration tool's own history
# (`schema_migrations`, `alembic_version`). A migration can put the answer a test expects there
# and no row rule sees it; the code under test has no need to read any of them.
MIGRATION_KEEPING = re.compile(
    r"\b(col_description|pg_enum|enum_range|enum_first|enum_last|alembic_version"
    r"|flyway_schema_history|django_migrations|schema_migrations|ar_internal_metadata"
    r"|goose_db_version|knex_migrations(_lock)?|_prisma_migrations|__diesel_schema_migrations"
    r"|SequelizeMeta|pgmigrations|kysely_migration(_lock)?|_sqlx_migrations"
    r"|atlas_schema_revisions)\b"
    # names too plain to refuse alone, refused where SQL names them as a table
    r"|\b(from|join|into|update|table)\s+(\w+\.)?\"?(migrations|schema_version)\"?(\s|;|$)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Finding:
    capability: Capability
    line: int
    what: str


def findings(text: str, path: str | None = None) -> list[Finding]:
    """Every tamper finding in a production module's source; [] when it does not parse (the
    test run reports a syntax error better). `path`, the module's place in the project, places
    the folders it lists (`smells/project_walks.py`)."""
    tree = parse(text)
    if tree is None:
        return []
    aliases = import_aliases(tree)
    found: list[Finding] = []
    for node in ast.walk(tree):
        found += _node_findings(node, aliases)
        found += _folded_findings(node, aliases)
        found += _environment_scan(node, aliases)
        found += _definition_findings(node)
    found += _environment_reads(tree, aliases)
    found += _process_id_comparisons(tree, aliases)
    found += [
        Finding(Capability.RUNNER_ENVIRONMENT, line, what)
        for line, what in [*location_tests(tree, aliases), *folder_listings(tree, aliases)]
    ]
    found += _test_word_findings(tree, aliases)
    if path is not None:
        found += [
            Finding(Capability.RUNNER_ENVIRONMENT, line, what)
            for line, what in project_listings(tree, aliases, path)
        ]
    found += [
        Finding(Capability.RUNNER_STATE, line, what)
        for line, what in runner_state_questions(tree, aliases)
    ]
    found += [
        Finding(Capability.INTROSPECTION, line, what)
        for line, what in stack_depth_findings(tree, aliases)
    ]
    found += [Finding(Capability.CLOCK, line, what) for line, what in clock_findings(tree, aliases)]
    found += [
        Finding(Capability.RIGGED_COMPARISON, line, what) for line, what in rigged_comparisons(tree)
    ]
    return sorted(set(found), key=lambda f: (f.line, f.capability.value, f.what))


# Process and thread ids: a sandboxed run has a PID namespace of its own, whose ids are small
# (the test process is 2 or 3), and a developer's terminal or a server has large ones.
PROCESS_IDS = frozenset(
    {
        "os.getpid",
        "os.getppid",
        "os.getpgrp",
        "os.getpgid",
        "os.getsid",
        "threading.get_native_id",
        "multiprocessing.current_process",
    }
)


def _process_id_comparisons(tree: ast.AST, aliases: dict[str, str]) -> list[Finding]:
    """A process id compared with anything (`os.getpid() < 100`): code that tells a run by the
    size of its pid. Logging or naming a file after one is not a comparison."""

    def reads_id(node: ast.AST, names: set[str]) -> bool:
        return any(
            (isinstance(n, ast.Call) and qualified_name(n.func, aliases) in PROCESS_IDS)
            or (isinstance(n, ast.Name) and n.id in names)
            for n in ast.walk(node)
        )

    names: set[str] = set()
    for _ in range(5):  # names bound from a process id, and from those
        before = len(names)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
                continue
            if reads_id(node.value, names):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        if len(names) == before:
            break
    return [
        Finding(
            Capability.RUNNER_ENVIRONMENT,
            node.lineno,
            "compares a process id (a sandboxed run's are small: a PID namespace of its own)",
        )
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare) and reads_id(node, names)
    ]


def _test_word_findings(tree: ast.AST, aliases: dict[str, str]) -> list[Finding]:
    """A bare "test", "tests" or "testing" (or a string of literals that spells one) wherever
    its value can decide what the code does: a comparison, a key, a path, a call (`test_words`).
    In a docstring, a log line or an exception's message it is let through."""
    words: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if is_test_word(node.value):
                words.append(node)
        elif isinstance(node, ast.BinOp | ast.JoinedStr | ast.Subscript | ast.Call):
            value = fold(node, aliases)
            if value is not None and is_test_word(value) and not _literal_word(node):
                words.append(node)
    return [
        Finding(Capability.RUNNER_ENVIRONMENT, line, f"names the tests or a test run ({how})")
        for line, how in deciding_uses(tree, words)
    ]


def _literal_word(node: ast.AST) -> bool:
    """A node whose own pieces already hold the word as a literal (found on its own)."""
    return any(
        isinstance(inner, ast.Constant)
        and isinstance(inner.value, str)
        and is_test_word(inner.value)
        for inner in ast.walk(node)
        if inner is not node
    )


def _folded_findings(node: ast.AST, aliases: dict[str, str]) -> list[Finding]:
    """A string built from literals (`"py" + "test"`, `"tset"[::-1]`) is judged by what it
    spells, as a literal would be."""
    if not isinstance(node, ast.BinOp | ast.JoinedStr | ast.Subscript | ast.Call):
        return []
    value = fold(node, aliases)
    if value is None:
        return []
    line = getattr(node, "lineno", 0)
    found = _string_findings(value, line) + _name_findings(value, line)
    if value in DUNDER_ESCAPES or value in BUILTIN_CALLS or value == "__builtins__":
        found.append(Finding(Capability.DYNAMIC_CODE, line, f"spells `{value}`"))
    return found


def _definition_findings(node: ast.AST) -> list[Finding]:
    """Hooks of the runner defined in production code: a module loaded as a plugin (a file
    named like an installed one, say) would run them."""
    line = getattr(node, "lineno", 0)
    found = []
    for name in _bound_names(node):
        if name.startswith("pytest_"):
            found.append(Finding(Capability.RUNNER, line, f"defines the runner hook `{name}`"))
    return found


def _bound_names(node: ast.AST) -> list[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [t.id for t in targets if isinstance(t, ast.Name)]
    return []


def _node_findings(node: ast.AST, aliases: dict[str, str]) -> list[Finding]:  # noqa: PLR0911
    line = getattr(node, "lineno", 0)
    if isinstance(node, ast.Import | ast.ImportFrom):
        return _import_findings(node)
    if isinstance(node, ast.Attribute):
        if node.attr in DUNDER_ESCAPES:
            return [Finding(Capability.DYNAMIC_CODE, line, f"`.{node.attr}`")]
        base = qualified_name(node.value, aliases) or ""
        if node.attr == "__dict__" and base.split(".", 1)[0] in GUARDED_MODULES:
            return [Finding(Capability.DYNAMIC_CODE, line, f"`{base}.__dict__`")]
        name = qualified_name(node, aliases)
        found = _name_findings(name, line) if name else []
        if isinstance(node.ctx, ast.Store):
            # a hook of the program's own put in place (`threading.excepthook = report`) asks
            # nothing of the runner; reading one back does
            found = [f for f in found if f.capability is not Capability.RUNNER_STATE]
        return found
    if isinstance(node, ast.Name):
        name = aliases.get(node.id, node.id)
        if node.id == "__builtins__":
            return [Finding(Capability.BUILTINS, line, "`__builtins__`")]
        if node.id in aliases:
            return _name_findings(name, line)
        return []
    if isinstance(node, ast.Call):
        return _call_findings(node, aliases)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _string_findings(node.value, line)
    return []


def _import_findings(node: ast.Import | ast.ImportFrom) -> list[Finding]:
    modules = (
        [node.module or ""]
        if isinstance(node, ast.ImportFrom) and node.module
        else [alias.name for alias in node.names]
    )
    if isinstance(node, ast.ImportFrom) and node.module:
        modules += [f"{node.module}.{alias.name}" for alias in node.names]
    # `from .code import x`, `from . import mock`: the project's own modules, not the
    # standard library's or a test library's of that name.
    relative = isinstance(node, ast.ImportFrom) and node.level > 0
    found = []
    for module in modules:
        parts = module.split(".")
        if (
            parts[0] in RUNNER_MODULES
            or parts[0] == "tests"
            or parts[-1] == "conftest"
            or (parts[-1].startswith("test_"))
        ):
            found.append(Finding(Capability.RUNNER, node.lineno, f"imports `{module}`"))
        if relative:
            continue
        if any(module == m or module.startswith(m + ".") for m in MOCK_MODULES):
            found.append(Finding(Capability.RIGGED_COMPARISON, node.lineno, f"imports `{module}`"))
        if _import_machinery(module):
            found.append(Finding(Capability.IMPORT_SYSTEM, node.lineno, f"imports `{module}`"))
        for prefix, capability in MODULE_CAPABILITIES.items():
            if module == prefix or module.startswith(prefix + "."):
                found.append(Finding(capability, node.lineno, f"imports `{module}`"))
    return found


def _import_machinery(name: str) -> bool:
    """`importlib.<anything>` but the two submodules that only read packages' data."""
    return name.startswith("importlib.") and not name.startswith(IMPORTLIB_READERS)


def _name_findings(name: str, line: int) -> list[Finding]:
    found = []
    capability = ATTRIBUTE_CAPABILITIES.get(name)
    if capability is not None:
        found.append(Finding(capability, line, f"uses `{name}`"))
    for prefix, capability in PREFIX_CAPABILITIES.items():
        if name.startswith(prefix):
            found.append(Finding(capability, line, f"uses `{name}`"))
    if is_state_attribute(name):
        found.append(Finding(Capability.RUNNER_STATE, line, f"uses `{name}`"))
    top = name.split(".", 1)[0]
    if name not in ATTRIBUTE_CAPABILITIES and _import_machinery(name):
        found.append(Finding(Capability.IMPORT_SYSTEM, line, f"uses `{name}`"))
    if any(name == m or name.startswith(m + ".") for m in MOCK_MODULES):
        found.append(Finding(Capability.RIGGED_COMPARISON, line, f"uses `{name}`"))
    if top in MODULE_CAPABILITIES and name != top:
        found.append(Finding(MODULE_CAPABILITIES[top], line, f"uses `{name}`"))
    return found


# Methods that walk the stack and say where their caller is (a logger's).
CALLER_FINDERS = frozenset({"findCaller"})
# Calls that join their literal arguments into a path (`os.path.join("/", "proc")`).
PATH_JOINS = frozenset(
    {"os.path.join", "pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "posixpath.join"}
)
# Programs that print the environment they were given, started by the code.
ENVIRONMENT_PRINTERS = frozenset({"env", "printenv", "/usr/bin/env", "/usr/bin/printenv"})


def _call_findings(node: ast.Call, aliases: dict[str, str]) -> list[Finding]:
    line = node.lineno
    found = _joined_path_findings(node, aliases) + _child_environment_findings(node, aliases)
    if isinstance(node.func, ast.Name) and node.func.id not in aliases:
        capability = BUILTIN_CALLS.get(node.func.id)
        if capability is not None:
            found.append(Finding(capability, line, f"calls `{node.func.id}()`"))
        if node.func.id in ("getattr", "setattr", "delattr") and len(node.args) >= 2:
            target = qualified_name(node.args[0], aliases) or ""
            literal = isinstance(node.args[1], ast.Constant)
            if target.split(".", 1)[0] in GUARDED_MODULES and not literal:
                found.append(
                    Finding(
                        Capability.DYNAMIC_CODE,
                        line,
                        f"`{node.func.id}` on `{target}` with a computed name",
                    )
                )
            elif literal and isinstance(node.args[1].value, str):  # type: ignore[attr-defined]
                found += _name_findings(f"{target}.{node.args[1].value}", line)  # type: ignore[attr-defined]
            attribute = fold(node.args[1], aliases)
            if attribute is not None and not literal and target:
                found += _name_findings(f"{target}.{attribute}", line)
            if attribute in DUNDER_ESCAPES:
                found.append(
                    Finding(Capability.DYNAMIC_CODE, line, f"`{node.func.id}` of `{attribute}`")
                )
    if node.func and isinstance(node.func, ast.Attribute) and node.func.attr in CALLER_FINDERS:
        found.append(
            Finding(Capability.INTROSPECTION, line, f"asks for its caller (`.{node.func.attr}`)")
        )
    if (qualified_name(node.func, aliases) or "").endswith("catch_warnings") and any(
        k.arg == "record" and not (isinstance(k.value, ast.Constant) and not k.value.value)
        for k in node.keywords
    ):
        found.append(
            Finding(
                Capability.INTROSPECTION,
                line,
                "keeps the warnings it raises (each names the file and line it is charged to)",
            )
        )
    for keyword in node.keywords:
        if keyword.arg in ("start_new_session", "preexec_fn", "process_group") and not (
            isinstance(keyword.value, ast.Constant) and keyword.value.value in (False, None)
        ):
            found.append(
                Finding(Capability.PROCESS, line, f"starts a process with `{keyword.arg}`")
            )
    return found


def _joined_path_findings(node: ast.Call, aliases: dict[str, str]) -> list[Finding]:
    """A path joined from literals is judged like the literal it makes (`/proc/self/environ`
    from `os.path.join("/", "proc", "self", "environ")`)."""
    if qualified_name(node.func, aliases) not in PATH_JOINS or not node.args:
        return []
    parts = [fold(arg, aliases) for arg in node.args]
    if any(part is None for part in parts):
        return []
    pieces = [part.strip("/") for part in parts if part and part.strip("/")]
    joined = ("/" if str(parts[0]).startswith("/") else "") + "/".join(pieces)
    return _string_findings(joined, node.lineno)


def _child_environment_findings(node: ast.Call, aliases: dict[str, str]) -> list[Finding]:
    """A child process started to print the environment (`subprocess.run(["env"])`,
    `os.popen("printenv")`): a scan of the environment by other means."""
    name = qualified_name(node.func, aliases) or ""
    if not (name.startswith("subprocess.") or name in ("os.popen", "os.system")) or not node.args:
        return []
    first = node.args[0]
    program = first.elts[0] if isinstance(first, ast.List | ast.Tuple) and first.elts else first
    value = fold(program, aliases)
    if value is None or value.split()[:1] == [] or value.split()[0] not in ENVIRONMENT_PRINTERS:
        return []
    return [Finding(Capability.RUNNER_ENVIRONMENT, node.lineno, "scans the whole environment")]


def _string_findings(value: str, line: int) -> list[Finding]:
    lowered = value.lower()
    if "pytest" in lowered:
        return [Finding(Capability.RUNNER_ENVIRONMENT, line, f"names the runner ({value[:40]!r})")]
    if "consort" in lowered or value in RUN_FLAGS:
        # the run's token variable, its throwaway database (consort_eph_...), its folders
        return [
            Finding(Capability.RUNNER_ENVIRONMENT, line, f"names Consort's run ({value[:40]!r})")
        ]
    if _names_the_tests(lowered):
        return [Finding(Capability.RUNNER_ENVIRONMENT, line, f"names the tests ({value[:40]!r})")]
    if value.startswith("/proc/") or value == "/proc" or value.startswith(STREAM_DEVICES):
        return [Finding(Capability.RUNNER_ENVIRONMENT, line, f"reads `{value[:40]}`")]
    if "junit" in lowered or lowered.endswith(".pth") or "sitecustomize" in lowered:
        return [Finding(Capability.RUNNER_ENVIRONMENT, line, f"names `{value[:40]}`")]
    return _asks_the_server(value, line)


def _asks_the_server(value: str, line: int) -> list[Finding]:
    asked = SERVER_IDENTITY.search(value)
    if asked is None:
        return _reads_what_migrations_keep(value, line)
    return [
        Finding(
            Capability.RUNNER_ENVIRONMENT,
            line,
            f"asks the database server which database or server it is (`{asked.group(0)}`)",
        )
    ]


MIGRATION_KEPT = "reads what the migrations keep outside the tables the code writes"


def _reads_what_migrations_keep(value: str, line: int) -> list[Finding]:
    read = MIGRATION_KEEPING.search(value)
    if read is None:
        return []
    return [
        Finding(
            Capability.RUNNER_ENVIRONMENT,
            line,
            f"{MIGRATION_KEPT}: a comment, an enum's labels or the migration tool's history "
            f"(`{read.group(0).strip()}`)",
        )
    ]


def _names_the_tests(lowered: str) -> bool:
    """ "tests/...", "conftest.py", "**/test_*.py": code that looks for the tests, to answer
    differently where they are. The bare words ("test", "tests", "testing": `os.path.isdir(
    "tests")`, `APP_ENV == "test"`) are judged by where they go (`test_words`)."""
    path = lowered.strip("./")
    return (
        path.startswith(("tests/", "test/"))
        or "conftest" in path
        or (TEST_FILE.search(path) is not None and ("*" in path or path.endswith(".py")))
    )


def _environment_scan(node: ast.AST, aliases: dict[str, str]) -> list[Finding]:
    """The environment read as a whole (`for k in os.environ`, `os.environ.items()`): a scan for
    whatever variable only a test run has, by a name no rule can read."""
    line = getattr(node, "lineno", 0)
    scanned: ast.AST | None = None
    if isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
        scanned = node.iter
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("keys", "items", "values")
    ):
        scanned = node.func.value
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.args
        and node.func.id in ("list", "sorted", "set", "tuple", "filter", "map")
    ):
        scanned = node.args[-1]
    if scanned is not None and qualified_name(scanned, aliases) in ENVIRONMENTS:
        return [Finding(Capability.RUNNER_ENVIRONMENT, line, "scans the whole environment")]
    return []


def _environment_reads(tree: ast.AST, aliases: dict[str, str]) -> list[Finding]:
    """The environment taken whole for anything but a child process's `env=`: copied
    (`dict(os.environ)`, `os.environ.copy()`, `{**os.environ}`) and kept, counted, printed,
    bound to another name, or its private mapping read (`os.environ._data`). Each is a scan by
    other means: the variables a run has and production lacks are in what was taken."""
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    env_names = _names_only_given_to_children(tree, parents)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Name | ast.Attribute | ast.Call):
            continue
        if _environment_name(node, aliases) not in ENVIRONMENTS:
            continue
        parent = parents.get(id(node))
        if isinstance(parent, ast.Attribute) and parent.value is node:
            if parent.attr in ONE_VARIABLE:
                continue
        elif (isinstance(parent, ast.Subscript) and parent.value is node) or (
            isinstance(parent, ast.Compare)
            and node in parent.comparators
            and all(isinstance(op, ast.In | ast.NotIn) for op in parent.ops)
        ):
            continue
        if _to_child(_copy_of(node, parents), parents, env_names):
            continue
        line = getattr(node, "lineno", 0)
        found.append(Finding(Capability.RUNNER_ENVIRONMENT, line, "scans the whole environment"))
    return found


def _environment_name(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """`os.environ` for the name, the attribute and `getattr(os, "environ")`."""
    if isinstance(node, ast.Call):
        if not (
            isinstance(node.func, ast.Name) and node.func.id == "getattr" and len(node.args) >= 2
        ):
            return None
        attribute = fold(node.args[1], aliases)
        base = qualified_name(node.args[0], aliases)
        return f"{base}.{attribute}" if base and attribute else None
    return qualified_name(node, aliases)


def _copy_of(node: ast.AST, parents: dict[int, ast.AST]) -> ast.AST:
    """The outermost copy made of `node` (`os.environ.copy()`, `dict(os.environ, X=...)`,
    `{**os.environ, ...}`), or `node` itself."""
    while True:
        parent = parents.get(id(node))
        if isinstance(parent, ast.Attribute) and parent.attr == "copy":
            call = parents.get(id(parent))
            if not (isinstance(call, ast.Call) and call.func is parent):
                return node
            node = call
        elif (
            isinstance(parent, ast.Call)
            and isinstance(parent.func, ast.Name)
            and parent.func.id == "dict"
            and parent.args[:1] == [node]
        ) or (
            isinstance(parent, ast.Dict)
            and any(
                key is None and value is node
                for key, value in zip(parent.keys, parent.values, strict=True)
            )
        ):
            node = parent
        else:
            return node


def _to_child(node: ast.AST, parents: dict[int, ast.AST], env_names: set[str]) -> bool:
    """Whether `node` is a child process's environment: the `env=` argument of a call, or
    bound to a name that is only ever given as one."""
    parent = parents.get(id(node))
    if isinstance(parent, ast.keyword) and parent.arg == "env":
        return True
    return (
        isinstance(parent, ast.Assign)
        and len(parent.targets) == 1
        and isinstance(parent.targets[0], ast.Name)
        and parent.targets[0].id in env_names
    )


def _names_only_given_to_children(tree: ast.AST, parents: dict[int, ast.AST]) -> set[str]:
    """Names whose every read is a call's `env=` argument."""
    reads: dict[str, bool] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            parent = parents.get(id(node))
            given = isinstance(parent, ast.keyword) and parent.arg == "env"
            reads[node.id] = reads.get(node.id, True) and given
    return {name for name, only in reads.items() if only}


# ---- applying the rules to a change ----------------------------------------------------------


def allowed(capability: str, path: str, allow: Sequence[str]) -> bool:
    """Whether `[seal] allow` lets `path` use `capability` (a Capability, or another seal
    rule's name such as "compiled-code")."""
    for entry in allow:
        name, _, glob = entry.partition(":")
        if name == str(capability) and (not glob or glob_match(glob, path)):
            return True
    return False


# Folders migrations live in: a migration may read the catalog and its tool's history (an
# idempotent `CREATE TYPE` asks `pg_enum` first); the code under test may not.
MIGRATION_PARTS = frozenset({"migrations", "migration", "migrate", "alembic", "versions"})
# Data files read by the code (SQL kept in a `.sql` or `.txt`, a query in a `.json`): the SQL
# rules apply to their text as to a string in the code.
DATA_SUFFIXES = (
    ".sql",
    ".txt",
    ".json",
    ".yaml",
    ".yml",
    ".toml",
    ".ini",
    ".cfg",
    ".csv",
    ".dat",
    ".tsv",
)


def is_migration(path: str) -> bool:
    return bool(MIGRATION_PARTS.intersection(path.split("/")[:-1]))


# Build and CI files name the tests to run them, and the code does not read them.
BUILD_FILES = frozenset({"Makefile", "GNUmakefile", "Dockerfile", "Justfile", "Procfile"})


def is_data_file(path: str) -> bool:
    parts = path.split("/")
    name = parts[-1]
    # git's and tools' own dotfiles (.gitignore, .dockerignore) name paths for those tools
    if name in BUILD_FILES or any(part.startswith(".") for part in parts):
        return False
    return name.endswith(DATA_SUFFIXES) or "." not in name


def tamper_violations(
    path: str, text: str, base_text: str | None, allow: Sequence[str]
) -> list[SealViolation]:
    """The new findings in `path` (against its baseline version), as violations."""
    return _violations(path, text, base_text, allow, lambda source: findings(source, path))


def data_file_violations(
    path: str, text: str, base_text: str | None, allow: Sequence[str]
) -> list[SealViolation]:
    """SQL in a data file of the code's (`app/queries.sql`) that asks the server which database
    it is or reads what the migrations keep, and the strings the rules refuse in the code (the
    runner's name, Consort's, `/proc`): the code runs what it reads from there."""
    if is_migration(path):
        return []
    manifest = is_manifest(path)
    return _violations(
        path,
        text,
        base_text,
        allow,
        lambda source: data_findings(source, manifest=manifest),
        what="a data file the code reads",
    )


# Files that name the tools a project is built and tested with (its dependencies and their
# locks, its tools' settings, its compose files) and its documents: they name the runner
# honestly, and an application does not read them for its answers.
MANIFEST = re.compile(
    r"^(pyproject\.toml|setup\.cfg|tox\.ini|pytest\.ini|pipfile(\.lock)?|.*\.lock|.*requirements.*\.txt"
    r"|constraints.*\.txt|environment\.ya?ml|package(-lock)?\.json|pnpm-lock\.yaml"
    r"|(docker-)?compose.*\.ya?ml|(readme|changelog|changes|history|authors|contributors"
    r"|contributing|license|licence|notice|copying)(\..*)?)$",
    re.IGNORECASE,
)


def is_manifest(path: str) -> bool:
    """A manifest by its name, or a file of a `requirements/` folder (`requirements/dev.txt`)."""
    parts = path.split("/")
    return MANIFEST.match(parts[-1]) is not None or "requirements" in parts[:-1]


# A Python test file named in a data file (`../tests/test_t1.py`): code that reads a path from
# there reads the test, and the answer its assertion expects.
TEST_FILE_TOKEN = re.compile(r"(^|[/\\])(test_[^/\\]*|[^/\\]*_test|conftest)\.py$")


def data_findings(text: str, *, manifest: bool = False) -> list[Finding]:
    """What a data file holds that the rules refuse in the code: SQL that asks the server who
    it is, a test file named, and (but in a manifest, `is_manifest`) the runner's name,
    Consort's, `/proc` and the other strings `_string_findings` reads. Kept in a data file,
    `"/proc/self/cmdline"` and `"pytest"` let the code read its own command line and search it
    for the runner as surely as the literals would."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        found += _asks_the_server(line, number)
        for token in re.split(r"[\s\"'`,;:=()\[\]{}<>]+", line):
            if TEST_FILE_TOKEN.search(token) or _names_the_tests(token.lower()):
                what = f"names the tests ({token[:40]!r})"
                found.append(Finding(Capability.RUNNER_ENVIRONMENT, number, what))
                break
            strings = [] if manifest or not token else _string_findings(token, number)
            if strings:
                found += strings
                break
    # one finding a line is enough: a query's function is both SQL and a string the rules read
    first: dict[int, Finding] = {}
    for finding in found:
        first.setdefault(finding.line, finding)
    return list(first.values())


def _violations(
    path: str,
    text: str,
    base_text: str | None,
    allow: Sequence[str],
    find: Callable[[str], list[Finding]],
    *,
    what: str = "production code",
) -> list[SealViolation]:
    lines = text.splitlines()
    base_lines = (base_text or "").splitlines()
    found = find(text)
    if is_migration(path):
        found = [f for f in found if not f.what.startswith(MIGRATION_KEPT)]
    head = _occurrences(found, lines)
    base = _occurrences(find(base_text), base_lines) if base_text else []
    new = {(o.line, o.key) for o in new_occurrences(head, base)}
    return [
        SealViolation(
            SealRule.TAMPERING,
            path,
            f"{what} {finding.what}: it can reach into the test machinery "
            f"({finding.capability.value}); a person can allow it in consort.toml "
            f'(seal.allow = ["{finding.capability.value}:{path}"])',
            line=finding.line,
        )
        for finding in found
        if (finding.line, (finding.capability, finding.what)) in new
        and not allowed(finding.capability, path, allow)
    ]


def _occurrences(found: Iterable[Finding], lines: list[str]) -> list[Occurrence]:
    return [Occurrence(f.line, (f.capability, f.what), line_text(lines, f.line)) for f in found]
