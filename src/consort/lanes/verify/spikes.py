"""`consort verify` for spikes: every ended spike's kept notes are the ones the ledger hashed, and
every explorer turn ran inside its spike's time box."""

from __future__ import annotations

from datetime import timedelta

from consort.adapters.agents.command import DEFAULT_GRACE_PERIOD_S
from consort.core.ledger import Event, EventType
from consort.core.ledger.events import TurnStarted
from consort.core.project import Project
from consort.core.spikes import SUBJECT_PREFIX, Spike, fold_spikes, notes_problem
from consort.core.vocabulary import Step

STOP_SLACK = timedelta(seconds=DEFAULT_GRACE_PERIOD_S + 10)
"""After its time box, a turn is sent SIGTERM, then SIGKILL after the grace period; the rest
is the time to notice it and reap it. A turn that ran longer than that was not stopped."""


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
    turns, turn_fails = _explorer_turns(events, spikes)
    fails += turn_fails
    if turns and not turn_fails:
        holds.append(f"spikes: {turns} explorer turns, each inside its spike's time box")
    return holds, fails


def _explorer_turns(events: list[Event], spikes: dict[str, Spike]) -> tuple[int, list[str]]:
    """Each explorer turn started while its spike ran, and its process was stopped by the end
    of the spike's time box (what the ledger recorded of how long it ran)."""
    started: dict[str, tuple[Event, Spike | None]] = {}
    fails: list[str] = []
    count = 0
    for event in events:
        if not event.subject.startswith(SUBJECT_PREFIX):
            continue
        name = event.subject.removeprefix(SUBJECT_PREFIX)
        if event.type is EventType.TURN_STARTED:
            turn = TurnStarted.of(event)
            if turn.step is not Step.EXPLORE:
                fails.append(f"spike {name}: turn {turn.turn} is not an explorer turn")
                continue
            count += 1
            spike = spikes.get(name)
            started[turn.turn] = (event, spike)
            if spike is None or event.time < spike.started:
                fails.append(f"spike {name}: explorer turn {turn.turn} started before the spike")
            elif event.time >= spike.expires or (spike.ended and event.time >= spike.ended):
                fails.append(
                    f"spike {name}: explorer turn {turn.turn} started after the spike's "
                    "time box ran out or it ended"
                )
        elif event.type in (EventType.TURN_FINISHED, EventType.TURN_FAILED):
            turn_name = str(event.data.get("turn") or "")
            begin, spike = started.get(turn_name, (None, None))
            ran = event.data.get("duration_s")
            if begin is None or spike is None or not isinstance(ran, int | float):
                continue
            allowed = spike.expires - begin.time + STOP_SLACK
            if timedelta(seconds=float(ran)) > allowed:
                fails.append(
                    f"spike {name}: explorer turn {turn_name} ran {float(ran):.0f} s, past "
                    f"the spike's time box (it ended at {spike.expires:%Y-%m-%d %H:%M:%S} UTC)"
                )
    return count, fails
