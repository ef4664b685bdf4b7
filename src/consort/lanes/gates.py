"""Gates: the product owner's approvals and rejections, bound to the hashes of what was approved.

An approval records the SHA-256 of the canonical form of every artifact it covers; from then on a
change to any of them re-opens the gate (`drive` stops with exit 4, `verify` fails) until the
product owner approves again. Approvals need a person at a terminal, or gates mode "proxy"
configured explicitly, in which case a written policy decides and the ledger says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from consort.core.artifacts.registry import ArtifactKind, load_artifact
from consort.core.config import GateMode
from consort.core.derive import artifact_path, derive
from consort.core.drive_lock import hold_writer
from consort.core.errors import ConsortError, UsageError
from consort.core.gate_phase import design_problems
from consort.core.ledger import Actor, Event, Ledger, ledger_path
from consort.core.ledger.events import (
    AmendmentApproved,
    ArtifactAccepted,
    ArtifactSource,
    EscalationResolved,
    FileChange,
    GateApproved,
    GateRejected,
)
from consort.core.project import Project
from consort.core.state import (
    ArtifactCondition,
    FeatureState,
    GateKind,
    State,
    StoryState,
)
from consort.lanes.gate_checks import require_open, short_id
from consort.lanes.gate_review import design_review, release_review, story_review
from consort.lanes.humans import person_present, refuse_agent
from consort.lanes.intake import resolve_feature

Confirm = Callable[[str], bool]


@dataclass(frozen=True)
class ProxyDecision:
    approve: bool
    reasons: tuple[str, ...]
    artifact: ArtifactKind | None  # which artifact to send back, when not approving


def _load(project: Project, ledger: Ledger) -> State:
    return derive(ledger.read(), project.config, project.state_dir)


def _feature(project: Project, state: State, name: str) -> FeatureState:
    key = resolve_feature(project, name, [f.id for f in state.features])
    found = state.feature(key)
    if found is None:  # resolve_feature only returns known keys
        raise UsageError(f"no feature {name!r}")
    return found


def _require_gate(gate: GateKind) -> None:
    """Every gate kind can be approved (kept as the one place that would say otherwise)."""
    if gate not in GateKind:
        raise UsageError(f"there is no {gate} gate")


def _approve_release(
    project: Project,
    ledger: Ledger,
    state: State,
    gate: GateKind,
    subject: str,
    *,
    note: str | None,
    confirm: Confirm,
) -> Event:
    feature = _feature(project, state, subject)
    require_open(feature, gate)
    actor = _confirm_or_proxy(
        project, release_review(feature, gate), confirm, refused=_send_back(feature)
    )
    return ledger.record(GateApproved(gate=gate, note=note), actor, feature.id)


def _send_back(feature: FeatureState) -> str:
    """What a person who answered "no" at a gate can do: nothing was recorded."""
    return (
        "nothing was recorded; to send the work back with what must change: "
        f'`consort reject design {short_id(feature.id)} --note "..."`'
    )


def _confirm_or_proxy(project: Project, question: str, confirm: Confirm, *, refused: str) -> Actor:
    if person_present():
        if not confirm(question):
            raise UsageError("not approved", fix=refused)
        return Actor.HUMAN
    if project.config.gates.mode is GateMode.PROXY:
        return Actor.PROXY
    raise UsageError(
        "approving needs a person at a terminal",
        fix='run it in an interactive terminal, or set [gates] mode = "proxy"',
    )


def _approve_story(
    project: Project,
    ledger: Ledger,
    state: State,
    subject: str,
    *,
    note: str | None,
    confirm: Confirm,
) -> Event:
    feature = _feature(project, state, subject.partition("/")[0])
    story = _story(feature, subject)
    require_open(feature, GateKind.STORY, story)
    actor = _confirm_or_proxy(
        project, story_review(project, feature, story), confirm, refused=_send_back(feature)
    )
    return ledger.record(
        GateApproved(gate=GateKind.STORY, note=note), actor, f"{feature.id}/{story.key}"
    )


def _story(feature: FeatureState, subject: str) -> StoryState:
    """The story `subject` ("F1/S1", or with full names) names in `feature`."""
    story_name = subject.partition("/")[2]
    build = feature.build
    story = None
    if build is not None and story_name:
        story = next((s for s in build.stories if story_name in (s.id, s.key)), None)
    if story is None:
        shown = f"no story {story_name!r} in {feature.id}" if story_name else "no story named"
        raise UsageError(shown, fix=f"e.g. consort approve story {short_id(feature.id)}/S1")
    return story


def design_incomplete(feature: FeatureState) -> list[str]:
    """Why the design of `feature` cannot be approved yet (empty when it can)."""
    return design_problems(feature)


def covered_hashes(feature: FeatureState) -> dict[str, str]:
    hashes = {}
    for step in feature.steps():
        current = feature.artifacts[step.artifact].current_hash
        if current is None:
            raise ConsortError(f"{feature.artifacts[step.artifact].path} cannot be hashed")
        hashes[step.artifact.value] = current
    return hashes


def _record_hand_edits(ledger: Ledger, feature: FeatureState, actor: Actor) -> None:
    for step in feature.steps():
        artifact = feature.artifacts[step.artifact]
        if artifact.condition is ArtifactCondition.HAND_EDITED or (
            artifact.current_hash is not None and artifact.current_hash != artifact.accepted_hash
        ):
            ledger.record(
                ArtifactAccepted(
                    kind=step.artifact,
                    hash=artifact.current_hash,
                    turn=None,
                    source=ArtifactSource.HAND_EDIT,
                    path=artifact.path,
                ),
                actor,
                feature.id,
            )


def approve(
    project: Project, gate: GateKind, subject: str, note: str | None, confirm: Confirm
) -> Event:
    refuse_agent("approving a gate")
    _require_gate(gate)
    with hold_writer(project.state_dir):
        ledger = Ledger.open_for_writing(ledger_path(project.state_dir))
        state = _load(project, ledger)
        if gate is GateKind.STORY:
            return _approve_story(project, ledger, state, subject, note=note, confirm=confirm)
        if gate in (GateKind.DEPLOY, GateKind.PROMOTE):
            return _approve_release(
                project, ledger, state, gate, subject, note=note, confirm=confirm
            )
        feature = _feature(project, state, subject)
        require_open(feature, GateKind.DESIGN)
        hashes = covered_hashes(feature)
        if person_present():
            if not confirm(design_review(project, ledger.read(), feature, hashes)):
                raise UsageError("not approved", fix=_send_back(feature))
            actor = Actor.HUMAN
        elif project.config.gates.mode is GateMode.PROXY:
            decision = proxy_policy(project, feature)
            if not decision.approve:
                raise UsageError(
                    "the proxy policy does not approve: " + "; ".join(decision.reasons)
                )
            actor = Actor.PROXY
        else:
            raise UsageError(
                "approving needs a person at a terminal",
                fix='run it in an interactive terminal, or set [gates] mode = "proxy"',
            )
        _record_hand_edits(ledger, feature, actor)
        return ledger.record(GateApproved(gate=gate, hashes=hashes, note=note), actor, feature.id)


def reject(
    project: Project,
    gate: GateKind,
    subject: str,
    note: str,
    artifact: ArtifactKind | None,
) -> Event:
    refuse_agent("rejecting a gate")
    if not note.strip():
        raise UsageError("a rejection needs a note saying what to change", fix='--note "..."')
    with hold_writer(project.state_dir):
        ledger = Ledger.open_for_writing(ledger_path(project.state_dir))
        state = _load(project, ledger)
        if gate is not GateKind.DESIGN:
            feature = _feature(project, state, subject.partition("/")[0])
            story = _story(feature, subject) if gate is GateKind.STORY else None
            require_open(feature, gate, story)
            raise UsageError(
                f"rejecting the {gate.value} gate is not available yet",
                fix="send the work back to design with "
                f'`consort reject design {short_id(feature.id)} --note "..."`',
            )
        feature = _feature(project, state, subject)
        if not _escalated_build(feature):
            require_open(feature, GateKind.DESIGN)
        target = artifact or _artifact_named_in(note, feature) or ArtifactKind.FEATURE_SPEC
        if target not in {s.artifact for s in feature.steps()}:
            raise UsageError(f"{target.value} is not part of the design of {feature.id}")
        return ledger.record(
            GateRejected(gate=gate, artifact=target, note=note), Actor.HUMAN, feature.id
        )


def _escalated_build(feature: FeatureState) -> bool:
    """A build stopped by an escalation may still be sent back to design: one of the ways out
    `consort status` offers. A promoted feature never is."""
    build = feature.build
    return (
        feature.escalation is not None
        and feature.escalation.step.is_build
        and build is not None
        and not build.promoted
    )


def _artifact_named_in(note: str, feature: FeatureState) -> ArtifactKind | None:
    """The artifact a note names first ("architecture: ...", "the db-design misses ...").

    Names count as whole words only: "deluxe" does not name the UX design.
    """
    lowered = note.lower()
    positions = []
    for step in feature.steps():
        names = {step.artifact.value, step.artifact.value.replace("-", " "), step.role.value}
        for name in names:
            found = re.search(rf"\b{re.escape(name)}\b", lowered)
            if found is not None:
                positions.append((found.start(), step.artifact))
    return min(positions)[1] if positions else None


def retry(project: Project, subject: str, note: str | None) -> Event:
    """Resolve a feature's open escalation: its step gets fresh attempts (and the note)."""
    refuse_agent("resolving an escalation")
    with hold_writer(project.state_dir):
        ledger = Ledger.open_for_writing(ledger_path(project.state_dir))
        state = _load(project, ledger)
        feature = _feature(project, state, subject)
        if feature.escalation is None:
            raise UsageError(f"{feature.id} has no open escalation")
        escalation = feature.escalation
        return ledger.record(
            EscalationResolved(
                step=escalation.step, note=note, story=escalation.story, item=escalation.item
            ),
            Actor.HUMAN,
            feature.id,
        )


def proxy_policy(project: Project, feature: FeatureState) -> ProxyDecision:
    """The human proxy's written policy for the design gate: approve a design only when every
    artifact validates and the artifacts agree with each other (every acceptance criterion has
    a test item; designs name only stories the spec has). Anything else goes back to a person."""
    from consort.core.artifacts.crosscheck import (
        check_db_design_against_spec,
        check_test_list_against_spec,
        check_ux_against_spec,
    )

    problems = design_incomplete(feature)
    if problems:
        return ProxyDecision(False, tuple(problems), None)

    def path(kind: ArtifactKind) -> Path:
        return artifact_path(project.state_dir, feature.id, kind)

    spec = load_artifact(ArtifactKind.FEATURE_SPEC, path(ArtifactKind.FEATURE_SPEC))
    checks: list[tuple[ArtifactKind, list[str]]] = [
        (
            ArtifactKind.TEST_LIST,
            check_test_list_against_spec(
                load_artifact(ArtifactKind.TEST_LIST, path(ArtifactKind.TEST_LIST)), spec
            ),
        ),
        (
            ArtifactKind.DB_DESIGN,
            check_db_design_against_spec(
                load_artifact(ArtifactKind.DB_DESIGN, path(ArtifactKind.DB_DESIGN)), spec
            ),
        ),
    ]
    if feature.user_facing:
        ux = load_artifact(ArtifactKind.UX, path(ArtifactKind.UX))
        checks.append((ArtifactKind.UX, check_ux_against_spec(ux, spec)))
    for kind, found in checks:
        if found:
            return ProxyDecision(False, tuple(found), kind)
    return ProxyDecision(True, ("every artifact validates and they agree",), None)


def amend(project: Project, subject: str, note: str, confirm: Confirm) -> Event:
    """Approve the product owner's own change to a cycle's test, made in the story's worktree.

    The change is committed there and recorded with every protected file's blob id before and
    after; from then on that commit, not the RED commit, is what GREEN must leave untouched.
    """
    from consort.adapters.vcs import Git
    from consort.core.state import ItemStage
    from consort.lanes.build.context import STATE_GUARD
    from consort.lanes.verify.cycles import protected_blobs

    refuse_agent("amending a test")
    if not note.strip():
        raise UsageError(
            "an amendment needs a note saying why the test changes", fix='--note "..."'
        )
    feature_name, _, rest = subject.partition("/")
    story_name, _, item_id = rest.partition("/")
    with hold_writer(project.state_dir):
        ledger = Ledger.open_for_writing(ledger_path(project.state_dir))
        state = _load(project, ledger)
        feature = _feature(project, state, feature_name)
        story = next(
            (
                s
                for s in (feature.build.stories if feature.build else ())
                if story_name in (s.id, s.key)
            ),
            None,
        )
        item = next((i for i in story.items if i.id == item_id), None) if story else None
        if story is None or item is None or story.worktree is None:
            raise UsageError(f"no cycle {subject!r}", fix="e.g. consort amend F1/S1/T3 --note ...")
        if item.stage is not ItemStage.GREEN or item.red_commit is None:
            raise UsageError(
                f"{item.id} is not waiting for GREEN: only its test can be amended then"
            )
        git = Git(Path(story.worktree))
        protected = project.config.build.protected
        before = protected_blobs(git, item.red_commit, protected)
        git.run("add", "-A")
        tree = git.out("write-tree")
        git.run("reset", "-q")
        after = protected_blobs(git, tree, protected)
        changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
        if not changed:
            raise UsageError(
                f"no test was changed in {story.worktree}",
                fix="edit the test there first, then run `consort amend` again",
            )
        if any(glob_match_any(path, (STATE_GUARD,)) for path in changed):
            raise UsageError("an amendment cannot change Consort's own files")
        listing = "\n".join(f"  {path}" for path in changed)
        actor = _confirm_or_proxy(
            project,
            f"Amend the test of {item.id} ({note})?\n{listing}\n",
            confirm,
            refused=f"nothing was recorded; the edited test stays in {story.worktree}",
        )
        commit = git.commit_all(f"AMEND {item.id}: {note}")
        files = {p: FileChange(before=before.get(p), after=after.get(p)) for p in changed}
        event = ledger.record(
            AmendmentApproved(commit=commit, previous=item.red_commit, files=files, note=note),
            actor,
            f"{feature.id}/{story.key}/{item.id}",
        )
        if feature.escalation is not None:
            ledger.record(
                EscalationResolved(
                    step=feature.escalation.step,
                    note=f"the test was amended: {note}",
                    story=story.key,
                    item=item.id,
                ),
                actor,
                feature.id,
            )
        return event


def glob_match_any(path: str, patterns: tuple[str, ...]) -> bool:
    from consort.adapters.scope import glob_match

    return any(glob_match(pattern, path) for pattern in patterns)
