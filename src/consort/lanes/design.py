"""The design lane's turn: one agent turn writes one design artifact, and Consort checks it.

A turn's output counts only after Consort has checked it: the guarded turn (`lanes.turn`) saw the
agent exit on its own and write nothing outside its scope (anything else is reverted and recorded
as a violation), and its output validates against the artifact's schema and agrees with the
artifacts before it. Only then is the artifact accepted: first in the ledger, then copied into
`.consort/features/<F>/` — so a crash in between leaves a state `derive` recognises and the next
`drive` completes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from consort.adapters.scope import Violation
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
from consort.core.ledger import Actor, Ledger
from consort.core.ledger.events import ArtifactAccepted, ArtifactSource
from consort.core.machine import Action
from consort.core.project import Project
from consort.core.spikes import spike_notes_inputs
from consort.core.state import ArtifactCondition, FeatureState
from consort.lanes.turn import TurnRequest, Verdict, open_turn, run_turn
from consort.roles import prompt_for


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
    turn = open_turn(project, action.role, action.step)
    out_path = turn.path / "outputs" / default_filename(kind)
    schema_path = turn.path / f"{kind.value}.schema.json"
    atomic_write_text(schema_path, json.dumps(json_schema(kind), indent=2) + "\n")
    request = TurnRequest(
        subject=feature.id,
        feature=feature.id,
        story=None,
        item=None,
        attempt=action.attempt,
        feedback=action.feedback,
        instructions=_instructions(project, action, kind),
        inputs={
            **_inputs(project, feature, kind, schema_path),
            **spike_notes_inputs(ledger.read(), feature.id, project.root),
        },
        outputs={kind.value: out_path},
        workdir=project.root,
        writable=(),  # a design turn changes no file in the working tree
        protected=tuple(project.config.build.protected),
    )
    done = run_turn(
        project,
        ledger,
        turn,
        request,
        verdict=Verdict.TURN,
        check=lambda: _output_problems(project, feature, kind, out_path),
    )
    if not done.ok:
        return TurnReport(done.name, False, done.problems, done.violations)
    digest = artifact_hash(out_path)
    target = artifact_path(project.state_dir, feature.id, kind)
    accepted = ArtifactAccepted(
        kind=kind,
        hash=digest,
        turn=done.name,
        source=ArtifactSource.TURN,
        path=str(target.relative_to(project.root)),
    )
    ledger.record(accepted, Actor.ORCHESTRATOR, feature.id)
    restore_artifact(project, feature.id, kind, done.name)
    return TurnReport(done.name, True, (), done.violations)


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
    accepted = ArtifactAccepted(
        kind=kind,
        hash=artifact.current_hash,
        turn=None,
        source=ArtifactSource.HAND_EDIT,
        path=artifact.path,
    )
    ledger.record(accepted, Actor.HUMAN, feature.id)


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
        path = project.layout.intake / f"{name}.md"
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
