"""What a turn of a headless CLI leaves where people look: the ledger names the adapter, the CLI
and its version, and a call the guard refused reaches result.json and the failed turn's errors.

The CLI is the fake `claude` (tests/fakes), which runs the real `consort guard` as its hook.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from consort.core.ledger import EventType, Ledger, ledger_path
from consort.core.project import Project
from consort.core.vocabulary import Role, Step
from consort.lanes.turn import TurnRequest, Verdict, open_turn, run_turn
from tests.fakes import FAKES, install_fakes, write_scenario
from tests.helpers import git

pytestmark = pytest.mark.integration


def test_a_refused_write_and_the_agent_reach_the_ledger_and_result(tmp_path: Path) -> None:
    root = tmp_path / "shop"
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir(parents=True)
    (root / ".consort").mkdir()
    test_file = root / "tests" / "test_app.py"
    test_file.write_text("def test_app():\n    assert False\n")
    claude = install_fakes(tmp_path / "bin") / "claude"
    scenario = write_scenario(
        tmp_path / "scenario.json",
        steps=[
            {"init": True},
            {"write": str(test_file), "content": "def test_app():\n    pass\n"},
            {"write": str(root / "src" / "app.py"), "content": "APP = 1\n"},
            {"result": {"result": "done"}},
        ],
    )
    constants = {"FAKE_CLAUDE_SCENARIO": str(scenario)}
    (root / "consort.toml").write_text(
        f'[agents]\ndefault = "claude"\ncommand = [{json.dumps(str(claude))}]\n'
        f"env = {{ FAKE_CLAUDE_SCENARIO = {json.dumps(constants['FAKE_CLAUDE_SCENARIO'])} }}\n"
        "retries = 0\n"
        # The fake runs from the tests' folder and reads its scenario: shown in its sandbox.
        f"read_only = [{json.dumps(str(FAKES))}, {json.dumps(str(scenario))}]\n"
        # What is recorded does not depend on the sandbox, which has tests of its own; this
        # turn writes the main checkout, which a sandboxed turn cannot.
        'sandbox = "off"\n'
    )
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")
    project = Project(root)
    ledger = Ledger.open_for_writing(ledger_path(project.state_dir))
    turn = open_turn(project, Role.SPEC_AUTHOR, Step.SPEC)
    request = TurnRequest(
        subject="F1", feature="F1", story=None, item=None, attempt=1, feedback=None,
        instructions="Write the spec.", inputs={},
        outputs={"feature-spec": turn.path / "outputs" / "feature-spec.json"},
        workdir=root, writable=("src/**",), protected=("tests/**",),
    )  # fmt: skip
    done = run_turn(
        project,
        ledger,
        turn,
        request,
        verdict=Verdict.TURN,
        check=lambda: [] if request.outputs["feature-spec"].exists() else ["no spec written"],
    )

    assert test_file.read_text() == "def test_app():\n    assert False\n"
    (failed,) = [
        e for e in Ledger(ledger_path(project.state_dir)).read() if e.type is EventType.TURN_FAILED
    ]
    assert failed.data["adapter"] == "claude"
    assert failed.data["program"] == "Claude Code"
    assert failed.data["version"] == "2.0.0 (Claude Code)"
    assert failed.data["refused"] == ["Write tests/test_app.py"]
    assert "no spec written" in failed.data["errors"]
    assert any(
        e.startswith("the guard refused Write tests/test_app.py: consort guard:")
        for e in failed.data["errors"]
    )
    result = json.loads(done.dir.result_path.read_text())
    assert result["agent"]["adapter"] == "claude"
    assert [r["target"] for r in result["agent"]["refused"]] == ["tests/test_app.py"]
    # What the agent changed and Consort kept: the file it may write.
    assert [(c["path"], c["kind"]) for c in result["changed_files"]] == [("src/app.py", "added")]
