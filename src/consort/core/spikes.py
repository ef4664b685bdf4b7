"""Spikes as the ledger knows them: names, time boxes, and which spikes are running, expired or
ended. Pure: everything here is a function of the ledger's events and a clock reading.

A spike is a paired branch (`spike/<NAME>`, with its own copy of a parent's database) outside
the gated loop. Its time box is fixed by its `spike.started` event; when it ends (by a person, or
by Consort once the time box has run out) its code and database go and only its notes stay, at
`.consort/spikes/<NAME>/notes.md`, for the design and build turns of the feature it was for.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from pathlib import Path

from consort.core.errors import UsageError
from consort.core.layout import Layout
from consort.core.ledger.chain import Event, format_time, parse_time
from consort.core.ledger.kinds import EventType

SPIKE_BRANCH_PREFIX = "spike/"
SUBJECT_PREFIX = "spike/"
DEFAULT_TTL = timedelta(hours=2)
MAX_TTL = timedelta(days=7)
"""A time box longer than a week is not a spike; it is a feature."""

NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
RESERVED_NAMES = frozenset({"start", "end", "explore", "list", "gc", "help"})
"""The subcommands of `consort spike`: a spike by one of these names could not be started."""

_TTL_PART = re.compile(r"(\d+)([smhd])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


class SpikeCondition(StrEnum):
    RUNNING = "running"
    EXPIRED = "expired"  # its time box ran out; the next `spike list`/`gc` removes it
    ENDED = "ended"


def check_name(name: str) -> str:
    """A spike's name: lowercase letters, digits and dashes, short, and not a subcommand's."""
    if not NAME_PATTERN.match(name):
        raise UsageError(
            f"{name!r} is not a spike name: use lowercase letters, digits and dashes "
            "(at most 40, starting with a letter or digit)",
            fix="e.g. `consort spike try-brin-index`",
        )
    if name in RESERVED_NAMES:
        raise UsageError(
            f"{name!r} is a `consort spike` subcommand, not a spike name", fix="choose another"
        )
    return name


def parse_ttl(text: str) -> timedelta:
    """`2h`, `90m`, `1h30m`, `1d`: a positive duration of at most MAX_TTL."""
    compact = text.strip().lower()
    parts = _TTL_PART.findall(compact)
    if not compact or "".join(n + u for n, u in parts) != compact:
        raise UsageError(
            f"{text!r} is not a duration", fix="e.g. --ttl 2h, --ttl 90m or --ttl 1h30m"
        )
    total = timedelta()
    for number, unit in parts:
        total += timedelta(**{_UNITS[unit]: int(number)})
    if total <= timedelta():
        raise UsageError("a spike's time box must be longer than nothing", fix="e.g. --ttl 2h")
    if total > MAX_TTL:
        raise UsageError(
            f"a spike's time box is at most {MAX_TTL.days} days, not {text}",
            fix="a longer exploration is a feature: `consort intake feature`",
        )
    return total


def branch_of(name: str) -> str:
    return SPIKE_BRANCH_PREFIX + name


def subject_of(name: str) -> str:
    """The ledger subject of a spike's events (never a feature's: derive ignores it)."""
    return SUBJECT_PREFIX + name


def expiry(started: datetime, ttl: timedelta) -> str:
    return format_time(started + ttl)


@dataclass(frozen=True)
class Spike:
    """One spike, folded from its events."""

    name: str
    feature: str | None
    branch: str
    parent: str
    database: str
    worktree: str  # relative to the project root
    started: datetime
    expires: datetime
    ended: datetime | None = None
    end_reason: str | None = None
    notes: str | None = None  # relative to the project root, once ended with notes
    notes_sha256: str | None = None

    def condition(self, now: datetime) -> SpikeCondition:
        if self.ended is not None:
            return SpikeCondition.ENDED
        return SpikeCondition.EXPIRED if now >= self.expires else SpikeCondition.RUNNING

    def remaining(self, now: datetime) -> timedelta:
        if self.ended is not None:
            return timedelta()
        return max(self.expires - now, timedelta())

    def as_json(self, now: datetime) -> dict[str, object]:
        return {
            "name": self.name,
            "feature": self.feature,
            "branch": self.branch,
            "parent": self.parent,
            "database": self.database,
            "worktree": self.worktree,
            "started": format_time(self.started),
            "expires": format_time(self.expires),
            "condition": self.condition(now).value,
            "remaining_s": self.remaining(now).total_seconds(),
            "ended": format_time(self.ended) if self.ended else None,
            "end_reason": self.end_reason,
            "notes": self.notes,
            "notes_sha256": self.notes_sha256,
        }


def spike_record(spike: Spike) -> dict[str, str | None]:
    """A spike as plain JSON values, read back by `spike_from_record`."""
    return {
        "name": spike.name,
        "feature": spike.feature,
        "branch": spike.branch,
        "parent": spike.parent,
        "database": spike.database,
        "worktree": spike.worktree,
        "started": format_time(spike.started),
        "expires": format_time(spike.expires),
        "ended": format_time(spike.ended) if spike.ended else None,
        "end_reason": spike.end_reason,
        "notes": spike.notes,
        "notes_sha256": spike.notes_sha256,
    }


def spike_from_record(record: dict[str, str | None]) -> Spike:
    """The spike `spike_record` wrote; ValueError or KeyError when it is not one."""

    def when(text: str | None) -> datetime:
        if text is None:
            raise ValueError("a spike record without its times")
        return parse_time(text)

    ended = record["ended"]
    return Spike(
        name=str(record["name"]),
        feature=record["feature"],
        branch=str(record["branch"]),
        parent=str(record["parent"]),
        database=str(record["database"]),
        worktree=str(record["worktree"]),
        started=when(record["started"]),
        expires=when(record["expires"]),
        ended=when(ended) if ended is not None else None,
        end_reason=record["end_reason"],
        notes=record["notes"],
        notes_sha256=record["notes_sha256"],
    )


def fold_spikes(events: Iterable[Event]) -> dict[str, Spike]:
    """Every spike the ledger knows, by name, as its events left it.

    Only `spike.started` and `spike.ended` events count, and only the first start of a name (a
    name is never reused, so nothing can restart a spike to move its time box).
    """
    from consort.core.ledger.events import SpikeEnded, SpikeStarted

    spikes: dict[str, Spike] = {}
    for event in events:
        if event.type is EventType.SPIKE_STARTED:
            started = SpikeStarted.of(event)
            if started.name in spikes:
                continue
            spikes[started.name] = Spike(
                name=started.name,
                feature=started.feature,
                branch=started.branch,
                parent=started.parent,
                database=started.database,
                worktree=started.worktree,
                started=event.time,
                expires=parse_time(started.expires),
            )
        elif event.type is EventType.SPIKE_ENDED:
            ended = SpikeEnded.of(event)
            spike = spikes.get(ended.name)
            if spike is None or spike.ended is not None:
                continue
            spikes[ended.name] = Spike(
                **{
                    **spike.__dict__,
                    "ended": event.time,
                    "end_reason": ended.reason.value if ended.reason else None,
                    "notes": ended.notes,
                    "notes_sha256": ended.notes_sha256,
                }
            )
    return spikes


def spike_notes_inputs(events: Iterable[Event], feature: str, root: Path) -> dict[str, Path]:
    """What a design or build turn of `feature` is given from the feature's ended spikes."""
    return notes_inputs(fold_spikes(events).values(), feature, root, Layout.of(root))


def notes_inputs(
    spikes: Iterable[Spike], feature: str, root: Path, layout: Layout
) -> dict[str, Path]:
    """The notes of the feature's ended spikes, as turn inputs (`spike-<NAME>`), oldest first.

    Only notes kept at the place Consort keeps them, as the ledger hashed them when the spike
    ended: a ledger entry pointing elsewhere, or notes changed since, give nothing (`consort
    verify` names the change).
    """
    inputs: dict[str, Path] = {}
    for spike in sorted(spikes, key=lambda s: s.started):
        if spike.feature != feature or spike.ended is None or spike.notes is None:
            continue
        path = layout.spike_notes(spike.name)
        if notes_problem(spike, root, layout) is None:
            inputs[f"spike-{spike.name}"] = path
    return inputs


def notes_problem(spike: Spike, root: Path, layout: Layout) -> str | None:
    """Why an ended spike's kept notes are not the ones the ledger recorded (None: they are)."""
    if spike.notes is None:
        return None
    path = layout.spike_notes(spike.name)
    if (root / spike.notes).resolve() != path.resolve():
        return f"spike {spike.name}: the ledger keeps its notes at {spike.notes}, not {path}"
    if path.is_symlink() or not path.is_file():
        return f"spike {spike.name}: its kept notes {spike.notes} are missing"
    if hashlib.sha256(path.read_bytes()).hexdigest() != spike.notes_sha256:
        return f"spike {spike.name}: {spike.notes} changed since the spike ended"
    return None
