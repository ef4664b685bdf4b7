"""`consort verify` for spikes: every ended spike's kept notes are the ones the ledger hashed."""

from __future__ import annotations

from consort.core.ledger import Event
from consort.core.project import Project
from consort.core.spikes import fold_spikes, notes_problem


def verify_spikes(project: Project, events: list[Event]) -> tuple[list[str], list[str]]:
    """What holds and what fails; nothing at all for a project without spikes."""
    spikes = fold_spikes(events)
    kept = [s for s in spikes.values() if s.ended is not None and s.notes is not None]
    if not spikes:
        return [], []
    fails = [
        problem
        for spike in kept
        if (problem := notes_problem(spike, project.root, project.layout)) is not None
    ]
    holds = [] if fails else [f"spikes: {len(kept)} kept notes match their recorded hashes"]
    return holds, fails
