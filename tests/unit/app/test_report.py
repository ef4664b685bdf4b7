"""`consort report`'s sums, from a ledger written with Consort's own writer and an agent's
report of its turn."""

from __future__ import annotations

import json
from pathlib import Path

from consort.app.report import report
from consort.core.ledger import Actor, Ledger, ledger_path
from consort.core.project import Project


def _turn(ledger: Ledger, name: str, *, step: str, seconds: float, ok: bool = True) -> None:
    role = name.split("-", 1)[1].rsplit("-", 1)[0]
    base = {"turn": name, "role": role, "step": step, "attempt": 1}
    ledger.append("turn.started", Actor.ORCHESTRATOR, "F1", base)
    ended = {**base, "exit_code": 0 if ok else 1, "duration_s": seconds, "killed": None}
    ledger.append("turn.finished" if ok else "turn.failed", Actor.ORCHESTRATOR, "F1", ended)


def _run(ledger: Ledger, kind: str, subject: str, **seconds: float) -> None:
    ledger.append(kind, Actor.ORCHESTRATOR, subject, {"run": {"run": kind, **seconds}})


def test_time_tokens_and_cost_add_up_per_lane_and_role(tmp_path: Path):
    (tmp_path / ".consort").mkdir()
    project = Project(tmp_path)
    ledger = Ledger.open_for_writing(ledger_path(project.state_dir))
    _turn(ledger, "0001-spec-author-spec", step="spec", seconds=2.0)
    _turn(ledger, "0002-driver-green", step="green", seconds=3.0)
    _turn(ledger, "0003-driver-green", step="green", seconds=1.5, ok=False)
    _run(
        ledger,
        "green.failed",
        "F1/S1/T1",
        test_seconds=4.0,
        overhead_seconds=0.5,
        migrate_seconds=1.0,
    )
    _run(ledger, "deploy.verified", "F1", test_seconds=2.0)
    agent = project.layout.turn("0002-driver-green") / "agent.json"
    agent.parent.mkdir(parents=True)
    agent.write_text(
        json.dumps(
            {"model": "m-1", "cost_usd": 0.25, "usage": {"input_tokens": 100, "output_tokens": 20}}
        )
    )

    outcome = report(project).as_json()
    lanes = {row["name"]: row for row in outcome["lanes"]}
    assert list(lanes) == ["design", "build", "deploy"]
    assert lanes["design"]["turns"] == 1 and lanes["design"]["agent_seconds"] == 2.0
    build = lanes["build"]
    assert (build["turns"], build["failed_turns"], build["agent_seconds"]) == (2, 1, 4.5)
    assert (build["test_runs"], build["test_seconds"]) == (1, 5.5)
    assert (build["tokens"], build["cost_usd"], build["priced_turns"]) == (120, 0.25, 1)
    assert lanes["deploy"]["test_seconds"] == 2.0 and lanes["deploy"]["turns"] == 0
    roles = {row["name"]: row for row in outcome["roles"]}
    assert roles["driver"]["turns"] == 2 and roles["driver"]["cost_usd"] == 0.25
    assert outcome["total"]["agent_seconds"] == 6.5 and outcome["total"]["test_seconds"] == 7.5
    (priced,) = [t for t in outcome["turns"] if t["cost_usd"] is not None]
    assert priced["turn"] == "0002-driver-green" and priced["model"] == "m-1"
    assert [t["lane"] for t in outcome["turns"]] == ["design", "build", "build"]
