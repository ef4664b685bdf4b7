"""What the dashboard shows a person deciding whether to approve, as one JSON document.

Everything comes from the ledger and the files Consort writes: features and their lanes, each
gate with what it covers and who decided it, each story's cycles with their evidence and repairs,
agent turns (adapter, model, duration, tokens, cost), violations and refused calls, escalations
with the commands that resolve them, and the paired branches. Reads only.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from consort.core.ledger import Event
from consort.core.project import Project
from consort.core.state import FeatureState, State
from consort.core.vocabulary import ActionKind

if TYPE_CHECKING:
    from consort.lanes.gate_review import SinceApproval

AGENT_RECORD = "agent.json"  # what a headless agent CLI reported about its turn
SUMMARY_WIDTH = 160  # characters of a text field an artifact summary keeps
DIFF_LINES = 400  # lines of an artifact's diff since its approval the page gets


@dataclass
class Overview:
    project: str
    ledger: dict[str, Any]
    next: dict[str, Any]
    status: dict[str, Any]
    features: list[dict[str, Any]] = field(default_factory=list)
    turns: list[dict[str, Any]] = field(default_factory=list)
    violations: list[dict[str, Any]] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)
    decisions: list[dict[str, Any]] = field(default_factory=list)
    cost_per_role: dict[str, dict[str, float]] = field(default_factory=dict)
    runs: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "ledger": self.ledger,
            "next": self.next,
            "status": self.status,
            "features": self.features,
            "turns": self.turns,
            "violations": self.violations,
            "refused": self.refused,
            "decisions": self.decisions,
            "cost_per_role": self.cost_per_role,
            "runs": self.runs,
        }


def overview(project: Project) -> Overview:
    from consort.app.orchestrate import NextReport
    from consort.app.status import collect
    from consort.core.derive import derive
    from consort.core.ledger import Ledger, ledger_path
    from consort.core.machine import next_action

    report = Ledger(ledger_path(project.state_dir)).verify()
    events = [event.as_json() for event in report.events]
    state = derive(list(report.events), project.config, project.state_dir)
    result = Overview(
        project=str(project.root),
        ledger={
            "events": len(events),
            "ok": not report.problems,
            "problems": [str(problem) for problem in report.problems],
        },
        next=NextReport.of(next_action(state, None)).as_json(),
        # the events read above, unless the chain is broken: then status reads (and refuses) it
        status=collect(project, state, None if report.problems else report.events).as_json(),
    )
    result.decisions = _decisions(events)
    result.features = [
        _feature(project, state, f, result.decisions, _since_approval(project, report.events, f))
        for f in state.features
    ]
    result.turns = turn_records(project, events)
    result.cost_per_role = _per_role(result.turns)
    result.runs = run_records(events)
    result.violations = [
        {"seq": e["seq"], "time": e["time"], "subject": e["subject"], **e["data"]}
        for e in events
        if e["type"] == "violation.recorded"
    ]
    result.refused = [
        {"seq": e["seq"], "turn": e["data"].get("turn"), "call": call}
        for e in events
        if e["type"] in ("turn.finished", "turn.failed", "red.failed", "green.failed")
        for call in e["data"].get("refused") or ()
    ]
    return result


def _decisions(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every gate decision and escalation resolution: who (person or proxy), when, with what."""
    kinds = ("gate.approved", "gate.rejected", "escalation.resolved", "amendment.approved")
    return [
        {
            "seq": e["seq"],
            "time": e["time"],
            "type": e["type"],
            "actor": e["actor"],
            "subject": e["subject"],
            "gate": e["data"].get("gate"),
            "note": e["data"].get("note"),
        }
        for e in events
        if e["type"] in kinds
    ]


def _since_approval(
    project: Project, events: Sequence[Event], feature: FeatureState
) -> SinceApproval | None:
    """The design against its last approval, as the terminal's gate question shows it."""
    from consort.lanes.gate_review import since_approval

    hashes = {kind.value: a.current_hash for kind, a in feature.artifacts.items()}
    return since_approval(project, events, feature, hashes)


def _feature(
    project: Project,
    state: State,
    feature: FeatureState,
    decisions: list[dict[str, Any]],
    since: SinceApproval | None,
) -> dict[str, Any]:
    from consort.core.machine import next_action

    action = next_action(state, feature.id)
    gate = feature.design_gate
    changes = {c.artifact: c for c in since.artifacts} if since else {}
    covers = []
    for step in feature.steps():
        artifact = feature.artifacts[step.artifact]
        path = project.root / artifact.path if artifact.path else None
        approved = gate.approved_hashes.get(step.artifact.value)
        covers.append(
            {
                "artifact": step.artifact.value,
                "role": step.role.value,
                "path": artifact.path,
                "condition": artifact.condition.value,
                "hash": artifact.current_hash,
                "approved_hash": approved,
                "changed_since_approval": approved is not None
                and approved != artifact.current_hash,
                "summary": _summary(path),
                "diff": _diff_since_accepted(project, artifact.accepted_turn, path),
                "since_approval": None
                if step.artifact not in changes
                else changes[step.artifact].as_json(),
            }
        )
    mine = [
        d
        for d in decisions
        if d["subject"] == feature.id or d["subject"].startswith(feature.id + "/")
    ]
    build = feature.build
    pending = None
    if action.kind is ActionKind.AWAIT_GATE and action.gate is not None:
        subject = f"{feature.id}/{action.story}" if action.story else feature.id
        pending = {"gate": action.gate.value, "subject": subject, "command": action.command}
    return {
        "id": feature.id,
        "pending_gate": pending,
        "title": feature.title,
        "user_facing": feature.user_facing,
        "lane": action.lane.value,
        "next": action.describe(),
        "command": action.command,
        "escalation": None
        if feature.escalation is None
        else {
            "step": feature.escalation.step.value,
            "reason": feature.escalation.reason,
            "story": feature.escalation.story,
            "item": feature.escalation.item,
        },
        "gates": {
            "design": {
                "status": gate.status.value,
                "actor": gate.actor,
                "drifted": list(gate.drifted),
                "covers": covers,
                # the last approval, whoever made it (a person, or the proxy policy), even when
                # a rejection or a drift has opened the gate again since
                "last_approval": None
                if since is None
                else {"seq": since.seq, "actor": since.actor, "time": since.time},
            },
            "deploy": build.deploy_gate.value if build else None,
            "promote": build.promote_gate.value if build else None,
        },
        "decisions": mine,
        "build": None if build is None else _build(project, feature),
    }


def _build(project: Project, feature: FeatureState) -> dict[str, Any]:
    build = feature.build
    if build is None:
        return {}
    stories = []
    for story in build.stories:
        cycles = []
        for item in story.items:
            path = project.layout.cycle_record(feature.id, story.key, item.id)
            record = _read_json(path) or {}
            stages = record.get("stages", {}) if isinstance(record, dict) else {}
            cycles.append(
                {
                    "item": item.id,
                    "title": item.title,
                    "stage": item.stage.value,
                    "failures": item.failures,
                    "commits": {
                        "red": item.red_commit,
                        "green": item.green_commit,
                        "refactor": item.refactor_commit,
                    },
                    "stages": stages,
                    "repairs": sorted(k for k in stages if "failed" in k),
                }
            )
        stories.append(
            {
                "id": story.id,
                "key": story.key,
                "branch": story.branch,
                "database": story.database,
                "gate": story.gate.value,
                "gate_actor": story.gate_actor,
                "merged": story.merged,
                "cycles": cycles,
            }
        )
    return {
        "feature_branch": build.feature_branch,
        "base_branch": build.base_branch,
        "database": build.database,
        "deployed": build.deployed,
        "promoted": build.promoted,
        "stories": stories,
    }


def turn_records(project: Project, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    started: dict[str, dict[str, Any]] = {}
    turns = []
    for e in events:
        data = e["data"]
        if e["type"] == "turn.started":
            started[data.get("turn", "")] = e
        elif e["type"] in ("turn.finished", "turn.failed") and data.get("turn"):
            name = data["turn"]
            begin = started.get(name)
            agent = _read_json(project.layout.turn(name) / AGENT_RECORD)
            agent = agent if isinstance(agent, dict) else {}
            usage = agent.get("usage")
            counts = usage.values() if isinstance(usage, dict) else ()
            turns.append(
                {
                    "turn": name,
                    "subject": e["subject"],
                    "role": data.get("role"),
                    "step": data.get("step"),
                    "attempt": data.get("attempt"),
                    "started": begin["time"] if begin else None,
                    "finished": e["time"],
                    "duration_s": data.get("duration_s"),
                    "ok": e["type"] == "turn.finished" and data.get("exit_code") == 0,
                    "exit_code": data.get("exit_code"),
                    "sandbox": begin["data"].get("sandbox") if begin else None,
                    "adapter": data.get("adapter") or agent.get("adapter"),
                    "program": data.get("program"),
                    "version": data.get("version") or agent.get("cli_version"),
                    "model": agent.get("model"),
                    "cost_usd": agent.get("cost_usd"),
                    "tokens": sum(v for v in counts if isinstance(v, int)) or None,
                }
            )
    return turns


PROVING = {
    "red.verified": True,
    "red.failed": False,
    "green.verified": True,
    "green.failed": False,
    "refactor.verified": True,
    "refactor.failed": False,
    "deploy.verified": True,
    "deploy.failed": False,
    "story.merged": True,
    "feature.promoted": True,
}
"""The events that carry one of Consort's own test runs, and whether it proved its step."""


def run_records(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consort's own test runs, for the timeline: each ends when its event was recorded."""
    from datetime import datetime, timedelta

    runs = []
    for e in events:
        run = e["data"].get("run")
        if e["type"] not in PROVING or not isinstance(run, dict):
            continue
        took = sum(
            float(run.get(key) or 0)
            for key in ("test_seconds", "overhead_seconds", "migrate_seconds")
        )
        finished = datetime.fromisoformat(e["time"].replace("Z", "+00:00"))
        runs.append(
            {
                "seq": e["seq"],
                "type": e["type"],
                "subject": e["subject"],
                "run": run.get("run"),
                "counts": run.get("counts"),
                "database": run.get("database"),
                "seconds": round(took, 3),
                "started": (finished - timedelta(seconds=took)).isoformat(),
                "finished": finished.isoformat(),
                "ok": PROVING[e["type"]],
            }
        )
    return runs


def _per_role(turns: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    roles: dict[str, dict[str, float]] = {}
    for turn in turns:
        row = roles.setdefault(
            turn["role"] or "?", {"turns": 0, "seconds": 0.0, "cost_usd": 0.0, "tokens": 0}
        )
        row["turns"] += 1
        row["seconds"] += float(turn["duration_s"] or 0)
        row["cost_usd"] += float(turn["cost_usd"] or 0)
        row["tokens"] += int(turn["tokens"] or 0)
    return roles


def _read_json(path: Path | None) -> Any:
    if path is None or not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _summary(path: Path | None) -> list[str]:
    """A few readable lines about an artifact: its text fields, and its lists by their names."""
    data = _read_json(path)
    if not isinstance(data, dict):
        return []
    lines = []
    for key, value in data.items():
        if isinstance(value, str) and value.strip():
            text = " ".join(value.split())
            lines.append(
                f"{key}: {text[:SUMMARY_WIDTH]}" + ("…" if len(text) > SUMMARY_WIDTH else "")
            )
        elif isinstance(value, list):
            names = [_name_of(v) for v in value]
            shown = ", ".join(n for n in names if n)[:SUMMARY_WIDTH]
            lines.append(f"{key}: {len(value)}" + (f" ({shown})" if shown else ""))
    return lines


def _name_of(value: Any) -> str:
    if isinstance(value, dict):
        for key in ("id", "name", "title", "table", "path"):
            if isinstance(value.get(key), str):
                return str(value[key])
    return value if isinstance(value, str) else ""


def _diff_since_accepted(project: Project, turn: str | None, path: Path | None) -> list[str]:
    """The artifact's change since the accepted version (the turn's output), line by line."""
    if turn is None or path is None or not path.is_file():
        return []
    accepted = project.layout.turn_output(turn, path.name)
    before, after = _read_json(accepted), _read_json(path)
    if before is None or after is None or before == after:
        return []
    lines = difflib.unified_diff(
        json.dumps(before, indent=2, sort_keys=True).splitlines(),
        json.dumps(after, indent=2, sort_keys=True).splitlines(),
        "accepted",
        "now",
        lineterm="",
    )
    return list(lines)[:DIFF_LINES]
