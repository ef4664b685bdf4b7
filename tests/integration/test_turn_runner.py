"""The guarded turn (`consort.lanes.turn`): real git, a real agent process, a real ledger.

The agent is a `command` agent written here: on each call it does what the test's plan says for
that call (write files anywhere, print to stderr, exit with a code) and records the task and the
environment it was given. No test waits on a clock: every agent ends on its own.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from consort.adapters.agents.task import TurnDir
from consort.core.errors import UsageError
from consort.core.ledger import Event, EventType, Ledger, ledger_path
from consort.core.project import Project
from consort.core.vocabulary import Role, SandboxUse, Step
from consort.lanes.intake import IntakeKind, record
from consort.lanes.loop import drive
from consort.lanes.turn import TurnRequest, TurnRun, Verdict, open_turn, run_turn
from tests.helpers import git

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "artifacts"
APP = "def total(counts):\n    return sum(counts)\n"
TEST = "from src.app import total\n\n\ndef test_total():\n    assert total([1, 2]) == 3\n"

AGENT_SOURCE = r'''
"""Does what the plan says for this call, and records what it was given."""
import json
import os
import pathlib
import shutil
import sys

control = pathlib.Path(sys.argv[1])
task = json.loads(pathlib.Path(os.environ["CONSORT_TASK"]).read_text(encoding="utf-8"))
counter = control / "calls"
call = (int(counter.read_text()) if counter.exists() else 0) + 1
counter.write_text(str(call))
seen = {"task": task, "cwd": os.getcwd(), "database_url": os.environ.get("DATABASE_URL")}
(control / f"seen-{call}.json").write_text(json.dumps(seen))
plans = json.loads((control / "plan.json").read_text())
plan = plans[call - 1] if call <= len(plans) else {}
for path, text in plan.get("write", {}).items():
    target = pathlib.Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
for path, text in plan.get("append", {}).items():
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(text)
if "copy" in plan:
    ((name, out),) = task["outputs"].items()
    shutil.copyfile(plan["copy"], out)
if "stderr" in plan:
    sys.stderr.write(plan["stderr"])
sys.exit(plan.get("exit", 0))
'''


@dataclass
class Setup:
    root: Path
    control: Path

    @property
    def project(self) -> Project:
        return Project(self.root)

    @property
    def ledger_file(self) -> Path:
        return ledger_path(self.project.state_dir)

    def plan(self, *calls: Mapping[str, Any]) -> None:
        (self.control / "plan.json").write_text(json.dumps(list(calls)))

    def seen(self, call: int) -> dict[str, Any]:
        return dict(json.loads((self.control / f"seen-{call}.json").read_text()))

    def calls(self) -> int:
        counter = self.control / "calls"
        return int(counter.read_text()) if counter.exists() else 0

    def events(self) -> list[Event]:
        return list(Ledger(self.ledger_file).read())


def _commit(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message)


@pytest.fixture
def setup(tmp_path: Path) -> Setup:
    """A git repository with consort.toml, one source file and one test, and a command agent."""
    root, control = tmp_path / "shop", tmp_path / "control"
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    control.mkdir()
    (tmp_path / "agent.py").write_text(AGENT_SOURCE)
    (root / "src" / "app.py").write_text(APP)
    (root / "tests" / "test_app.py").write_text(TEST)
    (root / ".gitignore").write_text(".consort/turns/\n.consort/worktrees/\n.consort/*.lock\n")
    command = [sys.executable, str(tmp_path / "agent.py"), str(control)]
    # These tests are about the post-turn check, which must hold by itself when a person turns
    # the sandbox off: in a sandbox the agent's writes outside its scope fail before there is
    # anything to revert (tests/integration/test_sandbox.py, tests/adversarial). The control
    # folder is the agent's state either way.
    (root / "consort.toml").write_text(
        f'[turns]\nretries = 2\n\n[agents]\ndefault = "command"\ncommand = {json.dumps(command)}\n'
        f'sandbox = "off"\nstate = [{json.dumps(str(control))}]\n'
    )
    (root / ".consort").mkdir()
    git(root, "init", "-q", "-b", "main")
    _commit(root, "start")
    return Setup(root, control)


def _request(setup: Setup, turn_path: Path, **changes: Any) -> TurnRequest:
    fields: dict[str, Any] = {
        "subject": "F1-counts",
        "feature": "F1-counts",
        "story": None,
        "item": None,
        "attempt": 1,
        "feedback": None,
        "instructions": "Write the spec.",
        "inputs": {},
        "outputs": {"feature-spec": turn_path / "outputs" / "feature-spec.json"},
        "workdir": setup.root,
        "writable": (),
        "protected": ("tests/**",),
    }
    fields.update(changes)
    return TurnRequest(**fields)


def _run(setup: Setup, request_changes: Mapping[str, Any] | None = None, **kwargs: Any) -> TurnRun:
    project = setup.project
    ledger = Ledger.open_for_writing(setup.ledger_file)
    turn = open_turn(project, Role.SPEC_AUTHOR, Step.SPEC)
    request = _request(setup, turn.path, **(request_changes or {}))
    kwargs.setdefault("verdict", Verdict.TURN)
    return run_turn(project, ledger, turn, request, **kwargs)


def _of(events: list[Event], kind: EventType) -> list[Event]:
    return [e for e in events if e.type is kind]


def test_changes_outside_the_scope_are_reverted_and_recorded(setup: Setup) -> None:
    root = setup.root
    ledger_before = setup.ledger_file
    setup.plan(
        {
            "write": {
                str(root / "src" / "sneaky.py"): "print('hi')\n",
                str(root / "src" / "app.py"): "def total(counts):\n    return 3\n",
                str(root / "tests" / "test_app.py"): "def test_total():\n    pass\n",
            },
            "append": {str(ledger_before): '{"seq": 99, "type": "gate.approved"}\n'},
            "copy": str(FIXTURES / "feature-spec.json"),
        }
    )
    done = _run(setup)

    assert not (root / "src" / "sneaky.py").exists()
    assert (root / "src" / "app.py").read_text() == APP
    assert (root / "tests" / "test_app.py").read_text() == TEST
    assert git(root, "status", "--porcelain") == "?? .consort/"  # only Consort's own ledger
    # The output in the turn's own folder is the agent's to write: it stays.
    assert (done.dir.path / "outputs" / "feature-spec.json").is_file()

    reverted = {"src/sneaky.py", "src/app.py", "tests/test_app.py", ".consort/ledger.jsonl"}
    assert {v.path for v in done.violations} == reverted
    events = setup.events()  # reading verifies the chain: the forged line is gone
    assert [e.type for e in events] == [
        EventType.TURN_STARTED,
        *[EventType.VIOLATION_RECORDED] * len(reverted),
        EventType.TURN_FAILED,
    ]
    recorded = _of(events, EventType.VIOLATION_RECORDED)
    assert {e.data["path"] for e in recorded} == reverted
    assert {e.data["role"] for e in recorded} == {"spec-author"}
    assert {e.data["turn"] for e in recorded} == {done.name}
    (failed,) = _of(events, EventType.TURN_FAILED)
    assert not _of(events, EventType.TURN_FINISHED)
    assert failed.data["turn"] == done.name and failed.data["step"] == "spec"
    for path in reverted:
        assert any(
            f"changed {path}, which this turn may not change" in e and "reverted" in e
            for e in failed.data["errors"]
        ), path
    assert failed.data["feedback"] == "\n".join(failed.data["errors"])
    result = json.loads(done.dir.result_path.read_text())
    assert {v["path"] for v in result["violations"]} == reverted


def test_a_failed_exit_fails_the_turn_with_its_stderr(setup: Setup) -> None:
    setup.plan({"stderr": "cannot reach the model\n", "exit": 3})
    done = _run(setup, check=lambda: ["no feature-spec written"])

    assert done.problems == (
        "the agent exited 3: cannot reach the model",
        "no feature-spec written",
    )
    assert not done.violations and not done.ok
    (failed,) = _of(setup.events(), EventType.TURN_FAILED)
    assert failed.data["exit_code"] == 3 and failed.data["killed"] is None
    assert failed.data["attempt"] == 1
    assert list(failed.data["errors"]) == list(done.problems)
    result = json.loads(done.dir.result_path.read_text())
    assert result["exit_code"] == 3
    assert result["agent"]["adapter"] == "command"


def test_a_clean_turn_finishes_and_runs_the_checks_after_the_revert(setup: Setup) -> None:
    sneaky = setup.root / "src" / "sneaky.py"
    setup.plan({"write": {str(sneaky): "x = 1\n"}, "copy": str(FIXTURES / "feature-spec.json")})
    seen_by_check: list[bool] = []

    def check() -> list[str]:
        seen_by_check.append(sneaky.exists())
        return []

    done = _run(setup, check=check)
    assert seen_by_check == [False]  # the output checks never see a change that was reverted
    assert not done.ok  # the violation alone fails the turn
    setup.plan({"copy": str(FIXTURES / "feature-spec.json")})
    (setup.control / "calls").unlink()
    clean = _run(setup)
    assert clean.ok and clean.problems == () and clean.violations == ()
    finished = _of(setup.events(), EventType.TURN_FINISHED)
    assert [e.data["turn"] for e in finished] == [clean.name]


def test_a_build_turn_is_guarded_in_its_worktree_and_the_main_checkout(setup: Setup) -> None:
    """A driver-like turn in a story worktree: it may write code there, not tests, and nothing
    in the main checkout; it ends as turn.finished, its problems left to the step to record."""
    root = setup.root
    worktree = root / ".consort" / "worktrees" / "F1-counts" / "S1"
    git(root, "branch", "story")
    git(root, "worktree", "add", "-q", str(worktree), "story")
    setup.plan(
        {
            "write": {
                str(worktree / "src" / "more.py"): "y = 2\n",
                str(worktree / "tests" / "test_app.py"): "def test_total():\n    pass\n",
                str(root / "src" / "app.py"): "broken\n",
            }
        }
    )
    url = "postgresql://story@127.0.0.1:1/story_db"
    done = _run(
        setup,
        {
            "subject": "F1-counts/S1/T1",
            "story": "S1",
            "item": "T1",
            "outputs": {},
            "workdir": worktree,
            "writable": ("**",),
            "protected": ("tests/**",),
            "database_url": url,
        },
        verdict=Verdict.STEP,
    )
    assert (worktree / "src" / "more.py").read_text() == "y = 2\n"
    assert (worktree / "tests" / "test_app.py").read_text() == TEST
    assert (root / "src" / "app.py").read_text() == APP
    assert {v.path for v in done.violations} == {"tests/test_app.py", "src/app.py"}
    assert len(done.problems) == 2

    seen = setup.seen(1)
    assert Path(seen["cwd"]).resolve() == worktree.resolve()
    assert seen["database_url"] == url
    assert seen["task"]["story"] == "S1" and seen["task"]["item"] == "T1"
    assert seen["task"]["protected"] == ["tests/**"]

    events = setup.events()
    assert not _of(events, EventType.TURN_FAILED)
    (finished,) = _of(events, EventType.TURN_FINISHED)
    assert finished.subject == "F1-counts/S1/T1" and finished.data["exit_code"] == 0
    assert len(_of(events, EventType.VIOLATION_RECORDED)) == 2


def test_a_misconfigured_agent_stops_before_the_turn_exists(setup: Setup) -> None:
    (setup.root / "consort.toml").write_text('[agents]\ndefault = "command"\n')
    with pytest.raises(UsageError, match="no command is set"):
        open_turn(setup.project, Role.SPEC_AUTHOR, Step.SPEC)
    turns = setup.project.layout.turns
    assert not turns.exists() or not [p for p in turns.iterdir() if not p.name.startswith(".")]
    assert not setup.ledger_file.exists()


def test_a_failed_turn_is_retried_with_its_problems_as_feedback(setup: Setup) -> None:
    """Through the real loop: attempt 1 exits 1; the machine asks for attempt 2 with the
    problems as feedback, which reaches the agent in task.json; attempt 2 is accepted."""
    project = setup.project
    feature = record(project, IntakeKind.FEATURE, "Counts\n\nFile stock counts.\n").feature
    assert feature is not None
    _commit(setup.root, "intake")
    setup.plan(
        {"stderr": "the model is busy\n", "exit": 1},
        {"copy": str(FIXTURES / "feature-spec.json")},
    )
    result = drive(project, feature=feature, max_steps=2)
    assert result.steps == 2, result

    assert setup.calls() == 2
    first, second = setup.seen(1)["task"], setup.seen(2)["task"]
    assert (first["attempt"], first["feedback"]) == (1, None)
    assert second["attempt"] == 2
    assert second["feedback"].startswith("the agent exited 1: the model is busy\nno feature-spec")
    events = [e for e in setup.events() if e.subject == feature]
    started = _of(events, EventType.TURN_STARTED)
    assert [(e.data["step"], e.data["attempt"]) for e in started] == [("spec", 1), ("spec", 2)]
    (failed,) = _of(events, EventType.TURN_FAILED)
    assert failed.data["turn"] == started[0].data["turn"]
    (accepted,) = [
        e for e in _of(events, EventType.ARTIFACT_ACCEPTED) if e.data["kind"] == "feature-spec"
    ]
    assert accepted.data["turn"] == started[1].data["turn"]
    assert TurnDir.open(project.layout.turn(str(accepted.data["turn"])))


def test_the_agent_is_launched_in_one_place_only() -> None:
    """Sandboxing wraps the one launch: no lane starts an agent or checks scope on its own."""
    lanes = Path(__file__).resolve().parents[2] / "src" / "consort" / "lanes"
    offenders = subprocess.run(
        [
            "grep",
            "-rlE",
            "--include=*.py",
            r"adapter_for|make_adapter|\.run\(task|revert_outside_scope",
            str(lanes),
        ],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    assert [Path(p).name for p in offenders] == ["turn.py"]


def test_in_the_sandbox_the_same_writes_fail_and_there_is_nothing_to_revert(setup: Setup) -> None:
    root = setup.root
    config = root / "consort.toml"
    config.write_text(config.read_text().replace('sandbox = "off"\n', ""))
    setup.plan(
        {"copy": str(FIXTURES / "feature-spec.json")},
        {"write": {str(root / "src" / "sneaky.py"): "print('hi')\n"}},
    )
    assert _run(setup).ok  # its own output folder is writable
    done = _run(setup)
    assert not (root / "src" / "sneaky.py").exists()
    assert done.violations == ()  # nothing changed: the write failed in the sandbox
    assert "Read-only file system" in (done.dir.stderr_path).read_text()
    started = _of(setup.events(), EventType.TURN_STARTED)
    assert [e.data["sandbox"] for e in started] == ["bwrap", "bwrap"]


def test_a_replayed_turn_gets_no_scratch_database(setup: Setup, tmp_path: Path) -> None:
    """A replay runs no agent process (Consort writes the recorded files itself): nothing could
    connect to a scratch child, so none is made. The branch named here has no database and the
    project no server: a scratch child of it could not be made, and the turn still finishes."""
    recording = tmp_path / "recording"
    (recording / "F1-counts" / "spec" / "outputs").mkdir(parents=True)
    shutil.copyfile(
        FIXTURES / "feature-spec.json",
        recording / "F1-counts" / "spec" / "outputs" / "feature-spec",
    )
    (setup.root / "consort.toml").write_text(
        f'[agents]\ndefault = "replay"\ndir = {json.dumps(str(recording))}\n'
    )
    done = _run(setup, {"scratch_of": "story_without_a_database"})
    assert done.ok, done.problems
    assert done.outcome.sandbox is SandboxUse.NO_PROCESS
    assert json.loads((done.dir.path / "outputs" / "feature-spec.json").read_text()) == (
        json.loads((FIXTURES / "feature-spec.json").read_text())
    )
