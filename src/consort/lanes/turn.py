"""The one guarded agent turn, used by every design and build turn.

A turn is run in this order, and nowhere else:

1. `open_turn`: the role's agent is resolved (a misconfigured agent is the person's to fix: it
   stops the run before the turn exists, leaving no turn folder and no `turn.started` without an
   end), then the turn folder `.consort/turns/<NNNN>-<role>-<step>/` is allocated. The caller may
   put inputs (a schema, a diff) into the folder.
2. `run_turn`: task.json is written and `turn.started` appended; the trees the agent can reach
   are snapshotted after Consort's own last write, so that every change from there on is the
   agent's doing, and so is git's machinery (`adapters.gitguard`); the agent process is launched
   (`_launch`, the only place one is), with a scratch child of the turn's branch database as its
   DATABASE_URL; then git's machinery is put back (a planted hook or filter must be gone before
   Consort's next git call), and the turn's changes are checked (`_revert_breaches`, the only
   place they are): every change outside the turn's scope, and every change to Consort's own
   files, is reverted and becomes a violation. Only after that — the main checkout is back
   as it was — does Consort write again: result.json, one `violation.recorded` per violation,
   and the turn's end in the ledger.

Retries are the machine's: a failed turn's problems are its feedback, and the next action asks
for the same step again with `attempt + 1` and that feedback, which `run_turn` hands the agent
in task.json. How a failed turn ends depends on who judges it (`Verdict`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from consort.adapters.agents.base import Adapter, TurnOutcome, build_agent_env
from consort.adapters.agents.config import (
    AgentSettings,
    agent_settings,
    make_adapter,
    sandbox_use,
)
from consort.adapters.agents.task import AgentReport, Task, TurnDir, TurnResult
from consort.adapters.gitguard import fingerprint
from consort.adapters.gitguard import restore as restore_machinery
from consort.adapters.scope import FileChange, Violation, WriteScope, enforce_scope, snapshot
from consort.adapters.tdd.seal import CONSORT_FILES
from consort.core.errors import ConsortError
from consort.core.ledger import Actor, Ledger
from consort.core.ledger.events import TurnFailed, TurnFinished, TurnStarted, ViolationRecorded
from consort.core.project import Project
from consort.core.seal import SealRule, SealViolation
from consort.core.vocabulary import Role, SandboxUse, Step

STDERR_TAIL = 2000
CONTAINED = frozenset({SandboxUse.BWRAP, SandboxUse.NO_PROCESS})
"""Turns whose agent cannot reach the main checkout or write git's folder."""


class Verdict(Enum):
    """Who records a turn's failure, and so how the turn ends in the ledger."""

    # The turn's own problems are the verdict: it ends as `turn.failed` (with the problems as
    # the next attempt's feedback) or `turn.finished`. Design turns, and the review.
    TURN = "turn"
    # The turn ends as `turn.finished` whatever its problems; the cycle step that ran it judges
    # it together with its test run and records `red.failed`, `green.failed`, ... itself.
    STEP = "step"


@dataclass(frozen=True)
class OpenTurn:
    """A turn whose folder exists and whose agent is ready; nothing has run yet."""

    dir: TurnDir
    adapter: Adapter
    env_allow: tuple[str, ...]
    sandbox: SandboxUse  # how its agent will run: recorded with the turn's start

    @property
    def path(self) -> Path:
        return self.dir.path

    @property
    def name(self) -> str:
        return self.dir.name


@dataclass(frozen=True)
class SharedWrites:
    """What Consort itself changes while this turn runs, for other work of the same run in
    parallel (the sibling approaches of an experiment): paths in the main checkout (the ledger)
    and refs (the siblings' branches). The turn's guards leave exactly these alone.

    Sound only where the agent cannot reach them: a sandboxed turn never sees the main checkout
    and sees git's folder read-only, and a replayed turn runs no process. `run_turn` refuses a
    turn that would run otherwise."""

    paths: tuple[str, ...]  # globs relative to the project root
    refs: Container[str]  # full ref names


class EveryRef:
    """Every ref, as `SharedWrites.refs`: for a contained turn that runs while a person goes on
    working (a spike's explorer, for hours), whose commits and branches are theirs to make."""

    def __contains__(self, ref: object) -> bool:
        return True


BESIDE_A_PERSON = SharedWrites(paths=("**",), refs=EveryRef())
"""A contained turn beside a person's work: the main checkout and refs are theirs meanwhile
(the agent sees the one hidden and the other read-only), so nothing there is put back."""


@dataclass(frozen=True)
class TurnRequest:
    """What one turn asks of its agent, where it may work, and where its record goes."""

    subject: str  # the ledger subject: the feature, or "<feature>/<story>/<item>"
    feature: str
    story: str | None
    item: str | None
    attempt: int
    feedback: str | None  # the previous attempt's failure
    instructions: str
    inputs: Mapping[str, Path]
    outputs: Mapping[str, Path]
    workdir: Path  # the tree the agent works in: the project root, or a story's worktree
    writable: tuple[str, ...]  # globs relative to `workdir`
    protected: tuple[str, ...]
    database_url: str | None = None  # the turn's own branch database, never a parent's
    # The branch database whose scratch child (its own role, dropped after the turn) the agent
    # gets as DATABASE_URL instead: the agent never holds the branch database itself.
    scratch_of: str | None = None
    shared: SharedWrites | None = None  # parallel work whose writes are Consort's own


@dataclass(frozen=True)
class TurnRun:
    """What Consort observed of a turn, after reverting what it was not allowed to change."""

    dir: TurnDir
    outcome: TurnOutcome
    violations: tuple[Violation, ...]
    problems: tuple[str, ...] = field(default=())
    sealed: tuple[SealViolation, ...] = field(default=())  # git's machinery or refs it changed

    @property
    def name(self) -> str:
        return self.dir.name

    @property
    def ok(self) -> bool:
        return not self.problems


def open_turn(
    project: Project, role: Role, step: Step, settings: AgentSettings | None = None
) -> OpenTurn:
    """`settings`: the role's agent as configured, unless given (an experiment's approach)."""
    settings = settings or agent_settings(project, role)
    adapter = make_adapter(settings)  # refuses here an agent that must be sandboxed and cannot be
    return OpenTurn(
        TurnDir.allocate(project.state_dir, role, step),
        adapter,
        settings.env_allow,
        sandbox_use(settings),
    )


def run_turn(
    project: Project,
    ledger: Ledger,
    turn: OpenTurn,
    request: TurnRequest,
    *,
    verdict: Verdict,
    check: Callable[[], Sequence[str]] | None = None,
) -> TurnRun:
    """Run the agent once, guarded; `check` (its outputs' checks) runs after the revert."""
    if request.shared is not None and turn.sandbox not in CONTAINED:
        raise ConsortError(
            f"a turn beside parallel work must be sandboxed, and {turn.name} would run "
            f"{turn.sandbox.value}: its guards could not tell its changes from Consort's",
            fix="run the approaches one at a time ([experiment] concurrency = 1)",
        )
    task = _task(turn.dir, request)
    for output in task.outputs.values():
        output.parent.mkdir(parents=True, exist_ok=True)
    turn.dir.write_task(task)
    started = TurnStarted(
        turn=turn.name,
        role=task.role,
        step=task.step,
        attempt=task.attempt,
        sandbox=turn.sandbox,
    )
    ledger.record(started, Actor.ORCHESTRATOR, request.subject)
    guards = _guards(project, turn.dir, request)
    machinery = fingerprint(project.root)
    folders = {output.parent: output.parent.resolve() for output in task.outputs.values()}
    outcome = _launch(project, turn, task, request)
    others = request.shared.refs if request.shared is not None else frozenset()
    sealed = restore_machinery(project.root, machinery, others=others)
    sealed += _left_running(outcome)
    linked = _linked_outputs(task, folders)
    violations, changed = _revert_breaches(guards)
    # From here on Consort writes again: every tree the agent could reach is as allowed.
    _record(ledger, turn.dir, outcome, violations, changed, subject=request.subject, role=task.role)
    record_seal_violations(ledger, request.subject, sealed, turn=turn.name)
    problems = outcome_problems(outcome) + [violation_problem(v) for v in violations]
    problems += [str(v) for v in sealed] + linked
    if check is not None:
        problems += check()
    ended = _ended(turn.dir, task, outcome)
    if problems and verdict is Verdict.TURN:
        # A refused call fails nothing by itself; beside a failure it may be the reason for it.
        errors = problems + refusal_notes(outcome)
        failed = TurnFailed(**ended, errors=errors, feedback="\n".join(errors))
        ledger.record(failed, Actor.ORCHESTRATOR, request.subject)
    else:
        ledger.record(TurnFinished(**ended), Actor.ORCHESTRATOR, request.subject)
    return TurnRun(turn.dir, outcome, tuple(violations), tuple(problems), tuple(sealed))


def _left_running(outcome: TurnOutcome) -> list[SealViolation]:
    """A process of the turn's that still ran when it ended (ended by Consort then): one left
    to act after the turn (answer a gate at a terminal, edit the tree, the ledger or git once
    Consort's checks are done) fails the turn."""
    if not outcome.left_running:
        return []
    return [
        SealViolation(
            SealRule.PROCESS_ESCAPED,
            "",
            f"the agent left {outcome.left_running} process(es) running after its turn ended; "
            "Consort ended them: nothing of a turn's may outlive it",
        )
    ]


def _linked_outputs(task: Task, folders: Mapping[Path, Path]) -> list[str]:
    """Outputs that are links, or reached through one: Consort, outside the sandbox, would read
    what the link names (a file the sandbox hides, beside the project secret, as the artifact or
    as feedback on it). A link is removed; an output is a file the agent wrote."""
    problems = []
    for name, output in task.outputs.items():
        if output.parent.resolve() != folders[output.parent]:
            problems.append(
                f"the folder of output {name} was replaced by a link: Consort reads no file "
                "through a link a turn made"
            )
        elif output.is_symlink():
            output.unlink()
            problems.append(
                f"output {name} is a link, not a file: Consort reads no file through a link a "
                "turn made; it was removed"
            )
    return problems


def _task(turn: TurnDir, request: TurnRequest) -> Task:
    return Task(
        turn=turn.number,
        role=turn.role,
        step=turn.step,
        attempt=request.attempt,
        feature=request.feature,
        story=request.story,
        item=request.item,
        instructions=request.instructions,
        inputs=dict(request.inputs),
        outputs=dict(request.outputs),
        writable=request.writable,
        protected=request.protected,
        feedback=request.feedback,
    )


def _launch(project: Project, turn: OpenTurn, task: Task, request: TurnRequest) -> TurnOutcome:
    """The one place an agent process is started: with only the protocol's environment (its
    task file, role, step, its own database) and the variables the project allows."""
    if request.scratch_of is None:
        return _start(project, turn, task, request, request.database_url)
    if turn.sandbox is SandboxUse.NO_PROCESS:
        # No agent process runs (a replay: Consort writes the recorded files itself), so
        # nothing could ever connect to a scratch child: none is made, and no URL is given.
        return _start(project, turn, task, request, None)
    from consort.adapters.paired import PairedBranches

    with PairedBranches(project).dbs.ephemeral(request.scratch_of) as scratch:
        return _start(project, turn, task, request, scratch.url)


def _start(
    project: Project, turn: OpenTurn, task: Task, request: TurnRequest, url: str | None
) -> TurnOutcome:
    env = build_agent_env(turn.dir.task_path, task.role, task.step, url, allow=turn.env_allow)
    if url is not None:
        # The suite's own settings (`[test.env]`: POSTGRES_SERVER = "{db.host}", ...) name the
        # turn's database too, so an agent that runs the tests reaches its own, never a `.env`'s.
        from consort.adapters.tdd.runenv import table_env

        env.update(table_env(project.config.test, url))
    return turn.adapter.run(task, turn.dir, request.workdir, env)


@dataclass(frozen=True)
class _Guard:
    """One tree the agent can reach, its scope in it, and its content before the agent ran."""

    tree: Path
    writable: tuple[str, ...]
    protected: tuple[str, ...]
    exempt: tuple[str, ...]
    base: str


def _guards(project: Project, turn: TurnDir, request: TurnRequest) -> list[_Guard]:
    """The turn's working tree in its scope; and the main checkout (ledger, artifacts), out of
    every turn's scope, when the agent works elsewhere. The turn's own folder is exempt: the
    agent writes its outputs there and Consort its record."""
    # Consort's own files are never a turn's, whatever its protected list says.
    protected = (*request.protected, *CONSORT_FILES)
    none: tuple[str, ...] = ()
    scopes = [(request.workdir, request.writable, protected, none)]
    if request.workdir.resolve() != project.root.resolve():
        shared = request.shared.paths if request.shared is not None else ()
        scopes.append((project.root, (), (), shared))
    return [
        _Guard(tree, writable, protected, (*_exempt(turn, tree), *also), snapshot(tree))
        for tree, writable, protected, also in scopes
    ]


def _exempt(turn: TurnDir, tree: Path) -> tuple[str, ...]:
    if not turn.path.is_relative_to(tree):
        return ()
    return (str(turn.path.relative_to(tree)) + "/",)


def _revert_breaches(guards: Sequence[_Guard]) -> tuple[list[Violation], list[FileChange]]:
    """The one place a turn's changes are checked: every change since the snapshot that its
    scope does not allow is reverted and returned as a violation; the changes to the working
    tree (the first guard's) that stay are returned too, for result.json."""
    violations: list[Violation] = []
    kept: list[FileChange] = []
    for number, guard in enumerate(guards):
        scope = WriteScope(guard.writable, guard.protected)
        report = enforce_scope(guard.tree, guard.base, scope, exempt=guard.exempt)
        violations += report.violations
        if number == 0:
            reverted = {v.path for v in report.violations}
            kept += [change for change in report.changes if change.path not in reverted]
    return violations, kept


def _record(
    ledger: Ledger,
    turn: TurnDir,
    outcome: TurnOutcome,
    violations: Sequence[Violation],
    changed: Sequence[FileChange],
    *,
    subject: str,
    role: Role,
) -> None:
    """What Consort observed of a turn: result.json in its folder, each violation in the ledger."""
    killed = outcome.killed.value if outcome.killed is not None else None
    turn.write_result(
        TurnResult(
            exit_code=outcome.exit_code,
            duration_s=outcome.duration_s,
            killed_for_inactivity=killed == "inactivity",
            killed_for_wall_clock=killed == "wall-clock",
            error=outcome.error,
            changed_files=tuple(changed),
            sandbox=outcome.sandbox,
            violations=tuple(violations),
            agent=outcome.agent,
        )
    )
    for violation in violations:
        recorded = ViolationRecorded(
            turn=turn.name,
            role=role,
            path=violation.path,
            change=str(violation.kind),
            rule=violation.rule,
        )
        ledger.record(recorded, Actor.ORCHESTRATOR, subject)


def _ended(turn: TurnDir, task: Task, outcome: TurnOutcome) -> dict[str, Any]:
    """The fields of `TurnFinished` (or `TurnFailed`) for this turn."""
    summary: dict[str, Any] = {
        "turn": turn.name,
        "role": task.role,
        "step": task.step,
        "attempt": task.attempt,
        "exit_code": outcome.exit_code,
        "duration_s": round(outcome.duration_s, 3),
        "killed": outcome.killed.value if outcome.killed is not None else None,
    }
    agent = outcome.agent
    if agent is not None:
        summary["adapter"] = agent.adapter
        for key, value in (("program", agent.program), ("version", agent.version)):
            if value:
                summary[key] = value
        if agent.refused:
            summary["refused"] = [f"{r.tool} {r.target}".strip() for r in agent.refused]
    return summary


def refusal_notes(outcome: TurnOutcome | None) -> list[str]:
    """The calls the guard refused in a turn, in words for a person and the next attempt."""
    return _notes(None if outcome is None else outcome.agent)


def _notes(agent: AgentReport | None) -> list[str]:
    if agent is None:
        return []
    return [
        f"the guard refused {r.tool} {r.target}".rstrip() + f": {r.reason}" for r in agent.refused
    ]


def recorded_refusals(project: Project, turn: str) -> list[str]:
    """`refusal_notes` of a finished turn, read back from its result.json."""
    path = project.layout.turn(turn) / "result.json"
    try:
        result = TurnResult.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return _notes(result.agent)


def record_seal_violations(
    ledger: Ledger,
    subject: str,
    violations: Sequence[SealViolation],
    *,
    turn: str | None = None,
    run: str | None = None,
) -> None:
    """Each broken seal rule as a `violation.recorded` event naming the rule, file and line."""
    for violation in violations:
        payload = ViolationRecorded(
            turn=turn,
            run=run,
            path=violation.path,
            rule=violation.rule.value,
            seal_rule=violation.rule.value,
            line=violation.line,
            detail=violation.detail,
        )
        ledger.record(payload, Actor.ORCHESTRATOR, subject)


def violation_problem(violation: Violation) -> str:
    return (
        f"changed {violation.path}, which this turn may not change ({violation.rule}); "
        "the change was reverted"
    )


def outcome_problems(outcome: TurnOutcome) -> list[str]:
    """Why a turn's process did not end well, with its stderr's tail: feedback for the agent."""
    if outcome.ok:
        return []
    if outcome.error:
        return [f"the agent could not run: {outcome.error}"]
    if outcome.killed is not None:
        return [
            f"the agent was stopped ({outcome.killed.value} timeout) "
            f"after {outcome.duration_s:.0f} s"
        ]
    tail = ""
    with contextlib.suppress(FileNotFoundError):
        text = outcome.stderr_path.read_text(encoding="utf-8", errors="replace")
        tail = text[-STDERR_TAIL:].strip()
    return [f"the agent exited {outcome.exit_code}" + (f": {tail}" if tail else "")]
