"""How the ledger says each agent turn ran: sandboxed, replayed (no agent process), or
unsandboxed because a person set `[agents] sandbox = "off"`. `status` and `verify` report it.

An unsandboxed turn is no integrity failure (a person chose it), but nothing Consort's sandbox
promises holds for it: that turn could have read the secret or written outside its tree (its
processes still end with it: `adapters.reaper`). So it is always said.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from consort.core.ledger import Event, EventType
from consort.core.ledger.events import TurnStarted
from consort.core.vocabulary import SandboxUse


@dataclass(frozen=True)
class SandboxRecord:
    sandboxed: int
    replayed: int
    unsandboxed: tuple[str, ...]  # "F1/S1/T2: 0007-driver-green"
    unrecorded: int  # started before the ledger recorded how turns ran

    def summary(self) -> str:
        return (
            f"agent turns: {self.sandboxed} sandboxed, {self.replayed} replayed (no agent "
            f"process), {len(self.unsandboxed)} unsandboxed"
            + (f", {self.unrecorded} from before sandboxes" if self.unrecorded else "")
        )

    def warning(self) -> str | None:
        if not self.unsandboxed:
            return None
        shown = ", ".join(self.unsandboxed[:5]) + (" ..." if len(self.unsandboxed) > 5 else "")
        return (
            f"{len(self.unsandboxed)} agent turn(s) ran without a sandbox ([agents] sandbox = "
            f'"off"): nothing stopped them reading secrets or writing outside their tree: {shown}'
        )


def sandbox_record(events: Iterable[Event]) -> SandboxRecord:
    counts = {use: 0 for use in SandboxUse}
    unsandboxed: list[str] = []
    unrecorded = 0
    for event in events:
        if event.type is not EventType.TURN_STARTED:
            continue
        started = TurnStarted.of(event)
        if started.sandbox is None:
            unrecorded += 1
            continue
        counts[started.sandbox] += 1
        if started.sandbox is SandboxUse.OFF:
            unsandboxed.append(f"{event.subject}: {started.turn}")
    return SandboxRecord(
        sandboxed=counts[SandboxUse.BWRAP],
        replayed=counts[SandboxUse.NO_PROCESS],
        unsandboxed=tuple(unsandboxed),
        unrecorded=unrecorded,
    )
