"""What `consort init` learns from a repository it adopts: where the tests live, which runner
runs them, from which folder, how the migrations run and which database settings the code reads.

It only reads. Every finding becomes a line of the consort.toml that `init` writes, so a
project whose suite lives in `backend/` and reads `POSTGRES_*` runs with no wrapper script.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from consort.adapters.vcs import Git
from consort.core.config import DEFAULT_PROTECTED

PYTHON_TEST = re.compile(r"^(test_.*|.*_test)\.py$")
NODE_TEST = re.compile(r"^.*\.(test|spec)\.(ts|tsx|js|jsx|mjs|cjs|mts|cts)$")
GO_TEST = re.compile(r"^.*_test\.go$")
JVM_TEST = re.compile(r"(^|/)src/test/.*\.(java|kt)$")  # Maven's test sources
# Test configuration of a build tool: a go.mod `replace` or a pom's Surefire settings (skips,
# excludes, a stand-in for the assertion library) decides what the tests run against.
GO_PROTECTED = ("**/*_test.go", "**/testdata/**", "**/go.mod", "**/go.sum")
MAVEN_PROTECTED = ("**/src/test/**", "**/pom.xml")
PYTEST_FILES = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini")
SKIPPED_FOLDERS = frozenset(
    {".git", ".consort", "node_modules", ".venv", "venv", "__pycache__", ".tox", "dist", "build"}
)
WALK_LIMIT = 20000  # files looked at in a folder that is not a git repository
# Variables that name a database's parts, and the placeholder each one gets.
DB_VARIABLES = {
    "DATABASE_URL": "{db.url}",
    "POSTGRES_SERVER": "{db.host}",
    "POSTGRES_HOST": "{db.host}",
    "POSTGRES_PORT": "{db.port}",
    "POSTGRES_USER": "{db.user}",
    "POSTGRES_PASSWORD": "{db.password}",
    "POSTGRES_DB": "{db.name}",
    "PGHOST": "{db.host}",
    "PGPORT": "{db.port}",
    "PGUSER": "{db.user}",
    "PGPASSWORD": "{db.password}",
    "PGDATABASE": "{db.name}",
}
_READ_VARIABLE = re.compile(r"\b(" + "|".join(DB_VARIABLES) + r")\b")


@dataclass
class Survey:
    """What a repository's files say about running its tests and migrations."""

    files: list[str]  # every file considered, relative POSIX paths
    test_files: list[str] = field(default_factory=list)
    test_cwd: str = ""
    migrate_cwd: str = ""
    migrate_command: list[str] | None = None  # None: nothing found, keep the default
    node_runner: str | None = None  # "vitest" | "jest"
    build_tool: str | None = None  # "go" (go.mod) | "maven" (pom.xml), when no other runner is
    db_variables: list[str] = field(default_factory=list)  # the DB variables the code reads
    tracked_env: bool = False  # `.env` is a file of the repository
    venv: str = ""  # the project's own virtual environment (`backend/.venv`), if it has one
    # The variables a tracked `.env` sets besides the database's: no run reads a .env.
    env_settings: list[str] = field(default_factory=list)
    protected: list[str] = field(default_factory=lambda: list(DEFAULT_PROTECTED))

    def unprotected_tests(self) -> list[str]:
        from consort.adapters.scope import glob_match

        return [t for t in self.test_files if not any(glob_match(g, t) for g in self.protected)]


def survey(root: Path) -> Survey:
    files = repository_files(root)
    found = Survey(files=files)
    found.test_files = [f for f in files if is_test_file(f)]
    found.tracked_env = Git.is_repo(root) and Git(root).tracks(".env")
    if found.tracked_env:
        found.env_settings = [
            name for name in _env_names(_read(root / ".env") or "") if name not in DB_VARIABLES
        ]
    found.test_cwd = _pytest_folder(root, files, found.test_files)
    alembic = sorted(
        (str(PurePosixPath(f).parent) for f in files if _name(f) == "alembic.ini"),
        key=lambda d: (d.count("/"), d),
    )
    if alembic:
        found.migrate_cwd = "" if alembic[0] == "." else alembic[0]
        # `python -m`: a console script of an editable install can import another checkout.
        found.migrate_command = ["python", "-m", "alembic", "upgrade", "head"]
    found.node_runner = _node_runner(root, files) if not _has_python_tests(found) else None
    if found.node_runner is None and not _has_python_tests(found):
        found.build_tool, build_folder = _build_tool(files)
        if found.build_tool is not None:
            found.test_cwd = build_folder
    if found.node_runner is None and found.build_tool is None:
        found.venv = _project_venv(root, found.test_cwd)
    found.db_variables = _db_variables(root, files)
    found.protected = _protected(root, found)
    return found


_ENV_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=")


def _env_names(text: str) -> list[str]:
    """The variables a .env file sets, in its order."""
    names = [m.group(1) for line in text.splitlines() if (m := _ENV_LINE.match(line))]
    return list(dict.fromkeys(names))


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def is_test_file(path: str) -> bool:
    name = _name(path)
    return bool(PYTHON_TEST.match(name) or NODE_TEST.match(name) or GO_TEST.match(name)) or bool(
        JVM_TEST.search(path)
    )


def _build_tool(files: list[str]) -> tuple[str | None, str]:
    """Go or Maven, by the shallowest go.mod or pom.xml, and the folder it is in ("" the root).
    go.mod first: a repository with both is driven by its Go module."""
    for tool, marker in (("go", "go.mod"), ("maven", "pom.xml")):
        folders = sorted(
            (str(PurePosixPath(f).parent) for f in files if _name(f) == marker),
            key=lambda d: (d.count("/"), d),
        )
        if folders:
            return tool, "" if folders[0] == "." else folders[0]
    return None, ""


def _has_python_tests(found: Survey) -> bool:
    return any(t.endswith(".py") for t in found.test_files)


def repository_files(root: Path) -> list[str]:
    if Git.is_repo(root) and Git(root).has_commits():
        listed = Git(root).out("ls-files", "-z", "--cached", "--others", "--exclude-standard")
        return sorted(p for p in listed.split("\0") if p and not _skipped(p))
    paths: list[str] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIPPED_FOLDERS]
        base = Path(folder).relative_to(root)
        paths += [(base / n).as_posix() for n in names]
        if len(paths) > WALK_LIMIT:
            break
    return sorted(paths)


def _skipped(path: str) -> bool:
    return any(part in SKIPPED_FOLDERS for part in path.split("/")[:-1])


def _pytest_config(root: Path, path: str) -> dict[str, object] | None:  # noqa: PLR0911
    """The pytest settings of one config file, or None when it holds none."""
    name = _name(path)
    text = _read(root / path)
    if text is None:
        return None
    if name in ("pytest.toml", ".pytest.toml", "pyproject.toml"):
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            return None
        if name == "pyproject.toml":
            tool = data.get("tool", {})
            section = tool.get("pytest", {}) if isinstance(tool, dict) else {}
            if isinstance(section, dict) and "ini_options" in section:
                section = section["ini_options"]
            return section if isinstance(section, dict) and section else None
        section = data.get("pytest", data)
        return section if isinstance(section, dict) else {}
    if name in ("pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg"):
        parser = configparser.RawConfigParser(strict=False, interpolation=None)
        try:
            parser.read_string(text)
        except configparser.Error:
            return None
        for section in ("pytest", "tool:pytest"):
            if parser.has_section(section):
                return dict(parser.items(section))
        return {} if name in PYTEST_FILES else None
    return None


def _pytest_folder(root: Path, files: list[str], tests: list[str]) -> str:
    """The folder pytest runs from: the shallowest one holding a pytest config file, when the
    root holds none and the Python tests live under it."""
    candidates = sorted(
        {
            str(PurePosixPath(f).parent)
            for f in files
            if _name(f) in (*PYTEST_FILES, "pyproject.toml", "tox.ini", "setup.cfg")
            and _pytest_config(root, f) is not None
        },
        key=lambda d: (d.count("/"), d),
    )
    python_tests = [t for t in tests if t.endswith(".py")]
    if not candidates:
        return _project_folder(files, python_tests)
    if candidates[0] == ".":
        return ""
    folder = candidates[0]
    if python_tests and all(t.startswith(folder + "/") for t in python_tests):
        return folder
    return ""


def _project_venv(root: Path, test_cwd: str) -> str:
    """The virtual environment the project keeps beside its tests (`backend/.venv`) or at its
    root, relative to the root; "" when there is none."""
    folders = [test_cwd] if test_cwd else []
    for folder in dict.fromkeys([*folders, ""]):
        for name in (".venv", "venv"):
            venv = f"{folder}/{name}" if folder else name
            if (root / venv / "pyvenv.cfg").is_file() and (root / venv / "bin" / "python").exists():
                return venv
    return ""


def _project_folder(files: list[str], python_tests: list[str]) -> str:
    """With no pytest configuration anywhere: the nearest Python project (a folder holding a
    pyproject.toml, setup.py or setup.cfg) that encloses every Python test, below the root. A
    `backend/` with its own pyproject.toml and `tests/` is run from there, as its own scripts
    do (`cd backend && pytest tests/`), so that its package imports."""
    if not python_tests:
        return ""
    projects = sorted(
        {
            str(PurePosixPath(f).parent)
            for f in files
            if _name(f) in ("pyproject.toml", "setup.py", "setup.cfg")
        },
        key=lambda d: (-d.count("/"), d),
    )
    for folder in projects:
        if folder != "." and all(t.startswith(folder + "/") for t in python_tests):
            return folder
    return ""


def _testpaths(root: Path, found: Survey) -> list[str]:
    folder = found.test_cwd
    for name in (*PYTEST_FILES, "pyproject.toml", "tox.ini", "setup.cfg"):
        path = f"{folder}/{name}" if folder else name
        if path not in found.files:
            continue
        settings = _pytest_config(root, path)
        if settings is None:
            continue
        raw = settings.get("testpaths", "")
        listed = raw if isinstance(raw, list) else []
        parts = raw.split() if isinstance(raw, str) else [str(p) for p in listed]
        prefix = f"{folder}/" if folder else ""
        return [prefix + p.strip("/") for p in parts if p and ".." not in p]
    return []


def _protected(root: Path, found: Survey) -> list[str]:
    """The defaults, plus globs for tests the defaults miss: `testpaths`, and test files
    outside every `tests/` folder (by their naming pattern, anywhere)."""
    from consort.adapters.scope import glob_match

    globs = list(DEFAULT_PROTECTED)
    if found.test_cwd:
        globs.append(f"{found.test_cwd}/pyproject.toml")
    globs += [f"{p}/**" for p in _testpaths(root, found)]
    loose = [t for t in found.test_files if not any(glob_match(g, t) for g in globs)]
    if any(PYTHON_TEST.match(_name(t)) for t in loose):
        globs += ["**/test_*.py", "**/*_test.py"]
    suffixes = sorted({_name(t).split(".", 1)[1] for t in loose if NODE_TEST.match(_name(t))})
    globs += [f"**/*.{s}" for s in suffixes]
    if found.build_tool == "go" or any(GO_TEST.match(_name(t)) for t in loose):
        globs += GO_PROTECTED
    if found.build_tool == "maven" or any(JVM_TEST.search(t) for t in loose):
        globs += MAVEN_PROTECTED
    if found.node_runner == "vitest":
        globs += ["**/vitest.config.*", "**/vite.config.*"]
    elif found.node_runner == "jest":
        globs += ["**/jest.config.*"]
    return list(dict.fromkeys(globs))


def _node_runner(root: Path, files: list[str]) -> str | None:
    if "package.json" not in files:
        return None
    try:
        package = json.loads(_read(root / "package.json") or "{}")
    except json.JSONDecodeError:
        return None
    deps: dict[str, object] = {}
    for key in ("dependencies", "devDependencies"):
        section = package.get(key, {})
        if isinstance(section, dict):
            deps.update(section)
    for runner in ("vitest", "jest"):
        if runner in deps:
            return runner
    return None


def _db_variables(root: Path, files: list[str]) -> list[str]:
    """The database variables the project's code, settings or tracked `.env` name."""
    seen: set[str] = set()
    for path in files:
        if is_test_file(path) or not (
            path.endswith((".py", ".ts", ".js")) or _name(path) == ".env"
        ):
            continue
        text = _read(root / path)
        if text:
            seen.update(_READ_VARIABLE.findall(text))
    return [name for name in DB_VARIABLES if name in seen]


def _read(path: Path) -> str | None:
    try:
        if path.stat().st_size > 1_000_000:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
