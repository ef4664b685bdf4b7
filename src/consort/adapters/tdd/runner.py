"""Consort's own test run: migrate and test a commit on a throwaway child of a branch database.

The child is created just before and dropped just after, however the run ends. The run is sealed:
it executes an export of the commit made from git objects (`export`), after the seal rules held
(`seal`), with the pytest configuration Consort chose (`testconfig`), Consort's canaries
(`canary`), in a session of its own whose every process ends with it, writing its JUnit report
into a pipe that only Consort reads (kept in `.consort/runs/<run>/`). Afterwards the server's
statistics must show that the suite connected to the child it was given. The test process gets a
minimal environment: the child's DATABASE_URL and nothing of Consort's; no PYTEST_* variable.
"""

from __future__ import annotations

import contextlib
import hashlib
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, overload

from consort.adapters import proc
from consort.adapters.db.branching import BranchDatabases, Ephemeral, sessions_of
from consort.adapters.db.extensions import fix_for, missing_in_output
from consort.adapters.db.liveness import ServerWatch
from consort.adapters.db.login_guard import LoginGuard
from consort.adapters.db.migration_trace import (
    CatalogValues,
    DefaultState,
    SequenceState,
    catalog_values,
    code_objects,
    column_defaults,
    history_rows,
    large_objects,
    sequence_values,
    settle,
    table_writes,
)
from consort.adapters.sandbox.gate import Refusal
from consort.adapters.smells.tamper import is_migration
from consort.adapters.tdd.alongside import HeldProcess
from consort.adapters.tdd.canary import check_canaries, fresh_canaries
from consort.adapters.tdd.export import Export, exported
from consort.adapters.tdd.installed import installed_among, project_modules
from consort.adapters.tdd.invocation import TestInvocation, test_invocation
from consort.adapters.tdd.junit import JUnitReport, Outcome, ReportMissing, parse_report_bytes
from consort.adapters.tdd.migrated import (
    MigratedRecord,
    export_reader,
    migration_inputs,
    revisions,
)
from consort.adapters.tdd.migration_rules import (
    HISTORY_TABLES,
    LARGE_OBJECTS_TABLE,
    alembic_revisions,
    catalog_violations,
    code_violations,
    declared_defaults,
    declared_seeds,
    declared_values,
    default_violations,
    history_violations,
    missing_seed_rows,
    row_violations,
    sequence_violations,
)
from consort.adapters.tdd.runbox import BoxedRun, RunSandbox, run_sandbox
from consort.adapters.tdd.runenv import DbParts, base_env, command_env, workdir
from consort.adapters.tdd.seal import candidate_violations, import_roots
from consort.adapters.tdd.testconfig import module_of_command, top_modules
from consort.adapters.vcs import TreeEntry, tree_entries
from consort.core.config import MigrateSection, RunnerKind
from consort.core.crashpoint import crash_point
from consort.core.errors import ConsortError, ExitCode, UsageError
from consort.core.fsutil import atomic_write_bytes, file_lock, replace_text
from consort.core.ledger.events import RunRecord
from consort.core.project import Project
from consort.core.seal import SealRule, SealViolation

REPORT_FILE = "junit.xml"


@dataclass(frozen=True)
class DatabaseState:
    """What a child holds besides rows, before and after its migrations (`migration_trace`)."""

    code: frozenset[tuple[str, str]] = frozenset()
    sequences: Mapping[str, SequenceState] = field(default_factory=dict)
    defaults: Mapping[str, DefaultState] = field(default_factory=dict)
    large_objects: int = 0
    catalog: CatalogValues = field(default_factory=CatalogValues)

    @classmethod
    def read(cls, conn: Any) -> DatabaseState:
        return cls(
            frozenset(code_objects(conn)),
            sequence_values(conn),
            column_defaults(conn),
            large_objects(conn),
            catalog_values(conn),
        )


# What a candidate's migrations may have found left by the baseline's own, replayed.
REPLAYABLE = frozenset(
    {
        SealRule.MIGRATION_ROWS,
        SealRule.MIGRATION_CODE,
        SealRule.MIGRATION_DEFAULT,
        SealRule.MIGRATION_CATALOG,
    }
)
# What a child holds after the baseline's migrations, and the rows they wrote.
_Replayed = tuple[DatabaseState, dict[str, int]]
MIGRATE_TIMEOUT_S = 300.0
# How long a process started before its turn (`alongside`) may wait for it, beyond its own
# timeout: the child's copy, and the migrations before a suite.
HOLD_LIMIT_S = 2 * MIGRATE_TIMEOUT_S
OUTPUT_GRACE_S = 2.0  # how long output held open by a leftover process may delay a run
OUTPUT_TAIL = 4000


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
    violations: tuple[SealViolation, ...] = field(default=())
    canaries: dict[str, Any] | None = None  # the canaries' outcomes
    sessions: int = -1  # sessions the suite opened on its child (-1: not measured)
    runner: RunnerKind = RunnerKind.PYTEST  # whose JUnit dialect the report is in
    id_prefix: str = ""  # the runner's folder in the repository, prefixed to every test id
    # Why the run's database went away while the server stayed up (not recorded: the run is
    # repeated, as after a lost server); empty when it did not.
    database_lost: str = ""

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
            "sealed": True,
            "canaries": self.canaries,
            "sessions": self.sessions,
            "violations": [v.as_data() for v in self.violations],
            "runner": self.runner.value,
            "id_prefix": self.id_prefix,
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
    """The environment every command of a run starts from (see `runenv`)."""
    return base_env(database_url)


@dataclass(frozen=True)
class ServerLoss:
    """The database server went away during a run (see `liveness`)."""

    run: str  # the run's folder name (or its label, when it never got one)
    reason: str


# Called when a run lost its server: True to start the server again and repeat the run; False
# when the restarts allowed are used up.
ServerLossHook = Callable[[ServerLoss], bool]
MAX_SERVER_RESTARTS = 2


def bounded_restarts(limit: int = MAX_SERVER_RESTARTS) -> ServerLossHook:
    """Allow `limit` restarts to the runs of one call (callers with a ledger count there)."""
    used = [0]

    def allow(_loss: ServerLoss) -> bool:
        used[0] += 1
        return used[0] <= limit

    return allow


class ServerLost(ConsortError):
    pass


def run_suite(
    project: Project,
    dbs: BranchDatabases,
    repo: Path,
    parent_database: str,
    commit: str,
    *,
    label: str,
    baseline: str | None = None,
    tests_may_change: bool = False,
    then: Callable[[Ephemeral, Path], None] | None = None,
    on_server_lost: ServerLossHook | None = None,
) -> tuple[RunEvidence, JUnitReport | None]:
    """Migrate and test `commit` (read from `repo`'s objects) on a fresh child of
    `parent_database`, sealed.

    The commit is exported into a private folder; with a `baseline` commit (RED for GREEN and
    REFACTOR, the story head before RED), the seal rules compare the two first, and a commit
    that breaks one is not run at all (at RED, `tests_may_change`: the navigator writes them).
    `then`, when given, runs after the tests while the child and the export still exist (the
    deploy lane starts the app there).

    A run that failed while the database server went away (`liveness`: Consort's own check of
    the server, not the run's output) is repeated on the restarted server as long as
    `on_server_lost` allows; once it does not, the loss is one of the run's problems.
    """
    allow = on_server_lost or bounded_restarts()
    while True:
        with ServerWatch(dbs.backend) as watch:
            try:
                evidence, report = _run_once(
                    project,
                    dbs,
                    repo,
                    parent_database,
                    commit,
                    label=label,
                    baseline=baseline,
                    tests_may_change=tests_may_change,
                    then=then,
                )
            except Exception as exc:
                reason = watch.loss()
                if reason is None:
                    raise
                if not allow(ServerLoss(label, reason)):
                    raise ServerLost(
                        f"the run {label} lost the database server again ({reason}): {exc}",
                        fix="see the server's log (`consort db status`), then `consort drive`",
                    ) from exc
            else:
                # Asked after every run, passing or not: what failed is the run's output to
                # tell, and that output is the code under test's to write.
                reason = watch.loss() or evidence.database_lost or None
                if reason is None:
                    return evidence, report
                if not allow(ServerLoss(evidence.run, reason)):
                    lost = (
                        f"{reason} during this run, and the restarts allowed for this step are "
                        "used up: the failure counts"
                    )
                    return replace(evidence, problems=(*evidence.problems, lost)), report
        dbs.backend.ensure_running()
        # the lost run's child, and children still being dropped as the server went away
        dbs.drop_left_behind()


def _run_once(
    project: Project,
    dbs: BranchDatabases,
    repo: Path,
    parent_database: str,
    commit: str,
    *,
    label: str,
    baseline: str | None,
    tests_may_change: bool,
    then: Callable[[Ephemeral, Path], None] | None,
) -> tuple[RunEvidence, JUnitReport | None]:
    started = time.monotonic()
    run_dir = allocate_run(project, label)
    # A candidate's migrations are the agent's: what they leave in the child besides schema is
    # read back (a baseline's were accepted before).
    sealed = SealedRun(project, dbs, run_dir, reads_migrations=baseline is not None)
    with exported(
        repo,
        commit,
        dependencies=project.config.test.dependencies,
        project_root=project.root,
    ) as export:
        violations = list(export.violations)
        config = project.config
        installed = installed_among(
            config.test.command,
            top_modules(export.entries, import_roots(config)),
            project.root,
            python=config.test.runner is RunnerKind.PYTEST,
            cwd=project.root / config.test.cwd,
        )
        deploy = config.deploy.command
        violations += candidate_violations(
            repo,
            project.config,
            export.entries,
            tree_entries(repo, baseline) if baseline else None,
            tests_may_change=tests_may_change,
            installed=installed,
            own_server=project_modules(
                deploy, module_of_command(deploy), project.root, project.root / config.deploy.cwd
            ),
        )
        sealed.frozen = frozen_files(project, export.entries)
        sealed.inputs = migration_inputs(config.migrate, export.entries, export_reader(export.root))
        if not violations:
            sealed.execute(
                export.root,
                parent_database,
                then,
                paths=export.entries,
                baseline=_exporter(project, repo, baseline) if baseline is not None else None,
            )
    return sealed.evidence(commit, parent_database, violations, started)


def _exporter(
    project: Project, repo: Path, commit: str
) -> Callable[[], contextlib.AbstractContextManager[Export]]:
    """Opens an export of `commit` when called: the baseline's, only where a run needs it."""

    def export() -> contextlib.AbstractContextManager[Export]:
        return exported(
            repo, commit, dependencies=project.config.test.dependencies, project_root=project.root
        )

    return export


class SealedRun:
    """One run's migrate and test processes in an export, and what they showed."""

    def __init__(
        self, project: Project, dbs: BranchDatabases, run_dir: Path, *, reads_migrations: bool
    ):
        self.project = project
        self.dbs = dbs
        self.run_dir = run_dir
        self.canaries = fresh_canaries()
        self.migrate_exit: int | None = None
        self.exit_code: int | None = None
        self.timed_out = False
        self.test_seconds = 0.0
        self.migrate_seconds = 0.0
        self.tail = ""
        self.report_bytes = b""
        self.database = ""
        self.sessions = -1  # sessions the suite opened on its child; -1: not measured
        # the child's session count as its test process started (None: counted at its release)
        self.sessions_before: int | None = None
        # the migrate command exited 0 without one session on its child: the suite is not run
        self.migrate_unused = False
        # broken while it ran: a process that escaped, what the migrations left in the child
        self.run_violations: list[SealViolation] = []
        self.reads_migrations = reads_migrations
        self.box = run_sandbox(project)
        # the export's tests and test configuration (path -> blob): read-only to the run
        self.frozen: dict[str, str] = {}
        self.invocation: TestInvocation | None = None
        self.report_problem = ""  # why a junit runner's report could not be read
        self.canary_file = ""  # where a junit runner's canary file was written, if one was
        self.sources: tuple[str, ...] = ()  # the export's files (repository paths)
        self.database_lost = ""  # why the child went away during the run, if it did
        # the digest of what the export's migrations are read from (`migrated`); None: unknown
        self.inputs: str | None = None

    def execute(
        self,
        tree: Path,
        parent_database: str,
        then: Callable[[Ephemeral, Path], None] | None,
        *,
        paths: Iterable[str] = (),
        baseline: Callable[[], contextlib.AbstractContextManager[Export]] | None = None,
    ) -> None:
        """Migrate and test the export `tree`, whose files are `paths` (repository paths).

        `baseline` exports the commit the candidate is judged against. Where the candidate's
        migrations left rows, code or defaults the seal refuses, part of that may be the
        baseline's own accepted migrations replayed on a branch database that was never
        migrated (an adopted project's seed rows): the run then starts again on a fresh
        child, migrated by the baseline's export first, and judges only what the candidate's
        migrations added on top; its tests run on that child."""
        self.sources = tuple(paths)
        with tempfile.TemporaryDirectory(prefix="consort-seal-") as private:
            found = self._on_first_child(
                tree, parent_database, Path(private), paths, then, replays=baseline is not None
            )
            if found is None or baseline is None:
                return
            with baseline() as base, self.dbs.ephemeral(parent_database) as child:
                replayed = self._migrate_baseline(child, base.root)
                again = self._migrate_candidate(child, tree, replayed)
                if again is None:
                    return
                # the baseline's migrations failing here leaves nothing to tell apart
                self.run_violations += again if replayed is not None else found
                if not self.migrate_unused:
                    # the suite stopped on the first child had this run's canaries, and the
                    # export is the same folder: what it could leave there must not forge them
                    self.canaries = fresh_canaries()
                    suite = self._start_tests(child, tree, Path(private), paths)
                    self._finish_tests(suite, child, tree, then)

    def _on_first_child(
        self,
        tree: Path,
        parent_database: str,
        private: Path,
        paths: Iterable[str],
        then: Callable[[Ephemeral, Path], None] | None,
        *,
        replays: bool,
    ) -> list[SealViolation] | None:
        """The run on a fresh child of `parent_database`: None when it ended there, or, where
        it `replays` a baseline and the candidate's migrations left something the baseline's
        own may explain, what they left, and the run starts again (`execute`)."""
        planned = self.dbs.planned_ephemeral(parent_database)
        with contextlib.ExitStack() as early:
            # The suite starts before its child is made, beside the migrations, held back from
            # the child until they are judged (`alongside`): its imports overlap both. It is
            # stopped unread if its turn never comes, and always before its child is dropped.
            suite = self._start_tests(planned, tree, private, paths, alongside=True)
            if suite is not None:
                early.callback(suite.cancel)
            migrations = self._start_migrations(planned, tree, parent_database)
            if migrations is not None:
                early.callback(migrations.cancel)
            with self.dbs.ephemeral(parent_database, planned=planned) as child:
                try:
                    found = self._migrate_candidate(child, tree, started=migrations)
                    if found is None:
                        return None
                    if replays and any(v.rule in REPLAYABLE for v in found):
                        return found
                    self.run_violations += found
                    if not self.migrate_unused:
                        if suite is None:
                            suite = self._start_tests(child, tree, private, paths)
                        self._finish_tests(suite, child, tree, then)
                    return None
                finally:
                    early.close()

    def _start_migrations(
        self, planned: Ephemeral, tree: Path, parent_database: str
    ) -> HeldProcess | None:
        """The migrate command of `tree` started before the `planned` child is made, held back
        from it until `_migrate_candidate`; None where it is not started early: no command,
        the parent's record says the child will need none (`_parent_names_inputs`), or no
        gate to hold its connections."""
        config = self.project.config
        if not config.migrate.command or self._parent_names_inputs(parent_database):
            return None
        return start_migrations(
            self.box, config.migrate, tree, planned.url, read_only=self._frozen_in(tree)
        )

    def _parent_names_inputs(self, parent_database: str) -> bool:
        """Whether the parent's record of what Consort migrated it with names this export's
        migration inputs: its child will then likely need no migrate process, which
        `_applies_nothing` decides on the child itself."""
        info = self.dbs.get(parent_database)
        return self._names_inputs(MigratedRecord.from_data(info.migrated if info else None))

    def _names_inputs(self, record: MigratedRecord | None) -> bool:
        """Whether `record` was made with this export's migration inputs."""
        return record is not None and self.inputs is not None and record.inputs == self.inputs

    def _migrate_candidate(
        self,
        child: Ephemeral,
        tree: Path,
        after: tuple[DatabaseState, dict[str, int]] | None = None,
        *,
        started: HeldProcess | None = None,
    ) -> list[SealViolation] | None:
        """Run the migrate command of `tree` on `child` (the process `started` for it, held
        until now, where there is one): what the seal refuses in what it did (since `after`,
        the state and writes the baseline's migrations left), or None when it failed."""
        config = self.project.config
        self.database = child.database
        if not config.migrate.command:
            return []
        # A process started already runs: its code ran, so its migrations are run and read.
        if after is None and started is None and self._applies_nothing(child):
            self.migrate_exit = 0
            replace_text(
                self.run_dir / "migrate.out",
                "not run: Consort migrated the parent database with these same migrations, and "
                "the child is at the revisions they reached\n",
            )
            return []
        untouched, writes_before = after if after is not None else (self._database_state(child), {})
        sessions_before = sessions_of(self.dbs.backend, child.database, using=child.admin)
        migrate_started = time.monotonic()
        refused: list[Refusal] = []
        if started is not None:
            result = started.run_released(MIGRATE_TIMEOUT_S)
            refused += started.boxed.refused
        else:
            result = run_migrations(
                self.box,
                config.migrate,
                tree,
                child.url,
                read_only=self._frozen_in(tree),
                refused=refused,
            )
        self.migrate_seconds += time.monotonic() - migrate_started
        self.run_violations += unreachable_databases(refused, "migrate command")
        self._log("migrate", result)
        self.migrate_exit = result.returncode
        if result.returncode != 0:
            self.tail = result.output[-OUTPUT_TAIL:]
            self._note_loss(child)
            return None
        if sessions_of(self.dbs.backend, child.database, using=child.admin) == sessions_before:
            # It migrated some other database (settings of the project's own pointing at a
            # developer's), or none: the suite, whose teardown may delete rows, must not run
            # against wherever that is.
            self.migrate_unused = True
            self.tail = result.output[-OUTPUT_TAIL:]
            return [migrate_unused(child.database)]
        return [
            *self._migration_violations(child, tree, untouched, writes_before),
            *frozen_changes(tree, self.frozen, "migrate command"),
        ]

    def _migrate_baseline(self, child: Ephemeral, base: Path) -> _Replayed | None:
        """Migrate `child` with the baseline's export `base`; what it then holds and the rows
        written so far, or None when the baseline's migrations failed there."""
        started = time.monotonic()
        result = run_migrations(self.box, self.project.config.migrate, base, child.url)
        self.migrate_seconds += time.monotonic() - started
        self._log("migrate-baseline", result)
        if result.returncode != 0:
            self._note_loss(child)
            return None
        settle(self.dbs.backend, child.database, using=child.admin)
        with self.dbs.backend.admin(child.database) as conn:
            return DatabaseState.read(conn), table_writes(conn)

    @overload
    def _start_tests(
        self,
        child: Ephemeral,
        tree: Path,
        private: Path,
        paths: Iterable[str],
        *,
        alongside: Literal[False] = False,
    ) -> HeldProcess: ...

    @overload
    def _start_tests(
        self,
        child: Ephemeral,
        tree: Path,
        private: Path,
        paths: Iterable[str],
        *,
        alongside: Literal[True],
    ) -> HeldProcess | None: ...

    def _start_tests(
        self,
        child: Ephemeral,
        tree: Path,
        private: Path,
        paths: Iterable[str],
        *,
        alongside: bool = False,
    ) -> HeldProcess | None:
        """Start the test command of `tree` against `child`, held back from it until
        `_finish_tests`. `alongside` (the migrations have not run yet): None where it cannot
        start before them, as a run without a gate to hold its connections, or a junit
        runner's whose canary test file goes into the export the migrations also see."""
        config = self.project.config
        folder = workdir(tree, config.test)
        invocation = test_invocation(config.test, child.url, folder, private, self.canaries.module)
        canary_file = invocation.canaries and invocation.runner is RunnerKind.JUNIT
        if alongside and canary_file:
            return None
        opened = contextlib.ExitStack()
        # Consort's plugin folder and its pytest.ini are read, never written, by the run.
        boxed = opened.enter_context(
            self.box.boxed(
                invocation.argv,
                database=child.url,
                workdir=folder,
                env=invocation.env,
                writable=[tree, *invocation.writable],
                read_only=[*([private] if invocation.pipe else []), *self._frozen_in(tree)],
                held=True,
            )
        )
        if alongside and not boxed.holds:
            opened.close()
            return None
        self.invocation = invocation
        if canary_file:
            self.canary_file = self.canaries.site(paths, config.test.cwd)
            self.canaries.write_test_file(tree, self.canary_file, invocation.canary_kind)
        elif invocation.canaries:
            self.canaries.write_plugin(invocation.plugins)
        # without a gate the process reaches the child as soon as it starts: count from here
        self.sessions_before = (
            None
            if boxed.holds
            else sessions_of(self.dbs.backend, child.database, using=child.admin)
        )

        def launch(stop: proc.Stop, timeout: float) -> proc.Contained:
            return run_boxed(
                boxed.argv,
                folder,
                invocation.env,
                timeout,
                side_channel=invocation.pipe,
                secret_input=(
                    self.canaries.secret if invocation.pipe and invocation.canaries else None
                ),
                sandboxed=self.box.sandboxed,
                stop=stop,
            )

        return HeldProcess(boxed, opened, launch, config.test.timeout + HOLD_LIMIT_S)

    def _finish_tests(
        self,
        suite: HeldProcess,
        child: Ephemeral,
        tree: Path,
        then: Callable[[Ephemeral, Path], None] | None,
    ) -> None:
        """Let the test process started by `_start_tests` reach the migrated `child`, and read
        what it did."""
        config = self.project.config
        invocation = self.invocation
        if invocation is None:  # set by `_start_tests`, which made `suite`
            raise RuntimeError("a test process was started without its invocation")
        crash_point("run.tests")
        try:
            before = self.sessions_before
            if before is None:
                before = sessions_of(self.dbs.backend, child.database, using=child.admin)
            result = suite.run_released(config.test.timeout)
        finally:
            suite.cancel()  # also when its session count could not be taken
        self.run_violations += unreachable_databases(suite.boxed.refused, "test process")
        self.test_seconds = time.monotonic() - (suite.released_at or time.monotonic())
        self._log("tests", result)
        self.timed_out = result.timed_out
        self.exit_code = result.returncode
        self.tail = result.output[-OUTPUT_TAIL:]
        self.report_bytes = result.side_channel if invocation.pipe else invocation.read_report()
        self.run_violations += _process_violations(result)
        self.run_violations += frozen_changes(tree, self.frozen, "test process")
        self._note_loss(child)
        self.sessions = sessions_of(self.dbs.backend, child.database, using=child.admin) - before
        if then is not None:
            then(child, tree)

    def _applies_nothing(self, child: Ephemeral) -> bool:
        """Whether the migrate command would apply nothing to `child`: the parent's record of
        what Consort migrated it with (held still across the copy) names this export's
        migration inputs, and the child's version table holds the revisions it reached. The
        command's process is then not started: no code of the commit runs, nothing is
        written, and there is nothing for the migration rules to read."""
        record = MigratedRecord.from_data(child.migrated)
        if record is None or not self._names_inputs(record):
            return False
        try:
            with self.dbs.backend.admin(child.database) as conn:
                found = revisions(conn)
        except Exception:
            return False
        return found is not None and found == record.revisions

    def _note_loss(self, child: Ephemeral) -> None:
        """Whether the child is gone from the catalog: dropped by something other than the
        run, whose role owns no database and so cannot drop one (a person's `DROP DATABASE`, a
        `branch gc` of another process). The run failed on Consort's side, as when the server
        went away; a server that went away is `server_loss`'s to tell."""
        with contextlib.suppress(Exception):
            if not child.present():
                self.database_lost = (
                    f"the run's database {child.database} was dropped while the server kept running"
                )

    def _frozen_in(self, tree: Path) -> list[Path]:
        """What the run reads and never writes: the frozen files, and an empty `__pycache__`
        beside every Python source of the export (`sealed_caches`)."""
        frozen = [tree / path for path in self.frozen if (tree / path).is_file()]
        return [*frozen, *sealed_caches(tree, self.sources)]

    def _database_state(self, child: Ephemeral) -> DatabaseState:
        """What the child holds before the migrations: code, sequences, defaults."""
        if not self.reads_migrations:
            return DatabaseState()
        with self.dbs.backend.admin(child.database) as conn:
            return DatabaseState.read(conn)

    def _migration_violations(
        self,
        child: Ephemeral,
        tree: Path,
        before: DatabaseState,
        writes_before: Mapping[str, int],
    ) -> list[SealViolation]:
        """Rows, SQL code, defaults and catalog values the candidate's migrations left in the
        child (`migration_rules`), beyond `before` and the rows `writes_before` counts."""
        if not self.reads_migrations:
            return []
        settle(self.dbs.backend, child.database, using=child.admin)
        seeds = declared_seeds(self.project.layout)
        with self.dbs.backend.admin(child.database) as conn:
            writes = {
                table: count - writes_before.get(table, 0)
                for table, count in table_writes(conn).items()
                if count > writes_before.get(table, 0)
            }
            after = DatabaseState.read(conn)
            missing = missing_seed_rows(conn, writes, seeds)
            history = {
                table: history_rows(conn, table)
                for table in writes
                if table.rpartition(".")[2] in HISTORY_TABLES
            }
        if after.large_objects > before.large_objects:
            writes[LARGE_OBJECTS_TABLE] = after.large_objects - before.large_objects
        allow = self.project.config.seal.allow
        migrations = [path for path in self.sources if is_migration(path)]
        return [
            *history_violations(
                history, len(migrations), alembic_revisions(_texts(tree, migrations)), allow
            ),
            *row_violations(writes, seeds, allow, missing),
            *sequence_violations(before.sequences, after.sequences, writes, seeds, allow),
            *code_violations(after.code - before.code, allow),
            *catalog_violations(
                before.catalog, after.catalog, declared_values(self.project.layout), allow
            ),
            *default_violations(
                before.defaults, after.defaults, declared_defaults(self.project.layout), allow
            ),
        ]

    def _log(self, name: str, result: proc.Contained) -> None:
        replace_text(self.run_dir / f"{name}.out", result.output)

    def evidence(
        self,
        commit: str,
        parent_database: str,
        violations: list[SealViolation],
        started: float,
    ) -> tuple[RunEvidence, JUnitReport | None]:
        problems: list[str] = [str(v) for v in violations]
        report: JUnitReport | None = None
        canary_data: dict[str, Any] | None = None
        violations = [*violations, *self.run_violations]
        problems += [str(v) for v in self.run_violations]
        if violations and not self.database:
            pass  # refused before it ran
        elif self.migrate_unused:
            pass  # stopped after the migrate command: its violation says why
        elif self.migrate_exit not in (None, 0):
            problems.append(f"the migrate command exited {self.migrate_exit}")
            missing = missing_in_output(self.tail)
            if missing:
                problems.append(fix_for(missing))
        elif self.timed_out:
            problems.append(
                f"the test process ran past {self.project.config.test.timeout:.0f} s and was "
                "stopped (the test timeout in consort.toml)"
            )
        else:
            report, canary_data, found = self._read_report()
            violations += found
            problems += [str(v) for v in found]
            if report is None and not found:
                problems.append(self._no_report())
        evidence = RunEvidence(
            run=self.run_dir.name,
            commit=commit,
            parent_database=parent_database,
            database=self.database,
            migrate_exit=self.migrate_exit,
            exit_code=self.exit_code,
            timed_out=self.timed_out,
            report_sha256=report.sha256 if report else None,
            counts=report.counts() if report else {},
            passing=tuple(sorted(report.passed())) if report else (),
            tests=tuple(sorted(report.cases)) if report else (),
            test_seconds=self.test_seconds,
            overhead_seconds=time.monotonic() - started - self.test_seconds - self.migrate_seconds,
            migrate_seconds=self.migrate_seconds,
            output_tail=self.tail,
            problems=tuple(problems),
            violations=tuple(violations),
            canaries=canary_data,
            sessions=self.sessions,
            runner=self.invocation.runner if self.invocation else RunnerKind.PYTEST,
            id_prefix=self.invocation.id_prefix if self.invocation else "",
            database_lost=self.database_lost,
        )
        replace_text(self.run_dir / "output.txt", self.tail)
        return evidence, report

    def _no_report(self) -> str:
        last = self.tail.strip().splitlines()[-1] if self.tail.strip() else "no output"
        invocation = self.invocation
        if invocation is not None and invocation.runner is RunnerKind.JUNIT:
            if self.report_problem:
                return (
                    f"the test command (exit {self.exit_code}) wrote a JUnit report Consort "
                    f"cannot read ({self.report_problem}): " + last[:300]
                )
            return (
                f"the test command (exit {self.exit_code}) wrote no JUnit report: with "
                '[test] runner = "junit", Consort reads the file {junit} names; pass {junit} to '
                "the runner's JUnit reporter in [test] command (or [test.env]): " + last[:300]
            )
        return (
            f"the test run wrote no report: the test process (exit {self.exit_code}) ended "
            "before pytest wrote its JUnit report: " + last[:300]
        )

    def _read_report(
        self,
    ) -> tuple[JUnitReport | None, dict[str, Any] | None, list[SealViolation]]:
        invocation = self.invocation
        prefix = invocation.id_prefix if invocation else ""
        with_canaries = invocation is None or invocation.canaries
        try:
            raw = parse_report_bytes(
                self.report_bytes,
                prefix=prefix,
                dialect=invocation.runner if invocation else RunnerKind.PYTEST,
            )
        except ReportMissing as exc:
            if self.report_bytes:
                atomic_write_bytes(self.run_dir / REPORT_FILE, self.report_bytes)
            if self.report_bytes and not with_canaries:
                # A runner's own file that does not parse: a broken run, not a forged one.
                self.report_problem = exc.message
                return None, None, []
            if self.report_bytes:
                return (
                    None,
                    None,
                    [
                        SealViolation(
                            SealRule.CANARY_FORGED,
                            "",
                            f"{exc.message}: the report was "
                            "written to by something other than the test runner",
                        )
                    ],
                )
            return None, None, []
        atomic_write_bytes(self.run_dir / REPORT_FILE, self.report_bytes)
        found: list[SealViolation] = []
        canary_data: dict[str, Any] | None = None
        report = raw
        if with_canaries:
            junit = invocation is not None and invocation.runner is RunnerKind.JUNIT
            check = check_canaries(raw, self.canaries, raised_counts_as_failed=junit)
            found += check.violations
            if junit and check.violations and check.passing == check.failing == "missing":
                found.append(
                    SealViolation(
                        SealRule.CANARY_FORGED,
                        self.canary_file,
                        f"Consort's canary test file {self.canary_file} was not in the report: "
                        "a runner that never ran it, or a report written by something else; if "
                        "the runner's include patterns cannot find that file, set [test] canary "
                        '= "none" in consort.toml',
                    )
                )
            canary_data = check.as_data()
            report = check.report
            if not found and self.exit_code == 0:
                found.append(
                    SealViolation(
                        SealRule.CANARY_FORGED,
                        "",
                        "the test process exited 0 although Consort's failing canary failed: "
                        "its exit status is forged",
                    )
                )
        # Only a run that would count as passing must show it used its database: a RED whose
        # new test fails on an import never reaches it, and that is no cheat.
        passing = bool(report.cases) and not _failures(report)
        if not found and passing and self.sessions == 0 and self.project.config.migrate.command:
            found.append(
                SealViolation(
                    SealRule.DATABASE_UNUSED,
                    "",
                    f"the suite never connected to the throwaway database {self.database} it "
                    "was given in DATABASE_URL: it must not test against another database; "
                    "check the test environment settings in consort.toml",
                )
            )
        # The exit status, with Consort's failing canary accounted for: 1 is what a run whose
        # only failure is that canary exits with.
        if with_canaries and not found and self.exit_code == 1 and not _failures(report):
            self.exit_code = 0
        return report, canary_data, found


def _texts(tree: Path, paths: Iterable[str]) -> dict[str, str]:
    """path -> text of each Python file among `paths` of the export `tree`."""
    found = {}
    for path in paths:
        if path.endswith(".py"):
            try:
                found[path] = (tree / path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
    return found


def sealed_caches(tree: Path, paths: Iterable[str]) -> list[Path]:
    """An empty, read-only `__pycache__` beside every Python source of the export `tree`.

    Python loads a module's cached byte-code instead of its source when the cache's stamp says
    it may (an unchecked-hash `.pyc` always), and pytest loads a test module's cached, rewritten
    code when the cache's stamp matches the hash of the test file's bytes. Code the run
    executes before a module is imported (a migration, a module imported first) could write
    such a cache: the test that runs would not be the frozen one, whose bytes stay untouched,
    and the code would not be the source the rules read. With every cache folder empty and
    read-only (bound so in the sandbox, and without write permission outside it), what runs is
    always compiled from the source; Python and pytest do without writing their caches."""
    folders = {(tree / path).parent for path in paths if path.endswith(".py")}
    made = []
    for folder in sorted(folders):
        cache = folder / "__pycache__"
        try:
            cache.mkdir(exist_ok=True)
            cache.chmod(0o555)
        except OSError:
            continue
        made.append(cache)
    return made


def frozen_files(project: Project, entries: Mapping[str, TreeEntry]) -> dict[str, str]:
    """The export's files that no run may change (tests, test configuration, the files the
    commands name), with their blobs: a migration or production code that rewrote one (a test
    collected later, its assertion gone) would make the run test something else."""
    from consort.adapters.tdd.seal import commands_of, protected_globs
    from consort.adapters.tdd.testconfig import frozen_paths

    config = project.config
    regular = [p for p, e in entries.items() if not e.is_link and not e.is_gitlink]
    paths = frozen_paths(regular, protected_globs(config), commands_of(config))
    return {path: entries[path].sha for path in sorted(paths)}


def frozen_changes(tree: Path, frozen: Mapping[str, str], who: str) -> list[SealViolation]:
    """Frozen files whose bytes in the export are no longer their blob's."""
    found = []
    for path, sha in frozen.items():
        try:
            data: bytes | None = (tree / path).read_bytes()
        except OSError:
            data = None
        if data is None or _blob_sha(data) != sha:
            state = "removed" if data is None else "changed"
            found.append(
                SealViolation(
                    SealRule.TEST_CONFIG_CHANGED,
                    path,
                    f"the {who} {state} this file during the run: tests and test "
                    "configuration are the commit's, read-only to every run",
                )
            )
    return found


def _blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _failures(report: JUnitReport) -> bool:
    return bool(report.collection_errors) or any(
        c.outcome in (Outcome.FAILED, Outcome.ERROR) for c in report.cases.values()
    )


def _process_violations(result: proc.Contained) -> list[SealViolation]:
    found = []
    if result.escaped:
        found.append(
            SealViolation(
                SealRule.PROCESS_ESCAPED,
                "",
                f"{result.escaped} process(es) of the test run left its session; they were ended",
            )
        )
    if result.output_held:
        found.append(
            SealViolation(
                SealRule.PROCESS_ESCAPED,
                "",
                "a process of the test run still held its output open after it ended",
            )
        )
    return found


def run_boxed(
    argv: Sequence[str],
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    *,
    side_channel: bool = False,
    secret_input: bytes | None = None,
    sandboxed: bool = True,
    stop: proc.Stop | None = None,
) -> proc.Contained:
    """Run one of the project's commands, already wrapped by its `RunSandbox`, the way every run
    does: contained (every process it starts ends with it: by its PID namespace when
    `sandboxed`, else by its ancestry too), output held open by a leftover process waited for
    `OUTPUT_GRACE_S` at most; `stop` may end it early, as its timeout would. A program that
    does not exist is exit 127."""
    try:
        return proc.run_contained(
            argv,
            cwd=cwd,
            env=env,
            timeout=timeout,
            grace=OUTPUT_GRACE_S,
            side_channel=side_channel,
            secret_input=secret_input,
            reap=not sandboxed,
            stop=stop,
        )
    except ConsortError as exc:  # the program does not exist
        return proc.Contained(tuple(argv), 127, exc.message, b"", False, 0, 0, False)


def migrate_unused(database: str, *, stopped: bool = True) -> SealViolation:
    """The migrate command exited 0 without one session on the run's child `database`;
    `stopped`: the run stopped there, before its suite."""
    return SealViolation(
        SealRule.DATABASE_UNUSED,
        "",
        f"the migrate command never connected to the throwaway database {database} it was "
        "given in DATABASE_URL: it migrated another database (the project's own settings?), "
        f"or none{', so the suite was not run' if stopped else ''}; map the run database to "
        "the migrations' settings "
        'in [migrate.env] (e.g. POSTGRES_SERVER = "{db.host}"), or set [migrate] command = [] '
        "if the project has no migrations",
    )


def unreachable_databases(refused: Iterable[Refusal], who: str) -> list[SealViolation]:
    """The connections a run's gate refused: the `who` asked for another database than its
    throwaway one (the project's own settings, not mapped to the run's?)."""
    asked = sorted({(r.database, r.user) for r in refused})
    if not asked:
        return []
    named = ", ".join(f"{database} as {user}" for database, user in asked)
    return [
        SealViolation(
            SealRule.DATABASE_UNUSED,
            "",
            f"the {who} tried to reach {named}: a run reaches only its throwaway database "
            "(its network is isolated), so those connections were refused; map the run "
            'database to the project\'s settings in consort.toml (e.g. POSTGRES_DB = "{db.name}")',
        )
    ]


def run_migrations(
    box: RunSandbox,
    section: MigrateSection,
    tree: Path,
    url: str,
    *,
    read_only: Sequence[Path] = (),
    refused: list[Refusal] | None = None,
) -> proc.Contained:
    """Run the migrate command `section` in the export `tree` against `url`, in the run's
    sandbox, with its own folder and environment; the connections its gate refused are added
    to `refused`."""
    env, folder, sandbox = _migrate_sandbox(box, section, tree, url, read_only, held=False)
    with sandbox as boxed:
        result = run_boxed(boxed.argv, folder, env, MIGRATE_TIMEOUT_S, sandboxed=box.sandboxed)
    if refused is not None:
        refused.extend(boxed.refused)
    return result


def start_migrations(
    box: RunSandbox,
    section: MigrateSection,
    tree: Path,
    url: str,
    *,
    read_only: Sequence[Path] = (),
) -> HeldProcess | None:
    """Start the migrate command `section` as `run_migrations` runs it, its connections held
    at its gate until the process's `release` (`alongside`); None, and nothing started, where
    there is no gate to hold them."""
    env, folder, sandbox = _migrate_sandbox(box, section, tree, url, read_only, held=True)
    opened = contextlib.ExitStack()
    boxed = opened.enter_context(sandbox)
    if not boxed.holds:
        opened.close()
        return None

    def launch(stop: proc.Stop, timeout: float) -> proc.Contained:
        return run_boxed(boxed.argv, folder, env, timeout, sandboxed=box.sandboxed, stop=stop)

    return HeldProcess(boxed, opened, launch, MIGRATE_TIMEOUT_S + HOLD_LIMIT_S)


def _migrate_sandbox(
    box: RunSandbox,
    section: MigrateSection,
    tree: Path,
    url: str,
    read_only: Sequence[Path],
    *,
    held: bool,
) -> tuple[dict[str, str], Path, contextlib.AbstractContextManager[BoxedRun]]:
    """The migrate command's environment, working folder, and sandbox to be opened."""
    env = command_env(section, url)
    folder = workdir(tree, section)
    sandbox = box.boxed(
        section.command,
        database=url,
        workdir=folder,
        env=env,
        writable=[tree],
        read_only=read_only,
        held=held,
    )
    return env, folder, sandbox


def migrate(
    project: Project,
    repo: Path,
    commit: str,
    url: str,
    where: str,
    *,
    record_in: BranchDatabases | None = None,
) -> None:
    """Run the project's migrate command, in an export of `commit`, against `url` (a branch's
    own login). With `record_in`, the branch database's catalog then records what it was
    migrated with (`migrated`), forgotten first: a copy made while it runs carries nothing."""
    command = project.config.migrate.command
    if not command:
        return
    database = DbParts.from_url(url).name
    if record_in is not None:
        record_in.set_migrated(database, None)
    with exported(
        repo, commit, dependencies=project.config.test.dependencies, project_root=project.root
    ) as export:
        if export.violations:
            raise ConsortError(f"{commit[:10]} cannot be migrated: {export.violations[0]}")
        # read before the command runs, in its writable export
        inputs = migration_inputs(
            project.config.migrate, export.entries, export_reader(export.root)
        )
        # A branch's own login (a child's role is dropped with it) must come out as it went in.
        login = LoginGuard.before(record_in.backend, url) if record_in is not None else None
        result = run_migrations(run_sandbox(project), project.config.migrate, export.root, url)
        changed = login.after() if login is not None else []
        if changed:
            raise MigrationRefused(where, changed)
        if result.returncode == 0 and record_in is not None and inputs is not None:
            _record_migrated(record_in, database, inputs)
    if result.returncode != 0:
        # What the drive reports, and the ledger records (committed with the evidence, read by
        # later turns from git), never holds the password of the login the migrations ran as.
        output = without_password(result.output, DbParts.from_url(url).password)
        missing = missing_in_output(output)
        if missing:
            raise UsageError(f"the migrations failed on {where}: {fix_for(missing)}")
        raise ConsortError(f"the migrations failed on {where}: " + output.strip()[-500:])


def without_password(text: str, password: str) -> str:
    """`text` with `password` (as written, and as a URL quotes it) replaced by `***`."""
    from urllib.parse import quote

    for form in {password, quote(password, safe="")} - {""}:
        text = text.replace(form, "***")
    return text


class MigrationRefused(ConsortError):
    """Migrations of a branch database that did what no migration may (`violations`); what
    they changed of their login is already put back."""

    def __init__(self, where: str, violations: Sequence[SealViolation]):
        super().__init__(
            f"the migrations of {where} are refused: " + "; ".join(map(str, violations)),
            fix="remove what changes the login from the migration, then `consort drive`",
            code=ExitCode.INTEGRITY,
        )
        self.violations = tuple(violations)


def _record_migrated(dbs: BranchDatabases, database: str, inputs: str) -> None:
    with dbs.backend.admin(database) as conn:
        found = revisions(conn)
    if found is not None:
        dbs.set_migrated(database, MigratedRecord(inputs, found).as_data())


def schema_check(
    project: Project, dbs: BranchDatabases, design_path: Path, stories_done: set[str] | None
) -> tuple[Callable[[Ephemeral, Path], None], list[SealViolation]]:
    """A `then` for `run_suite` that reads the migrated child's schema and finds what the
    approved db-design declares for `stories_done` (None: every table) but the migrations did
    not build; the list it fills is empty when the schema holds, or when nothing is migrated."""
    from consort.adapters.db.design_check import schema_gaps
    from consort.adapters.db.schema_diff import read_schema
    from consort.core.artifacts.registry import ArtifactKind, load_artifact

    found: list[SealViolation] = []

    def check(child: Ephemeral, _tree: Path) -> None:
        if not project.config.migrate.command or not design_path.is_file():
            return
        design = load_artifact(ArtifactKind.DB_DESIGN, design_path)
        with dbs.backend.admin(child.database) as conn:
            schema = read_schema(conn)
        found.extend(
            SealViolation(
                SealRule.SCHEMA_INCOMPLETE,
                table,
                f"{gap}: the migrated schema lacks what the approved db-design declares",
            )
            for table, gap in schema_gaps(design, schema, stories_done)
        )

    return check, found
