"""`consort report`: where the time and the money went, per lane, per role and per turn, from
the ledger (and what agent CLIs reported about their turns: model, tokens, cost)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from consort.core.project import Project
from consort.core.vocabulary import Lane, Step

RUN_LANES = {
    "red.verified": Lane.BUILD,
    "red.failed": Lane.BUILD,
    "green.verified": Lane.BUILD,
    "green.failed": Lane.BUILD,
    "refactor.verified": Lane.BUILD,
    "refactor.failed": Lane.BUILD,
    "story.merged": Lane.BUILD,
    "deploy.verified": Lane.DEPLOY,
    "deploy.failed": Lane.DEPLOY,
    "feature.promoted": Lane.PROMOTE,
}
"""The lane each of Consort's own test runs belongs to, by the event that records it."""


@dataclass
class Totals:
    """What a group of turns and runs cost."""

    name: str
    turns: int = 0
    failed_turns: int = 0
    agent_seconds: float = 0.0  # the agents' processes
    test_runs: int = 0
    test_seconds: float = 0.0  # Consort's own runs: migrations, the suite, the export
    tokens: int = 0
    cost_usd: float = 0.0
    priced_turns: int = 0  # turns whose agent reported a cost (the others cost unknown)

    def add_turn(self, turn: dict[str, Any]) -> None:
        self.turns += 1
        self.failed_turns += 0 if turn["ok"] else 1
        self.agent_seconds += float(turn["duration_s"] or 0)
        self.tokens += int(turn["tokens"] or 0)
        if turn["cost_usd"] is not None:
            self.cost_usd += float(turn["cost_usd"])
            self.priced_turns += 1

    def add_run(self, run: dict[str, Any]) -> None:
        self.test_runs += 1
        self.test_seconds += float(run["seconds"] or 0)

    def as_json(self) -> dict[str, Any]:
        shown = asdict(self)
        shown["agent_seconds"] = round(self.agent_seconds, 3)
        shown["test_seconds"] = round(self.test_seconds, 3)
        shown["cost_usd"] = round(self.cost_usd, 6)
        return shown


@dataclass
class RunReport:
    lanes: list[Totals] = field(default_factory=list)
    roles: list[Totals] = field(default_factory=list)
    turns: list[dict[str, Any]] = field(default_factory=list)
    total: Totals = field(default_factory=lambda: Totals("total"))

    def as_json(self) -> dict[str, Any]:
        return {
            "lanes": [row.as_json() for row in self.lanes],
            "roles": [row.as_json() for row in self.roles],
            "turns": self.turns,
            "total": self.total.as_json(),
        }


def lane_of_step(step: str | None) -> Lane:
    try:
        if step == Step.EXPLORE:
            return Lane.SPIKE  # a spike's explorer: outside the gated loop
        return Lane.BUILD if step and Step(step).is_build else Lane.DESIGN
    except ValueError:
        return Lane.DESIGN


def report(project: Project) -> RunReport:
    from consort.app.overview import run_records, turn_records
    from consort.core.ledger import Ledger, ledger_path

    ledger = Ledger(ledger_path(project.state_dir))
    events = [event.as_json() for event in ledger.read()] if ledger.path.exists() else []
    lanes: dict[Lane, Totals] = {}
    roles: dict[str, Totals] = {}
    result = RunReport()
    for turn in turn_records(project, events):
        lane = lane_of_step(turn["step"])
        lanes.setdefault(lane, Totals(lane.value)).add_turn(turn)
        role = turn["role"] or "?"
        roles.setdefault(role, Totals(role)).add_turn(turn)
        result.total.add_turn(turn)
        result.turns.append({**turn, "lane": lane.value})
    for run in run_records(events):
        lane = RUN_LANES[run["type"]]
        lanes.setdefault(lane, Totals(lane.value)).add_run(run)
        result.total.add_run(run)
    order = list(Lane)
    result.lanes = [lanes[lane] for lane in sorted(lanes, key=order.index)]
    result.roles = list(roles.values())
    return result
