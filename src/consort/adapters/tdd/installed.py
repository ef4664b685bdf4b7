"""Which of a tree's top-level modules the test interpreter would otherwise import from its own
environment.

The export's root comes first on the test process's `sys.path` (`python -m pytest` puts it
there), so a top-level `pytest_timeout.py` or `anyio/` in the tree is imported instead of the
installed distribution of that name: pytest loads installed plugins by module name, so such a
file runs as a plugin of the test run, and a module named like a library the tests use stands
in for that library. Consort asks the interpreter of `[test] command` itself, isolated (`-I`:
no current folder, no user site, no PYTHON* variables), where it finds each name; a name it
finds outside the project (an editable install of the project itself is the project's) is
installed, and the tree may not provide it. A command that starts no Python directly (`uv run
pytest`, a shell script) has every interpreter it may start asked (`interpreters_of`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Collection, Sequence
from pathlib import Path

from consort.adapters import proc
from consort.core.errors import ConsortError

FIND_TIMEOUT_S = 60.0
# Prints "<name>\t<where>" for every name the interpreter finds; imports none of them.
FINDER = """\
import importlib.util, sys
for name in sys.argv[1:]:
    try:
        spec = importlib.util.find_spec(name)
    except Exception:
        continue
    if spec is None:
        continue
    where = spec.origin if spec.origin not in (None, "namespace") else ""
    if not where and spec.submodule_search_locations:
        where = next(iter(spec.submodule_search_locations), "")
    print(name, where or "?", sep="\\t")
"""
_cache: dict[tuple[str, frozenset[str]], dict[str, str]] = {}
VENV_FOLDERS = (".venv", "venv")


def interpreter_of(
    command: Sequence[str], path: str | None = None, cwd: Path | None = None
) -> str | None:
    """The Python interpreter `command` starts: its program when that is a Python, else the
    interpreter a console script's `#!` line names (`pytest`, `.venv/bin/pytest`); None when
    it is neither (`uv run pytest`, a shell script). A relative program (`.venv/bin/python`)
    is found from `cwd`, the folder the command runs in."""
    if not command:
        return None
    named = command[0]
    if cwd is not None and "/" in named and not os.path.isabs(named):
        named = str(cwd / named)
    program = shutil.which(named, path=path) or named
    if Path(program).name.startswith("python"):
        return program
    try:
        with open(program, "rb") as handle:
            first = handle.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", errors="replace").split()
    if words and Path(words[0]).name == "env" and len(words) > 1:
        words = words[1:]
    if words and Path(words[0]).name.startswith("python"):
        return shutil.which(words[0], path=path) or words[0]
    return None


def interpreters_of(
    command: Sequence[str],
    path: str | None,
    project_root: Path | None,
    *,
    python: bool = True,
    cwd: Path | None = None,
) -> list[str]:
    """Every Python interpreter `command` may run the tests with. A command that starts Python
    itself has one. One that does not (`uv run pytest`, `poetry run pytest`, `env python -m
    pytest`, `sh run_tests.sh`) may start any of: the interpreter the rest of its words name
    (found first in the project's own `.venv`, where launchers such as uv and PDM keep it), the
    project's `.venv`/`venv` and the active virtual environment's, and the `python3` on PATH.
    All of them are asked: a name one of them has installed may not be shadowed. `python`
    False (a junit runner whose command names no Python: Vitest, Jest) asks none of them.
    `cwd`: the folder the command runs in (`[test] cwd`), whose `.venv` comes first."""
    direct = interpreter_of(command, path, cwd)
    if direct is not None:
        return [direct]
    if not python and not any("py" in Path(word).name for word in command):
        return []
    roots = list(dict.fromkeys(r for r in (cwd, project_root) if r is not None))
    venvs = [root / name for root in roots for name in VENV_FOLDERS]
    if os.environ.get("VIRTUAL_ENV"):
        venvs.append(Path(os.environ["VIRTUAL_ENV"]))
    folders = [str(v / "bin") for v in venvs if (v / "bin").is_dir()]
    search = os.pathsep.join([*folders, path or os.defpath])
    found = []
    for start in range(1, len(command)):
        named = interpreter_of(command[start:], search)
        if named is not None:
            found.append(named)
            break
    found += [str(v / "bin" / "python") for v in venvs if (v / "bin" / "python").is_file()]
    system = shutil.which("python3", path=path)
    if system:
        found.append(system)
    return list(dict.fromkeys(found))


def installed_among(
    command: Sequence[str],
    names: Collection[str],
    project_root: Path | None,
    *,
    python: bool = True,
    cwd: Path | None = None,
) -> set[str]:
    """The `names` that an interpreter of `command` (`interpreters_of`, run from `cwd`) finds
    in its own environment, outside `project_root`."""
    wanted = frozenset(n for n in names if n.isidentifier())
    if not wanted:
        return set()
    inside = project_root.resolve() if project_root else None
    installed: set[str] = set()
    path = os.environ.get("PATH")
    for interpreter in interpreters_of(command, path, project_root, python=python, cwd=cwd):
        found = _lookup(interpreter, wanted) or {}
        installed |= {
            name for name, where in found.items() if inside is None or not _within(where, inside)
        }
    return installed


def _lookup(interpreter: str, wanted: frozenset[str]) -> dict[str, str] | None:
    """Where `interpreter` finds each name; None when it cannot be asked (not cached)."""
    key = (interpreter, wanted)
    if key not in _cache:
        found = _find(interpreter, sorted(wanted))
        if found is None:
            return None
        _cache[key] = found
    return _cache[key]


def _find(interpreter: str, names: list[str]) -> dict[str, str] | None:
    try:
        result = proc.run(
            [interpreter, "-I", "-c", FINDER, *names],
            cwd="/",
            env={"PATH": os.environ.get("PATH", os.defpath)},
            timeout=FIND_TIMEOUT_S,
            check=False,
        )
    except ConsortError:
        return None
    if not result.ok:
        return None
    found = {}
    for line in result.stdout.splitlines():
        name, _, where = line.partition("\t")
        if name in names:
            found[name] = where
    return found


def _within(where: str, root: Path) -> bool:
    if where in ("", "?", "built-in", "frozen"):
        return False
    try:
        Path(where).resolve().relative_to(root)
    except (OSError, ValueError):
        return False
    return True


def project_modules(
    command: Sequence[str], modules: Collection[str], project_root: Path, cwd: Path | None = None
) -> set[str]:
    """The `modules` a command runs (`python -m app.server` -> app) that its interpreter finds
    nowhere outside `project_root`: the project's own code, which no tree file can shadow.
    Empty when the interpreter cannot be asked (unknown, missing, failing): then every such
    module stays guarded."""
    interpreter = interpreter_of(command, os.environ.get("PATH"), cwd)
    wanted = frozenset(m for m in modules if m.isidentifier())
    found = _lookup(interpreter, wanted) if interpreter is not None and wanted else None
    if found is None:
        return set()
    inside = project_root.resolve()
    return set(wanted) - {name for name, where in found.items() if not _within(where, inside)}
