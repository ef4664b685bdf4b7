"""`consort log`: the ledger's events, filtered, and whether the ledger verifies."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from consort.core.ledger import Event, Ledger, LedgerCorrupt, LedgerProblem, ledger_path
from consort.core.project import Project


@dataclass(frozen=True)
class LogFilter:
    feature: str | None = None  # events whose subject is F or F/...
    role: str | None = None  # events whose data names this role
    event_type: str | None = None  # a type, or a family: `gate` matches gate.approved, ...
    limit: int | None = None  # the last N matching events


@dataclass(frozen=True)
class LogEntry:
    """One event as the log shows it: the fields of its ledger line."""

    seq: int
    time: datetime
    type: str
    actor: str
    subject: str
    data: dict[str, Any]
    record: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def of(cls, event: Event) -> LogEntry:
        record = event.as_json()
        return cls(
            seq=event.seq,
            time=event.time,
            type=record["type"],
            actor=record["actor"],
            subject=record["subject"],
            data=record["data"],
            record=record,
        )

    def as_json(self) -> dict[str, Any]:
        return self.record


@dataclass(frozen=True)
class LogReport:
    path: Path
    entries: list[LogEntry]  # the events that match, oldest first
    total: int  # how many events parse, matching or not
    faults: tuple[LedgerProblem, ...]  # why the ledger does not verify; empty when it does

    @property
    def ok(self) -> bool:
        return not self.faults

    @property
    def problems(self) -> list[str]:
        return [str(fault) for fault in self.faults]

    def require_intact(self) -> None:
        """Raise the integrity error (exit code 4) when the ledger does not verify."""
        if self.faults:
            raise LedgerCorrupt(self.path, self.faults)

    def as_json(self) -> list[dict[str, Any]]:
        return [entry.as_json() for entry in self.entries]


def read_log(project: Project, wanted: LogFilter = LogFilter()) -> LogReport:
    """What still parses of the ledger, filtered, and the problems when it does not verify."""
    report = Ledger(ledger_path(project.state_dir)).verify()
    events = select(
        report.events, feature=wanted.feature, role=wanted.role, event_type=wanted.event_type
    )
    if wanted.limit is not None:
        events = events[-wanted.limit :]
    return LogReport(
        path=report.path,
        entries=[LogEntry.of(event) for event in events],
        total=len(report.events),
        faults=report.problems,
    )


def select(
    events: Iterable[Event],
    *,
    feature: str | None = None,
    role: str | None = None,
    event_type: str | None = None,
) -> list[Event]:
    """The events that pass every filter given."""
    family = event_type.rstrip(".") + "." if event_type else None
    return [
        event
        for event in events
        if (feature is None or event.subject == feature or event.subject.startswith(feature + "/"))
        and (role is None or event.data.get("role") == role)
        and (
            event_type is None
            or event.type.value == event_type
            or (family is not None and event.type.value.startswith(family))
        )
    ]
