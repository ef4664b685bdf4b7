"""`derive`: the State from the ledger's events and what the artifact files hold.

Events are appended to a real ledger (so they are exactly what the file stores); the artifact
files are a fake `ArtifactFiles`: a dict of path -> (canonical hash, validation problems), plus
the set of turn outputs that exist.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from consort.core.artifacts.canonical import artifact_hash
from consort.core.artifacts.registry import ArtifactKind
from consort.core.config import Config, GateMode
from consort.core.derive import DiskArtifacts, artifact_path, derive, turn_output
from consort.core.ledger import Actor, Event, EventType, Ledger, ledger_path
from consort.core.state import (
    ArtifactCondition,
    FeatureState,
    GateStatus,
    State,
)
from consort.core.vocabulary import Step
from tests import helpers

KEY = "F1-stock-visibility"
FIXTURES = helpers.FIXTURES / "artifacts"

SPEC = ArtifactKind.FEATURE_SPEC
ARCH = ArtifactKind.ARCHITECTURE
DB = ArtifactKind.DB_DESIGN
TESTS = ArtifactKind.TEST_LIST
UX = ArtifactKind.UX
DESIGN = (SPEC, ARCH, DB, TESTS, UX)


def digest(char: str) -> str:
    """A stand-in SHA-256 hex digest, one per character."""
    return char * 64


class FakeFiles:
    """Artifact files as derive sees them, without a disk."""

    def __init__(self) -> None:
        self.files: dict[Path, tuple[str | None, list[str]]] = {}
        self.outputs: set[Path] = set()

    def read(self, kind: ArtifactKind, path: Path) -> tuple[str | None, list[str]]:
        return self.files.get(path, (None, ["file not found"]))

    def exists(self, path: Path) -> bool:
        return path in self.files or path in self.outputs

    def load(self, kind: ArtifactKind, path: Path) -> Any:
        return None  # no parsed content: the build lane has nothing to read here


class Project:
    """A ledger in tmp_path, the fake files, and helpers that write events the way Consort does."""

    def __init__(self, root: Path) -> None:
        self.state_dir = root / ".consort"
        self.ledger = Ledger(ledger_path(self.state_dir))
        self.files = FakeFiles()
        self.config = Config()
        self.turns = 0

    # -- events --

    def event(self, type: EventType, actor: Actor, subject: str, data: dict[str, Any]) -> Event:
        return self.ledger.append(type, actor, subject, data)

    def feature(self, key: str = KEY, *, user_facing: bool = True, title: str = "Stock") -> None:
        self.event(
            EventType.FEATURE_CREATED,
            Actor.HUMAN,
            key,
            {"title": title, "user_facing": user_facing},
        )

    def turn_name(self, kind: ArtifactKind) -> str:
        self.turns += 1
        return f"{self.turns:04d}-role-{kind.value}"

    def accept(self, kind: ArtifactKind, hashed: str, *, key: str = KEY, write: bool = True) -> str:
        """A turn's output accepted (and, unless `write` is False, copied into place)."""
        turn = self.turn_name(kind)
        self.event(
            EventType.ARTIFACT_ACCEPTED,
            Actor.ORCHESTRATOR,
            key,
            {"kind": kind.value, "hash": hashed, "turn": turn, "source": "turn"},
        )
        self.files.outputs.add(turn_output(self.state_dir, turn, kind))
        if write:
            self.put(kind, hashed, key=key)
        return turn

    def fail(self, step: Step, feedback: str, *, key: str = KEY) -> None:
        self.event(
            EventType.TURN_FAILED,
            Actor.ORCHESTRATOR,
            key,
            {"step": step.value, "errors": [feedback], "feedback": feedback},
        )

    def approve(self, hashes: dict[ArtifactKind, str], actor: Actor = Actor.HUMAN) -> Event:
        return self.event(
            EventType.GATE_APPROVED,
            actor,
            KEY,
            {"gate": "design", "hashes": {k.value: v for k, v in hashes.items()}, "note": None},
        )

    def reject(self, artifact: ArtifactKind, note: str) -> Event:
        return self.event(
            EventType.GATE_REJECTED,
            Actor.HUMAN,
            KEY,
            {"gate": "design", "artifact": artifact.value, "note": note},
        )

    # -- files --

    def path(self, kind: ArtifactKind, key: str = KEY) -> Path:
        return artifact_path(self.state_dir, key, kind)

    def put(self, kind: ArtifactKind, hashed: str | None, *problems: str, key: str = KEY) -> None:
        self.files.files[self.path(kind, key)] = (hashed, list(problems))

    def remove(self, kind: ArtifactKind, key: str = KEY) -> None:
        del self.files.files[self.path(kind, key)]

    # -- deriving --

    def derive(self) -> State:
        return derive(self.ledger.read(), self.config, self.state_dir, self.files)

    def one(self, key: str = KEY) -> FeatureState:
        found = self.derive().feature(key)
        assert found is not None
        return found

    def condition(self, kind: ArtifactKind) -> ArtifactCondition:
        return self.one().artifacts[kind].condition


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path)


def shown(kind: ArtifactKind, key: str = KEY) -> str:
    return f".consort/features/{key}/{kind.value}.json"


# ---- features -----------------------------------------------------------------------------------


def test_no_events_no_features(project: Project) -> None:
    state = project.derive()
    assert state.features == ()
    assert state.gate_mode is GateMode.INTERACTIVE
    assert state.max_retries == 2


def test_config_sets_the_gate_mode_and_retries(project: Project) -> None:
    project.config = Config.model_validate({"gates": {"mode": "proxy"}, "turns": {"retries": 0}})
    state = project.derive()
    assert (state.gate_mode, state.max_retries) == (GateMode.PROXY, 0)


def test_a_new_feature_has_every_artifact_missing(project: Project) -> None:
    project.feature(user_facing=True, title="Stock visibility")
    feature = project.one()
    assert (feature.id, feature.title, feature.user_facing) == (KEY, "Stock visibility", True)
    assert [s.artifact for s in feature.steps()] == list(DESIGN)
    for kind in DESIGN:
        artifact = feature.artifacts[kind]
        assert artifact.condition is ArtifactCondition.MISSING
        assert artifact.path == shown(kind)
        assert artifact.accepted_hash is None
    assert feature.failures == {} and feature.feedback == {}
    assert feature.escalation is None
    assert feature.design_gate.status is GateStatus.OPEN


def test_a_feature_that_is_not_user_facing_has_no_ux_step(project: Project) -> None:
    project.feature(user_facing=False)
    assert ArtifactKind.UX not in [s.artifact for s in project.one().steps()]


def test_events_of_other_subjects_and_unknown_features_are_ignored(project: Project) -> None:
    project.event(EventType.PROJECT_INITIALISED, Actor.HUMAN, "project", {})
    project.event(
        EventType.ARTIFACT_ACCEPTED,
        Actor.ORCHESTRATOR,
        "F7-never-created",
        {"kind": "feature-spec", "hash": digest("1"), "turn": "0001-x", "source": "turn"},
    )
    project.feature()
    project.feature("F2-second", user_facing=False)
    project.fail(Step.SPEC, "second's failure", key="F2-second")
    state = project.derive()
    assert [f.id for f in state.features] == [KEY, "F2-second"]
    assert state.features[0].failures == {}
    assert state.features[1].failures == {Step.SPEC: 1}


# ---- artifact conditions -------------------------------------------------------------------------


def test_accepted_file_matching_the_ledger_is_accepted(project: Project) -> None:
    project.feature()
    turn = project.accept(SPEC, digest("1"))
    artifact = project.one().artifacts[SPEC]
    assert artifact.condition is ArtifactCondition.ACCEPTED
    assert artifact.current_hash == artifact.accepted_hash == digest("1")
    assert artifact.accepted_turn == turn
    assert artifact.problem is None


def test_valid_file_changed_after_acceptance_is_hand_edited(project: Project) -> None:
    project.feature()
    project.accept(SPEC, digest("1"))
    project.put(SPEC, digest("2"))
    artifact = project.one().artifacts[SPEC]
    assert artifact.condition is ArtifactCondition.HAND_EDITED
    assert (artifact.current_hash, artifact.accepted_hash) == (digest("2"), digest("1"))


def test_valid_file_nobody_accepted_is_hand_edited(project: Project) -> None:
    project.feature()
    project.put(ARCH, digest("9"))
    assert project.condition(ARCH) is ArtifactCondition.HAND_EDITED


@pytest.mark.parametrize("accepted_first", [True, False], ids=["after-acceptance", "never"])
def test_file_that_is_not_json_is_invalid(project: Project, accepted_first: bool) -> None:
    project.feature()
    if accepted_first:
        project.accept(ARCH, digest("1"))
    project.put(ARCH, None, "invalid JSON at line 1 column 3: Expecting value")
    artifact = project.one().artifacts[ARCH]
    assert artifact.condition is ArtifactCondition.INVALID
    assert artifact.problem == "invalid JSON at line 1 column 3: Expecting value"


def test_json_that_breaks_the_schema_is_invalid(project: Project) -> None:
    project.feature()
    project.accept(ARCH, digest("1"))
    project.put(ARCH, digest("3"), "layers: Field required", "nfrs: Field required")
    artifact = project.one().artifacts[ARCH]
    assert artifact.condition is ArtifactCondition.INVALID
    assert artifact.problem == "layers: Field required; nfrs: Field required"


def test_accepted_but_not_copied_is_pending_copy(project: Project) -> None:
    # The crash came between the ledger append and the copy: the turn's output is there.
    project.feature()
    turn = project.accept(SPEC, digest("1"), write=False)
    artifact = project.one().artifacts[SPEC]
    assert artifact.condition is ArtifactCondition.PENDING_COPY
    assert artifact.accepted_turn == turn


def test_file_holding_an_older_accepted_version_is_pending_copy(project: Project) -> None:
    project.feature()
    project.accept(ARCH, digest("1"))
    project.reject(ARCH, "architecture: split the service layer")
    project.accept(ARCH, digest("2"), write=False)  # the redo, accepted but not yet copied
    artifact = project.one().artifacts[ARCH]
    assert artifact.condition is ArtifactCondition.PENDING_COPY
    assert (artifact.current_hash, artifact.accepted_hash) == (digest("1"), digest("2"))


def test_accepted_but_gone_with_its_turn_output_is_missing(project: Project) -> None:
    project.feature()
    turn = project.accept(SPEC, digest("1"), write=False)
    project.files.outputs.discard(turn_output(project.state_dir, turn, SPEC))
    assert project.condition(SPEC) is ArtifactCondition.MISSING


def test_deleted_accepted_file_is_restored_from_its_turn(project: Project) -> None:
    project.feature()
    project.accept(SPEC, digest("1"))
    project.remove(SPEC)
    assert project.condition(SPEC) is ArtifactCondition.PENDING_COPY


def test_hand_edit_recorded_in_the_ledger_is_accepted(project: Project) -> None:
    project.feature()
    project.accept(SPEC, digest("1"))
    project.put(SPEC, digest("2"))
    project.event(
        EventType.ARTIFACT_ACCEPTED,
        Actor.HUMAN,
        KEY,
        {"kind": "feature-spec", "hash": digest("2"), "turn": None, "source": "hand-edit"},
    )
    artifact = project.one().artifacts[SPEC]
    assert artifact.condition is ArtifactCondition.ACCEPTED
    assert artifact.accepted_turn is None


# ---- failed attempts --------------------------------------------------------------------------


def test_failed_turns_are_counted_per_step_with_the_last_feedback(project: Project) -> None:
    project.feature()
    project.accept(SPEC, digest("1"))
    project.fail(Step.ARCHITECTURE, "architecture: invalid JSON at line 1")
    project.fail(Step.ARCHITECTURE, "no architecture written")
    project.fail(Step.DB_DESIGN, "the agent exited 3")
    feature = project.one()
    assert feature.failures == {Step.ARCHITECTURE: 2, Step.DB_DESIGN: 1}
    assert feature.feedback[Step.ARCHITECTURE] == "no architecture written"


def test_acceptance_resets_the_failures_of_its_step_only(project: Project) -> None:
    project.feature()
    project.fail(Step.SPEC, "no feature-spec written")
    project.fail(Step.ARCHITECTURE, "early failure of another step")
    project.accept(SPEC, digest("1"))
    feature = project.one()
    assert Step.SPEC not in feature.failures and Step.SPEC not in feature.feedback
    assert feature.failures == {Step.ARCHITECTURE: 1}


# ---- escalations --------------------------------------------------------------------------------


def test_escalation_raised_then_resolved_with_a_note(project: Project) -> None:
    project.feature()
    project.fail(Step.SPEC, "invalid JSON")
    project.fail(Step.SPEC, "invalid JSON")
    raised = project.event(
        EventType.ESCALATION_RAISED,
        Actor.ORCHESTRATOR,
        KEY,
        {"step": "spec", "reason": "spec-author failed 2 attempts at spec"},
    )
    escalation = project.one().escalation
    assert escalation is not None
    assert (escalation.step, escalation.seq) == (Step.SPEC, raised.seq)
    assert escalation.reason == "spec-author failed 2 attempts at spec"
    assert project.one().failures == {Step.SPEC: 2}  # still counted while it waits

    project.event(
        EventType.ESCALATION_RESOLVED,
        Actor.HUMAN,
        KEY,
        {"step": "spec", "note": "write strict JSON, double quotes only"},
    )
    feature = project.one()
    assert feature.escalation is None
    assert feature.failures == {}
    assert "write strict JSON, double quotes only" in feature.feedback[Step.SPEC]


def test_escalation_resolved_without_a_note_keeps_the_last_feedback(project: Project) -> None:
    project.feature()
    project.fail(Step.SPEC, "no feature-spec written")
    project.event(EventType.ESCALATION_RAISED, Actor.ORCHESTRATOR, KEY, {"step": "spec"})
    project.event(EventType.ESCALATION_RESOLVED, Actor.HUMAN, KEY, {"step": "spec", "note": None})
    feature = project.one()
    assert feature.escalation is None and feature.failures == {}
    assert feature.feedback[Step.SPEC] == "no feature-spec written"


# ---- the design gate ----------------------------------------------------------------------------


def accept_all(project: Project) -> dict[ArtifactKind, str]:
    hashes = {kind: digest(str(n)) for n, kind in enumerate(DESIGN, start=1)}
    for kind, hashed in hashes.items():
        project.accept(kind, hashed)
    return hashes


def test_approval_binds_to_the_hashes(project: Project) -> None:
    project.feature()
    hashes = accept_all(project)
    event = project.approve(hashes, Actor.PROXY)
    gate = project.one().design_gate
    assert gate.status is GateStatus.APPROVED
    assert gate.approved_hashes == {k.value: v for k, v in hashes.items()}
    assert gate.drifted == ()
    assert (gate.actor, gate.seq) == ("proxy", event.seq)


def test_changed_file_after_approval_is_drift_naming_the_file(project: Project) -> None:
    project.feature()
    hashes = accept_all(project)
    project.approve(hashes)
    project.put(DB, digest("e"))  # a valid hand edit
    project.put(UX, None, "invalid JSON at line 2 column 1")  # and a broken one
    feature = project.one()
    assert feature.design_gate.status is GateStatus.APPROVED
    assert feature.design_gate.drifted == (shown(DB), shown(UX))
    assert feature.artifacts[DB].condition is ArtifactCondition.HAND_EDITED


def test_deleted_file_after_approval_is_drift(project: Project) -> None:
    project.feature()
    hashes = accept_all(project)
    project.approve(hashes)
    project.remove(SPEC)
    assert project.one().design_gate.drifted == (shown(SPEC),)


def test_approval_of_another_gate_is_not_the_design_gate(project: Project) -> None:
    project.feature()
    project.event(EventType.GATE_APPROVED, Actor.HUMAN, KEY, {"gate": "deploy", "hashes": {}})
    assert project.one().design_gate.status is GateStatus.OPEN


def test_rejection_sends_back_the_named_artifact_and_the_later_ones(project: Project) -> None:
    project.feature()
    accept_all(project)
    event = project.reject(ARCH, "architecture: the service layer must not import routes")
    feature = project.one()
    assert feature.design_gate.status is GateStatus.REJECTED
    assert feature.design_gate.seq == event.seq
    assert feature.artifacts[SPEC].condition is ArtifactCondition.ACCEPTED
    for kind in (ARCH, DB, TESTS, UX):
        artifact = feature.artifacts[kind]
        assert artifact.condition is ArtifactCondition.NEEDS_REDO, kind
        assert artifact.feedback is not None
        assert "the service layer must not import routes" in artifact.feedback
    assert "rejected" in (feature.artifacts[ARCH].feedback or "")
    assert "architecture is being revised" in (feature.artifacts[DB].feedback or "")


def test_re_acceptance_clears_the_redo_in_order(project: Project) -> None:
    project.feature()
    accept_all(project)
    project.reject(DB, "db-design: add an index on sku")
    project.accept(DB, digest("d"))
    feature = project.one()
    assert feature.artifacts[DB].condition is ArtifactCondition.ACCEPTED
    assert feature.artifacts[DB].accepted_hash == digest("d")
    assert feature.artifacts[TESTS].condition is ArtifactCondition.NEEDS_REDO
    assert feature.artifacts[UX].condition is ArtifactCondition.NEEDS_REDO
    project.accept(TESTS, digest("t"))
    project.accept(UX, digest("u"))
    feature = project.one()
    assert all(feature.artifacts[k].condition is ArtifactCondition.ACCEPTED for k in DESIGN)
    assert feature.design_gate.status is GateStatus.REJECTED  # until approved again


def test_approval_after_rejection_opens_nothing_again(project: Project) -> None:
    project.feature()
    hashes = accept_all(project)
    project.reject(SPEC, "feature-spec: AC3 is ambiguous")
    for kind in DESIGN:
        hashes[kind] = digest(kind.value[0])
        project.accept(kind, hashes[kind])
    project.approve(hashes)
    feature = project.one()
    assert feature.design_gate.status is GateStatus.APPROVED
    assert feature.design_gate.drifted == ()
    assert all(feature.artifacts[k].condition is ArtifactCondition.ACCEPTED for k in DESIGN)


# ---- purity and the real reader -----------------------------------------------------------------


def test_deriving_twice_gives_equal_states(project: Project) -> None:
    project.feature()
    accept_all(project)
    project.reject(TESTS, "test-list: T4 tests nothing")
    project.fail(Step.TEST_LIST, "no test-list written")
    events = project.ledger.read()
    before = project.ledger.path.read_bytes()
    first = derive(events, project.config, project.state_dir, project.files)
    assert derive(events, project.config, project.state_dir, project.files) == first
    assert project.ledger.path.read_bytes() == before


def test_disk_artifacts_hash_valid_files_and_report_broken_ones(tmp_path: Path) -> None:
    reader = DiskArtifacts()
    valid = tmp_path / "architecture.json"
    data = json.loads((FIXTURES / "architecture.json").read_text())
    valid.write_text(json.dumps(data, indent=7, sort_keys=False))  # formatting is not content
    assert reader.read(ARCH, valid) == (artifact_hash(FIXTURES / "architecture.json"), [])

    broken = tmp_path / "broken.json"
    broken.write_text('{"feature": "F1", ')
    hashed, problems = reader.read(ARCH, broken)
    assert hashed is None
    assert problems and "invalid JSON" in problems[0]

    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"feature": "F1"}')
    hashed, problems = reader.read(ARCH, wrong)
    assert hashed is not None
    assert any("layers" in p for p in problems)

    assert reader.read(ARCH, tmp_path / "absent.json") == (None, ["file not found"])
    assert not reader.exists(tmp_path / "absent.json")


def test_derive_reads_real_files(tmp_path: Path) -> None:
    state_dir = tmp_path / ".consort"
    ledger = Ledger(ledger_path(state_dir))
    ledger.append(EventType.FEATURE_CREATED, Actor.HUMAN, KEY, {"title": "x", "user_facing": True})
    target = artifact_path(state_dir, KEY, SPEC)
    target.parent.mkdir(parents=True)
    target.write_bytes((FIXTURES / "feature-spec.json").read_bytes())
    ledger.append(
        EventType.ARTIFACT_ACCEPTED,
        Actor.ORCHESTRATOR,
        KEY,
        {"kind": "feature-spec", "hash": artifact_hash(target), "turn": "0001-a", "source": "turn"},
    )
    state = derive(ledger.read(), Config(), state_dir)
    feature = state.feature(KEY)
    assert feature is not None
    assert feature.artifacts[SPEC].condition is ArtifactCondition.ACCEPTED
    assert feature.artifacts[ARCH].condition is ArtifactCondition.MISSING
