"""Performing the orchestrator's actions for the design lane: one agent turn, checked.

A turn's output counts only after Consort has checked it: the agent exited on its own, wrote
nothing outside its scope (anything else is reverted and recorded as a violation), and its output
validates against the artifact's schema and agrees with the artifacts before it. Only then is the
artifact accepted: first in the ledger, then copied into `.consort/features/<F>/` — so a crash in
between leaves a state `derive` recognises and the next `drive` completes.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from consort.adapters.agents.base import TurnOutcome, build_agent_env
from consort.adapters.agents.config import adapter_for, agent_settings
from consort.adapters.agents.task import Task, TurnDir, TurnResult
from consort.adapters.scope import Violation, revert_outside_scope, snapshot
from consort.core.artifacts.canonical import NotCanonicalJson, artifact_hash
from consort.core.artifacts.registry import (
    ArtifactKind,
    default_filename,
    json_schema,
    load_artifact,
    validation_errors,
)
from consort.core.derive import artifact_path, turn_output
from consort.core.errors import ConsortError, ExitCode
from consort.core.fsutil import atomic_write_text
from consort.core.ledger import Actor, EventType, Ledger
from consort.core.machine import Action
from consort.core.project import Project
from consort.core.state import ArtifactCondition, FeatureState
from consort.core.vocabulary import Role
from consort.lanes.intake import intake_dir
from consort.roles import prompt_for

STDERR_TAIL = 2000


@dataclass(frozen=True)
class TurnReport:
    turn: str
    accepted: bool
    problems: tuple[str, ...]
    violations: tuple[Violation, ...]


def run_design_turn(
    project: Project, ledger: Ledger, action: Action, feature: FeatureState
) -> TurnReport:
    if action.artifact is None or action.role is None or action.step is None:
        raise ConsortError(f"not a design turn: {action.describe()}")
    kind = action.artifact
    # A misconfigured agent is the person's to fix: found before the turn exists, it leaves no
    # turn folder and no turn.started without an end in the ledger.
    settings = agent_settings(project, action.role)
    adapter = adapter_for(project, action.role)
    turn = TurnDir.allocate(project.state_dir, action.role, action.step)
    out_path = turn.path / "outputs" / default_filename(kind)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    schema_path = turn.path / f"{kind.value}.schema.json"
    atomic_write_text(schema_path, json.dumps(json_schema(kind), indent=2) + "\n")
    task = Task(
        turn=turn.number,
        role=action.role,
        step=action.step,
        attempt=action.attempt,
        feature=feature.id,
        story=None,
        item=None,
        instructions=_instructions(project, action, kind),
        inputs=_inputs(project, feature, kind, schema_path),
        outputs={kind.value: out_path},
        writable=(),
        protected=tuple(project.config.build.protected),
        feedback=action.feedback,
    )
    turn.write_task(task)
    ledger.append(
        EventType.TURN_STARTED,
        Actor.ORCHESTRATOR,
        feature.id,
        {
            "turn": turn.name,
            "role": action.role.value,
            "step": action.step.value,
            "attempt": action.attempt,
        },
    )
    # Taken after Consort's own last write: anything changed from here on is the agent's doing.
    base = snapshot(project.root)
    env = build_agent_env(turn.task_path, action.role, action.step, None, allow=settings.env_allow)
    outcome = adapter.run(task, turn, project.root, env)
    violations = revert_outside_scope(
        project.root,
        base,
        writable=(),
        protected=tuple(project.config.build.protected),
        outputs=(),
        exempt=(str(turn.path.relative_to(project.root)) + "/",),
    )
    problems = outcome_problems(outcome) + [
        f"wrote {v.path} outside its scope ({v.rule}); the change was reverted" for v in violations
    ]
    problems += _output_problems(project, feature, kind, out_path)
    record_turn(ledger, turn, outcome, violations, subject=feature.id, role=action.role)
    summary = {
        "turn": turn.name,
        "role": action.role.value,
        "step": action.step.value,
        "attempt": action.attempt,
        "exit_code": outcome.exit_code,
        "duration_s": round(outcome.duration_s, 3),
    }
    if problems:
        ledger.append(
            EventType.TURN_FAILED,
            Actor.ORCHESTRATOR,
            feature.id,
            {**summary, "errors": problems, "feedback": "\n".join(problems)},
        )
        return TurnReport(turn.name, False, tuple(problems), tuple(violations))
    digest = artifact_hash(out_path)
    ledger.append(EventType.TURN_FINISHED, Actor.ORCHESTRATOR, feature.id, summary)
    target = artifact_path(project.state_dir, feature.id, kind)
    ledger.append(
        EventType.ARTIFACT_ACCEPTED,
        Actor.ORCHESTRATOR,
        feature.id,
        {
            "kind": kind.value,
            "hash": digest,
            "turn": turn.name,
            "source": "turn",
            "path": str(target.relative_to(project.root)),
        },
    )
    restore_artifact(project, feature.id, kind, turn.name)
    return TurnReport(turn.name, True, (), tuple(violations))


def record_turn(
    ledger: Ledger,
    turn: TurnDir,
    outcome: TurnOutcome,
    violations: Sequence[Violation],
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
            violations=tuple(violations),
        )
    )
    for violation in violations:
        ledger.append(
            EventType.VIOLATION_RECORDED,
            Actor.ORCHESTRATOR,
            subject,
            {
                "turn": turn.name,
                "role": role.value,
                "path": violation.path,
                "change": str(violation.kind),
                "rule": violation.rule,
            },
        )


def restore_artifact(
    project: Project, feature: str, kind: ArtifactKind, turn: str, expected: str | None = None
) -> None:
    """Copy an accepted turn output into the feature's folder (atomically).

    With `expected` (the hash the ledger accepted), a turn output that no longer has it is
    refused: evidence that changed after acceptance is never restored as if it were accepted.
    """
    source = turn_output(project.state_dir, turn, kind)
    target = artifact_path(project.state_dir, feature, kind)
    if expected is not None:
        try:
            found = artifact_hash(source)
        except NotCanonicalJson as exc:
            found = str(exc)
        if found != expected:
            raise ConsortError(
                f"{source.relative_to(project.root)} no longer matches the hash the ledger "
                f"accepted for {kind.value}, so {target.relative_to(project.root)} cannot be "
                "restored from it",
                fix="`consort verify` lists what changed; put the turn output back as it was",
                code=ExitCode.INTEGRITY,
            )
    atomic_write_text(target, source.read_text(encoding="utf-8"))


def record_hand_edit(
    ledger: Ledger, project: Project, feature: FeatureState, kind: ArtifactKind
) -> None:
    artifact = feature.artifacts[kind]
    ledger.append(
        EventType.ARTIFACT_ACCEPTED,
        Actor.HUMAN,
        feature.id,
        {
            "kind": kind.value,
            "hash": artifact.current_hash,
            "turn": None,
            "source": "hand-edit",
            "path": artifact.path,
        },
    )


def _instructions(project: Project, action: Action, kind: ArtifactKind) -> str:
    if action.role is None:
        raise ConsortError(f"not a turn: {action.describe()}")
    return (
        prompt_for(action.role, project).rstrip()
        + "\n\n## This turn\n\n"
        + f'Write the {kind.value} artifact as JSON to the path in `outputs["{kind.value}"]`. '
        + 'It must validate against the JSON Schema in `inputs["schema"]`. '
        + "Read the other inputs; change no file in the working tree.\n"
    )


def _inputs(
    project: Project, feature: FeatureState, kind: ArtifactKind, schema: Path
) -> dict[str, Path]:
    inputs: dict[str, Path] = {"schema": schema}
    request = artifact_path(project.state_dir, feature.id, ArtifactKind.FEATURE_REQUEST)
    inputs["feature-request"] = request
    for name in ("product", "nfrs"):
        path = intake_dir(project) / f"{name}.md"
        if path.is_file():
            inputs[name] = path
    for step in feature.steps():
        artifact = feature.artifacts[step.artifact]
        path = artifact_path(project.state_dir, feature.id, step.artifact)
        if step.artifact is kind:
            if path.is_file():
                inputs["previous"] = path  # the version being revised
            break
        if artifact.condition is ArtifactCondition.ACCEPTED:
            inputs[step.artifact.value] = path
    return inputs


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


def _output_problems(
    project: Project, feature: FeatureState, kind: ArtifactKind, out: Path
) -> list[str]:
    if not out.is_file():
        return [f"no {kind.value} written to {out}"]
    problems = [f"{kind.value}: {p}" for p in validation_errors(kind, out)]
    if problems:
        return problems
    return _cross_check(project, feature, kind, out)


def _cross_check(
    project: Project, feature: FeatureState, kind: ArtifactKind, out: Path
) -> list[str]:
    """The new artifact must agree with the spec it elaborates."""
    from consort.core.artifacts.crosscheck import (
        check_db_design_against_spec,
        check_test_list_against_spec,
        check_ux_against_spec,
    )

    spec_path = artifact_path(project.state_dir, feature.id, ArtifactKind.FEATURE_SPEC)
    if kind is ArtifactKind.FEATURE_SPEC or not spec_path.is_file():
        return []
    spec = load_artifact(ArtifactKind.FEATURE_SPEC, spec_path)
    if kind is ArtifactKind.TEST_LIST:
        found = check_test_list_against_spec(load_artifact(kind, out), spec)
    elif kind is ArtifactKind.DB_DESIGN:
        found = check_db_design_against_spec(load_artifact(kind, out), spec)
    elif kind is ArtifactKind.UX:
        found = check_ux_against_spec(load_artifact(kind, out), spec)
    else:
        found = []
    return [f"{kind.value}: {p}" for p in found]
