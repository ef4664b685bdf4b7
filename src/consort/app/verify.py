"""`consort verify`: re-check the ledger's hash chain, every gate's hashes and the evidence."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from consort.core.errors import ExitCode
from consort.core.project import Project


@dataclass(frozen=True)
class VerifyOutcome:
    holds: list[str]  # what was checked and holds, one line each
    fails: list[str]  # what does not hold
    warnings: list[str] = field(default_factory=list)  # holds, yet a person should know it

    @property
    def ok(self) -> bool:
        return not self.fails

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.OK if self.ok else ExitCode.INTEGRITY

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "holds": self.holds,
            "fails": self.fails,
            "warnings": self.warnings,
        }


def verify(project: Project) -> VerifyOutcome:
    from consort.lanes.verify import verify as run

    report = run(project)
    return VerifyOutcome(
        holds=list(report.holds), fails=list(report.fails), warnings=list(report.warnings)
    )
