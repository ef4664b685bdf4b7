"""Consort's own test run: migrate and test a commit on a throwaway child of a branch database.

The child is created just before and dropped just after, however the run ends. pytest writes its
JUnit XML report into `.consort/runs/<run>/`, outside the working tree, where only Consort looks.
The test process gets a minimal environment: the child's DATABASE_URL and nothing of Consort's.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from consort.adapters import proc
from consort.adapters.db.branching import BranchDatabases, Ephemeral
from consort.adapters.tdd.junit import JUnitReport, ReportMissing, parse_report
from consort.core.errors import ConsortError
from consort.core.fsutil import atomic_write_text, file_lock
from consort.core.ledger.events import RunRecord
from consort.core.project import Project

REPORT_FILE = "junit.xml"
TEST_TIMEOUT_S = 900.0
MIGRATE_TIMEOUT_S = 300.0
OUTPUT_TAIL = 4000
PASS_THROUGH = ("PATH", "HOME", "LANG", "TERM", "TMPDIR", "VIRTUAL_ENV")


@dataclass(frozen=True)
class RunEvidence:
    """What a run proved, as recorded in the ledger."""

    run: str  # the run folder's name
    commit: str
    parent_database: str
    database: str  # the ephemeral child it ran on (dropped since)
    migrate_exit: int | None
    exit_code: int | None  # the test process's; None when it never ran or was killed
    timed_out: bool
    report_sha256: str | None
    counts: dict[str, int]
    passing: tuple[str, ...]
    tests: tuple[str, ...]
    test_seconds: float
    overhead_seconds: float  # Consort's own share: branching, report parsing, bookkeeping
    output_tail: str = ""
    problems: tuple[str, ...] = field(default=())
    migrate_seconds: float = 0.0  # the project's migrate command: not Consort's overhead

    def as_record(self) -> RunRecord:
        """The run as the ledger records it."""
        return RunRecord(**self.as_data())

    def as_data(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "commit": self.commit,
            "parent_database": self.parent_database,
            "database": self.database,
            "migrate_exit": self.migrate_exit,
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
            "report_sha256": self.report_sha256,
            "counts": self.counts,
            "passing": list(self.passing),
            "tests": list(self.tests),
            "test_seconds": round(self.test_seconds, 3),
            "overhead_seconds": round(self.overhead_seconds, 3),
            "migrate_seconds": round(self.migrate_seconds, 3),
        }


def runs_dir(project: Project) -> Path:
    return project.layout.runs


def allocate_run(project: Project, label: str) -> Path:
    root = runs_dir(project)
    root.mkdir(parents=True, exist_ok=True)
    with file_lock(root / ".lock"):
        numbers = [int(p.name[:4]) for p in root.iterdir() if p.name[:4].isdigit()]
        path = root / f"{max(numbers, default=0) + 1:04d}-{label}"
        path.mkdir()
    return path


def test_env(database_url: str) -> dict[str, str]:
    env = {name: os.environ[name] for name in PASS_THROUGH if name in os.environ}
    env.setdefault("PATH", os.defpath)
    env["DATABASE_URL"] = database_url
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # keep the working tree exactly as committed
    return env


def run_suite(
    project: Project,
    dbs: BranchDatabases,
    worktree: Path,
    parent_database: str,
    commit: str,
    *,
    label: str,
    then: Callable[[Ephemeral], None] | None = None,
) -> tuple[RunEvidence, JUnitReport | None]:
    """Migrate and test `worktree` (at `commit`) on a fresh child of `parent_database`.

    `then`, when given, runs after the tests while the child still exists (the deploy lane
    starts the app against it there).
    """
    started = time.monotonic()
    run_dir = allocate_run(project, label)
    report_path = run_dir / REPORT_FILE
    migrate_exit: int | None = None
    exit_code: int | None = None
    timed_out = False
    test_seconds = 0.0
    migrate_seconds = 0.0
    tail = ""
    with dbs.ephemeral(parent_database) as child:
        env = test_env(child.url)
        migrate = project.config.migrate.command
        if migrate:
            migrate_started = time.monotonic()
            result = _run(migrate, worktree, env, MIGRATE_TIMEOUT_S, run_dir / "migrate")
            migrate_seconds = time.monotonic() - migrate_started
            migrate_exit = result.returncode
            if not result.ok:
                tail = (result.stdout + result.stderr)[-OUTPUT_TAIL:]
        if migrate_exit in (None, 0):
            argv = [
                *project.config.test.command,
                f"--junitxml={report_path}",
                "-o",
                "junit_family=xunit1",
                "-p",
                "no:cacheprovider",
                # A test module that cannot be imported must not stop the others from running.
                "--continue-on-collection-errors",
            ]
            test_started = time.monotonic()
            result = _run(argv, worktree, env, TEST_TIMEOUT_S, run_dir / "tests")
            test_seconds = time.monotonic() - test_started
            timed_out = result.returncode == -1
            exit_code = None if timed_out else result.returncode
            tail = (result.stdout + result.stderr)[-OUTPUT_TAIL:]
            if then is not None:
                then(child)
        database = child.database
    report: JUnitReport | None = None
    problems: list[str] = []
    if migrate_exit not in (None, 0):
        problems.append(f"the migrate command exited {migrate_exit}")
    elif timed_out:
        problems.append(f"the test process ran past {TEST_TIMEOUT_S:.0f} s and was stopped")
    else:
        try:
            report = parse_report(report_path)
        except ReportMissing as exc:
            last = tail.strip().splitlines()[-1] if tail.strip() else "no output"
            problems.append(
                f"{exc.message}: the test process (exit {exit_code}) did not finish on its own: "
                + last[:300]
            )
    evidence = RunEvidence(
        run=run_dir.name,
        commit=commit,
        parent_database=parent_database,
        database=database,
        migrate_exit=migrate_exit,
        exit_code=exit_code,
        timed_out=timed_out,
        report_sha256=report.sha256 if report else None,
        counts=report.counts() if report else {},
        passing=tuple(sorted(report.passed())) if report else (),
        tests=tuple(sorted(report.cases)) if report else (),
        test_seconds=test_seconds,
        overhead_seconds=time.monotonic() - started - test_seconds - migrate_seconds,
        migrate_seconds=migrate_seconds,
        output_tail=tail,
        problems=tuple(problems),
    )
    atomic_write_text(run_dir / "output.txt", tail)
    return evidence, report


def _run(
    argv: list[str], cwd: Path, env: dict[str, str], timeout: float, log_prefix: Path
) -> proc.Completed:
    try:
        result = proc.run(argv, cwd=cwd, env=env, timeout=timeout, check=False)
    except proc.CommandFailed as exc:  # timed out
        result = exc.result
    except ConsortError as exc:  # the program does not exist
        result = proc.Completed(tuple(argv), 127, "", exc.message)
    atomic_write_text(log_prefix.with_suffix(".out"), result.stdout + result.stderr)
    return result


def migrate(project: Project, cwd: Path, url: str, where: str) -> None:
    """Run the project's migrate command against `url` (a branch's own login)."""
    command = project.config.migrate.command
    if not command:
        return
    result = proc.run(command, cwd=cwd, env=test_env(url), check=False, timeout=MIGRATE_TIMEOUT_S)
    if not result.ok:
        raise ConsortError(
            f"the migrations failed on {where}: " + (result.stderr or result.stdout).strip()[-500:]
        )
