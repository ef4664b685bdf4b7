"""Benchmark of one TDD-cycle verification: Consort's own overhead beside the test process's time.

    python bench/cycle.py                   # 10 verifications
    python bench/cycle.py --iterations 25

It makes a throwaway project with the real `consort init`, a small application with 20 tests (5
of them on the database, in a table the project's migrate command creates), a paired story
branch and a git worktree of it, as the build lane does. Then, once per iteration, it plays a
GREEN verification the way `consort drive` performs it, with a small code change standing in for
the driver's turn, and times each of Consort's parts: reset the worktree to the last proven
commit, snapshot the worktree and the main checkout, guard both (revert what the turn may not
change), commit, `run_suite` (throwaway child database, migrate command, pytest with a JUnit
report, parse, drop: split into the test process's time and the rest), the GREEN rules, and the
ledger and cycle record. `run_suite`'s overhead is split further, within the same runs, by
wrapping the calls it makes (child create and drop, the migrate command, the report parse), and
the server's checkpoints during each run are read from pg_stat_checkpointer. Beside it, in the
same run: the plain pytest command on the same tests against the story database, no Consort.

Create and drop copy files and wait for checkpoints (fsync): on a busy disk they vary by several
times between runs, so read the min column beside the median.

This is a benchmark, never a test: it exits 0 when it could measure, whether the goal holds or
not, and non-zero only when something failed. Everything it makes is removed at the end.
Progress goes to stderr, the table to stdout.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from consort.adapters import proc
from consort.adapters.paired import PairedBranches
from consort.adapters.scope import revert_outside_scope, snapshot
from consort.adapters.tdd import runner
from consort.adapters.tdd.junit import parse_report
from consort.adapters.tdd.rules import green_problems
from consort.adapters.tdd.runner import run_suite, test_env
from consort.adapters.vcs import Git
from consort.core.fsutil import atomic_write_json
from consort.core.ledger import Actor, EventType, Ledger, ledger_path
from consort.core.project import Project

GOAL_S = 0.4  # the orchestrator's overhead per sealed verification (issue: sealed verification)
STORY_BRANCH = "story/bench"
FEATURE = "F-bench"
STORY = "S1"
ITEM = "T1"
STATE_GUARD = ".consort/**"  # what the build lane adds to the project's protected globs
GIT_USER = ("-c", "user.name=Consort Bench", "-c", "user.email=bench@localhost")


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


# ---- the project under test -------------------------------------------------------------------

MIGRATE_SCRIPT = '''\
"""The project's migrations: one table for the store."""

import os

import psycopg

with psycopg.connect(os.environ["DATABASE_URL"]) as conn:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS items ("
        " id serial PRIMARY KEY,"
        " name text NOT NULL UNIQUE,"
        " cents integer NOT NULL CHECK (cents >= 0))"
    )
'''

PRICING_TEMPLATE = '''\
"""Prices in cents. Revision {revision}."""

TAX_RATES = {{"standard": 20, "reduced": 5, "zero": 0}}


def with_tax(cents: int, band: str = "standard") -> int:
    rate = TAX_RATES[band]
    return {with_tax_body}


def discount(cents: int, percent: int) -> int:
    if not 0 <= percent <= 100:
        raise ValueError(f"discount of {{percent}}%")
    return cents - cents * percent // 100
'''

# Two equivalent bodies: the "agent" alternates between them, so every turn changes code.
WITH_TAX_BODIES = ("cents + (cents * rate + 50) // 100", "(cents * (100 + rate) + 50) // 100")

APP_FILES = {
    "app/__init__.py": "",
    "app/cart.py": '''\
"""A shopping cart of (name, cents, quantity) lines."""

from dataclasses import dataclass, field


@dataclass
class Cart:
    lines: dict[str, tuple[int, int]] = field(default_factory=dict)

    def add(self, name: str, cents: int, quantity: int = 1) -> None:
        if quantity < 1:
            raise ValueError("quantity must be positive")
        price, held = self.lines.get(name, (cents, 0))
        self.lines[name] = (price, held + quantity)

    def remove(self, name: str) -> None:
        self.lines.pop(name, None)

    def count(self) -> int:
        return sum(quantity for _, quantity in self.lines.values())

    def total(self) -> int:
        return sum(price * quantity for price, quantity in self.lines.values())
''',
    "app/text.py": '''\
"""Formatting for receipts."""


def money(cents: int) -> str:
    sign = "-" if cents < 0 else ""
    return f"{sign}{abs(cents) // 100}.{abs(cents) % 100:02d}"


def slug(name: str) -> str:
    return "-".join(name.lower().split())
''',
    "app/store.py": '''\
"""The item table, through a psycopg connection."""


def add_item(conn, name: str, cents: int) -> int:
    row = conn.execute(
        "INSERT INTO items (name, cents) VALUES (%s, %s) RETURNING id", (name, cents)
    ).fetchone()
    return row[0]


def price_of(conn, name: str) -> int | None:
    row = conn.execute("SELECT cents FROM items WHERE name = %s", (name,)).fetchone()
    return None if row is None else row[0]


def stock_value(conn) -> int:
    return conn.execute("SELECT coalesce(sum(cents), 0) FROM items").fetchone()[0]
''',
    "migrate.py": MIGRATE_SCRIPT,
    "pytest.ini": "[pytest]\ntestpaths = tests\n",
    "tests/conftest.py": '''\
import os

import psycopg
import pytest


@pytest.fixture
def db():
    """A connection whose work is rolled back: every test sees the migrated, empty table."""
    with psycopg.connect(os.environ["DATABASE_URL"]) as conn:
        yield conn
        conn.rollback()
''',
    "tests/test_pricing.py": """\
import pytest

from app.pricing import discount, with_tax


def test_standard_tax():
    assert with_tax(1000) == 1200


def test_reduced_tax():
    assert with_tax(1000, "reduced") == 1050


def test_zero_tax():
    assert with_tax(999, "zero") == 999


def test_tax_rounds_half_up():
    assert with_tax(1, "reduced") == 1


def test_discount():
    assert discount(1000, 15) == 850


def test_discount_out_of_range():
    with pytest.raises(ValueError):
        discount(1000, 101)
""",
    "tests/test_cart.py": """\
import pytest

from app.cart import Cart


def test_empty_cart():
    assert Cart().total() == 0


def test_add_lines():
    cart = Cart()
    cart.add("tea", 250, 2)
    cart.add("cake", 300)
    assert cart.total() == 800


def test_same_item_adds_up():
    cart = Cart()
    cart.add("tea", 250)
    cart.add("tea", 250, 3)
    assert cart.count() == 4


def test_remove():
    cart = Cart()
    cart.add("tea", 250)
    cart.remove("tea")
    assert cart.count() == 0


def test_quantity_must_be_positive():
    with pytest.raises(ValueError):
        Cart().add("tea", 250, 0)
""",
    "tests/test_text.py": """\
from app.text import money, slug


def test_money():
    assert money(1234) == "12.34"


def test_money_pads_cents():
    assert money(105) == "1.05"


def test_negative_money():
    assert money(-5) == "-0.05"


def test_slug():
    assert slug("Earl  Grey Tea") == "earl-grey-tea"
""",
    "tests/test_store.py": """\
import psycopg
import pytest

from app.store import add_item, price_of, stock_value


def test_table_starts_empty(db):
    assert stock_value(db) == 0


def test_add_and_read_back(db):
    add_item(db, "tea", 250)
    assert price_of(db, "tea") == 250


def test_unknown_item(db):
    assert price_of(db, "coffee") is None


def test_stock_value(db):
    add_item(db, "tea", 250)
    add_item(db, "cake", 300)
    assert stock_value(db) == 550


def test_names_are_unique(db):
    add_item(db, "tea", 250)
    with pytest.raises(psycopg.errors.UniqueViolation):
        add_item(db, "tea", 260)
""",
}
TEST_COUNT = 20
DB_TEST_COUNT = 5


def pricing_source(revision: int) -> str:
    body = WITH_TAX_BODIES[revision % len(WITH_TAX_BODIES)]
    return PRICING_TEMPLATE.format(revision=revision, with_tax_body=body)


def toml_array(argv: list[str]) -> str:
    return "[" + ", ".join(json.dumps(arg) for arg in argv) + "]"


def configure(root: Path) -> None:
    """Point consort.toml's [test] and [migrate] commands at this interpreter."""
    path = root / "consort.toml"
    lines = path.read_text(encoding="utf-8").splitlines()
    commands = {
        "[test]": [sys.executable, "-m", "pytest", "-q"],
        "[migrate]": [sys.executable, "migrate.py"],
    }
    section = ""
    out = []
    for line in lines:
        if line.startswith("["):
            section = line.strip()
        replace = section in commands and line.startswith("command")
        out.append(f"command = {toml_array(commands[section])}" if replace else line)
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


# ---- set-up and tear-down ---------------------------------------------------------------------


def consort_cli(*args: str, cwd: Path | None = None) -> str:
    """Run the real CLI; raise with its own message when it fails."""
    result = subprocess.run(
        [sys.executable, "-m", "consort", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if result.returncode != 0:
        tail = (result.stderr.strip() or result.stdout.strip()).splitlines()
        raise RuntimeError(
            f"`consort {' '.join(args)}` exited {result.returncode}: {tail[-1] if tail else ''}"
        )
    return result.stdout


def cluster_home(root: Path) -> Path | None:
    record = root / ".consort" / "db" / "cluster.json"
    try:
        return Path(json.loads(record.read_text(encoding="utf-8"))["home"])
    except (FileNotFoundError, ValueError, KeyError):
        return None


def stop_and_remove_cluster(root: Path) -> None:
    """`consort db stop` in the project, then remove the cluster's folder."""
    home = cluster_home(root)
    if home is None:
        return
    try:
        consort_cli("db", "stop", cwd=root)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        progress(f"stopping the server failed: {exc}")
    # The folder named by the project's own record, and only a plausible one.
    if home.is_absolute() and len(home.parts) >= 4 and home.is_dir():
        shutil.rmtree(home, ignore_errors=True)
        progress(f"removed the cluster folder {home}")


@dataclass
class Story:
    """The project and the story being built: its branch, database, worktree and ledger."""

    project: Project
    paired: PairedBranches
    database: str
    worktree: Path
    ledger: Ledger
    red_tests: tuple[str, ...]
    head: str

    @property
    def url(self) -> str:
        return self.paired.url(STORY_BRANCH)

    @property
    def protected(self) -> tuple[str, ...]:
        return (*self.project.config.build.protected, STATE_GUARD)

    @property
    def cycle_record(self) -> Path:
        return self.project.state_dir / "cycles" / FEATURE / STORY / ITEM / "cycle.json"


def set_up(root: Path) -> Story:
    progress(f"consort init {root}")
    consort_cli("init", str(root), cwd=root.parent)
    configure(root)
    for name, text in {**APP_FILES, "app/pricing.py": pricing_source(0)}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    Git(root).run("add", "-A")
    Git(root).run(*GIT_USER, "commit", "-q", "-m", "A small store with 20 tests")

    project = Project(root)
    paired = PairedBranches(project)
    progress(f"creating the paired branch {STORY_BRANCH} and its worktree")
    paired.create(STORY_BRANCH, "main")
    database = paired.names(STORY_BRANCH).database
    worktree = project.state_dir / "worktrees" / FEATURE / STORY
    worktree.parent.mkdir(parents=True, exist_ok=True)
    Git(root).run("worktree", "add", "-q", str(worktree), STORY_BRANCH)
    # The story database as the plain pytest baseline uses it: migrated once, then fixed.
    proc.run(project.config.migrate.command, cwd=worktree, env=test_env(paired.url(STORY_BRANCH)))

    head = Git(worktree).out("rev-parse", "HEAD")
    progress("the story's first run (untimed: it warms the caches and lists the tests)")
    evidence, report = run_suite(project, paired.dbs, worktree, database, head, label="baseline")
    if report is None or evidence.problems or len(report.passed()) != TEST_COUNT:
        raise RuntimeError(
            f"the story's first run did not pass {TEST_COUNT} tests: "
            f"{list(evidence.problems) or evidence.counts}\n{evidence.output_tail}"
        )
    ledger = Ledger.open_for_writing(ledger_path(project.state_dir))
    return Story(project, paired, database, worktree, ledger, tuple(sorted(report.passed())), head)


# ---- measuring --------------------------------------------------------------------------------


@dataclass
class Timings:
    """Seconds per named part, one value per iteration, in the order the parts first ran."""

    values: dict[str, list[float]] = field(default_factory=dict)

    def add(self, part: str, seconds: float) -> None:
        self.values.setdefault(part, []).append(seconds)

    @contextmanager
    def time(self, part: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.add(part, time.perf_counter() - started)


# The parts of one verification that are Consort's own work, as the table names them.
RESET = "reset worktree to the proven commit"
SNAP_WORKTREE = "snapshot worktree"
SNAP_PROJECT = "snapshot main checkout"
GUARD_WORKTREE = "guard worktree (revert out of scope)"
GUARD_PROJECT = "guard main checkout"
COMMIT = "commit (status + commit_all)"
SUITE_OVERHEAD = "run_suite overhead (all but pytest)"
RULES = "GREEN rules check"
LEDGER = "ledger appends + cycle record"
OVERHEAD_PARTS = (
    RESET,
    SNAP_WORKTREE,
    SNAP_PROJECT,
    GUARD_WORKTREE,
    GUARD_PROJECT,
    COMMIT,
    SUITE_OVERHEAD,
    RULES,
    LEDGER,
)
TEST_PROCESS = "test process (pytest, in run_suite)"
SUITE_WALL = "run_suite wall clock"
PLAIN_PYTEST = "plain pytest on the story DB, no Consort"
# Inside run_suite, timed by wrapping the calls it makes: what its overhead is made of.
RUN_FOLDER = "run folder (allocate_run)"
EXPORT = "export of the commit from git objects"
EXPORT_REMOVE = "export removed"
SEAL_CHECKS = "seal rules against RED (config, tamper, ...)"
STATS = "pg_stat_database (suite used its child)"
UNSEALED = "unsealed run_suite overhead (the old design)"
UNSEALED_TESTS = "  its test process"
CHILD_CREATE = "child database create"
MIGRATE = "migrate command (the project's process)"
TEST_PROCESS_AND_LOG = "pytest process + its log"
PARSE = "JUnit report parse"
CHILD_DROP = "child database drop"
SUITE_REST = "the rest (log tail, evidence)"
ADMIN_CONNECTIONS = "admin connections opened"
CONNECTING = "time spent connecting"
LISTINGS = "database listings (BranchDatabases.infos)"
LISTING = "time spent listing databases"
CHECKPOINTS = "checkpoints requested"
CHECKPOINTING = "time the server spent in them"


def the_agent(story: Story, revision: int) -> None:
    """The driver's turn, reduced to its effect: a small change to the application's code."""
    (story.worktree / "app" / "pricing.py").write_text(pricing_source(revision), encoding="utf-8")


def verify_once(story: Story, revision: int, timings: Timings) -> None:
    """One GREEN verification as the build lane performs it, each part timed."""
    git = Git(story.worktree)
    subject = f"{FEATURE}/{STORY}/{ITEM}"
    with timings.time(RESET):
        git.run("reset", "-q", "--hard", story.head)
        git.run("clean", "-q", "-fd")
    ledger_started = time.perf_counter()
    story.ledger.append(
        EventType.TURN_STARTED,
        Actor.ORCHESTRATOR,
        subject,
        {"turn": f"bench-{revision}", "role": "driver", "step": "green", "attempt": 1},
    )
    ledger_seconds = time.perf_counter() - ledger_started
    with timings.time(SNAP_WORKTREE):
        base = snapshot(story.worktree)
    with timings.time(SNAP_PROJECT):
        project_base = snapshot(story.project.root)

    the_agent(story, revision)

    with timings.time(GUARD_WORKTREE):
        violations = revert_outside_scope(story.worktree, base, ("**",), story.protected)
    with timings.time(GUARD_PROJECT):
        violations += revert_outside_scope(story.project.root, project_base, (), ())
    if violations:
        raise RuntimeError(f"the guard reverted an honest change: {violations}")
    with timings.time(COMMIT):
        if not git.out("status", "--porcelain"):
            raise RuntimeError("the agent's change left nothing to commit")
        commit = git.commit_all(f"GREEN {ITEM}: revision {revision}")
    with RunSuiteProbe(story, timings).watching():
        suite_started = time.perf_counter()
        evidence, report = runner.run_suite(
            story.project,
            story.paired.dbs,
            story.worktree,
            story.database,
            commit,
            label=f"green-{revision}",
            baseline=story.head,
        )
        timings.add(SUITE_WALL, time.perf_counter() - suite_started)
    timings.add(TEST_PROCESS, evidence.test_seconds)
    # RunEvidence keeps the project's migrate process apart from Consort's overhead; this table
    # shows run_suite's whole non-pytest time and splits it below.
    timings.add(SUITE_OVERHEAD, evidence.overhead_seconds + evidence.migrate_seconds)
    with timings.time(RULES):
        problems = list(evidence.problems)
        if report is not None:
            problems += green_problems(
                report, evidence.exit_code or 0, story.red_tests, len(story.red_tests)
            )
    if problems or report is None:
        raise RuntimeError(f"GREEN did not hold: {problems}\n{evidence.output_tail}")
    with timings.time(LEDGER):
        data = {"turn": f"bench-{revision}", "commit": commit, "run": evidence.as_data()}
        story.ledger.append(EventType.GREEN_VERIFIED, Actor.ORCHESTRATOR, subject, data)
        record = {"feature": FEATURE, "story": STORY, "item": ITEM, "stages": {"green": data}}
        atomic_write_json(story.cycle_record, record)
    timings.values[LEDGER][-1] += ledger_seconds
    story.head = commit


def plain_pytest(story: Story, timings: Timings) -> None:
    """The same tests with the project's own test command, on the story database as it is."""
    argv = [*story.project.config.test.command, "-p", "no:cacheprovider"]
    started = time.perf_counter()
    result = subprocess.run(
        argv,
        cwd=story.worktree,
        env=test_env(story.url),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    timings.add(PLAIN_PYTEST, time.perf_counter() - started)
    if result.returncode != 0:
        raise RuntimeError(f"plain pytest exited {result.returncode}:\n{result.stdout[-2000:]}")


class RunSuiteProbe:
    """Times the calls `run_suite` makes (child create and drop, migrate, parse, connections,
    database listings) by wrapping them where it looks them up, so that its overhead is split
    within the very runs it is measured in. The wrappers add microseconds."""

    def __init__(self, story: Story, timings: Timings):
        self.story = story
        self.timings = timings
        self.dbs = story.paired.dbs
        self.backend = story.paired.backend
        self.runner_originals = {
            name: getattr(runner, name)
            for name in (
                "allocate_run",
                "run_boxed",
                "parse_report_bytes",
                "exported",
                "candidate_violations",
                "sessions_of",
            )
        }
        self.ephemeral = self.dbs.ephemeral
        self.admin = self.backend.admin
        self.infos = self.dbs.infos
        self.connects: list[float] = []
        self.listings: list[float] = []

    @contextmanager
    def watching(self) -> Iterator[None]:
        """Wrap for the length of the block, then put everything back and record the counts."""
        self.connects, self.listings = [], []
        before = checkpointer(self.story)
        try:
            runner.allocate_run = self.allocate_run
            runner.run_boxed = self.contained
            runner.parse_report_bytes = self.parse
            runner.exported = self.exported
            runner.candidate_violations = self.seal_checks
            runner.sessions_of = self.sessions
            self.dbs.ephemeral = self.timed_ephemeral  # type: ignore[method-assign]
            self.backend.admin = self.timed_admin  # type: ignore[method-assign]
            self.dbs.infos = self.timed_infos  # type: ignore[method-assign]
            yield
        finally:
            for name, original in self.runner_originals.items():
                setattr(runner, name, original)
            self.dbs.ephemeral = self.ephemeral  # type: ignore[method-assign]
            self.backend.admin = self.admin  # type: ignore[method-assign]
            self.dbs.infos = self.infos  # type: ignore[method-assign]
        self.record(before, checkpointer(self.story))

    def record(self, before: tuple[float, float] | None, after: tuple[float, float] | None) -> None:
        self.timings.add(ADMIN_CONNECTIONS, len(self.connects))
        self.timings.add(CONNECTING, sum(self.connects))
        self.timings.add(LISTINGS, len(self.listings))
        self.timings.add(LISTING, sum(self.listings))
        if before is not None and after is not None:
            self.timings.add(CHECKPOINTS, after[0] - before[0])
            self.timings.add(CHECKPOINTING, after[1] - before[1])

    def allocate_run(self, project: Project, label: str) -> Path:
        with self.timings.time(RUN_FOLDER):
            return self.runner_originals["allocate_run"](project, label)

    def contained(self, argv: Any, cwd: Path, env: Any, timeout: float, **kwargs: Any) -> Any:
        part = TEST_PROCESS_AND_LOG if kwargs.get("side_channel") else MIGRATE
        with self.timings.time(part):
            return self.runner_originals["run_boxed"](argv, cwd, env, timeout, **kwargs)

    def parse(self, data: bytes, **kwargs: Any) -> Any:
        with self.timings.time(PARSE):
            return self.runner_originals["parse_report_bytes"](data, **kwargs)

    @contextmanager
    def exported(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        started = time.perf_counter()
        removing = started
        with self.runner_originals["exported"](*args, **kwargs) as export:
            self.timings.add(EXPORT, time.perf_counter() - started)
            try:
                yield export
            finally:
                removing = time.perf_counter()
        self.timings.add(EXPORT_REMOVE, time.perf_counter() - removing)

    def seal_checks(self, *args: Any, **kwargs: Any) -> Any:
        with self.timings.time(SEAL_CHECKS):
            return self.runner_originals["candidate_violations"](*args, **kwargs)

    def sessions(self, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return self.runner_originals["sessions_of"](*args, **kwargs)
        finally:
            self.timings.values.setdefault(STATS, [])
            if len(self.timings.values[STATS]) < len(self.timings.values.get(EXPORT, [])):
                self.timings.add(STATS, 0.0)
            self.timings.values[STATS][-1] += time.perf_counter() - started

    @contextmanager
    def timed_ephemeral(self, parent: str, *args: Any, **kwargs: Any) -> Iterator[Any]:
        started = time.perf_counter()
        dropping = started
        with self.ephemeral(parent, *args, **kwargs) as child:
            self.timings.add(CHILD_CREATE, time.perf_counter() - started)
            try:
                yield child
            finally:
                dropping = time.perf_counter()
        self.timings.add(CHILD_DROP, time.perf_counter() - dropping)

    def timed_admin(self, dbname: str = "postgres") -> Any:
        started = time.perf_counter()
        try:
            return self.admin(dbname)
        finally:
            self.connects.append(time.perf_counter() - started)

    def timed_infos(self, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return self.infos(**kwargs)
        finally:
            self.listings.append(time.perf_counter() - started)


def checkpointer(story: Story) -> tuple[float, float] | None:
    """(checkpoints requested, seconds they spent writing and syncing) since the server started;
    None where the server has no pg_stat_checkpointer (before PostgreSQL 17)."""
    try:
        with story.paired.backend.admin() as conn:
            row = conn.execute(
                "SELECT num_requested, (write_time + sync_time) / 1000.0 FROM pg_stat_checkpointer"
            ).fetchone()
    except psycopg.Error:
        return None
    return (float(row[0]), float(row[1])) if row else None


def unsealed_run(story: Story, timings: Timings) -> None:
    """The run as it was before sealing, in the same run for comparison: a child, the migrate
    command and pytest in the worktree itself, its report from a file; no export, no seal rules,
    no canaries, no containment, no statistics."""
    started = time.perf_counter()
    run_dir = runner.allocate_run(story.project, "unsealed")
    report_path = run_dir / runner.REPORT_FILE
    with story.paired.dbs.ephemeral(story.database) as child:
        env = test_env(child.url)
        migrate_started = time.perf_counter()
        proc.run(story.project.config.migrate.command, cwd=story.worktree, env=env, timeout=300)
        migrate = time.perf_counter() - migrate_started
        argv = [
            *story.project.config.test.command,
            f"--junitxml={report_path}",
            "-o",
            "junit_family=xunit1",
            "-p",
            "no:cacheprovider",
            "--continue-on-collection-errors",
        ]
        test_started = time.perf_counter()
        result = proc.run(argv, cwd=story.worktree, env=env, timeout=900, check=False)
        tests = time.perf_counter() - test_started
    report = parse_report(report_path)
    if result.returncode != 0 or len(report.passed()) != TEST_COUNT:
        raise RuntimeError(f"the unsealed run did not pass: {result.stdout[-2000:]}")
    timings.add(UNSEALED, time.perf_counter() - started - migrate - tests)
    timings.add(UNSEALED_TESTS, tests)


def measure(story: Story, iterations: int) -> Timings:
    timings = Timings()
    for revision in range(1, iterations + 1):
        verify_once(story, revision, timings)
        unsealed_run(story, timings)
        plain_pytest(story, timings)
        overhead = sum(timings.values[part][-1] for part in OVERHEAD_PARTS)
        progress(
            f"verification {revision}/{iterations}: overhead {overhead:.3f} s, "
            f"test process {timings.values[TEST_PROCESS][-1]:.3f} s, "
            f"plain pytest {timings.values[PLAIN_PYTEST][-1]:.3f} s"
        )
    return timings


# ---- the report -------------------------------------------------------------------------------


def median(values: list[float]) -> float:
    return statistics.median(values)


def per_iteration(timings: Timings, parts: tuple[str, ...]) -> list[float]:
    """Each iteration's sum over `parts`: the median of sums, not the sum of medians."""
    return [sum(row) for row in zip(*(timings.values[p] for p in parts), strict=True)]


def render(rows: list[tuple[str, ...]], header: tuple[str, ...]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: tuple[str, ...]) -> str:
        first = cells[0].ljust(widths[0])
        rest = [cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True)]
        return "  ".join([first, *rest]).rstrip()

    return [line(header), "  ".join("-" * w for w in widths), *(line(row) for row in rows)]


def seconds_row(label: str, values: list[float]) -> tuple[str, str, str, str]:
    return (label, f"{median(values):.3f}", f"{min(values):.3f}", f"{max(values):.3f}")


def report(timings: Timings, iterations: int, server: str) -> str:
    v = timings.values
    overhead = per_iteration(timings, OVERHEAD_PARTS)
    tests, plain, migrate = v[TEST_PROCESS], v[PLAIN_PYTEST], v[MIGRATE]
    own = [total - project for total, project in zip(overhead, migrate, strict=True)]
    inside = (
        RUN_FOLDER,
        EXPORT,
        SEAL_CHECKS,
        CHILD_CREATE,
        MIGRATE,
        STATS,
        PARSE,
        CHILD_DROP,
        EXPORT_REMOVE,
    )
    v[SUITE_REST] = [
        suite - parts
        for suite, parts in zip(v[SUITE_OVERHEAD], per_iteration(timings, inside), strict=True)
    ]
    sealed_suite = [
        total - project for total, project in zip(v[SUITE_OVERHEAD], migrate, strict=True)
    ]
    header = ("part", "median s", "min s", "max s")
    parts = [seconds_row(part, v[part]) for part in OVERHEAD_PARTS]
    suite = [seconds_row(f"  {part}", v[part]) for part in (*inside, SUITE_REST)]
    totals = [
        seconds_row("orchestrator overhead per verification", own),
        seconds_row("  with the project's migrate command", overhead),
        seconds_row(TEST_PROCESS, tests),
        seconds_row(PLAIN_PYTEST, plain),
        seconds_row(SUITE_WALL, v[SUITE_WALL]),
        seconds_row("sealed run_suite overhead (all but pytest and migrate)", sealed_suite),
        seconds_row(UNSEALED, v[UNSEALED]),
        seconds_row(UNSEALED_TESTS, v[UNSEALED_TESTS]),
    ]
    connections = median(v[ADMIN_CONNECTIONS])
    lines = [
        "",
        f"Cycle verification: {TEST_COUNT} tests ({DB_TEST_COUNT} on the database), "
        f"{iterations} GREEN verifications; Python {platform.python_version()}, {server}",
        "",
        *render(parts, header),
        "",
        "run_suite's overhead, split inside the same runs:",
        *render(suite, header),
        f"  within create and drop, per run: {connections:.0f} admin connections "
        f"({median(v[CONNECTING]):.3f} s connecting), {median(v[LISTINGS]):.0f} listings of "
        f"every database ({median(v[LISTING]):.3f} s)",
        *(
            [
                f"  checkpoints the server ran per run: {median(v[CHECKPOINTS]):.0f} "
                f"({median(v[CHECKPOINTING]):.3f} s writing and syncing)"
            ]
            if CHECKPOINTS in v
            else []
        ),
        "",
        *render(totals, header),
        "",
        f"orchestrator overhead / test process:  {median(own) / median(tests):.2f}",
        f"test process / plain pytest:           {median(tests) / median(plain):.2f}",
        f"sealed / unsealed run_suite overhead:  {median(sealed_suite) / median(v[UNSEALED]):.2f}",
        f"goal, overhead <= {GOAL_S} s per verification:  "
        f"{holds(median(own))} ({median(own):.3f} s)",
        f"  counting the project's migrate command too:     "
        f"{holds(median(overhead))} ({median(overhead):.3f} s)",
    ]
    return "\n".join(lines)


def holds(seconds: float) -> str:
    return "yes" if seconds <= GOAL_S else "NO"


def server_version(story: Story) -> str:
    with story.paired.backend.admin() as conn:
        row = conn.execute("SHOW server_version").fetchone()
    return f"PostgreSQL {row[0] if row else '?'}"


# ---- main -------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--iterations", type=int, default=10, help="verifications to time (default 10)"
    )
    args = parser.parse_args(argv)
    if args.iterations < 1:
        parser.error("--iterations must be at least 1")
    return args


def guarded(step: Callable[[], None], what: str) -> None:
    try:
        step()
    except Exception as exc:  # clean-up must go on whatever failed
        progress(f"{what} failed: {exc}")


def main(argv: list[str] | None = None) -> int:
    # SIGTERM unwinds like Ctrl-C, so the finally block stops the server and removes everything.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    args = parse_args(argv)
    temp = Path(tempfile.mkdtemp(prefix="consort-bench-cycle-"))
    root = temp / "shop"
    try:
        story = set_up(root)
        timings = measure(story, args.iterations)
        print(report(timings, args.iterations, server_version(story)))
        return 0
    except Exception as exc:
        progress(f"failed: {type(exc).__name__}: {exc}")
        return 1
    finally:
        guarded(lambda: stop_and_remove_cluster(root), "stopping the server")
        guarded(lambda: shutil.rmtree(temp), f"removing {temp}")
        progress(f"removed {temp}")


if __name__ == "__main__":
    sys.exit(main())
