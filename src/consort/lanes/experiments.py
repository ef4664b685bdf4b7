"""Experiments: N approaches to one cycle's GREEN, raced on their own paired branches.

`start` checks that the story's current cycle has its RED verified and nothing else pending,
makes one branch per approach at the RED commit with its worktree, and records the experiment;
each approach's copy of the story's database is made by its own run just before its first
attempt, one copy at a time, so that the copies overlap the other approaches' turns rather than
all coming before the race. `race` runs the approaches in parallel
threads, at most `[experiment] concurrency` at once: each approach's attempts are the build's
own driver turns (`lanes.build.cycle.driver_turn`: the same guarded, sandboxed turn, the same
sealed run with the RED-era tests that must pass, the same protected files), on the approach's
branch, with its own driver settings and budget. One approach failing, or raising, never stops
the others. `select` keeps one approach's GREEN on the story branch as if it had been the only
one; `discard` keeps none. Both archive the branches and drop every approach's database.

Turns in parallel share the main checkout and git's refs with Consort's own writes for the
other approaches (ledger appends, commits on sibling branches). A sandboxed turn cannot reach
either, so its guards are told to leave exactly those alone (`SharedWrites`); where a turn
would run unsandboxed, the approaches run one at a time and every guard sees everything.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from consort.adapters.agents.config import AgentSettings, parse_agents, sandbox_use
from consort.adapters.db.branching import Ephemeral
from consort.adapters.paired import PairedBranches
from consort.adapters.vcs import Git
from consort.core.artifacts.test_list import MAX_APPROACHES, MIN_APPROACHES
from consort.core.config import ApproachSection
from consort.core.derive import derive
from consort.core.errors import ConsortError, ExitCode, UsageError
from consort.core.experiments import (
    Approach,
    Experiment,
    approach_branch,
    archive_branch,
    experiments_of,
)
from consort.core.layout import LEDGER_FILE, STATE_DIR
from consort.core.ledger import Actor, Ledger
from consort.core.ledger.events import (
    ApproachAttempted,
    ApproachBegan,
    ApproachEnded,
    ApproachOutcome,
    ApproachRecord,
    ExperimentDiscarded,
    ExperimentSelected,
    ExperimentStarted,
    GreenVerified,
)
from consort.core.machine import Action, next_action
from consort.core.project import Project
from consort.core.state import FeatureState, ItemStage, ItemState, State, StoryState
from consort.core.vocabulary import ActionKind, Lane, Role, Step
from consort.lanes.build.branches import ensure_worktree
from consort.lanes.build.context import Build, Progress
from consort.lanes.build.cycle import DriverTurn, driver_turn
from consort.lanes.build.evidence import cycle_record
from consort.lanes.intake import resolve_feature
from consort.lanes.turn import CONTAINED, SharedWrites, recorded_refusals

if TYPE_CHECKING:
    from consort.adapters.db.schema_diff import Schema

SHARED_PATHS = (f"{STATE_DIR}/{LEDGER_FILE}",)
"""What Consort writes in the main checkout while approaches run: the ledger only."""


@dataclass(frozen=True)
class ApproachPlan:
    """One approach before it runs: its name, its driver and its budget."""

    name: str
    settings: AgentSettings
    notes: str
    max_cycles: int
    wall_time_s: float


@dataclass(frozen=True)
class Cycle:
    """The story and cycle an experiment is for, as the state has them now."""

    state: State
    feature: FeatureState
    story: StoryState
    item: ItemState

    @property
    def subject(self) -> str:
        return f"{self.feature.id}/{self.story.key}/{self.item.id}"


# ---- where an experiment is ----------------------------------------------------------------


def resolve_story(project: Project, state: State, subject: str) -> tuple[FeatureState, StoryState]:
    """`F1/S1` (or with full names) -> the feature and the story."""
    name, _, story_name = subject.partition("/")
    if not name or not story_name:
        raise UsageError(f"{subject!r} names no story", fix="e.g. consort experiment F1/S1")
    key = resolve_feature(project, name, [f.id for f in state.features])
    feature = state.feature(key)
    if feature is None or feature.build is None:
        raise UsageError(
            f"{key} has no build yet: experiments race a story's cycles after its design gate",
            fix=f"consort drive --feature {name}",
        )
    story = next((s for s in feature.build.stories if story_name in (s.id, s.key)), None)
    if story is None:
        raise UsageError(f"no story {story_name!r} in {key}", fix="see `consort status`")
    return feature, story


def current_cycle(project: Project, ledger: Ledger, subject: str) -> Cycle:
    state = derive(ledger.read(), project.config, project.state_dir)
    feature, story = resolve_story(project, state, subject)
    item = next((i for i in story.items if i.stage is not ItemStage.DONE), None)
    if item is None:
        raise UsageError(f"every cycle of {story.key} is done: there is no GREEN left to race")
    return Cycle(state, feature, story, item)


def _require_green_next(cycle: Cycle) -> None:
    """The feature's next step must be this cycle's first GREEN attempt, nothing else."""
    action = next_action(cycle.state, cycle.feature.id)
    expected = (
        action.story == cycle.story.key
        and action.item == cycle.item.id
        and (
            (
                action.kind is ActionKind.RUN_TURN
                and action.step is Step.GREEN
                and action.attempt == 1
            )
            or action.kind is ActionKind.RUN_EXPERIMENT  # the design marks it: race it now
        )
    )
    if not expected:
        raise UsageError(
            f"an experiment races the GREEN of a cycle whose RED is verified; the next step of "
            f"{cycle.feature.id} is: {action.reason}",
            fix="`consort experiment` drives the story's branch and RED first when they come "
            "next; otherwise resolve what `consort next` names",
        )


# ---- the approaches' drivers ---------------------------------------------------------------


def approach_settings(
    project: Project, table: ApproachSection | None, wall_time_s: float
) -> AgentSettings:
    """`[agents.driver]` with the approach's keys over it; each turn capped by its budget."""
    raw = dict(project.config.agents)
    driver = raw.get(Role.DRIVER.value)
    merged = dict(driver) if isinstance(driver, dict) else {}
    if table is not None:
        merged.update(table.driver_overrides())
    if merged:
        raw[Role.DRIVER.value] = merged
    settings = parse_agents(raw).settings(Role.DRIVER, project.root, env_file=project.env_file_name)
    return replace(settings, wall_clock_timeout_s=min(settings.wall_clock_timeout_s, wall_time_s))


def plan_approaches(project: Project, count: int) -> list[ApproachPlan]:
    """The first `count` approaches of `[experiment.approaches]`, then `a<k>` with the plain
    driver for the rest."""
    if not MIN_APPROACHES <= count <= MAX_APPROACHES:
        raise UsageError(
            f"an experiment races {MIN_APPROACHES} to {MAX_APPROACHES} approaches, not {count}",
            fix="--approaches 3",
        )
    section = project.config.experiment
    tables: list[tuple[str, ApproachSection | None]] = [
        (name, table) for name, table in list(section.approaches.items())[:count]
    ]
    taken = {name for name, _ in tables}
    number = 1
    while len(tables) < count:
        name = f"a{number}"
        number += 1
        if name not in taken:
            tables.append((name, None))
    plans = []
    for name, table in tables:
        cycles = (table.max_cycles if table else None) or section.max_cycles
        wall = (table.wall_time if table else None) or section.wall_time
        plans.append(
            ApproachPlan(
                name=name,
                settings=approach_settings(project, table, wall),
                notes=table.notes if table else "",
                max_cycles=cycles,
                wall_time_s=wall,
            )
        )
    return plans


def concurrency(project: Project, plans: list[ApproachPlan]) -> tuple[int, str]:
    """How many approaches may run at once, and why fewer than configured, if so."""
    wanted = min(project.config.experiment.concurrency, len(plans))
    loose = [p.name for p in plans if sandbox_use(p.settings) not in CONTAINED]
    if wanted > 1 and loose:
        return 1, (
            f"one at a time: the turns of {', '.join(loose)} would run unsandboxed, and a turn "
            "beside parallel work must be sandboxed"
        )
    return wanted, ""


# ---- start ---------------------------------------------------------------------------------


def start(
    project: Project,
    ledger: Ledger,
    subject: str,
    count: int,
    progress: Progress,
    *,
    actor: Actor = Actor.HUMAN,
) -> Experiment:
    """`actor`: a person (`consort experiment`), or Consort where the approved design marks the
    story (`consort drive`)."""
    cycle = current_cycle(project, ledger, subject)
    _require_green_next(cycle)
    if cycle.item.red_commit is None or cycle.story.head != cycle.item.red_commit:
        raise ConsortError(f"{cycle.item.id} has no RED commit at the head of {cycle.story.key}")
    plans = plan_approaches(project, count)
    number = len(experiments_of(ledger.read(), cycle.subject)) + 1
    running, note = concurrency(project, plans)
    paired = PairedBranches(project)
    made: list[ApproachRecord] = []
    try:
        for plan in plans:
            made.append(_make_branch(project, paired, cycle, number, plan))
    except BaseException:
        for record in made:
            _remove(project, paired, record, archive=False)
        raise
    started = ExperimentStarted(
        number=number,
        red_commit=cycle.item.red_commit,
        concurrency=running,
        concurrency_note=note,
        approaches=made,
    )
    ledger.record(started, actor, cycle.subject)
    progress(
        f"experiment {number} on {cycle.subject}: {len(made)} approaches from RED "
        f"{cycle.item.red_commit[:10]}, {running} at a time" + (f" ({note})" if note else "")
    )
    found = experiments_of(ledger.read(), cycle.subject)[-1]
    return found


def _make_branch(
    project: Project, paired: PairedBranches, cycle: Cycle, number: int, plan: ApproachPlan
) -> ApproachRecord:
    """The approach's branch at the RED commit and its worktree; its database, a copy of the
    story's, is made by its own run just before its first attempt (`_ensure_database`), so that
    the copies, which are the slow part and are made one at a time, overlap the other
    approaches' turns instead of all coming before the race."""
    branch = approach_branch(cycle.subject, number, plan.name)
    worktree = project.layout.experiment_worktree(cycle.subject, number, plan.name)
    database = paired.names(branch).database
    if worktree.exists() or paired.git.branch_exists(branch) or paired.dbs.exists(database):
        where = worktree.relative_to(project.root)
        raise UsageError(
            f"{branch} (or its worktree {where}, or its database) is left from an experiment "
            "start that did not finish",
            fix=f"`git worktree remove --force {where}` and `consort branch delete {branch} "
            "--force`, then start the experiment again",
        )
    paired.git.check_branch_name(branch)
    paired.git.create_branch(branch, cycle.item.red_commit or cycle.story.branch)
    record = ApproachRecord(
        name=plan.name,
        branch=branch,
        database=database,
        worktree=str(worktree.relative_to(project.root)),
        adapter=plan.settings.adapter.value,
        model=plan.settings.model,
        notes=plan.notes,
        max_cycles=plan.max_cycles,
        wall_time_s=plan.wall_time_s,
    )
    try:
        ensure_worktree(project, worktree, branch)
        Git(worktree).run("reset", "-q", "--hard", cycle.item.red_commit or "HEAD")
    except BaseException:
        _remove(project, paired, record, archive=False)
        raise
    return record


def run_marked(project: Project, ledger: Ledger, action: Action, progress: Progress) -> None:
    """`consort drive` at a cycle the approved design marks for N approaches: start the
    experiment (or resume the one a stopped run left) and race it; the next step waits for a
    person to select."""
    subject = f"{action.feature}/{action.story}"
    cycle = current_cycle(project, ledger, subject)
    if cycle.item.id != action.item:
        raise ConsortError(f"{action.describe()} is not the story's current cycle")
    found = [e for e in experiments_of(ledger.read(), cycle.subject) if e.open]
    if found:
        experiment = found[-1]
        progress(f"experiment {experiment.number} on {experiment.subject}: resuming")
    else:
        experiment = start(
            project, ledger, subject, action.attempt, progress, actor=Actor.ORCHESTRATOR
        )
    race(project, ledger, experiment, progress)


# ---- the race ------------------------------------------------------------------------------


def race(
    project: Project,
    ledger: Ledger,
    experiment: Experiment,
    progress: Progress,
) -> list[ApproachEnded]:
    """Run every approach that has not ended, in parallel up to the experiment's concurrency.
    Interrupted (Ctrl-C), no new attempt starts and KeyboardInterrupt goes on up."""
    cycle = current_cycle(project, ledger, f"{experiment.feature}/{experiment.story}")
    plans = {p.name: p for p in plan_approaches(project, len(experiment.approaches))}
    waiting = [a for a in experiment.approaches.values() if a.ended is None]
    workers = max(1, min(experiment.started.concurrency, len(waiting)))
    say_lock = threading.Lock()

    def say(text: str) -> None:
        with say_lock:
            progress(text)

    refs = frozenset(f"refs/heads/{a.record.branch}" for a in experiment.approaches.values())
    stop = threading.Event()
    # A run killed before is resumed here: what it left in flight ran until its last event.
    events = ledger.read()
    killed_at = events[-1].time if events else datetime.now(UTC)
    first = next(iter(experiment.approaches.values()), None)
    parent = cycle.story.database or (first.record.database if first else "")
    copies = threading.Lock()
    red = RedSchema(project, parent, experiment.started.red_commit, copies, after=workers)
    runs = [
        _ApproachRun(
            project,
            ledger,
            cycle,
            experiment,
            approach,
            plans.get(approach.name),
            # Alone, a turn's guards see everything; beside siblings, their refs are Consort's.
            None if workers == 1 else refs - {f"refs/heads/{approach.record.branch}"},
            say,
            stop,
            red,
            copies,
            spent_before=approach.spent_seconds(killed_at),
        )
        for approach in waiting
    ]
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="approach")
    try:
        futures = [pool.submit(run.guarded) for run in runs]
        return [ended for f in futures if (ended := f.result()) is not None]
    except KeyboardInterrupt:
        # No new attempt starts; the turns in flight end as turns do (their sandbox and
        # limits), and the approaches not ended are resumed by the next `consort experiment`.
        stop.set()
        say("  interrupted: no new attempt starts; waiting for the turns in flight")
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        red.wait()


@dataclass
class _ApproachRun:
    """One approach's attempts, from its first (or the next after a crash) to its end."""

    project: Project
    ledger: Ledger
    cycle: Cycle
    experiment: Experiment
    approach: Approach
    plan: ApproachPlan | None
    others: frozenset[str] | None  # the sibling approaches' refs, when they run beside it
    say: Callable[[str], None]
    stop: threading.Event
    red: RedSchema
    copies: threading.Lock  # copies of the story's database are made one at a time
    spent_before: float = 0.0  # of its wall time, by the runs before this one (a resumed race)
    began: float = 0.0

    def spent(self) -> float:
        return self.spent_before + time.monotonic() - self.began

    @property
    def record(self) -> ApproachRecord:
        return self.approach.record

    def guarded(self) -> ApproachEnded | None:
        """Whatever goes wrong in this approach ends it alone, recorded as an error; None when
        the run was interrupted before it ended (it is resumed later)."""
        self.began = time.monotonic()
        try:
            if self.plan is None:
                raise ConsortError(f"approach {self.record.name} is no longer configured")
            return self._attempts(self.plan)
        except Exception as exc:  # one approach failing never stops the others
            text = exc.message if isinstance(exc, ConsortError) else f"{type(exc).__name__}: {exc}"
            return self._end(
                ApproachOutcome.ERROR, len(self.approach.attempts), f"could not run: {text}"
            )

    def _ensure_database(self) -> None:
        """The approach's own copy of the story's database, made now unless a run before this
        one made it; one copy at a time (`copies`), beside the other approaches' turns."""
        record = self.record
        paired = PairedBranches(self.project)
        if paired.dbs.exists(record.database):
            return
        if self.approach.attempts:
            raise ConsortError(
                f"the database of {record.branch} is gone after {len(self.approach.attempts)} "
                "attempt(s): its attempts cannot go on from where they were"
            )
        names = paired.names(record.branch)
        parent = paired.names(self.cycle.story.branch).database
        with self.copies:
            paired.dbs.create_branch(record.branch, names.database, names.role, parent)

    def _attempts(self, plan: ApproachPlan) -> ApproachEnded | None:
        cycle, record = self.cycle, self.record
        if self.stop.is_set():
            return None
        try:
            self._ensure_database()
        finally:
            self.red.arrived()
        self.began = time.monotonic()  # its budget is for its attempts, not Consort's copy
        build = cycle.feature.build
        if build is None:
            raise ConsortError(f"{cycle.feature.id} has no build state")
        # The approach's view of the story: its own branch, worktree and database; same tests.
        story = replace(
            cycle.story,
            branch=record.branch,
            worktree=str(self.project.root / record.worktree),
            database=record.database,
        )
        shared = SharedWrites(SHARED_PATHS, self.others) if self.others is not None else None
        ctx = Build(
            self.project,
            self.ledger,
            cycle.state,
            cycle.feature,
            build,
            lambda text: self.say(f"  [{record.name}] {text.strip()}"),
            shared=shared,
        )
        feedback: str | None = None
        attempt = len(self.approach.attempts)
        while attempt < plan.max_cycles:
            if self.stop.is_set():
                return None
            remaining = plan.wall_time_s - self.spent()
            if remaining <= 0:
                return self._end(
                    ApproachOutcome.WALL_TIME,
                    attempt,
                    f"capped: its wall time ({plan.wall_time_s:.0f} s) ran out after "
                    f"{attempt} attempt(s)",
                )
            attempt += 1
            began = ApproachBegan(
                number=self.experiment.number,
                approach=record.name,
                attempt=attempt,
                spent_s=round(self.spent(), 3),
            )
            self.ledger.record(began, Actor.ORCHESTRATOR, cycle.subject)
            settings = replace(
                plan.settings,
                wall_clock_timeout_s=min(plan.settings.wall_clock_timeout_s, remaining),
            )
            done, passed = self._attempt(replace(ctx, driver=settings), story, attempt, feedback)
            if passed and done.evidence is not None:
                self.say(f"  [{record.name}] GREEN verified at attempt {attempt} ({done.turn})")
                return self._passed(attempt, done.evidence.commit)
            feedback = _feedback(self.project, done, done.problems or ["no code was changed"])
        return self._end(
            ApproachOutcome.CYCLES_SPENT,
            attempt,
            f"capped: {attempt} attempt(s) of {plan.max_cycles} failed",
        )

    def _attempt(
        self, ctx: Build, story: StoryState, attempt: int, feedback: str | None
    ) -> tuple[DriverTurn, bool]:
        """One driver turn, judged exactly as the build judges a GREEN or a repair."""
        cycle, record = self.cycle, self.record
        step = Step.GREEN if attempt == 1 else Step.REPAIR
        action = Action(
            ActionKind.RUN_TURN,
            Lane.BUILD,
            f"approach {record.name}: {cycle.item.id}, attempt {attempt}",
            feature=cycle.feature.id,
            role=Role.DRIVER,
            step=step,
            attempt=attempt,
            feedback=feedback,
            story=cycle.story.key,
            item=cycle.item.id,
        )
        schema: list[str] = []
        started = time.monotonic()
        done = driver_turn(
            ctx,
            action,
            story,
            cycle.item,
            base=self.experiment.started.red_commit,
            text=_instructions(self.project, cycle.item, record),
            stage="green",
            must_pass=cycle.item.red_tests,
            then=_schema_probe(self.project, self.red, record.database, schema),
        )
        problems = done.problems if done.commit or done.problems else ["no code was changed"]
        passed = not problems and done.evidence is not None
        attempted = ApproachAttempted(
            number=self.experiment.number,
            approach=record.name,
            attempt=attempt,
            step=step,
            turn=done.turn,
            passed=passed,
            commit=done.evidence.commit if done.evidence else None,
            reasons=problems,
            run=done.evidence.as_record() if done.evidence else None,
            schema_changes=schema,
            seconds=round(time.monotonic() - started, 3),
        )
        self.ledger.record(attempted, Actor.ORCHESTRATOR, cycle.subject)
        if not passed:
            self.say(
                f"  [{record.name}] attempt {attempt} failed ({done.turn}): "
                + "; ".join(problems)[:300]
            )
        return replace(done, problems=problems), passed

    def _passed(self, cycles: int, commit: str) -> ApproachEnded:
        from consort.adapters.smells import find_smells

        red = self.experiment.started.red_commit
        worktree = self.project.root / self.record.worktree
        smells = find_smells(worktree, red, commit, self.project.config.build.protected)
        added = removed = 0
        for line in Git(worktree).out("diff", "--numstat", red, commit).splitlines():
            plus, minus, _path = line.split("\t", 2)
            added += int(plus) if plus.isdigit() else 0
            removed += int(minus) if minus.isdigit() else 0
        return self._end(
            ApproachOutcome.PASSED,
            cycles,
            f"passed at attempt {cycles}",
            commit=commit,
            smells=[s.as_data() for s in smells],
            lines=(added, removed),
        )

    def _end(
        self,
        outcome: ApproachOutcome,
        cycles: int,
        message: str,
        *,
        commit: str | None = None,
        smells: list[dict[str, object]] | None = None,
        lines: tuple[int, int] = (0, 0),
    ) -> ApproachEnded:
        ended = ApproachEnded(
            number=self.experiment.number,
            approach=self.record.name,
            outcome=outcome,
            cycles=cycles,
            seconds=round(self.spent(), 3),
            commit=commit,
            message=message,
            smells=smells or [],
            lines_added=lines[0],
            lines_removed=lines[1],
        )
        self.ledger.record(ended, Actor.ORCHESTRATOR, self.cycle.subject)
        if outcome is not ApproachOutcome.PASSED:
            self.say(f"  [{self.record.name}] stopped: {message}")
        return ended


def _instructions(project: Project, item: ItemState, record: ApproachRecord) -> str:
    text = (
        f"Make the new test(s) of {item.id} pass with the least code. Tests and test "
        f"configuration ({', '.join(project.config.build.protected)}) cannot be changed: "
        "such a change is reverted and the attempt fails. The whole suite must pass."
    )
    if record.notes.strip():
        text += f"\n\n## Your approach ({record.name})\n\n{record.notes.strip()}\n"
    return text


def _feedback(project: Project, done: DriverTurn, problems: list[str]) -> str:
    feedback = "\n".join([*problems, *recorded_refusals(project, done.turn)])
    if done.evidence is not None and done.evidence.output_tail:
        feedback += "\n\nTest output (tail):\n" + done.evidence.output_tail
    return feedback


class RedSchema:
    """The schema the approaches start from: the database they were copied from, migrated by
    the RED commit's migrations on a throwaway child (the schema the RED run proved on). Each
    approach's schema changes are its migrated schema against this one, so they name what the
    approach built, not what the story's earlier cycles did.

    Its child is one more copy of the story's database, and copies of one database are made one
    at a time (`copies`): it is read in a thread of its own once the approaches that start first
    have made theirs (`arrived`), so that it delays neither them nor the race; a run's probe that
    needs it first starts it itself."""

    def __init__(
        self,
        project: Project,
        database: str,
        red_commit: str,
        copies: threading.Lock,
        *,
        after: int,
    ) -> None:
        self.project = project
        self.database = database
        self.red_commit = red_commit
        self.copies = copies
        self._lock = threading.Lock()
        self._future: Future[Schema] | None = None
        self._waiting_for = after
        if after <= 0:
            self._begin()

    def arrived(self) -> None:
        """One of the first approaches has its database (or could not make it)."""
        with self._lock:
            self._waiting_for -= 1
            ready = self._waiting_for <= 0
        if ready:
            self._begin()

    def _begin(self) -> Future[Schema]:
        with self._lock:
            if self._future is None:
                pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="red-schema")
                self._future = pool.submit(self._read)
                pool.shutdown(wait=False)
            return self._future

    def _read(self) -> Schema:
        from consort.adapters.db.schema_diff import read_schema
        from consort.adapters.tdd.runner import migrate

        paired = PairedBranches(self.project)
        with contextlib.ExitStack() as stack:
            with self.copies:
                child = stack.enter_context(paired.dbs.ephemeral(self.database))
            where = f"a throwaway copy of {self.database} at the RED commit"
            migrate(self.project, self.project.root, self.red_commit, child.url, where)
            with paired.backend.admin(child.database) as conn:
                return read_schema(conn)

    def schema(self) -> Schema:
        return self._begin().result()

    def wait(self) -> None:
        """Until it is read (or failed), if it was started: a race leaves no child behind."""
        with self._lock:
            future = self._future
        if future is not None:
            future.exception()


def _schema_probe(
    project: Project, red: RedSchema, parent_database: str, into: list[str]
) -> Callable[[Ephemeral, Path], None]:
    """After the run's tests: how its migrated child's schema differs from the RED commit's."""

    def probe(child: Ephemeral, _tree: Path) -> None:
        from consort.adapters.db.schema_diff import diff_databases, diff_schemas, read_schema

        paired = PairedBranches(project)
        try:
            base = red.schema()
        except Exception as exc:  # the changes are shown, never decisive: say what they are against
            why = exc.message if isinstance(exc, ConsortError) else f"{type(exc).__name__}: {exc}"
            into[:] = [
                f"(against {parent_database}: the RED commit's schema could not be read: "
                f"{why[:200]})",
                *diff_databases(paired.backend, parent_database, child.database).lines(),
            ]
            return
        with paired.backend.admin(child.database) as conn:
            into[:] = diff_schemas(base, read_schema(conn)).lines()

    return probe


# ---- select and discard --------------------------------------------------------------------


def open_experiment(project: Project, ledger: Ledger, subject: str) -> tuple[Cycle, Experiment]:
    state = derive(ledger.read(), project.config, project.state_dir)
    feature, story = resolve_story(project, state, subject)
    found = [e for e in experiments_of(ledger.read(), f"{feature.id}/{story.key}") if e.open]
    if not found:
        raise UsageError(
            f"{feature.id}/{story.key} has no open experiment",
            fix=f"start one: consort experiment {subject} --approaches 3",
        )
    experiment = found[-1]
    item = next(i for i in story.items if i.id == experiment.item)
    return Cycle(state, feature, story, item), experiment


def select(
    project: Project, ledger: Ledger, subject: str, name: str, note: str | None
) -> tuple[str, ExperimentSelected]:
    """Keep `name`'s GREEN on the story branch, recorded as the cycle's one GREEN; the cycle's
    subject and what was recorded."""
    cycle, experiment = open_experiment(project, ledger, subject)
    approach = experiment.approaches.get(name)
    if approach is None:
        raise UsageError(
            f"experiment {experiment.number} of {cycle.subject} has no approach {name!r} "
            f"(approaches: {', '.join(experiment.approaches)})"
        )
    attempt = approach.passing_attempt
    if not approach.passed or attempt is None or attempt.commit is None:
        raise UsageError(
            f"approach {name} did not pass: only an approach whose GREEN Consort proved can be "
            "selected",
            fix=f"consort experiment compare {subject}",
        )
    commit = attempt.commit
    paired = PairedBranches(project)
    if cycle.item.green_commit != commit:
        _keep_green(project, ledger, cycle, experiment, approach)
    archived, dropped = _close(project, paired, experiment, keep=name)
    selected = ExperimentSelected(
        number=experiment.number,
        approach=name,
        commit=commit,
        archived=archived,
        dropped=dropped,
        note=note or "",
    )
    ledger.record(selected, Actor.HUMAN, cycle.subject)
    return cycle.subject, selected


def _keep_green(
    project: Project, ledger: Ledger, cycle: Cycle, experiment: Experiment, approach: Approach
) -> None:
    """Move the story branch to the approach's commit and record it as the cycle's GREEN: the
    story goes on (review, refactor, its next cycle) as if it had been the only one."""
    attempt = approach.passing_attempt
    if attempt is None or attempt.commit is None:
        raise ConsortError(f"approach {approach.name} has no passing attempt")
    commit = attempt.commit
    git = Git(project.root)
    red = experiment.started.red_commit
    story_head = git.out("rev-parse", f"refs/heads/{cycle.story.branch}")
    if story_head != red or cycle.story.head != red:
        raise ConsortError(
            f"{cycle.story.branch} is at {story_head[:10]}, not at the RED commit {red[:10]} the "
            "experiment started from: refs are Consort's",
            code=ExitCode.INTEGRITY,
        )
    branch_head = git.run(
        "rev-parse", "-q", "--verify", f"refs/heads/{approach.record.branch}", check=False
    ).stdout.strip()
    if branch_head and branch_head != commit:
        raise ConsortError(
            f"{approach.record.branch} points at {branch_head[:10]}, but Consort proved "
            f"{commit[:10]}: refs are Consort's, and this one was moved behind its back",
            code=ExitCode.INTEGRITY,
        )
    ancestry = git.run("merge-base", "--is-ancestor", red, commit, check=False)
    if not ancestry.ok:
        raise ConsortError(
            f"{commit[:10]} does not descend from the RED commit {red[:10]}",
            code=ExitCode.INTEGRITY,
        )
    if cycle.story.worktree is None:
        raise ConsortError(f"{cycle.story.key} has no worktree")
    worktree = Git(Path(cycle.story.worktree))
    worktree.run("reset", "-q", "--hard", commit)
    worktree.run("clean", "-q", "-ffdx")
    green = GreenVerified(turn=attempt.turn, commit=commit, red_commit=red, run=attempt.run)
    ledger.record(green, Actor.ORCHESTRATOR, cycle.subject)
    build = cycle.feature.build
    if build is not None:
        ctx = Build(project, ledger, cycle.state, cycle.feature, build, lambda _t: None)
        data = {**green.to_data(), "experiment": experiment.number, "approach": approach.name}
        cycle_record(ctx, cycle.story, cycle.item, "green", data)


def discard(
    project: Project, ledger: Ledger, subject: str, note: str | None
) -> tuple[str, ExperimentDiscarded]:
    """Keep no approach: archive them all; the cycle's GREEN goes back to the normal build."""
    cycle, experiment = open_experiment(project, ledger, subject)
    archived, dropped = _close(project, PairedBranches(project), experiment, keep=None)
    discarded = ExperimentDiscarded(
        number=experiment.number, archived=archived, dropped=dropped, note=note or ""
    )
    ledger.record(discarded, Actor.HUMAN, cycle.subject)
    return cycle.subject, discarded


def _close(
    project: Project, paired: PairedBranches, experiment: Experiment, *, keep: str | None
) -> tuple[list[str], list[str]]:
    """Every approach's worktree removed and database dropped; the kept one's branch deleted
    (its commit is the story's now), the others' renamed under `archive/` until gc."""
    archived: list[str] = []
    dropped: list[str] = []
    for approach in experiment.approaches.values():
        record = approach.record
        moved, gone = _remove(project, paired, record, archive=approach.name != keep)
        archived += [moved] if moved else []
        dropped += [gone] if gone else []
    return archived, dropped


def _remove(
    project: Project, paired: PairedBranches, record: ApproachRecord, *, archive: bool
) -> tuple[str | None, str | None]:
    """(the archive branch, the dropped database), each None when there was none."""
    worktree = project.root / record.worktree
    if worktree.exists():
        removed = paired.git.run(
            "worktree", "remove", "--force", "--force", str(worktree), check=False
        )
        if not removed.ok:
            import shutil

            shutil.rmtree(worktree, ignore_errors=True)
    paired.git.run("worktree", "prune")
    moved: str | None = None
    if paired.git.branch_exists(record.branch):
        if archive:
            moved = archive_branch(record.branch)
            paired.git.run("branch", "-M", record.branch, moved)
        else:
            paired.git.run("branch", "-D", record.branch)
    gone: str | None = None
    if record.database and paired.dbs.exists(record.database):
        paired.dbs.drop(record.database)
        gone = record.database
    return moved, gone


def collect_archived(project: Project, ledger: Ledger) -> list[str]:
    """Delete the archived branches of closed experiments (`consort branch gc`): their reports
    and events stay in the ledger, auditable; their commits may then be collected by git."""
    git = Git(project.root)
    lines = []
    for experiment in experiments_of(ledger.read(), ""):
        closed = experiment.selected or experiment.discarded
        if closed is None:
            continue
        for branch in closed.archived:
            if git.branch_exists(branch):
                git.run("branch", "-D", branch)
                lines.append(f"deleted the archived approach branch {branch}")
    return lines
