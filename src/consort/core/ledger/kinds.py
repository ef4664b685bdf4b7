"""What happened and who caused it: the event types and the actors.

Kept apart from the payload models (`events`), so that reading and verifying the ledger, as
`consort log` does, loads no model and no pydantic.
"""

from __future__ import annotations

from enum import StrEnum


class EventType(StrEnum):
    """What happened. Add new kinds here (and their model in `events`); the value is what the
    ledger stores."""

    # project and plan lane
    PROJECT_INITIALISED = "project.initialised"
    INTAKE_RECORDED = "intake.recorded"
    FEATURE_CREATED = "feature.created"
    # agent turns and what the orchestrator made of them
    TURN_STARTED = "turn.started"
    TURN_FINISHED = "turn.finished"
    TURN_FAILED = "turn.failed"
    ARTIFACT_ACCEPTED = "artifact.accepted"
    ARTIFACT_REJECTED = "artifact.rejected"
    VIOLATION_RECORDED = "violation.recorded"
    # gates
    GATE_FROZEN = "gate.frozen"
    GATE_APPROVED = "gate.approved"
    GATE_REJECTED = "gate.rejected"
    GATE_REOPENED = "gate.reopened"
    # escalations to a human
    ESCALATION_RAISED = "escalation.raised"
    ESCALATION_RESOLVED = "escalation.resolved"
    # the drive loop
    DRIVE_STARTED = "drive.started"
    DRIVE_STOPPED = "drive.stopped"
    # build lane
    CYCLE_PLANNED = "cycle.planned"
    RED_VERIFIED = "red.verified"
    RED_FAILED = "red.failed"
    GREEN_VERIFIED = "green.verified"
    GREEN_FAILED = "green.failed"
    REVIEW_RECORDED = "review.recorded"
    REFACTOR_VERIFIED = "refactor.verified"
    REFACTOR_FAILED = "refactor.failed"
    BRANCH_CREATED = "branch.created"
    # deploy and promote lanes
    DEPLOY_VERIFIED = "deploy.verified"
    DEPLOY_FAILED = "deploy.failed"
    FEATURE_PROMOTED = "feature.promoted"
    PROMOTE_STEP = "promote.step"
    SERVER_RESTARTED = "server.restarted"
    STORY_ACCEPTED = "story.accepted"
    STORY_MERGED = "story.merged"
    AMENDMENT_APPROVED = "amendment.approved"
    # spikes: throwaway explorations outside the gated loop
    SPIKE_STARTED = "spike.started"
    SPIKE_ENDED = "spike.ended"
    # experiments: approaches to one cycle raced on their own paired branches
    EXPERIMENT_STARTED = "experiment.started"
    APPROACH_BEGAN = "experiment.attempt-began"
    APPROACH_ATTEMPTED = "experiment.attempted"
    APPROACH_ENDED = "experiment.approach-ended"
    EXPERIMENT_SELECTED = "experiment.selected"
    EXPERIMENT_DISCARDED = "experiment.discarded"


class Actor(StrEnum):
    """Who caused an event."""

    ORCHESTRATOR = "orchestrator"
    ROLE = "role"  # a role agent's turn
    HUMAN = "human"
    PROXY = "proxy"  # the human proxy policy, in gates mode "proxy"
