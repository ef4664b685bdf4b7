"""A dry look at a commit's suite, the way Consort runs it: migrate a throwaway child of a branch
database and ask the test runner what it would collect, without running a test.

Everything a real run uses is reused: the export of the commit from git objects, the child
(dropped however the probe ends), each command's folder and environment, and the sandbox as
configured. Nothing is recorded in the ledger: this is what `consort doctor` shows.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from consort.adapters.db.branching import BranchDatabases, Ephemeral, sessions_of
from consort.adapters.tdd.export import exported
from consort.adapters.tdd.invocation import plugin_options
from consort.adapters.tdd.runbox import run_sandbox
from consort.adapters.tdd.runenv import command_env, workdir
from consort.adapters.tdd.runner import migrate_unused, run_boxed, run_migrations
from consort.adapters.tdd.testconfig import runner_arguments
from consort.core.config import RunnerKind
from consort.core.project import Project

# Last, so the count line is pytest's `-q` one whatever verbosity the command asks for.
COLLECT_OPTIONS = ("--collect-only", "-p", "no:cacheprovider", "--verbosity=-1")
# Migration tools' bookkeeping tables, and how each tells its head.
_ALEMBIC = "alembic_version"
_COUNTED = ("knex_migrations", "schema_migrations")
_SUMMARY = re.compile(r"(\d+) tests? collected|no tests collected")
_ERRORS = re.compile(r"(\d+) errors?\b")


@dataclass(frozen=True)
class StepResult:
    """One command of the probe: whether it worked, and its one-line account."""

    ok: bool
    detail: str


@dataclass(frozen=True)
class SuiteProbe:
    database: str  # the throwaway child (dropped since)
    migrate: StepResult | None  # None: the project has no migrate command
    collect: StepResult | None  # None: the project has no test command


def probe_suite(
    project: Project, dbs: BranchDatabases, repo: Path, parent_database: str, commit: str
) -> SuiteProbe:
    """Migrate `commit` on a fresh child of `parent_database`, then collect its tests there."""
    config = project.config
    box = run_sandbox(project)
    with (
        exported(
            repo, commit, dependencies=config.test.dependencies, project_root=project.root
        ) as export,
        tempfile.TemporaryDirectory(prefix="consort-probe-") as private,
        dbs.ephemeral(parent_database) as child,
    ):
        tree = export.root
        migrated: StepResult | None = None
        if config.migrate.command:
            before = sessions_of(dbs.backend, child.database)
            result = run_migrations(box, config.migrate, tree, child.url)
            if result.returncode == 0 and sessions_of(dbs.backend, child.database) == before:
                migrated = StepResult(False, migrate_unused(child.database, stopped=False).detail)
            elif result.returncode == 0:
                head = migration_head(dbs, child)
                migrated = StepResult(True, f"migrated a throwaway child; {head}")
            else:
                migrated = StepResult(
                    False,
                    f"the migrate command exited {result.returncode} on a throwaway child: "
                    + last_line(result.output),
                )
        collected: StepResult | None = None
        if config.test.command:
            collected = _collect(project, tree, child, Path(private))
        return SuiteProbe(child.database, migrated, collected)


def _collect(project: Project, tree: Path, child: Ephemeral, private: Path) -> StepResult:
    section = project.config.test
    if section.runner is not RunnerKind.PYTEST:
        return StepResult(
            True,
            f"not counted: collecting without running is not available for runner "
            f"{section.runner.value!r}",
        )
    folder = workdir(tree, section)
    env = command_env(section, child.url)
    argv = [
        *section.command,
        *runner_arguments(folder, private / "pytest.ini"),
        *plugin_options(section.plugins),
        *COLLECT_OPTIONS,
    ]
    box = run_sandbox(project)
    with box.boxed(
        argv, database=child.url, workdir=folder, env=env, writable=[tree], read_only=[private]
    ) as boxed:
        result = run_boxed(boxed.argv, folder, env, section.timeout, sandboxed=box.sandboxed)
    return collect_result(result.returncode, result.output)


def collect_result(returncode: int | None, output: str) -> StepResult:
    """What `pytest --collect-only -q` said: its count, or the first collection error."""
    summary = _summary_line(output)
    errors = _ERRORS.search(summary) if summary else None
    if returncode in (0, 5) and summary is not None and errors is None:
        found = _SUMMARY.search(summary)
        count = int(found.group(1)) if found and found.group(1) else 0
        return StepResult(True, f"{count} test(s) collected")
    lines = output.splitlines()
    problem = next((line.strip() for line in lines if line.startswith("ERROR ")), "")
    # the first collection error's own reason, from pytest's "E   SyntaxError: ..." lines
    reason = next(
        (line[1:].strip() for line in lines if line.startswith("E ") and _ERROR_LINE.search(line)),
        "",
    )
    why = ": ".join(part for part in (problem, reason) if part) or last_line(output)
    if returncode is None:
        return StepResult(False, f"collecting did not finish: {why}")
    return StepResult(False, f"collecting exited {returncode}: {why}")


def _summary_line(output: str) -> str | None:
    for line in reversed(output.splitlines()):
        if _SUMMARY.search(line) or (" in " in line and _ERRORS.search(line)):
            return line
    return None


def migration_head(dbs: BranchDatabases, child: Ephemeral) -> str:
    """The head the migration tool recorded in `child`, where its bookkeeping table shows one."""
    from psycopg import sql

    with dbs.backend.admin(child.database) as conn:
        tables = conn.execute(
            "SELECT table_schema, table_name FROM information_schema.tables "
            "WHERE table_name = ANY(%s) ORDER BY table_schema",
            ([_ALEMBIC, *_COUNTED],),
        ).fetchall()
        for schema, name in tables:
            table = sql.Identifier(schema, name)
            if name == _ALEMBIC:
                rows = conn.execute(sql.SQL("SELECT version_num FROM {}").format(table)).fetchall()
                heads = ", ".join(str(row[0]) for row in rows) or "none"
                return f"alembic head {heads}"
            count = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(table)).fetchone()
            return f"{name}: {count[0] if count else 0} migration(s) applied"
    return "no alembic_version, knex_migrations or schema_migrations table to tell its head"


_ERROR_LINE = re.compile(r"\w(Error|Exception)\b|\berror:|^ERROR\b|^FAILED\b", re.IGNORECASE)


def last_line(output: str) -> str:
    """The line that says what went wrong: the last one naming an error, else the last one
    (a traceback's closing lines are often a hint or a link)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if not lines:
        return "no output"
    named = [line for line in lines if _ERROR_LINE.search(line)]
    return (named or lines)[-1][:300]
