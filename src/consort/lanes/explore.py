"""An explorer turn in a spike: Consort asks an agent one question, in the spike's worktree.

It is the one guarded turn (`lanes.turn`) like every design and build turn, with the spike's
bounds:

- the agent works in the spike's worktree, in the turn sandbox (which shows no main checkout, no
  `.env`, no secret, no other worktree), and may write anything there but Consort's files and the
  worktree's `.env` files; every other change is reverted and recorded as a violation;
- its DATABASE_URL is a scratch child of the spike's database, with a role of its own, dropped
  after the turn: never the spike's database itself, never the parent's;
- its wall-clock cap is what is left of the spike's time box (or the configured cap, if that is
  shorter); once the box has run out the spike is ended there and then, its notes kept and its
  code and database removed, so nothing the explorer started outlives the box;
- its output is the worktree's `notes.md`, which `spike end` keeps for the feature's later turns;
- it runs beside a person's work, for as long as the time box: in the sandbox it cannot reach the
  main checkout or write a ref, so what changes there meanwhile (an edit, a commit) is the
  person's and is left alone. Unsandboxed (`sandbox = "off"`), the main checkout and refs are
  guarded as in every turn, and a person's change there during the turn is put back.

The turn is recorded in the ledger under the spike's subject (`spike/<NAME>`), which no feature's
derivation reads, with the same `turn.started` / `turn.finished` (or `turn.failed`) events as any
other turn; `consort report` counts it in the spike lane.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from consort.adapters.agents.config import AgentSettings, parse_agents
from consort.core.artifacts.registry import ArtifactKind
from consort.core.derive import artifact_path
from consort.core.errors import UsageError
from consort.core.fsutil import atomic_write_text
from consort.core.layout import SPIKE_NOTES_FILE
from consort.core.ledger import Ledger
from consort.core.ledger.events import SpikeEndReason
from consort.core.project import Project
from consort.core.spikes import Spike, SpikeCondition, notes_inputs, subject_of
from consort.core.vocabulary import Role, Step
from consort.lanes.spikes import SpikeEnd, end, notes_template, spikes_of
from consort.lanes.turn import (
    BESIDE_A_PERSON,
    CONTAINED,
    TurnRequest,
    TurnRun,
    Verdict,
    open_turn,
    run_turn,
)
from consort.roles import prompt_for

QUESTION_FILE = "question.md"
MAX_NOTES_BYTES = 256 * 1024
"""Notes are read by every later turn of the feature: a spike's findings, not a data dump."""
ENV_FILES = (".env", ".env.*", ".envrc")
"""The worktree's `.env` points a person at the spike's database; no explorer rewrites it."""
MAX_QUESTION_CHARS = 20_000


@dataclass(frozen=True)
class Exploration:
    """One explorer turn, as Consort checked it, and what the time box did after it."""

    spike: str
    turn: str
    ok: bool
    problems: tuple[str, ...]
    duration_s: float
    killed: str | None  # inactivity | wall-clock
    time_box_s: float  # the turn's wall-clock cap: what was left of the spike's time box
    notes: str  # relative to the project root: the worktree's, or the kept copy once ended
    ended: SpikeEnd | None  # the spike, ended because its time box ran out during the turn

    def as_json(self) -> dict[str, object]:
        return {
            "spike": self.spike,
            "turn": self.turn,
            "ok": self.ok,
            "problems": list(self.problems),
            "duration_s": round(self.duration_s, 3),
            "killed": self.killed,
            "time_box_s": round(self.time_box_s, 3),
            "notes": self.notes,
            "ended": self.ended.as_json() if self.ended else None,
        }


@dataclass(frozen=True)
class AgentChoice:
    """A person's choice of the explorer's agent for one turn, over `[agents.explorer]`."""

    adapter: str | None = None
    model: str | None = None


def explore(
    project: Project,
    ledger: Ledger,
    name: str,
    question: str,
    *,
    agent: AgentChoice = AgentChoice(),
    now: datetime | None = None,
) -> Exploration:
    question = _check_question(question)
    moment = now or datetime.now(UTC)
    spike = _running(project, ledger, name, moment)
    box_s = spike.remaining(moment).total_seconds()
    configured = explorer_settings(project, agent)
    boxed = box_s < configured.wall_clock_timeout_s  # the time box, not the cap, ends the turn
    settings = replace(configured, wall_clock_timeout_s=min(configured.wall_clock_timeout_s, box_s))
    turn = open_turn(project, Role.EXPLORER, Step.EXPLORE, settings)
    question_path = turn.path / QUESTION_FILE
    atomic_write_text(question_path, question.rstrip() + "\n")
    worktree = project.root / spike.worktree
    notes = worktree / SPIKE_NOTES_FILE
    if not notes.exists() and not notes.is_symlink():
        atomic_write_text(notes, notes_template(name, spike.feature, spike.parent))
    before = _read_plain(notes)
    request = TurnRequest(
        subject=subject_of(name),
        # The feature the spike is for; a spike of the whole project names itself instead.
        feature=spike.feature or f"spike-{name}",
        story=None,
        item=None,
        attempt=1,
        feedback=None,
        instructions=_instructions(project, spike, question),
        inputs={"question": question_path, **_feature_inputs(project, ledger, spike)},
        outputs={"notes": notes},
        workdir=worktree,
        writable=("**",),
        protected=ENV_FILES,
        scratch_of=spike.database,
        # Contained, the explorer reaches neither the main checkout nor a ref, and the person
        # works on meanwhile: what changes there is theirs, never reverted as the explorer's.
        shared=BESIDE_A_PERSON if turn.sandbox in CONTAINED else None,
    )
    done = run_turn(
        project,
        ledger,
        turn,
        request,
        verdict=Verdict.TURN,
        check=lambda: notes_problems(notes, before),
    )
    return _after(project, ledger, spike, done, settings.wall_clock_timeout_s, boxed=boxed)


def explorer_settings(project: Project, agent: AgentChoice) -> AgentSettings:
    """`[agents.explorer]` (or `[agents]`) with the person's choice over it."""
    raw = dict(project.config.agents)
    own = raw.get(Role.EXPLORER.value)
    merged = dict(own) if isinstance(own, dict) else {}
    if agent.adapter is not None:
        merged["adapter"] = agent.adapter
    if agent.model is not None:
        merged["model"] = agent.model
    if merged:
        raw[Role.EXPLORER.value] = merged
    return parse_agents(raw).settings(Role.EXPLORER, project.root, env_file=project.env_file_name)


def notes_problems(notes: Path, before: str | None) -> list[str]:
    """Why the explorer's notes are not notes the spike can keep (nothing: they are)."""
    if notes.is_symlink():
        # A link could lead anywhere (a secret, the parent's files); `end` keeps none.
        return [f"{SPIKE_NOTES_FILE} is a link, not the notes: `spike end` would keep nothing"]
    if not notes.is_file():
        return [f"no {SPIKE_NOTES_FILE} written (it must stay a file in the worktree)"]
    size = notes.stat().st_size
    if size > MAX_NOTES_BYTES:
        return [f"{SPIKE_NOTES_FILE} is {size} bytes; notes are at most {MAX_NOTES_BYTES}"]
    text = _read_plain(notes)
    if text is None:
        return [f"{SPIKE_NOTES_FILE} is not UTF-8 text"]
    if text == before or not text.strip():
        return [f"{SPIKE_NOTES_FILE} is unchanged: the explorer wrote down nothing it learned"]
    return []


def _running(project: Project, ledger: Ledger, name: str, now: datetime) -> Spike:
    spike = spikes_of(ledger).get(name)
    if spike is None:
        raise UsageError(f"no spike {name!r}", fix=f"start it with `consort spike {name}`")
    condition = spike.condition(now)
    if condition is SpikeCondition.ENDED:
        raise UsageError(
            f"spike {name!r} has ended; an ended spike is not explored again",
            fix="start another spike",
        )
    if condition is SpikeCondition.EXPIRED:
        ended = end(project, ledger, name, reason=SpikeEndReason.EXPIRED)
        kept = f"; its notes are kept in {ended.notes}" if ended.notes else ""
        raise UsageError(
            f"spike {name!r} ran out of time, so it was ended instead{kept}",
            fix="start another spike, with a longer --ttl",
        )
    if not (project.root / spike.worktree).is_dir():
        raise UsageError(
            f"spike {name!r} has no worktree at {spike.worktree}",
            fix=f"end it with `consort spike end {name}`",
        )
    return spike


def _after(
    project: Project, ledger: Ledger, spike: Spike, done: TurnRun, box_s: float, *, boxed: bool
) -> Exploration:
    """The time box holds past the turn: a spike whose time ran out is ended now."""
    ended = None
    if spike.condition(datetime.now(UTC)) is SpikeCondition.EXPIRED:
        ended = end(project, ledger, spike.name, reason=SpikeEndReason.EXPIRED)
    outcome = done.outcome
    killed = outcome.killed.value if outcome.killed is not None else None
    problems = done.problems
    if killed == "wall-clock" and boxed:
        problems = (*problems, f"the spike's time box ran out after {outcome.duration_s:.0f} s")
    if ended is not None:
        notes = ended.notes or "(none kept)"
    else:
        notes = f"{spike.worktree}/{SPIKE_NOTES_FILE}"
    return Exploration(
        spike=spike.name,
        turn=done.name,
        ok=done.ok,
        problems=tuple(problems),
        duration_s=outcome.duration_s,
        killed=killed,
        time_box_s=box_s,
        notes=notes,
        ended=ended,
    )


def _feature_inputs(project: Project, ledger: Ledger, spike: Spike) -> dict[str, Path]:
    """The feature's artifacts written so far and its earlier spikes' kept notes."""
    if spike.feature is None:
        return {}
    inputs: dict[str, Path] = {}
    for kind in ArtifactKind:
        path = artifact_path(project.state_dir, spike.feature, kind)
        if path.is_file() and not path.is_symlink():
            inputs[kind.value] = path
    ended = spikes_of(ledger).values()
    inputs.update(notes_inputs(ended, spike.feature, project.root, project.layout))
    return inputs


def _instructions(project: Project, spike: Spike, question: str) -> str:
    about = f" for {spike.feature}" if spike.feature else ""
    return (
        prompt_for(Role.EXPLORER, project).rstrip()
        + "\n\n## This turn\n\n"
        + f"Spike {spike.name}{about}, on a copy of {spike.parent}'s database. "
        + 'The question (also in `inputs["question"]`):\n\n'
        + question.rstrip()
        + '\n\nWrite what you learn to `outputs["notes"]` (the worktree\'s notes.md).\n'
    )


def _check_question(question: str) -> str:
    text = question.strip()
    if not text:
        raise UsageError("an explorer needs a question", fix='e.g. "Would a BRIN index do?"')
    if len(text) > MAX_QUESTION_CHARS:
        raise UsageError(
            f"the question is {len(text)} characters; at most {MAX_QUESTION_CHARS}",
            fix="ask one question; put background in the spike's notes.md",
        )
    return text


def _read_plain(path: Path) -> str | None:
    if path.is_symlink() or not path.is_file():
        return None
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
