"""The words every layer shares: who acts (Role), what a turn does (Step), lanes and actions,
the artifact kinds, the gates and a review's verdict.

Plain enums with no behaviour beyond naming, so that the core can speak of agents' roles and steps
without importing anything that runs an agent.
"""

from __future__ import annotations

from enum import StrEnum


class Role(StrEnum):
    SPEC_AUTHOR = "spec-author"
    ARCHITECT = "architect"
    DBA = "dba"
    TEST_STRATEGIST = "test-strategist"
    UX_DESIGNER = "ux-designer"
    NAVIGATOR = "navigator"
    DRIVER = "driver"
    EXPLORER = "explorer"  # a spike's explorer: outside the gated loop, it writes notes.md


class Step(StrEnum):
    # design lane: one turn per feature
    SPEC = "spec"
    ARCHITECTURE = "architecture"
    DB_DESIGN = "db-design"
    TEST_LIST = "test-list"
    UX = "ux"
    # build lane: one turn per test-list item (and attempt)
    RED = "red"
    GREEN = "green"
    REPAIR = "repair"
    REVIEW = "review"
    REFACTOR = "refactor"
    # spike lane: a turn in a spike's worktree, started by a person, never by the machine
    EXPLORE = "explore"

    @property
    def is_build(self) -> bool:
        return self in BUILD_STEPS


BUILD_STEPS = frozenset({Step.RED, Step.GREEN, Step.REPAIR, Step.REVIEW, Step.REFACTOR})


class Lane(StrEnum):
    PLAN = "plan"
    DESIGN = "design"
    BUILD = "build"
    DEPLOY = "deploy"
    PROMOTE = "promote"
    DONE = "done"
    SPIKE = "spike"  # outside the gated loop: no action of the machine is ever in it


LANE_ORDER = (Lane.PLAN, Lane.DESIGN, Lane.BUILD, Lane.DEPLOY, Lane.PROMOTE, Lane.DONE)


class ActionKind(StrEnum):
    # things the orchestrator does
    RUN_TURN = "run-turn"
    CREATE_FEATURE_BRANCH = "create-feature-branch"
    CREATE_STORY_BRANCH = "create-story-branch"
    MERGE_STORY = "merge-story"
    DEPLOY = "deploy"
    PROMOTE = "promote"
    RESTORE_ARTIFACT = "restore-artifact"
    RECORD_HAND_EDIT = "record-hand-edit"
    ESCALATE = "escalate"
    PROXY_GATE = "proxy-gate"
    RUN_EXPERIMENT = "run-experiment"  # race the approaches the design marks for a cycle's GREEN
    # places where it stops
    INTAKE_NEEDED = "intake-needed"
    FIX_ARTIFACT = "fix-artifact"
    AWAIT_ESCALATION = "await-escalation"
    AWAIT_GATE = "await-gate"
    AWAIT_EXPERIMENT = "await-experiment"
    INTEGRITY_STOP = "integrity-stop"
    NOT_AVAILABLE = "not-available"
    DONE = "done"


class ArtifactKind(StrEnum):
    """The artifact kinds; the value is the name `consort schema NAME` takes."""

    FEATURE_REQUEST = "feature-request"
    FEATURE_SPEC = "feature-spec"
    ARCHITECTURE = "architecture"
    DB_DESIGN = "db-design"
    TEST_LIST = "test-list"
    UX = "ux"
    REVIEW = "review"
    CYCLE_PLAN = "cycle-plan"


class GateKind(StrEnum):
    DESIGN = "design"
    STORY = "story"
    DEPLOY = "deploy"
    PROMOTE = "promote"


class Verdict(StrEnum):
    """The outcome of a review."""

    APPROVE = "approve"  # the code is fine as it is
    REFACTOR = "refactor"  # the driver must refactor, for the reasons given


class SandboxUse(StrEnum):
    """How a turn's agent ran, as the ledger records it."""

    BWRAP = "bwrap"  # in a bubblewrap sandbox
    OFF = "off"  # unsandboxed, because consort.toml says sandbox = "off"
    NO_PROCESS = "no-process"  # replay: Consort wrote the recorded files; no agent process ran
