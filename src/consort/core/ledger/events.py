"""What happened: the event types, who causes them, and one typed payload model per type.

An event's `data` in the ledger is the JSON of its type's payload model, so a model's field names
are the ledger's keys (renaming a field changes the ledger's format; don't). Writers build the
model and record it:

    ledger.record(GateApproved(gate=GateKind.STORY, note=note), Actor.HUMAN, "F1/S1")

and readers get it back typed: `GateApproved.of(event)`, or `event.payload` for whichever type the
event has (`match event.payload: case GateApproved(gate=...)`).

Reading is lenient, so that ledgers written by earlier versions still read: a key missing from an
old event takes the field's default, and a key the model does not know is kept as it is
(`extra="allow"`). A model read from disk dumps back exactly the keys it was read with, so its
line, and its hash, stay the same.

Writing is exact. A field is written when the writer gives it (explicitly, even as None):

- plain fields are the ones every writer of the type gives; `Ledger.record` refuses a payload
  that lacks one (`PayloadIncomplete`), so a forgotten key fails loudly instead of silently
  changing what the ledger holds;
- fields marked `WhenGiven` are the ones only some writers give (the design gate's `hashes`);
  they are left out of the line when not given.

To add an event type:

1. add a member to `EventType` in `kinds` (its value is what the ledger stores: never change
   one);
2. add its model below, a subclass of `EventPayload` with `event_type = EventType.THE_MEMBER`
   (the registry `PAYLOADS` fills itself; a second model for one type is an error). Give every
   field a default so that an event lacking it still reads, and mark `WhenGiven` the fields a
   writer may leave out. Types with the same shape share a base class (`StepFailed`);
3. record it with `ledger.record(TheModel(...), actor, subject)`.

`tests/unit/core/test_ledger_events.py` checks that every type has its model and that each one
round-trips through the ledger unchanged.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, ValidationError

from consort.core.errors import ConsortError, ExitCode
from consort.core.ledger.kinds import EventType
from consort.core.vocabulary import ArtifactKind, GateKind, Role, SandboxUse, Step, Verdict

if TYPE_CHECKING:
    from consort.core.ledger.chain import Event


class ArtifactSource(StrEnum):
    """Where an accepted artifact came from."""

    TURN = "turn"  # a role's turn output, checked and copied by Consort
    HAND_EDIT = "hand-edit"  # a person's edit of the file, recorded as theirs


class WhenGiven:
    """Marks a field only some writers give: left out of the ledger line when not given."""

    def __repr__(self) -> str:
        return "WhenGiven"


WHEN_GIVEN = WhenGiven()

Seconds = float | int
"""A duration: written as a float; an int read from an old line stays an int (same bytes)."""


class PayloadIncomplete(TypeError):
    """A payload about to be written lacks a field every writer of its type must give."""


class EventDataInvalid(ConsortError):
    """An event's data does not fit its type's model; exit code 4."""

    def __init__(self, event: Event, error: ValidationError):
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "data"
        super().__init__(
            f"event {event.seq} ({event.type.value}) holds data its type does not allow: "
            f"{where}: {first['msg']}",
            fix="`consort verify` checks the ledger; the ledger is written by Consort only",
            code=ExitCode.INTEGRITY,
        )


PAYLOADS: dict[EventType, type[EventPayload]] = {}
"""The registry: each event type's payload model."""


class _Lenient(BaseModel):
    """Unknown keys are kept, so what was read dumps back as it was."""

    model_config = ConfigDict(extra="allow", frozen=True)

    def to_data(self) -> dict[str, Any]:
        """The JSON object stored: exactly the fields given (or read), extras included."""
        return self.model_dump(mode="json", exclude_unset=True)


class EventPayload(_Lenient):
    """The data of one event type; see the module's docstring."""

    event_type: ClassVar[EventType]
    _always: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls._always = frozenset(
            name
            for name, info in cls.model_fields.items()
            if not any(isinstance(m, WhenGiven) for m in info.metadata)
        )
        kind = cls.__dict__.get("event_type")
        if kind is None:
            return  # a shared base, like StepFailed
        if kind in PAYLOADS:
            raise TypeError(f"{kind.value} has two payload models: {PAYLOADS[kind]} and {cls}")
        PAYLOADS[kind] = cls

    @classmethod
    def of(cls, event: Event) -> Self:
        """The event's payload as this model; the event must be of this model's type."""
        payload = event.payload
        if not isinstance(payload, cls) or PAYLOADS.get(event.type) is not cls:
            raise TypeError(f"event {event.seq} is a {event.type.value}, not a {cls.__name__}")
        return payload

    def data_to_write(self) -> dict[str, Any]:
        """`to_data` for a new event: refuses a payload that lacks a field every writer of its
        type gives (a payload read from an old line may lack one, and still dumps as it was)."""
        missing = sorted(self._always - self.model_fields_set)
        if missing:
            raise PayloadIncomplete(
                f"{type(self).__name__} lacks {', '.join(missing)}: every "
                f"{self.event_type.value} event carries them"
            )
        return self.to_data()


def payload_of(event: Event) -> EventPayload:
    """Parse an event's data with its type's model (leniently: see the module's docstring)."""
    try:
        return PAYLOADS[event.type].model_validate(event.data)
    except ValidationError as exc:
        raise EventDataInvalid(event, exc) from exc


# ---- records shared by several payloads ----------------------------------------------------


class CanaryRecord(_Lenient):
    """How Consort's two canary tests came out in a run."""

    passing: str = ""
    failing: str = ""
    nonce_seen: bool = False
    holds: bool = False


class SealRecord(_Lenient):
    """One broken seal rule (`consort.core.seal.SealViolation`)."""

    rule: str = ""
    path: str = ""
    line: int | None = None
    detail: str = ""


class RunRecord(_Lenient):
    """What one test run proved (`consort.adapters.tdd.runner.RunEvidence`), as recorded."""

    run: str = ""  # the run folder's name under .consort/runs/
    commit: str = ""
    parent_database: str | None = None
    database: str | None = None  # the ephemeral child it ran on (dropped since)
    migrate_exit: int | None = None
    exit_code: int | None = None
    timed_out: bool = False
    report_sha256: str | None = None
    counts: dict[str, int] = {}
    passing: list[str] = []
    tests: list[str] = []
    test_seconds: Seconds = 0.0
    overhead_seconds: Seconds = 0.0
    migrate_seconds: Seconds = 0.0
    # sealed verification (consort.core.seal): absent from runs recorded before it
    sealed: bool = False
    canaries: CanaryRecord | None = None
    sessions: int = -1  # sessions the suite opened on its throwaway child; -1: not measured
    violations: list[SealRecord] = []
    # how the report reads: the runner's dialect ("pytest", "junit"), and the folder the runner
    # ran in, prefixed to its ids (absent from runs recorded before them: pytest at the root)
    runner: str = "pytest"
    id_prefix: str = ""


class SmokeProbe(_Lenient):
    path: str = ""
    status: int | None = None


class FileChange(_Lenient):
    """A file's content hash before and after an amendment (None: absent)."""

    before: str | None = None
    after: str | None = None


# ---- project and plan lane -----------------------------------------------------------------


class ProjectInitialised(EventPayload):
    event_type = EventType.PROJECT_INITIALISED
    consort: str = ""  # the version that made the project


class IntakeRecorded(EventPayload):
    event_type = EventType.INTAKE_RECORDED
    kind: str = ""  # product | nfrs
    path: str = ""


class FeatureCreated(EventPayload):
    event_type = EventType.FEATURE_CREATED
    title: str = ""
    user_facing: bool = False
    request: str = ""  # the feature request artifact, relative to the project root
    hash: str = ""
    words: str = ""  # the product owner's words, relative to the project root


# ---- agent turns ---------------------------------------------------------------------------


class TurnStarted(EventPayload):
    event_type = EventType.TURN_STARTED
    turn: str = ""
    role: Role | None = None
    step: Step | None = None
    attempt: int = 1
    # How the agent runs: in a sandbox, unsandboxed because consort.toml says so, or no agent
    # process at all (replay). Absent from turns recorded before sandboxes existed.
    sandbox: Annotated[SandboxUse | None, WHEN_GIVEN] = None


class TurnFinished(EventPayload):
    """How a turn's process ended, as the turn runner saw it. (Older ledgers lack `attempt` in
    build turns and `killed` in design turns.)"""

    event_type = EventType.TURN_FINISHED
    turn: str = ""
    role: Role | None = None
    step: Step | None = None
    attempt: int | None = None
    exit_code: int | None = None
    duration_s: Seconds | None = None
    killed: str | None = None  # inactivity | wall-clock
    # Which agent ran it (when the adapter says) and the calls Consort's guard refused.
    adapter: Annotated[str | None, WHEN_GIVEN] = None
    program: Annotated[str | None, WHEN_GIVEN] = None
    version: Annotated[str | None, WHEN_GIVEN] = None
    refused: Annotated[list[str] | None, WHEN_GIVEN] = None


class TurnFailed(EventPayload):
    """A turn that failed: the runner's summary of it (as in `TurnFinished`), and why. A failed
    review written before the one turn runner carries only its turn, step, errors and feedback."""

    event_type = EventType.TURN_FAILED
    turn: str = ""
    role: Annotated[Role | None, WHEN_GIVEN] = None
    step: Step | None = None
    attempt: Annotated[int | None, WHEN_GIVEN] = None
    exit_code: Annotated[int | None, WHEN_GIVEN] = None
    duration_s: Annotated[Seconds | None, WHEN_GIVEN] = None
    killed: Annotated[str | None, WHEN_GIVEN] = None
    # Which agent ran it (when the adapter says) and the calls Consort's guard refused.
    adapter: Annotated[str | None, WHEN_GIVEN] = None
    program: Annotated[str | None, WHEN_GIVEN] = None
    version: Annotated[str | None, WHEN_GIVEN] = None
    refused: Annotated[list[str] | None, WHEN_GIVEN] = None
    errors: list[str] = []
    feedback: str = ""  # what the next attempt is told


class ArtifactAccepted(EventPayload):
    event_type = EventType.ARTIFACT_ACCEPTED
    kind: ArtifactKind | None = None
    hash: str | None = None
    turn: str | None = None  # None for a hand edit
    source: ArtifactSource | None = None
    path: str = ""


class ArtifactRejected(EventPayload):
    event_type = EventType.ARTIFACT_REJECTED


class ViolationRecorded(EventPayload):
    """A change outside a turn's write scope (`rule` is the glob), or a broken seal rule
    (`seal_rule`, with the file's `line` where it has one and the `run` that found it)."""

    event_type = EventType.VIOLATION_RECORDED
    turn: str | None = ""
    role: Annotated[Role | None, WHEN_GIVEN] = None
    path: str = ""
    change: Annotated[str, WHEN_GIVEN] = ""  # added | modified | deleted
    rule: str = ""
    seal_rule: Annotated[str | None, WHEN_GIVEN] = None
    line: Annotated[int | None, WHEN_GIVEN] = None
    detail: Annotated[str | None, WHEN_GIVEN] = None
    run: Annotated[str | None, WHEN_GIVEN] = None


# ---- gates and escalations -----------------------------------------------------------------


class GateFrozen(EventPayload):
    event_type = EventType.GATE_FROZEN


class GateApproved(EventPayload):
    event_type = EventType.GATE_APPROVED
    gate: GateKind | None = None
    note: str | None = None
    hashes: Annotated[dict[str, str], WHEN_GIVEN] = {}  # the design gate's: artifact -> hash


class GateRejected(EventPayload):
    event_type = EventType.GATE_REJECTED
    gate: GateKind | None = None
    artifact: Annotated[ArtifactKind | None, WHEN_GIVEN] = None  # the design gate's
    note: str = ""


class GateReopened(EventPayload):
    event_type = EventType.GATE_REOPENED


class EscalationRaised(EventPayload):
    event_type = EventType.ESCALATION_RAISED
    step: Step | None = None
    reason: str = ""
    # The orchestrator's escalations carry these; the proxy's (a design it rejects) do not.
    feedback: Annotated[str | None, WHEN_GIVEN] = None
    story: Annotated[str | None, WHEN_GIVEN] = None  # a build escalation names its cycle
    item: Annotated[str | None, WHEN_GIVEN] = None


class EscalationResolved(EventPayload):
    event_type = EventType.ESCALATION_RESOLVED
    step: Step | None = None
    note: str | None = None
    story: str | None = None
    item: str | None = None


# ---- the drive loop ------------------------------------------------------------------------


class DriveStarted(EventPayload):
    event_type = EventType.DRIVE_STARTED
    until: str | None = None
    max_steps: int | None = None


class DriveStopped(EventPayload):
    event_type = EventType.DRIVE_STOPPED
    reason: str = ""  # interrupted | error | bound | the last action's kind
    message: Annotated[str | None, WHEN_GIVEN] = None
    steps: Annotated[int | None, WHEN_GIVEN] = None
    exit_code: Annotated[int | None, WHEN_GIVEN] = None


# ---- build lane ----------------------------------------------------------------------------


class BranchCreated(EventPayload):
    """The feature branch (subject F, with `base`) or a story branch (subject F/S, with its
    worktree, base commit and baseline run)."""

    event_type = EventType.BRANCH_CREATED
    branch: str = ""
    database: str | None = None
    base: Annotated[str | None, WHEN_GIVEN] = None
    worktree: Annotated[str | None, WHEN_GIVEN] = None
    base_commit: Annotated[str | None, WHEN_GIVEN] = None
    head: Annotated[str | None, WHEN_GIVEN] = None  # the feature branch's first commit
    run: Annotated[RunRecord | None, WHEN_GIVEN] = None


class CyclePlanned(EventPayload):
    event_type = EventType.CYCLE_PLANNED


class RedVerified(EventPayload):
    event_type = EventType.RED_VERIFIED
    turn: str = ""
    commit: str = ""
    plan: dict[str, Any] = {}  # the navigator's cycle plan, as validated
    run: RunRecord | None = None


class GreenVerified(EventPayload):
    event_type = EventType.GREEN_VERIFIED
    turn: str = ""
    commit: str = ""
    red_commit: str | None = None
    run: RunRecord | None = None


class ReviewRecorded(EventPayload):
    event_type = EventType.REVIEW_RECORDED
    turn: str = ""
    verdict: Verdict | None = None
    reasons: list[str] = []
    smells: list[dict[str, Any]] = []  # the static checks' findings


class RefactorVerified(EventPayload):
    event_type = EventType.REFACTOR_VERIFIED
    turn: str = ""
    commit: str = ""
    red_commit: str | None = None
    unchanged: bool = False  # the driver changed nothing: GREEN's commit stands
    run: RunRecord | None = None


class StepFailed(EventPayload):
    """A failed RED, GREEN or REFACTOR attempt, with the runner's reasons."""

    turn: str = ""
    step: Step | None = None
    attempt: int = 1
    reasons: list[str] = []
    feedback: str = ""
    run: RunRecord | None = None
    refused: Annotated[list[str] | None, WHEN_GIVEN] = None  # calls the guard refused


class RedFailed(StepFailed):
    event_type = EventType.RED_FAILED


class GreenFailed(StepFailed):
    event_type = EventType.GREEN_FAILED


class RefactorFailed(StepFailed):
    event_type = EventType.REFACTOR_FAILED


# ---- deploy and promote lanes --------------------------------------------------------------


class DeployProof(EventPayload):
    """The deploy proof of a feature: migrations, the whole suite, the smoke test."""

    commit: str = ""
    parent_database: str | None = None
    run: RunRecord | None = None
    smoke: list[SmokeProbe] = []


class DeployVerified(DeployProof):
    event_type = EventType.DEPLOY_VERIFIED


class DeployFailed(DeployProof):
    event_type = EventType.DEPLOY_FAILED
    reasons: list[str] = []


class FeaturePromoted(EventPayload):
    event_type = EventType.FEATURE_PROMOTED
    commit: str = ""
    into: str = ""
    run: RunRecord | None = None
    deleted: list[str] = []  # the feature's branches removed after the merge


class PromoteStepName(StrEnum):
    MERGE = "merge"  # the parent branch moved to the merge commit
    MIGRATE = "migrate"  # the parent's database migrated to the merge
    DELETE_BRANCHES = "delete-branches"  # the feature's branches and databases removed


class StepOutcome(StrEnum):
    BEGUN = "begun"  # recorded before the step moves anything
    FINISHED = "finished"  # a resumed drive found the step done, or completed it
    UNDONE = "undone"  # a resumed drive found it never took effect, and starts it again


class PromoteStep(EventPayload):
    """A step of promote that moves something: recorded as begun before it does, and, when a
    crash interrupted it, what the next drive made of it (finished or undone)."""

    event_type = EventType.PROMOTE_STEP
    step: PromoteStepName = PromoteStepName.MERGE
    outcome: StepOutcome = StepOutcome.BEGUN
    into: str = ""
    commit: Annotated[str | None, WHEN_GIVEN] = None  # the merge commit
    base_commit: Annotated[str | None, WHEN_GIVEN] = None  # the parent's head before it
    feature_commit: Annotated[str | None, WHEN_GIVEN] = None  # the feature head merged
    branches: Annotated[list[str] | None, WHEN_GIVEN] = None  # the branches to delete
    detail: Annotated[str | None, WHEN_GIVEN] = None


class ServerRestarted(EventPayload):
    """The database server was lost during a run (it stopped answering, restarted, or the
    run's database vanished): Consort's failure, not the agent's. The server was started again
    and the run repeated; no attempt was used up."""

    event_type = EventType.SERVER_RESTARTED
    run: str = ""  # the run folder of the lost run
    reason: str = ""
    restart: int = 0  # how many restarts this step has had, this one included
    step: Annotated[str | None, WHEN_GIVEN] = None
    attempt: Annotated[int | None, WHEN_GIVEN] = None


class StoryAccepted(EventPayload):
    event_type = EventType.STORY_ACCEPTED


class StoryMerged(EventPayload):
    event_type = EventType.STORY_MERGED
    commit: str = ""
    into: str = ""
    run: RunRecord | None = None


class AmendmentApproved(EventPayload):
    event_type = EventType.AMENDMENT_APPROVED
    commit: str = ""
    previous: str | None = None  # the RED commit it replaces
    files: dict[str, FileChange] = {}
    note: str = ""


# ---- spikes --------------------------------------------------------------------------------


class SpikeEndReason(StrEnum):
    """Why a spike ended."""

    ENDED = "ended"  # a person ran `consort spike end`
    EXPIRED = "expired"  # its time box ran out and Consort collected it


class SpikeStarted(EventPayload):
    """A spike (subject `spike/<NAME>`): a paired branch outside the gated loop. Its time box is
    the ledger's, fixed here: nothing in the spike's checkout or database can move it."""

    event_type = EventType.SPIKE_STARTED
    name: str = ""
    feature: str | None = None  # the feature its notes are for (None: the project's)
    branch: str = ""
    parent: str = ""  # the branch whose database it is a copy of
    database: str = ""
    worktree: str = ""  # relative to the project root
    base_commit: str = ""
    ttl_s: Seconds = 0.0
    expires: str = ""  # UTC, the ledger's time format


class SpikeEnded(EventPayload):
    """A spike's code and database removed; its notes kept (when it wrote any)."""

    event_type = EventType.SPIKE_ENDED
    name: str = ""
    reason: SpikeEndReason | None = None
    notes: str | None = None  # relative to the project root; None: it left no notes
    notes_sha256: str | None = None
    head: str | None = None  # the spike branch's last commit, before it was deleted


# ---- experiments ---------------------------------------------------------------------------


class ApproachOutcome(StrEnum):
    """How one approach of an experiment ended."""

    PASSED = "passed"  # a GREEN of its own, proven by Consort's run
    CYCLES_SPENT = "cycles-spent"  # capped: every attempt its budget allowed failed
    WALL_TIME = "wall-time"  # capped: its time budget ran out
    ERROR = "error"  # Consort could not run it (its message says why)


class ApproachRecord(_Lenient):
    """One approach as an experiment started it: its paired branch and its driver."""

    name: str = ""
    branch: str = ""
    database: str = ""
    worktree: str = ""  # relative to the project root
    adapter: str = ""
    model: str | None = None
    notes: str = ""
    max_cycles: int = 1
    wall_time_s: Seconds = 0.0


class ExperimentStarted(EventPayload):
    """A person raced approaches to one cycle (subject `<F>/<S>/<T>`): each on its own paired
    branch from the cycle's RED commit, against the same frozen RED tests."""

    event_type = EventType.EXPERIMENT_STARTED
    number: int = 1  # the item's experiments, counted from 1
    red_commit: str = ""
    concurrency: int = 1
    concurrency_note: str = ""  # why fewer ran at once than configured, if so
    approaches: list[ApproachRecord] = []


class ApproachBegan(EventPayload):
    """One driver attempt of one approach began. With the attempt's end (or the last event a
    killed run recorded) it gives the time the attempt spent of the approach's budget."""

    event_type = EventType.APPROACH_BEGAN
    number: int = 1
    approach: str = ""
    attempt: int = 1
    spent_s: Seconds = 0.0  # the approach's wall time spent before this attempt, kills included


class ApproachAttempted(EventPayload):
    """One driver attempt of one approach, judged like a GREEN (or repair) of the build."""

    event_type = EventType.APPROACH_ATTEMPTED
    number: int = 1
    approach: str = ""
    attempt: int = 1
    step: Step | None = None
    turn: str = ""
    passed: bool = False
    commit: str | None = None
    reasons: list[str] = []
    run: RunRecord | None = None
    schema_changes: list[str] = []  # the migrated schema against the RED commit's
    seconds: Seconds = 0.0


class ApproachEnded(EventPayload):
    """An approach stopped: passed, capped by its budget, or could not run."""

    event_type = EventType.APPROACH_ENDED
    number: int = 1
    approach: str = ""
    outcome: ApproachOutcome | None = None
    cycles: int = 0
    seconds: Seconds = 0.0
    commit: str | None = None  # the passing commit
    message: str = ""
    smells: list[dict[str, Any]] = []  # the static checks' findings on the passing change
    lines_added: int = 0
    lines_removed: int = 0


class ExperimentSelected(EventPayload):
    """A person chose the approach whose GREEN the story keeps; the others were archived."""

    event_type = EventType.EXPERIMENT_SELECTED
    number: int = 1
    approach: str = ""
    commit: str = ""
    archived: list[str] = []  # the other approaches' branches, under their archive names
    dropped: list[str] = []  # every approach's database
    note: str = ""


class ExperimentDiscarded(EventPayload):
    """A person kept no approach: the cycle's GREEN goes back to the normal build."""

    event_type = EventType.EXPERIMENT_DISCARDED
    number: int = 1
    archived: list[str] = []
    dropped: list[str] = []
    note: str = ""
