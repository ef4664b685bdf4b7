"""Consort configures the test process; the tree under test does not.

Three rules, each closing a class of ways to make a run green without the code:

* **Frozen sources.** Every source of pytest configuration (its own files, the `[tool.pytest*]`
  tables of `pyproject.toml`, the pytest sections of `tox.ini` and `setup.cfg`, every
  `conftest.py`) and every file the project protects (its tests) is compared by content with
  the baseline commit (RED for GREEN and REFACTOR, the story head for a merge). Any difference
  is a violation, whatever the project's protected list says.
* **One chosen config file.** Consort finds the project's pytest config file in the export's root
  itself, by pytest's own order, and passes it with `-c`, `--rootdir` and `--confcutdir`: no
  file above the export (a `/tmp/pytest.ini`, a `/tmp/conftest.py`) takes part.
* **No shadowing.** A top-level module of the tree that Python would import instead of the test
  runner, the app server, a standard-library module or interpreter start-up (`pytest.py`,
  `_pytest/`, `uvicorn.py`, `sitecustomize.py`, `usercustomize.py`, any `*.pth`) is refused.
"""

from __future__ import annotations

import configparser
import sys
import tomllib
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from consort.adapters.scope import glob_match
from consort.adapters.vcs import TreeEntry, read_blobs
from consort.core.seal import SealRule, SealViolation

# Whole files whose every byte configures the run.
CONFIG_FILES = (
    "**/pytest.ini",
    "**/.pytest.ini",
    "**/pytest.toml",
    "**/.pytest.toml",
    "**/conftest.py",
    # A test module anywhere runs code at collection: one the driver adds is configuration too.
    "**/test_*.py",
    "**/*_test.py",
    # How the migrations run (not which exist: new migrations are the driver's to add).
    "**/alembic.ini",
    "**/migrations/env.py",
    "**/alembic/env.py",
    # Other runners' configuration (`[test] runner = "junit"`).
    "**/vitest.config.*",
    "**/vitest.workspace.*",
    "**/jest.config.*",
    "**/*.test.ts",
    "**/*.test.js",
    "**/*.spec.ts",
    "**/*.spec.js",
)
# Files that configure the run in one part only; the rest (dependencies, linters) is the
# driver's to change.
SECTIONED_FILES = ("**/pyproject.toml", "**/tox.ini", "**/setup.cfg")
# pytest's own search order for a config file in a folder (pytest 9).
CONFIG_ORDER = (
    "pytest.toml",
    ".pytest.toml",
    "pytest.ini",
    ".pytest.ini",
    "pyproject.toml",
    "tox.ini",
    "setup.cfg",
)
RUNNER_MODULES = frozenset({"pytest", "_pytest", "pluggy", "py", "iniconfig", "xdist"})
STARTUP_MODULES = frozenset({"sitecustomize", "usercustomize"})
# A top-level `test/` folder is a common home for tests; the standard library's own `test`
# package is not something a suite imports.
STDLIB_SHADOW_EXEMPT = frozenset({"test", "__main__", "this", "antigravity"})
# Some distributions install a stray top-level `tests` package; the project's own test folders
# are frozen at RED anyway.
TEST_FOLDERS = frozenset({"tests", "test", "testing"})


def frozen_paths(
    paths: Sequence[str], protected: Sequence[str], command: Sequence[str]
) -> set[str]:
    """The files among `paths` whose content must equal the baseline's."""
    named = {part.removeprefix("./") for part in command}
    return {
        path
        for path in paths
        if path in named
        or any(glob_match(g, path) for g in (*CONFIG_FILES, *SECTIONED_FILES, *protected))
    }


def config_changes(
    repo: Path,
    baseline: Mapping[str, TreeEntry],
    candidate: Mapping[str, TreeEntry],
    protected: Sequence[str],
    command: Sequence[str],
) -> list[SealViolation]:
    """Every frozen file that differs between the two commits' trees."""
    paths = frozen_paths(sorted(baseline.keys() | candidate.keys()), protected, command)
    whole = {p for p in paths if not _sectioned(p) or any(glob_match(g, p) for g in protected)}
    changed = [p for p in sorted(whole) if _sha(baseline, p) != _sha(candidate, p)]
    violations = [
        SealViolation(
            SealRule.TEST_CONFIG_CHANGED,
            path,
            "test configuration or a test differs from the baseline commit "
            f"({_describe(baseline.get(path), candidate.get(path))})",
        )
        for path in changed
    ]
    sectioned = sorted(p for p in paths - whole if _sha(baseline, p) != _sha(candidate, p))
    if sectioned:
        shas = [e.sha for p in sectioned for e in (baseline.get(p), candidate.get(p)) if e]
        blobs = read_blobs(repo, shas)
        for path in sectioned:
            before = _pytest_sections(path, _content(baseline, path, blobs))
            after = _pytest_sections(path, _content(candidate, path, blobs))
            if before != after:
                violations.append(
                    SealViolation(
                        SealRule.TEST_CONFIG_CHANGED,
                        path,
                        "its pytest configuration differs from the baseline commit",
                    )
                )
    return violations


def _sectioned(path: str) -> bool:
    return any(glob_match(g, path) for g in SECTIONED_FILES)


def _sha(tree: Mapping[str, TreeEntry], path: str) -> str | None:
    entry = tree.get(path)
    return f"{entry.mode}:{entry.sha}" if entry else None


def _describe(before: TreeEntry | None, after: TreeEntry | None) -> str:
    if before is None:
        return "added"
    if after is None:
        return "deleted"
    return "modified"


def _content(tree: Mapping[str, TreeEntry], path: str, blobs: Mapping[str, bytes]) -> bytes | None:
    entry = tree.get(path)
    return None if entry is None else blobs.get(entry.sha)


def _pytest_sections(path: str, data: bytes | None) -> Any:
    """The part of a shared config file pytest reads, in a comparable form ("unreadable" when
    the file does not parse: a broken file must not differ silently)."""
    if data is None:
        return None
    text = data.decode("utf-8", errors="replace")
    if path.endswith(".toml"):
        try:
            tool = tomllib.loads(text).get("tool", {})
        except tomllib.TOMLDecodeError:
            return ("unreadable", text)
        return (
            {k: v for k, v in tool.items() if k.startswith("pytest")}
            if isinstance(tool, dict)
            else {}
        )
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return ("unreadable", text)
    wanted = ("pytest", "tool:pytest")
    return {s: dict(parser.items(s)) for s in parser.sections() if s in wanted}


def config_file(root: Path) -> Path | None:
    """The file pytest would read its configuration from in `root`, by pytest's own rules."""
    for name in CONFIG_ORDER:
        path = root / name
        if not path.is_file():
            continue
        if name in ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini"):
            return path
        if _pytest_sections(name, path.read_bytes()):
            return path
    return None


def runner_arguments(root: Path, private_ini: Path) -> list[str]:
    """Options that pin pytest to the export: its config file, root, and conftest boundary."""
    chosen = config_file(root)
    if chosen is None:
        private_ini.write_text("[pytest]\n", encoding="utf-8")
        chosen = private_ini
    return ["-c", str(chosen), f"--rootdir={root}", f"--confcutdir={root}"]


def shadowing(
    entries: Mapping[str, TreeEntry],
    roots: Sequence[str],
    server_modules: Sequence[str],
    installed: Collection[str] = (),
) -> list[SealViolation]:
    """Top-level modules of each import root (`""` is the export's root) that would be imported
    instead of the runner, the app server, the standard library, interpreter start-up or a
    module `installed` in the test interpreter's environment (a pytest plugin it loads by name,
    a library the tests use)."""
    guarded = (
        RUNNER_MODULES
        | STARTUP_MODULES
        | frozenset(server_modules)
        | (frozenset(sys.stdlib_module_names) - STDLIB_SHADOW_EXEMPT)
        | (frozenset(installed) - STDLIB_SHADOW_EXEMPT - TEST_FOLDERS)
    )
    found = []
    for path in sorted(entries):
        name = path.rsplit("/", 1)[-1]
        if name.endswith(".pth"):
            found.append(
                SealViolation(
                    SealRule.SHADOWING_MODULE, path, "a .pth file runs code at interpreter start"
                )
            )
            continue
        module = _top_module(path, roots)
        if module is None:
            continue
        if module in STARTUP_MODULES or module in guarded:
            found.append(
                SealViolation(
                    SealRule.SHADOWING_MODULE,
                    path,
                    f"it would be imported instead of `{module}`; rename it",
                )
            )
    return found


def top_modules(entries: Mapping[str, TreeEntry], roots: Sequence[str] = ("",)) -> set[str]:
    """The top-level module names the tree's import roots provide."""
    return {m for path in entries if (m := _top_module(path, roots)) is not None}


def _top_module(path: str, roots: Sequence[str]) -> str | None:
    for root in roots:
        prefix = f"{root.strip('/')}/" if root.strip("/") else ""
        if not path.startswith(prefix):
            continue
        rest = path[len(prefix) :].split("/")
        if len(rest) == 1 and rest[0].endswith((".py", ".pyc", ".so", ".pyd")):
            return rest[0].split(".", 1)[0]
        if (
            len(rest) == 2
            and rest[1].split(".", 1)[0] == "__init__"
            and rest[1].endswith((".py", ".pyc", ".so", ".pyd"))
        ):
            return rest[0]
    return None


def module_of_command(argv: Sequence[str]) -> list[str]:
    """The modules a command imports first: `python -m uvicorn ...` -> ["uvicorn"]; a console
    script `uvicorn ...` -> ["uvicorn"]."""
    found = []
    for index, part in enumerate(argv):
        if part == "-m" and index + 1 < len(argv):
            found.append(argv[index + 1].split(".", 1)[0])
    if argv and not found:
        program = Path(argv[0]).name
        if not program.startswith("python"):
            found.append(program.split(".", 1)[0].replace("-", "_"))
    return found
