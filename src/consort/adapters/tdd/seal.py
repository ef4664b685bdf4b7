"""The checks a candidate commit must pass, against its baseline, before it is run at all.

All of them read git objects only (never a checkout): what runs is the commit, so what is
checked is the commit.

* test configuration and tests frozen at the baseline (`testconfig`);
* Consort's own files unchanged: `consort.toml`, `.consort/**`, and Consort's `.gitignore`
  lines still there, whatever the project's protected list says;
* applied migrations immutable: every migration file of the baseline is still there, byte for
  byte (new ones may be added);
* production code that changed reaches into no test machinery (`smells.tamper`);
* no module that shadows the runner, the app server, the standard library or start-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from consort.adapters.scope import glob_match
from consort.adapters.smells.tamper import tamper_violations
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
) -> list[SealViolation]:
    """Every seal rule the candidate tree breaks; `baseline` None checks the tree alone."""
    server = module_of_command(config.deploy.command) if config.deploy.command else []
    found = shadowing(
        candidate, import_roots(config), (*module_of_command(config.test.command), *server)
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
        if path.endswith(PRODUCTION_SUFFIXES)
        and not any(glob_match(g, path) for g in protected)
        and (baseline.get(path) is None or baseline[path].sha != entry.sha)
    ]
    if not changed:
        return []
    shas = [candidate[p].sha for p in changed] + [baseline[p].sha for p in changed if p in baseline]
    blobs = read_blobs(repo, shas)
    found = []
    for path in changed:
        text = blobs[candidate[path].sha].decode("utf-8", errors="replace")
        before = baseline.get(path)
        base_text = blobs[before.sha].decode("utf-8", errors="replace") if before else None
        found += tamper_violations(path, text, base_text, config.seal.allow)
    return found


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
