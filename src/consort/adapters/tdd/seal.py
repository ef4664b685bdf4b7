"""The checks a candidate commit must pass, against its baseline, before it is run at all.

All of them read git objects only (never a checkout): what runs is the commit, so what is
checked is the commit.

* test configuration and tests frozen at the baseline (`testconfig`);
* Consort's own files unchanged: `consort.toml`, `.consort/**`, and Consort's `.gitignore`
  lines still there, whatever the project's protected list says;
* applied migrations immutable: every migration file of the baseline is still there, byte for
  byte (new ones may be added);
* production code that changed reaches into no test machinery (`smells.tamper`), read as Python
  reads it, and Python reads it as UTF-8 does (no `coding:` cookie that changes the text);
* no compiled code that changed: byte-code, native libraries and archives Python can import
  from run without being the source any rule read;
* no module that shadows the runner, the app server, the standard library, start-up or an
  installed distribution the test interpreter would otherwise import, and no distribution
  metadata (`*.egg-info/`, `*.dist-info/`) whose entry points the runner would load.
"""

from __future__ import annotations

import posixpath
from collections.abc import Collection, Mapping
from pathlib import Path

from consort.adapters.scope import glob_match
from consort.adapters.smells.syntax import python_source
from consort.adapters.smells.tamper import (
    allowed,
    data_file_violations,
    is_data_file,
    tamper_violations,
)
from consort.adapters.tdd.testconfig import config_changes, module_of_command, shadowing
from consort.adapters.vcs import TreeEntry, read_blobs
from consort.core.config import Config
from consort.core.layout import IGNORED, STATE_DIR
from consort.core.project import CONFIG_FILE
from consort.core.seal import SealRule, SealViolation

CONSORT_FILES = (CONFIG_FILE, f"{STATE_DIR}/**")
MIGRATION_GLOBS = (
    "migrations/versions/**",
    "alembic/versions/**",
    "**/migrations/versions/**",
    "**/alembic/versions/**",
)
PRODUCTION_SUFFIXES = (".py",)
# What Python (or a loader it is given) runs without reading a source: byte-code and native
# libraries by their names, archives by their content (a zip file imports under any name).
COMPILED_SUFFIXES = (".pyc", ".pyo", ".so", ".pyd", ".dylib", ".dll", ".egg", ".whl")
COMPILED_FOLDERS = ("__pycache__",)
ZIP_HEADERS = (b"PK\x03\x04", b"PK\x05\x06")
ZIP_END = b"PK\x05\x06"
ZIP_END_WINDOW = 65_557  # the end-of-archive record plus the longest comment it may carry
ELF_MAGIC = b"\x7fELF"
COMPILED_CAPABILITY = "compiled-code"  # its name in `[seal] allow`
METADATA_FOLDERS = (".egg-info", ".dist-info")
METADATA_CAPABILITY = "distribution-metadata"


def commands_of(config: Config) -> tuple[str, ...]:
    """Every argument of the commands Consort runs: a file of the tree named there (a
    `migrate.py`, a `run_tests.sh`) is as frozen as the test configuration."""
    named = []
    for section in (config.test, config.migrate, config.deploy):
        named += section.command
        # an argument is a path relative to the folder the command runs in
        named += [
            f"{section.cwd}/{part.removeprefix('./')}" for part in section.command if section.cwd
        ]
    return tuple(named)


def import_roots(config: Config) -> tuple[str, ...]:
    """The folders whose top-level modules the commands import first: the root, and each
    command's own folder."""
    return tuple(dict.fromkeys(("", config.test.cwd, config.migrate.cwd, config.deploy.cwd)))


def protected_globs(config: Config) -> tuple[str, ...]:
    """What no driver may change: the project's list, and Consort's own files always."""
    return (*config.build.protected, *CONSORT_FILES)


def candidate_violations(
    repo: Path,
    config: Config,
    candidate: Mapping[str, TreeEntry],
    baseline: Mapping[str, TreeEntry] | None,
    *,
    tests_may_change: bool = False,
    installed: Collection[str] = (),
    own_server: Collection[str] = (),
) -> list[SealViolation]:
    """Every seal rule the candidate tree breaks; `baseline` None checks the tree alone.
    `installed`: the candidate's top-level module names that the test interpreter would import
    from its own environment were the tree not first on its path. `own_server`: modules the
    deploy command runs that are the project's own (`python -m app.server`), not a server a
    tree file could stand in for."""
    server = module_of_command(config.deploy.command) if config.deploy.command else []
    server = [m for m in server if m not in own_server]
    found = shadowing(
        candidate,
        import_roots(config),
        (*module_of_command(config.test.command), *server),
        installed,
    )
    if baseline is None:
        return found
    if not tests_may_change:
        found += config_changes(
            repo, baseline, candidate, config.build.protected, commands_of(config)
        )
    found += consort_file_changes(repo, baseline, candidate)
    found += migration_changes(baseline, candidate)
    found += production_tampering(repo, config, baseline, candidate)
    found += compiled_code(repo, config, baseline, candidate)
    found += distribution_metadata(config, baseline, candidate)
    found += links_to_frozen_files(repo, config, baseline, candidate)
    # One violation per path and rule is enough feedback.
    unique = {(v.rule, v.path, v.line): v for v in found}
    return list(unique.values())


def consort_file_changes(
    repo: Path, baseline: Mapping[str, TreeEntry], candidate: Mapping[str, TreeEntry]
) -> list[SealViolation]:
    found = []
    for path in sorted(baseline.keys() | candidate.keys()):
        if not any(glob_match(g, path) for g in CONSORT_FILES):
            continue
        before, after = baseline.get(path), candidate.get(path)
        if (before and before.sha) != (after and after.sha):
            found.append(
                SealViolation(SealRule.CONSORT_FILE, path, "Consort's own files are no turn's")
            )
    before_ignore, after_ignore = baseline.get(".gitignore"), candidate.get(".gitignore")
    if after_ignore != before_ignore and before_ignore is not None:
        blobs = read_blobs(repo, [e.sha for e in (before_ignore, after_ignore) if e])
        had = _lines(blobs.get(before_ignore.sha, b""))
        has = _lines(blobs.get(after_ignore.sha, b"")) if after_ignore else set()
        lost = sorted(line for line in (".env", *IGNORED) if line in had and line not in has)
        if lost:
            found.append(
                SealViolation(
                    SealRule.CONSORT_FILE,
                    ".gitignore",
                    f"Consort's .gitignore lines were removed: {', '.join(lost)}",
                )
            )
    return found


def _lines(data: bytes) -> set[str]:
    return {line.strip() for line in data.decode("utf-8", errors="replace").splitlines()}


def migration_changes(
    baseline: Mapping[str, TreeEntry], candidate: Mapping[str, TreeEntry]
) -> list[SealViolation]:
    """Applied migrations (every migration file of the baseline) may not change or vanish."""
    found = []
    for path, entry in sorted(baseline.items()):
        if not any(glob_match(g, path) for g in MIGRATION_GLOBS) or path.endswith("/.gitkeep"):
            continue
        after = candidate.get(path)
        if after is None or after.sha != entry.sha:
            state = "deleted" if after is None else "changed"
            found.append(
                SealViolation(
                    SealRule.MIGRATION_CHANGED,
                    path,
                    f"an applied migration was {state}; add a new migration instead",
                )
            )
    return found


def production_tampering(
    repo: Path,
    config: Config,
    baseline: Mapping[str, TreeEntry],
    candidate: Mapping[str, TreeEntry],
) -> list[SealViolation]:
    protected = protected_globs(config)
    changed = [
        path
        for path, entry in candidate.items()
        if (path.endswith(PRODUCTION_SUFFIXES) or is_data_file(path))
        and not any(glob_match(g, path) for g in protected)
        and (baseline.get(path) is None or baseline[path].sha != entry.sha)
    ]
    if not changed:
        return []
    shas = [candidate[p].sha for p in changed] + [baseline[p].sha for p in changed if p in baseline]
    blobs = read_blobs(repo, shas)
    found = []
    for path in changed:
        if not path.endswith(PRODUCTION_SUFFIXES):
            found += _data_file_tampering(path, blobs, baseline, candidate, config)
            continue
        text, encoding = python_source(blobs[candidate[path].sha])
        if encoding is not None:
            found.append(
                SealViolation(
                    SealRule.SOURCE_ENCODING,
                    path,
                    f"it declares the encoding {encoding}, in which Python reads other code than "
                    "a reader of UTF-8 sees; save it as UTF-8 without the coding line",
                )
            )
        before = baseline.get(path)
        base_text = python_source(blobs[before.sha])[0] if before else None
        found += tamper_violations(path, text, base_text, config.seal.allow)
    return found


def _data_file_tampering(
    path: str,
    blobs: Mapping[str, bytes],
    baseline: Mapping[str, TreeEntry],
    candidate: Mapping[str, TreeEntry],
    config: Config,
) -> list[SealViolation]:
    """A data file's SQL, judged like a string in the code (`data_file_violations`)."""
    try:
        text = blobs[candidate[path].sha].decode("utf-8")
    except UnicodeDecodeError:
        return []  # not text: nothing a query is read from as written
    before = baseline.get(path)
    base_text = blobs[before.sha].decode("utf-8", errors="replace") if before else None
    return data_file_violations(path, text, base_text, config.seal.allow)


def compiled_code(
    repo: Path,
    config: Config,
    baseline: Mapping[str, TreeEntry],
    candidate: Mapping[str, TreeEntry],
) -> list[SealViolation]:
    """Changed files that Python would run without a source any rule read: byte-code (an
    unchecked-hash `.pyc` is loaded whatever its source says), native libraries, and archives
    (zip, egg, wheel: put on `sys.path`, their modules import unread)."""
    changed = {
        path: entry
        for path, entry in candidate.items()
        if not entry.is_link
        and not entry.is_gitlink
        and (baseline.get(path) is None or baseline[path].sha != entry.sha)
        and not allowed(COMPILED_CAPABILITY, path, config.seal.allow)
    }
    found = []
    by_name = {p for p in changed if _compiled_by_name(p)}
    blobs = read_blobs(repo, [e.sha for p, e in changed.items() if p not in by_name])
    for path in sorted(changed):
        what = "compiled" if path in by_name else _compiled_content(blobs.get(changed[path].sha))
        if what:
            found.append(
                SealViolation(
                    SealRule.COMPILED_CODE,
                    path,
                    f"{what} code runs without being the source Consort checks; commit the "
                    "source (a person can allow it in consort.toml: "
                    f'seal.allow = ["{COMPILED_CAPABILITY}:{path}"])',
                )
            )
    return found


def distribution_metadata(
    config: Config, baseline: Mapping[str, TreeEntry], candidate: Mapping[str, TreeEntry]
) -> list[SealViolation]:
    """Changed files of an installed distribution's metadata (`*.egg-info/`, `*.dist-info/`,
    `*.egg-link`): `importlib.metadata` finds such a folder in any directory on `sys.path` (the
    export's root is one), and pytest loads every `pytest11` entry point it declares as a plugin
    of the run, a module no shadowing rule sees because it is named like nothing installed."""
    found = []
    reported: set[str] = set()
    for path, entry in sorted(candidate.items()):
        before = baseline.get(path)
        if before is not None and before.sha == entry.sha:
            continue
        parts = path.split("/")
        folder = next((n for n, p in enumerate(parts[:-1]) if p.endswith(METADATA_FOLDERS)), None)
        where = "/".join(parts[: folder + 1]) if folder is not None else path
        glob = f"{where}/**" if folder is not None else where
        if (
            (folder is None and not path.endswith(".egg-link"))
            or where in reported
            or allowed(METADATA_CAPABILITY, path, config.seal.allow)
        ):
            continue
        reported.add(where)  # one violation for a metadata folder
        found.append(
            SealViolation(
                SealRule.SHADOWING_MODULE,
                where,
                "a distribution's metadata in the tree: Python finds it on sys.path as an "
                "installed package, and the test runner loads the plugins its entry points "
                "name; remove it and ignore it (`*.egg-info/` in .gitignore: `pip install` writes "
                "it into the tree), or a person allows it in consort.toml: "
                f'seal.allow = ["{METADATA_CAPABILITY}:{glob}"]',
            )
        )
    return found


def _compiled_by_name(path: str) -> bool:
    parts = path.split("/")
    return any(p in COMPILED_FOLDERS for p in parts[:-1]) or parts[-1].endswith(COMPILED_SUFFIXES)


def _compiled_content(data: bytes | None) -> str | None:
    if not data:
        return None
    if data.startswith(ZIP_HEADERS) or ZIP_END in data[-ZIP_END_WINDOW:]:
        return "an archive's"
    if data.startswith(ELF_MAGIC):
        return "native"
    return None


def links_to_frozen_files(
    repo: Path,
    config: Config,
    baseline: Mapping[str, TreeEntry],
    candidate: Mapping[str, TreeEntry],
) -> list[SealViolation]:
    """A new or changed link outside the frozen files that leads to one (a test, a test
    configuration source, a file the project protects), or to a folder that holds one: code
    that reads `app/expected.md` reads the test, and the answer its `assert answer() == 42`
    expects, under a name no rule reads. (The link's text is read, then the links it goes
    through; one leading outside the tree is the export's to refuse.)"""
    from consort.adapters.tdd.testconfig import frozen_paths

    frozen = frozen_paths(sorted(candidate), protected_globs(config), commands_of(config))
    links = {p: e for p, e in candidate.items() if e.is_link}
    changed = [
        p
        for p, e in links.items()
        if p not in frozen and (baseline.get(p) is None or baseline[p].sha != e.sha)
    ]
    if not changed:
        return []
    blobs = read_blobs(repo, [e.sha for e in links.values()])
    texts = {p: blobs[e.sha].decode("utf-8", errors="replace") for p, e in links.items()}
    found = []
    for path in sorted(changed):
        target = _follow(path, texts)
        if target is None:
            continue
        if target == "" or target in frozen or any(f.startswith(f"{target}/") for f in frozen):
            found.append(
                SealViolation(
                    SealRule.SYMLINK_ESCAPES,
                    path,
                    f"the symlink leads to the tests or a file they are frozen with "
                    f"({target or '.'}): code that reads it reads the tests and the answers "
                    "they expect; read the file by its own path, or copy what the code needs",
                )
            )
    return found


def _follow(path: str, texts: Mapping[str, str]) -> str | None:
    """Where the link at `path` leads in the tree, through the tree's other links (in the
    folders on the way too); None when it leads out of the tree or round in circles."""
    current = path
    for _ in range(40):
        parts = current.split("/")
        # the longest leading part of the path that is a link: the path itself, or a folder
        link = next((n for n in range(len(parts), 0, -1) if "/".join(parts[:n]) in texts), None)
        if link is None:
            return current
        head = "/".join(parts[:link])
        if texts[head].startswith("/"):
            return None
        current = posixpath.normpath(
            posixpath.join(posixpath.dirname(head), texts[head], *parts[link:])
        )
        if current == ".":
            return ""
        if current == ".." or current.startswith("../"):
            return None
    return None


def merge_violations(
    config: Config,
    story: Mapping[str, TreeEntry],
    target: Mapping[str, TreeEntry],
    merged: Mapping[str, TreeEntry],
) -> list[SealViolation]:
    """A merge may not make tests, test configuration or Consort's files that neither side had,
    nor change the target's applied migrations."""
    from consort.adapters.tdd.testconfig import frozen_paths

    paths = sorted(story.keys() | target.keys() | merged.keys())
    frozen = frozen_paths(paths, protected_globs(config), commands_of(config))
    found = []
    for path in sorted(frozen):
        got = merged.get(path)
        sides = {e.sha if e else None for e in (story.get(path), target.get(path))}
        if (got.sha if got else None) not in sides:
            found.append(
                SealViolation(
                    SealRule.MERGE_CHANGED_PROTECTED,
                    path,
                    "the merge holds a version of this protected file that neither side had",
                )
            )
    return found + migration_changes(target, merged)
