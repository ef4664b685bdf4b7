"""The loop: derive -> decide -> perform -> record, until done, a gate, an escalation or a bound.

Only one `drive` runs per project (the writer lock). Every iteration re-derives the State from
disk, so a `kill -9` at any moment leaves nothing the next run cannot pick up. Doing the same
action twice with no change in state is a stall: an error, never a spin.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from consort.adapters import proc
from consort.core.derive import derive
from consort.core.drive_lock import hold_writer
from consort.core.errors import ConsortError, ExitCode
from consort.core.ledger import Actor, Ledger, LedgerError, ledger_path
from consort.core.ledger.events import (
    DriveStarted,
    DriveStopped,
    EscalationRaised,
    GateApproved,
    GateRejected,
)
from consort.core.machine import Action, next_action
from consort.core.project import Project
from consort.core.state import GateKind, GateStatus, State, step_for_artifact
from consort.core.vocabulary import LANE_ORDER, ActionKind, Lane
from consort.lanes.design import record_hand_edit, restore_artifact, run_design_turn
from consort.lanes.evidence import commit_pending_evidence
from consort.lanes.gates import covered_hashes, proxy_policy
from consort.lanes.humans import refuse_agent
from consort.lanes.intake import resolve_feature
from consort.lanes.recover import collect_leftovers
from consort.lanes.stops import interruption, stop_signals_interrupt

Progress = Callable[[str], None]
BUILD_ACTIONS = frozenset(
    {
        ActionKind.CREATE_FEATURE_BRANCH,
        ActionKind.CREATE_STORY_BRANCH,
        ActionKind.MERGE_STORY,
        ActionKind.RUN_EXPERIMENT,
    }
)
RELEASE_ACTIONS = frozenset({ActionKind.DEPLOY, ActionKind.PROMOTE})


@dataclass(frozen=True)
class DriveResult:
    code: ExitCode
    steps: int
    last: Action | None
    message: str


class Stalled(ConsortError):
    pass


def drive(
    project: Project,
    *,
    feature: str | None = None,
    until: Lane | None = None,
    max_steps: int | None = None,
    progress: Progress = lambda _text: None,
) -> DriveResult:
    refuse_agent("driving the project")
    with (
        stop_signals_interrupt(),
        hold_writer(project.state_dir),
        proc.owning_children(project.state_dir),
        _throwaway_children_dropped(),
    ):
        ledger = Ledger.open_for_writing(ledger_path(project.state_dir))
        state = derive(ledger.read(), project.config, project.state_dir)
        for line in collect_leftovers(project, writer=True, start_server=_uses_database(state)):
            progress(f"after a crash: {line}")
        for line in _end_expired_spikes(project, ledger):
            progress(line)
        key = resolve_feature(project, feature, [f.id for f in state.features]) if feature else None
        subject = key or "project"
        ledger.record(
            DriveStarted(until=until.value if until else None, max_steps=max_steps),
            Actor.ORCHESTRATOR,
            subject,
        )
        try:
            result = _loop(
                project, ledger, feature=key, until=until, max_steps=max_steps, progress=progress
            )
        except KeyboardInterrupt as exc:
            by = interruption(exc)
            ledger.record(
                DriveStopped(reason="interrupted", message=f"stopped by {by}"),
                Actor.ORCHESTRATOR,
                subject,
            )
            _commit_evidence(project, ledger, progress, failing=True)
            return DriveResult(
                ExitCode.INTERRUPTED,
                0,
                None,
                f"interrupted ({by}); the turn in progress was stopped and its attempt not "
                "counted; `consort drive` resumes from here",
            )
        except LedgerError:
            raise  # the ledger cannot take the record of its own damage
        except ConsortError as exc:
            stopped = DriveStopped(reason="error", message=exc.message, exit_code=int(exc.code))
            ledger.record(stopped, Actor.ORCHESTRATOR, subject)
            _commit_evidence(project, ledger, progress, failing=True)
            raise
        stopped = DriveStopped(
            reason=result.last.kind.value if result.last else "bound",
            steps=result.steps,
            exit_code=int(result.code),
        )
        ledger.record(stopped, Actor.ORCHESTRATOR, subject)
        _commit_evidence(project, ledger, progress, failing=False)
        return result


def _end_expired_spikes(project: Project, ledger: Ledger) -> list[str]:
    """A spike's time box holds whether or not anyone runs `consort spike gc`: the drive ends
    the spikes whose time has run out before its first step, so that their kept notes reach
    the feature's next design and build turns."""
    from consort.core.ledger import EventType

    if not any(e.type is EventType.SPIKE_STARTED for e in ledger.read()):
        return []  # and the spike lane stays unloaded
    from consort.lanes.spikes import collect_expired

    return [
        f"spike {end.name} ran out of time: ended"
        + (f", its notes kept at {end.notes}" if end.notes else " (it left no notes)")
        for end in collect_expired(project, ledger)
    ]


@contextlib.contextmanager
def _throwaway_children_dropped() -> Iterator[None]:
    """The drive ends once the throwaway children of its runs and turns are dropped (they are
    dropped off the runs' path, `branching.DROPS`)."""
    try:
        yield
    finally:
        from consort.adapters.db.branching import DROPS

        DROPS.finish()


def _commit_evidence(
    project: Project, ledger: Ledger, progress: Progress, *, failing: bool
) -> None:
    """Commit a promotion's evidence once the drive's last record is written: the checkout is
    clean when the drive ends. When the drive stops on an error or an interruption, a failure
    here must not hide that one: the next drive's stop commits it."""
    try:
        commit = commit_pending_evidence(project, ledger.read())
    except ConsortError as exc:
        if not failing:
            raise
        progress(f"  the evidence is not committed yet ({exc.message}); the next drive commits it")
        return
    if commit is not None:
        progress(f"  evidence committed ({commit[:10]})")


def _uses_database(state: State) -> bool:
    """Whether this drive will use the database (a feature is in its build): then its server is
    started, if a crash stopped it, to collect what the crash left in it."""
    return any(feature.build is not None for feature in state.features)


def _loop(
    project: Project,
    ledger: Ledger,
    *,
    feature: str | None,
    until: Lane | None,
    max_steps: int | None,
    progress: Progress,
) -> DriveResult:
    steps = 0
    previous: tuple[Action, State] | None = None
    while True:
        state = derive(ledger.read(), project.config, project.state_dir)
        action = next_action(state, feature)
        if until is not None and LANE_ORDER.index(action.lane) > LANE_ORDER.index(until):
            return DriveResult(
                ExitCode.OK, steps, action, f"reached the end of the {until.value} lane"
            )
        if action.stops:
            return DriveResult(action.exit_code, steps, action, action.reason)
        if max_steps is not None and steps >= max_steps:
            return DriveResult(
                ExitCode.OK, steps, action, f"stopped after {steps} steps (--max-steps)"
            )
        if previous is not None and previous == (action, state):
            raise Stalled(
                f"stalled: {action.describe()} changed nothing",
                fix="see `consort log` for the last events; this is a bug in Consort",
            )
        previous = (action, state)
        progress(_announce(action))
        _perform(project, ledger, state, action, progress)
        steps += 1


def _announce(action: Action) -> str:
    where = action.feature or ""
    if action.kind is ActionKind.RUN_TURN and action.role and action.step:
        return f"{where}: {action.role.value} -> {action.step.value} (attempt {action.attempt})"
    return f"{where}: {action.reason}"


def _perform(
    project: Project, ledger: Ledger, state: State, action: Action, progress: Progress
) -> None:
    feature = state.feature(action.feature or "")
    if feature is None:
        raise ConsortError(f"{action.describe()} names no known feature")
    if action.kind in RELEASE_ACTIONS:
        from consort.lanes.release import perform_release

        perform_release(project, ledger, state, action, progress)
    elif action.kind in BUILD_ACTIONS or (action.kind is ActionKind.RUN_TURN and action.story):
        from consort.lanes.build.perform import perform_build

        perform_build(project, ledger, state, action, progress)
    elif action.kind is ActionKind.RUN_TURN:
        report = run_design_turn(project, ledger, action, feature)
        if report.accepted:
            progress(f"  accepted ({report.turn})")
        else:
            progress(f"  attempt failed ({report.turn}): " + "; ".join(report.problems)[:300])
    elif action.kind is ActionKind.RESTORE_ARTIFACT and action.artifact is not None:
        accepted = feature.artifacts[action.artifact]
        if accepted.accepted_turn is None:
            raise ConsortError(f"nothing to restore {action.artifact.value} from")
        restore_artifact(
            project, feature.id, action.artifact, accepted.accepted_turn, accepted.accepted_hash
        )
    elif action.kind is ActionKind.RECORD_HAND_EDIT and action.artifact is not None:
        record_hand_edit(ledger, project, feature, action.artifact)
    elif action.kind is ActionKind.ESCALATE and action.step is not None:
        raised = EscalationRaised(
            step=action.step,
            reason=action.reason,
            feedback=action.feedback,
            story=action.story,
            item=action.item,
        )
        ledger.record(raised, Actor.ORCHESTRATOR, feature.id)
    elif action.kind is ActionKind.PROXY_GATE:
        _proxy_gate(project, ledger, state, action)
    else:
        raise ConsortError(f"no way to perform {action.describe()}")


def _proxy_gate(project: Project, ledger: Ledger, state: State, action: Action) -> None:
    feature = state.feature(action.feature or "")
    if feature is None:
        raise ConsortError(f"{action.describe()} names no known feature")
    if action.gate in (GateKind.DEPLOY, GateKind.PROMOTE):
        # The deploy proof (migrations, suite, smoke test) is the policy for both gates.
        approved = GateApproved(gate=action.gate, note="human proxy policy: the deploy proof holds")
        ledger.record(approved, Actor.PROXY, feature.id)
        return
    if action.gate is GateKind.STORY:
        # Every cycle of the story was proven by Consort's own runs; that is the policy.
        approved = GateApproved(
            gate=GateKind.STORY, note="human proxy policy: every cycle verified"
        )
        ledger.record(approved, Actor.PROXY, f"{feature.id}/{action.story}")
        return
    decision = proxy_policy(project, feature)
    if decision.approve:
        approved = GateApproved(
            gate=GateKind.DESIGN,
            hashes=covered_hashes(feature),
            note="human proxy policy: " + "; ".join(decision.reasons),
        )
        ledger.record(approved, Actor.PROXY, feature.id)
        return
    target = decision.artifact
    gate = feature.design_gate
    if target is None or (gate.status is GateStatus.REJECTED and gate.actor == Actor.PROXY.value):
        # The proxy already sent the design back once: a person has to look now.
        step = step_for_artifact(target).step if target else feature.steps()[0].step
        raised = EscalationRaised(
            step=step, reason="the proxy policy rejects the design: " + "; ".join(decision.reasons)
        )
        ledger.record(raised, Actor.PROXY, feature.id)
        return
    rejected = GateRejected(gate=GateKind.DESIGN, artifact=target, note="; ".join(decision.reasons))
    ledger.record(rejected, Actor.PROXY, feature.id)
