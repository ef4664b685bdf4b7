"""`consort spike ...`: throwaway explorations on a paired branch, outside the gated loop.

Every command that writes takes the project's single-writer lock (as the gate commands do), so a
spike never appends to the ledger under a running `consort drive`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from consort.core.drive_lock import WriterBusy, hold_writer
from consort.core.ledger import Ledger, ledger_path
from consort.core.project import Project
from consort.core.spikes import (
    DEFAULT_TTL,
    Spike,
    SpikeCondition,
    check_name,
    fold_spikes,
    parse_ttl,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from consort.core.ledger import Event
    from consort.lanes.explore import Exploration
    from consort.lanes.spikes import SpikeEnd

__all__ = [
    "DEFAULT_TTL",
    "SpikeCondition",
    "SpikeList",
    "SpikeStartResult",
    "end",
    "explore",
    "gc",
    "list_spikes",
    "start",
]


@dataclass(frozen=True)
class SpikeStartResult:
    spike: Spike
    now: datetime

    @property
    def notes(self) -> str:
        return f"{self.spike.worktree}/notes.md"

    def as_json(self) -> dict[str, Any]:
        return {**self.spike.as_json(self.now), "notes_file": self.notes}


@dataclass(frozen=True)
class SpikeList:
    spikes: list[Spike]
    now: datetime
    collected: list[SpikeEnd] = field(default_factory=list)  # expired ones ended just now
    busy: str | None = None  # why expired spikes could not be collected now

    def as_json(self) -> dict[str, Any]:
        return {
            "spikes": [s.as_json(self.now) for s in self.spikes],
            "collected": [c.as_json() for c in self.collected],
            "busy": self.busy,
        }


def start(project: Project, name: str, feature: str | None, ttl: str | None) -> SpikeStartResult:
    from consort.lanes import spikes as lane

    check_name(name)
    box = parse_ttl(ttl) if ttl is not None else DEFAULT_TTL
    with hold_writer(project.state_dir):
        ledger = Ledger.open_for_writing(ledger_path(project.state_dir))
        key = _feature_key(project, ledger, feature) if feature is not None else None
        now = datetime.now(UTC)
        spike = lane.start(project, ledger, name, feature=key, ttl=box, now=now)
    return SpikeStartResult(spike, now)


def agent_adapters() -> tuple[str, ...]:
    """The adapters an explorer turn may be run with (`--agent`)."""
    from consort.adapters.agents.config import AdapterKind

    return tuple(kind.value for kind in AdapterKind)


def explore(
    project: Project,
    name: str,
    question: str,
    *,
    adapter: str | None = None,
    model: str | None = None,
) -> Exploration:
    """One explorer turn in spike NAME, in its time box. It holds the project's writer lock
    while the agent runs (its turn is recorded in the ledger), as a drive's turn does."""
    from consort.lanes import explore as lane

    with hold_writer(project.state_dir):
        ledger = Ledger.open_for_writing(ledger_path(project.state_dir))
        choice = lane.AgentChoice(adapter=adapter, model=model)
        return lane.explore(project, ledger, name, question, agent=choice)


def end(project: Project, name: str) -> SpikeEnd:
    from consort.lanes import spikes as lane

    with hold_writer(project.state_dir):
        ledger = Ledger.open_for_writing(ledger_path(project.state_dir))
        return lane.end(project, ledger, name)


def list_spikes(project: Project, *, collect: bool = True) -> SpikeList:
    """Every spike; with `collect`, the expired ones are ended first (their notes kept), unless a
    drive holds the project (then they are only shown as expired)."""
    if collect:
        try:
            collected = gc(project)
        except WriterBusy as busy:
            return SpikeList(_read(project), datetime.now(UTC), busy=busy.message)
    else:
        collected = []
    return SpikeList(_read(project), datetime.now(UTC), collected)


def gc(project: Project) -> list[SpikeEnd]:
    """End the spikes whose time box has run out."""
    from consort.lanes import spikes as lane

    with hold_writer(project.state_dir):
        ledger = Ledger.open_for_writing(ledger_path(project.state_dir))
        return lane.collect_expired(project, ledger)


def running_or_expired(project: Project) -> list[Spike]:
    """For `consort status`: the spikes not ended yet (reads only)."""
    now = datetime.now(UTC)
    return [s for s in _read(project) if s.condition(now) is not SpikeCondition.ENDED]


def all_spikes(project: Project) -> list[Spike]:
    """Every spike the ledger knows, ended ones too, by start (reads only)."""
    return _read(project)


def _read(project: Project) -> list[Spike]:
    path = ledger_path(project.state_dir)
    return spikes_of(Ledger(path).read() if path.exists() else [])


def spikes_of(events: Sequence[Event]) -> list[Spike]:
    """Every spike in `events` (a ledger read already), by start."""
    return sorted(fold_spikes(events).values(), key=lambda s: s.started)


def _feature_key(project: Project, ledger: Ledger, name: str) -> str:
    from consort.core.derive import derive
    from consort.lanes.intake import resolve_feature

    state = derive(ledger.read(), project.config, project.state_dir)
    return resolve_feature(project, name, [f.id for f in state.features])
