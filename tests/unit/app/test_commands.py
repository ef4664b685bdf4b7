"""The command API's results: what the CLI prints comes from them, and their JSON is stable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from consort.app import orchestrate, schema
from consort.app.errors import ExitCode, UsageError
from consort.app.guard import decide
from consort.app.log import LogFilter, read_log
from consort.app.project import Project, find_project
from consort.app.verify import VerifyOutcome
from consort.core.config import DEFAULT_CONFIG_TEXT
from consort.core.ledger import Actor, EventType, Ledger, LedgerCorrupt, ledger_path

NEXT_KEYS = {"kind", "lane", "feature", "role", "step", "attempt", "reason", "command"}


@pytest.fixture
def project(tmp_path: Path) -> Project:
    (tmp_path / "consort.toml").write_text(DEFAULT_CONFIG_TEXT, encoding="utf-8")
    (tmp_path / ".consort").mkdir()
    return find_project(tmp_path)


def test_next_on_a_new_project_asks_for_intake(project: Project) -> None:
    report = orchestrate.next_action(project)
    assert report.kind == "intake-needed"
    assert set(report.as_json()) == NEXT_KEYS  # the summary line is for the terminal only
    assert report.summary.startswith("intake-needed")
    json.dumps(report.as_json())


def test_next_for_an_unknown_feature_is_a_usage_error(project: Project) -> None:
    with pytest.raises(UsageError, match="no feature 'F7'"):
        orchestrate.next_action(project, "F7")


def test_a_decision_is_read_back_from_its_event(project: Project) -> None:
    ledger = Ledger(ledger_path(project.state_dir))
    event = ledger.append(
        EventType.GATE_REJECTED,
        Actor.HUMAN,
        "F1-stock",
        {"gate": "design", "artifact": "db-design", "note": "n"},
    )
    outcome = orchestrate.DecisionOutcome.of(event)
    assert (outcome.seq, outcome.type, outcome.actor, outcome.subject, outcome.artifact) == (
        1,
        "gate.rejected",
        "human",
        "F1-stock",
        "db-design",
    )


def test_the_log_s_json_is_the_ledger_s_lines(project: Project) -> None:
    path = ledger_path(project.state_dir)
    ledger = Ledger(path)
    ledger.append(EventType.TURN_STARTED, Actor.ROLE, "F1/S1/T1", {"role": "driver"})
    ledger.append(EventType.TURN_STARTED, Actor.ROLE, "F2/S1/T1", {"role": "navigator"})
    report = read_log(project, LogFilter(role="navigator"))
    stored = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert report.as_json() == [stored[1]]
    assert report.total == 2 and report.ok
    report.require_intact()


def test_a_broken_ledger_is_shown_and_then_refused(project: Project) -> None:
    path = ledger_path(project.state_dir)
    ledger = Ledger(path)
    ledger.append(EventType.TURN_STARTED, Actor.ROLE, "F1", {"role": "driver"})
    ledger.append(EventType.TURN_STARTED, Actor.ROLE, "F1", {"role": "navigator"})
    path.write_text(path.read_text(encoding="utf-8").replace("driver", "Driver"), "utf-8")
    report = read_log(project)
    assert report.total == 2  # what still parses is shown
    assert not report.ok and report.problems
    with pytest.raises(LedgerCorrupt) as raised:
        report.require_intact()
    assert raised.value.code is ExitCode.INTEGRITY


def test_verify_exits_4_when_anything_fails() -> None:
    assert VerifyOutcome(holds=["a"], fails=[]).exit_code is ExitCode.OK
    failed = VerifyOutcome(holds=["a"], fails=["b"])
    assert failed.exit_code is ExitCode.INTEGRITY
    assert failed.as_json() == {"ok": False, "holds": ["a"], "fails": ["b"], "warnings": []}
    # An unsandboxed turn is said, not failed: a person chose it.
    warned = VerifyOutcome(holds=["a"], fails=[], warnings=["1 agent turn(s) ran without"])
    assert warned.exit_code is ExitCode.OK and warned.as_json()["warnings"]


def test_the_guard_allows_everything_outside_a_turn_and_refuses_bad_input_inside() -> None:
    assert decide("not json", {}).as_json() == {"allowed": True, "reason": "", "exit_code": 0}
    inside = decide("not json", {"CONSORT_TASK": "/nonexistent/task.json"})
    assert not inside.allowed and inside.exit_code == 2 and inside.reason


def test_schema_names_every_kind_and_refuses_a_missing_name() -> None:
    assert "feature-spec" in schema.kinds()
    assert schema.schema("feature-spec")["$schema"].startswith("https://json-schema.org/")
    with pytest.raises(UsageError, match="which artifact"):
        schema.schema(None)
