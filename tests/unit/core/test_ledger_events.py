"""The ledger's typed payloads: one model per event type, written and read without changing a
byte of what the ledger held before they existed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from consort.core.ledger import (
    GENESIS,
    PAYLOADS,
    Actor,
    Event,
    EventDataInvalid,
    EventPayload,
    EventType,
    Ledger,
    PayloadIncomplete,
    canonical_json,
    ledger_path,
    line_hash,
)
from consort.core.ledger import events as ev
from consort.core.vocabulary import ArtifactKind, GateKind, Role, Step, Verdict
from tests.helpers import FIXTURES

RUN: dict[str, Any] = {
    "run": "0007-green-S1-T1",
    "commit": "c" * 40,
    "parent_database": "feature_f1",
    "database": "feature_f1_run_7",
    "migrate_exit": 0,
    "exit_code": 0,
    "timed_out": False,
    "report_sha256": "d" * 64,
    "counts": {"passed": 3, "failed": 0},
    "passing": ["tests/test_a.py::test_one", "tests/test_a.py::test_two"],
    "tests": ["tests/test_a.py::test_one", "tests/test_a.py::test_two"],
    "test_seconds": 0.512,
    "overhead_seconds": 0.0,
    "migrate_seconds": 1.25,
}

# One payload per event type, shaped as Consort's writers shape them.
SAMPLES: dict[EventType, EventPayload] = {
    p.event_type: p
    for p in (
        ev.ProjectInitialised(consort="0.1.0"),
        ev.IntakeRecorded(kind="product", path=".consort/intake/product.md"),
        ev.FeatureCreated(
            title="Stock visibility",
            user_facing=True,
            request=".consort/features/F1/feature-request.json",
            hash="a" * 64,
            words=".consort/intake/F1.md",
        ),
        ev.TurnStarted(
            turn="0001-spec-author-spec", role=Role.SPEC_AUTHOR, step=Step.SPEC, attempt=1
        ),
        ev.TurnFinished(
            turn="0009-driver-green",
            role=Role.DRIVER,
            step=Step.GREEN,
            attempt=1,
            exit_code=0,
            duration_s=2.5,
            killed=None,
        ),
        ev.TurnFailed(
            turn="0003-architect-architecture",
            role=Role.ARCHITECT,
            step=Step.ARCHITECTURE,
            attempt=2,
            exit_code=1,
            duration_s=0.25,
            killed="inactivity",
            errors=["the agent exited with code 1"],
            feedback="the agent exited with code 1",
        ),
        ev.ArtifactAccepted(
            kind=ArtifactKind.FEATURE_SPEC,
            hash="b" * 64,
            turn="0001-spec-author-spec",
            source=ev.ArtifactSource.TURN,
            path=".consort/features/F1/feature-spec.json",
        ),
        ev.ArtifactRejected(),
        ev.ViolationRecorded(
            turn="0009-driver-green",
            role=Role.DRIVER,
            path="tests/test_a.py",
            change="modified",
            rule="protected: tests/**",
        ),
        ev.GateFrozen(),
        ev.GateApproved(gate=GateKind.DESIGN, hashes={"feature-spec": "b" * 64}, note=None),
        ev.GateRejected(gate=GateKind.DESIGN, artifact=ArtifactKind.UX, note="ux: no empty state"),
        ev.GateReopened(),
        ev.EscalationRaised(
            step=Step.GREEN, reason="3 failed attempts", feedback="fix it", story="S1", item="T1"
        ),
        ev.EscalationResolved(step=Step.GREEN, note="try smaller", story="S1", item="T1"),
        ev.DriveStarted(until=None, max_steps=10),
        ev.DriveStopped(reason="await-gate", steps=4, exit_code=0),
        ev.CyclePlanned(),
        ev.RedVerified(
            turn="0008-navigator-red",
            commit="c" * 40,
            plan={"test_files": ["tests/test_a.py"], "test_ids": ["tests/test_a.py::test_one"]},
            run=RUN,
        ),
        ev.RedFailed(
            turn="0008-navigator-red",
            step=Step.RED,
            attempt=1,
            reasons=["no test was written"],
            feedback="no test was written",
            run=None,
        ),
        ev.GreenVerified(turn="0009-driver-green", commit="e" * 40, red_commit="c" * 40, run=RUN),
        ev.GreenFailed(
            turn="0009-driver-green",
            step=Step.REPAIR,
            attempt=2,
            reasons=["tests/test_a.py::test_one failed"],
            feedback="tests/test_a.py::test_one failed\n\nTest output (tail):\nE assert 1 == 2",
            run=RUN,
        ),
        ev.ReviewRecorded(
            turn="0010-navigator-review",
            verdict=Verdict.REFACTOR,
            reasons=["name the helper"],
            smells=[{"check": "long-function", "path": "app/x.py", "line": 3}],
        ),
        ev.RefactorVerified(
            turn="0011-driver-refactor",
            commit="e" * 40,
            red_commit="c" * 40,
            unchanged=True,
            run=None,
        ),
        ev.RefactorFailed(
            turn="0011-driver-refactor",
            step=Step.REFACTOR,
            attempt=1,
            reasons=["a test failed"],
            feedback="a test failed",
            run=RUN,
        ),
        ev.BranchCreated(branch="feature/F1", database="feature_f1", base="main"),
        ev.DeployVerified(
            commit="f" * 40,
            parent_database="main_db",
            run=RUN,
            smoke=[{"path": "/health", "status": 200}],
        ),
        ev.DeployFailed(
            commit="f" * 40,
            parent_database="main_db",
            run=RUN,
            smoke=[{"path": "/health", "status": None}],
            reasons=["GET /health answered nothing"],
        ),
        ev.FeaturePromoted(commit="f" * 40, into="main", run=RUN, deleted=["feature/F1"]),
        ev.PromoteStep(
            step=ev.PromoteStepName.MERGE,
            outcome=ev.StepOutcome.BEGUN,
            into="main",
            commit="f" * 40,
            base_commit="e" * 40,
            feature_commit="d" * 40,
        ),
        ev.ServerRestarted(run="0007-green-S1-T1", reason="it stopped answering", restart=1),
        ev.StoryAccepted(),
        ev.StoryMerged(commit="f" * 40, into="feature/F1", run=RUN),
        ev.AmendmentApproved(
            commit="1" * 40,
            previous="c" * 40,
            files={"tests/test_a.py": {"before": "2" * 40, "after": "3" * 40}},
            note="the test asked for the wrong unit",
        ),
        ev.SpikeStarted(
            name="try-brin",
            feature="F1-stock",
            branch="spike/try-brin",
            parent="main",
            database="spike_try_brin",
            worktree=".consort/worktrees/_spikes/try-brin",
            base_commit="a" * 40,
            ttl_s=7200.0,
            expires="2026-01-01T12:00:00.000000Z",
        ),
        ev.SpikeEnded(
            name="try-brin",
            reason=ev.SpikeEndReason.EXPIRED,
            notes=".consort/spikes/try-brin/notes.md",
            notes_sha256="e" * 64,
            head="b" * 40,
        ),
        ev.ExperimentStarted(
            number=1,
            red_commit="c" * 40,
            concurrency=2,
            concurrency_note="",
            approaches=[
                {
                    "name": "lean",
                    "branch": "experiment/F1/S1/T1-1/lean",
                    "database": "experiment_f1_s1_t1_1_lean_0a1b2c3d",
                    "worktree": ".consort/worktrees/_experiments/F1/S1/T1-1/lean",
                    "adapter": "command",
                    "model": None,
                    "notes": "keep it small",
                    "max_cycles": 3,
                    "wall_time_s": 600.0,
                }
            ],
        ),
        ev.ApproachBegan(number=1, approach="lean", attempt=2, spent_s=4.0),
        ev.ApproachAttempted(
            number=1,
            approach="lean",
            attempt=2,
            step=Step.REPAIR,
            turn="0012-driver-repair",
            passed=True,
            commit="d" * 40,
            reasons=[],
            run=RUN,
            schema_changes=["+ table skus"],
            seconds=3.5,
        ),
        ev.ApproachEnded(
            number=1,
            approach="lean",
            outcome=ev.ApproachOutcome.PASSED,
            cycles=2,
            seconds=7.25,
            commit="d" * 40,
            message="passed at attempt 2",
            smells=[],
            lines_added=12,
            lines_removed=1,
        ),
        ev.ExperimentSelected(
            number=1,
            approach="lean",
            commit="d" * 40,
            archived=["archive/experiment/F1/S1/T1-1/wide"],
            dropped=["experiment_f1_s1_t1_1_lean_0a1b2c3d"],
            note="smallest change",
        ),
        ev.ExperimentDiscarded(number=2, archived=[], dropped=[], note="none fits"),
    )
}


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    return Ledger(ledger_path(tmp_path / ".consort"))


def test_every_event_type_has_exactly_one_model_and_a_sample():
    assert set(PAYLOADS) == set(EventType)
    assert set(SAMPLES) == set(EventType)
    assert len(set(PAYLOADS.values())) == len(EventType)


@pytest.mark.parametrize("kind", list(EventType), ids=lambda k: k.value)
def test_every_event_type_round_trips_through_the_ledger(ledger: Ledger, kind: EventType):
    payload = SAMPLES[kind]
    written = ledger.record(payload, Actor.ORCHESTRATOR, "F1/S1/T1")
    (read,) = Ledger(ledger.path).read()
    assert read.type is kind
    assert read.data == written.data == payload.to_data()
    assert read.payload == payload
    assert type(read.payload).of(read) == payload
    # The re-written event is the same line, byte for byte: same hash.
    rewritten = Event(
        read.seq, read.time, read.type, read.actor, read.subject, read.payload.to_data(), read.prev
    )
    assert rewritten.to_line() == ledger.path.read_bytes().rstrip(b"\n")
    assert rewritten.hash == written.hash


def test_a_typed_payload_stores_the_dict_writers_built_by_hand(ledger: Ledger):
    hand_built = {
        "turn": "0001-spec-author-spec",
        "role": "spec-author",
        "step": "spec",
        "attempt": 1,
    }
    typed = ledger.record(SAMPLES[EventType.TURN_STARTED], Actor.ORCHESTRATOR, "F1")
    assert typed.data == hand_built
    assert canonical_json(typed.data) == canonical_json(hand_built)


def test_fields_only_some_writers_give_are_left_out_when_not_given():
    story = ev.GateApproved(gate=GateKind.STORY, note="fine")
    assert story.to_data() == {"gate": "story", "note": "fine"}
    design = ev.GateApproved(gate=GateKind.DESIGN, note=None, hashes={"ux": "9" * 64})
    assert design.to_data() == {"gate": "design", "note": None, "hashes": {"ux": "9" * 64}}
    stopped = ev.DriveStopped(reason="interrupted")
    assert stopped.to_data() == {"reason": "interrupted"}


def test_a_payload_lacking_a_field_every_writer_gives_is_refused(ledger: Ledger):
    incomplete = ev.ArtifactAccepted(kind=ArtifactKind.UX, hash="a" * 64, source="turn", path="x")
    with pytest.raises(PayloadIncomplete, match="turn"):
        ledger.record(incomplete, Actor.ORCHESTRATOR, "F1")
    assert not ledger.path.exists()


def _old_line(seq: int, kind: str, data: dict[str, Any], prev: str) -> bytes:
    raw = {
        "seq": seq,
        "time": "2024-05-01T10:00:00.000000Z",
        "type": kind,
        "actor": "orchestrator",
        "subject": "F1",
        "data": data,
        "prev": prev,
    }
    return json.dumps(raw, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def test_an_old_format_ledger_reads_leniently_and_keeps_its_hashes(ledger: Ledger):
    """Lines an earlier version wrote: keys missing, keys no model knows, an int duration."""
    first = _old_line(
        1, "turn.finished", {"turn": "0001-x", "duration_s": 3, "legacy": [1]}, GENESIS
    )
    second = _old_line(2, "gate.approved", {"gate": "design"}, line_hash(first))
    third = _old_line(3, "feature.created", {"title": "stock"}, line_hash(second))
    ledger.path.parent.mkdir(parents=True)
    ledger.path.write_bytes(first + b"\n" + second + b"\n" + third + b"\n")
    finished, approved, created = Ledger(ledger.path).read()

    turn = ev.TurnFinished.of(finished)
    assert (turn.turn, turn.duration_s, turn.exit_code, turn.step) == ("0001-x", 3, None, None)
    assert turn.model_extra == {"legacy": [1]}
    gate = ev.GateApproved.of(approved)
    assert (gate.gate, gate.note, gate.hashes) == (GateKind.DESIGN, None, {})
    feature = ev.FeatureCreated.of(created)
    assert (feature.title, feature.user_facing) == ("stock", False)
    for event, line in zip((finished, approved, created), (first, second, third), strict=True):
        assert event.payload.to_data() == event.data
        again = Event(
            event.seq,
            event.time,
            event.type,
            event.actor,
            event.subject,
            event.payload.to_data(),
            event.prev,
        )
        assert again.to_line() == line


def test_data_that_does_not_fit_its_type_is_an_integrity_error(ledger: Ledger):
    event = ledger.append(EventType.GATE_APPROVED, Actor.HUMAN, "F1", {"gate": "the-moon"})
    with pytest.raises(EventDataInvalid, match="gate"):
        _ = event.payload


def test_of_refuses_an_event_of_another_type(ledger: Ledger):
    event = ledger.record(SAMPLES[EventType.GATE_APPROVED], Actor.HUMAN, "F1")
    with pytest.raises(TypeError, match=r"gate\.approved"):
        ev.GateRejected.of(event)


def test_a_ledger_written_before_the_typed_payloads_reads_and_rewrites_byte_for_byte(
    tmp_path: Path,
):
    """The whole ledger of a StockFlow demo run, written when payloads were hand-built dicts."""
    path = tmp_path / "ledger.jsonl"  # reading takes a lock file beside the ledger
    path.write_bytes((FIXTURES / "ledger" / "stockflow-demo-0.1.jsonl").read_bytes())
    lines = path.read_bytes().splitlines()
    events = Ledger(path).read()
    assert len(events) == len(lines) > 100
    for event, line in zip(events, lines, strict=True):
        payload = event.payload
        assert type(payload) is PAYLOADS[event.type]
        assert payload.model_extra == {}  # every key it holds, a model knows
        assert payload.to_data() == event.data
        again = Event(
            event.seq,
            event.time,
            event.type,
            event.actor,
            event.subject,
            payload.to_data(),
            event.prev,
        )
        assert again.to_line() == line
