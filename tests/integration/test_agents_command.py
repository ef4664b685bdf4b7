"""The command adapter with real agent processes: outputs, failures, stalls and environment."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import textwrap
import time
from pathlib import Path

import pytest

from consort.adapters.agents.base import KillReason, TurnOutcome, build_agent_env
from consort.adapters.agents.command import CommandAdapter, Limits, run_agent_process
from consort.adapters.agents.task import Task, TurnDir
from consort.core.vocabulary import Role, Step

pytestmark = pytest.mark.integration


def alive(pid: int) -> bool:
    """Whether `pid` runs. A zombie counts as dead: orphans stay zombies until init reaps them,
    which some container inits never do, and a zombie still answers os.kill(pid, 0)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def wait_dead(pid: int, within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


class Turn:
    """A project folder with one allocated turn, its task.json and the agent's environment."""

    def __init__(self, root: Path, *, database_url: str | None = None, allow: tuple[str, ...] = ()):
        self.tree = root / "tree"
        self.tree.mkdir()
        self.dir = TurnDir.allocate(self.tree / ".consort", Role.DRIVER, Step.GREEN)
        self.output = self.tree / ".consort" / "features" / "F1" / "notes.json"
        self.task = Task(
            turn=self.dir.number,
            role=Role.DRIVER,
            step=Step.GREEN,
            attempt=1,
            feature="F1",
            story="S1",
            item="T1",
            instructions="make T1 pass",
            inputs={},
            outputs={"notes": self.output},
            writable=("src/**",),
            protected=("tests/**",),
            feedback=None,
        )
        self.dir.write_task(self.task)
        self.env = build_agent_env(
            self.dir.task_path, Role.DRIVER, Step.GREEN, database_url, allow=allow
        )

    def run(self, script: str, limits: Limits | None = None, *args: str) -> TurnOutcome:
        path = self.tree.parent / "agent.py"
        path.write_text(textwrap.dedent(script))
        adapter = CommandAdapter((sys.executable, str(path), *args), limits or Limits(grace_s=1))
        return adapter.run(self.task, self.dir, self.tree, self.env)


def test_an_agent_that_writes_its_outputs_and_exits_0(tmp_path: Path) -> None:
    turn = Turn(tmp_path)
    outcome = turn.run(
        """
        import json, os, pathlib, sys
        task = json.loads(pathlib.Path(os.environ["CONSORT_TASK"]).read_text())
        out = pathlib.Path(task["outputs"]["notes"])
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"item": task["item"], "role": os.environ["CONSORT_ROLE"]}))
        pathlib.Path("src").mkdir()
        pathlib.Path("src/app.py").write_text("ANSWER = 42\\n")
        print("working on", task["item"])
        print("a warning", file=sys.stderr)
        """
    )
    assert outcome.ok
    assert outcome.exit_code == 0
    assert outcome.killed is None and not outcome.timed_out
    assert json.loads(turn.output.read_text()) == {"item": "T1", "role": "driver"}
    assert (turn.tree / "src/app.py").read_text() == "ANSWER = 42\n"  # cwd is the tree
    assert outcome.stdout_path == turn.dir.stdout_path
    assert turn.dir.stdout_path.read_text() == "working on T1\n"
    assert turn.dir.stderr_path.read_text() == "a warning\n"
    assert 0 < outcome.duration_s < 30


def test_an_agent_that_exits_1_is_a_failed_attempt(tmp_path: Path) -> None:
    turn = Turn(tmp_path)
    outcome = turn.run("import sys\nprint('cannot do it', file=sys.stderr)\nsys.exit(1)\n")
    assert not outcome.ok
    assert outcome.exit_code == 1
    assert outcome.killed is None
    assert outcome.error is None
    assert turn.dir.stderr_path.read_text() == "cannot do it\n"


HANGING_AGENT = """
import os, signal, subprocess, sys, time
print("starting", flush=True)
pid_file = sys.argv[1]
if len(sys.argv) > 2 and sys.argv[2] == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
grandchild = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
with open(pid_file, "w") as handle:
    handle.write(f"{os.getpid()} {grandchild.pid}")
print("started", flush=True)  # the silence begins only now, after the pid file is written
time.sleep(600)
"""


@pytest.mark.parametrize("stubborn", [False, True], ids=["polite", "ignores-sigterm"])
def test_a_silent_agent_is_killed_with_its_whole_process_group(
    tmp_path: Path, stubborn: bool
) -> None:
    turn = Turn(tmp_path)
    pid_file = tmp_path / "pids"  # outside the tree: writing it is no sign of life
    args = (str(pid_file), "stubborn") if stubborn else (str(pid_file),)
    started = time.monotonic()
    outcome = turn.run(HANGING_AGENT, Limits(inactivity_s=2.0, grace_s=0.5), *args)
    elapsed = time.monotonic() - started

    assert outcome.killed is KillReason.INACTIVITY
    assert outcome.timed_out
    assert not outcome.ok
    assert outcome.duration_s >= 1.0 and elapsed < 10
    expected_signal = signal.SIGKILL if stubborn else signal.SIGTERM
    assert outcome.exit_code == -expected_signal
    leader, grandchild = (int(p) for p in pid_file.read_text().split())
    assert wait_dead(leader)
    assert wait_dead(grandchild), "the grandchild survived the turn"


def test_output_keeps_a_slow_agent_alive(tmp_path: Path) -> None:
    turn = Turn(tmp_path)
    outcome = turn.run(
        """
        import time
        for i in range(8):
            print("step", i, flush=True)
            time.sleep(0.5)
        """,
        Limits(inactivity_s=3.0, grace_s=0.5),  # under the 4 s it runs, far above each pause
    )
    assert outcome.ok, turn.dir.stderr_path.read_text()
    assert outcome.duration_s > 2.0
    assert turn.dir.stdout_path.read_text().count("step") == 8


def test_file_changes_keep_a_silent_agent_alive(tmp_path: Path) -> None:
    turn = Turn(tmp_path)
    outcome = turn.run(
        """
        import pathlib, time
        for i in range(8):
            pathlib.Path("progress.txt").write_text(str(i))
            time.sleep(0.5)
        """,
        Limits(inactivity_s=3.0, grace_s=0.5),  # under the 4 s it runs, far above each pause
    )
    assert outcome.ok
    assert outcome.duration_s > 2.0
    assert (turn.tree / "progress.txt").read_text() == "7"


def test_the_wall_clock_cap_stops_even_a_busy_agent(tmp_path: Path) -> None:
    turn = Turn(tmp_path)
    outcome = turn.run(
        "import time\nwhile True:\n    print('busy', flush=True)\n    time.sleep(0.1)\n",
        Limits(inactivity_s=60, wall_clock_s=1.5, grace_s=0.5),
    )
    assert outcome.killed is KillReason.WALL_CLOCK
    assert 1.5 <= outcome.duration_s < 10
    assert "busy" in turn.dir.stdout_path.read_text()


def test_processes_left_running_by_a_finished_agent_are_stopped(tmp_path: Path) -> None:
    turn = Turn(tmp_path)
    pid_file = tmp_path / "server.pid"
    outcome = turn.run(
        """
        import subprocess, sys
        server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open(sys.argv[1], "w").write(str(server.pid))
        """,
        Limits(grace_s=0.5),
        str(pid_file),
    )
    assert outcome.ok
    assert wait_dead(int(pid_file.read_text()))


ENV_DUMPER = """
import json, os
print(json.dumps(dict(os.environ)))
"""


def test_agents_see_no_parent_secret_and_no_parent_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SECRET_TOKEN", "hunter2")
    monkeypatch.setenv("DATABASE_URL", "postgresql://admin:pw@localhost/parent")
    monkeypatch.setenv("PGPASSWORD", "pw")
    turn = Turn(tmp_path)
    outcome = turn.run(ENV_DUMPER)
    assert outcome.ok
    seen = json.loads(turn.dir.stdout_path.read_text())
    assert "SECRET_TOKEN" not in seen
    assert "DATABASE_URL" not in seen
    assert "PGPASSWORD" not in seen
    assert seen["CONSORT_TASK"] == str(turn.dir.task_path)
    assert Path(seen["CONSORT_TASK"]).is_file()
    assert seen["CONSORT_ROLE"] == "driver"
    assert seen["CONSORT_STEP"] == "green"
    # Python itself may add LC_CTYPE when it coerces a C locale; nothing else may appear.
    assert set(seen) - {"LC_CTYPE"} <= {
        "PATH",
        "HOME",
        "LANG",
        "TERM",
        "TMPDIR",
        "CONSORT_TASK",
        "CONSORT_ROLE",
        "CONSORT_STEP",
    }


def test_build_turns_see_their_branch_database_and_allowed_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://admin:pw@localhost/parent")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:3128")
    monkeypatch.setenv("SECRET_TOKEN", "hunter2")
    branch = "postgresql://agent@localhost:5433/stockflow__s1"
    turn = Turn(tmp_path, database_url=branch, allow=("HTTPS_PROXY",))
    assert turn.run(ENV_DUMPER).ok
    seen = json.loads(turn.dir.stdout_path.read_text())
    assert seen["DATABASE_URL"] == branch
    assert seen["HTTPS_PROXY"] == "http://proxy:3128"
    assert "SECRET_TOKEN" not in seen


def test_a_missing_program_fails_the_turn_with_a_clear_error(tmp_path: Path) -> None:
    turn_dir = TurnDir.allocate(tmp_path / ".consort", Role.DRIVER, Step.GREEN)
    outcome = run_agent_process(
        [str(tmp_path / "no-such-agent")],
        cwd=tmp_path,
        env={"PATH": os.defpath},
        stdout_path=turn_dir.stdout_path,
        stderr_path=turn_dir.stderr_path,
        limits=Limits(),
    )
    assert outcome.exit_code == 127
    assert outcome.error is not None and "no-such-agent" in outcome.error
    assert "no-such-agent" in turn_dir.stderr_path.read_text()


def test_program_names_are_found_on_the_agents_path(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    agent = bin_dir / "my-agent"
    agent.write_text(f"#!{sys.executable}\nimport os\nprint(os.getcwd())\n")
    agent.chmod(0o755)
    turn_dir = TurnDir.allocate(tmp_path / ".consort", Role.DRIVER, Step.GREEN)
    outcome = run_agent_process(
        ["my-agent"],
        cwd=tmp_path,
        env={"PATH": f"{bin_dir}:{os.defpath}"},
        stdout_path=turn_dir.stdout_path,
        stderr_path=turn_dir.stderr_path,
        limits=Limits(),
    )
    assert outcome.ok
    assert turn_dir.stdout_path.read_text().strip() == str(tmp_path)


def test_interrupting_consort_stops_the_agent_too(tmp_path: Path) -> None:
    """The agent runs in its own session, so Ctrl-C reaches only Consort; Consort must stop it."""
    import subprocess

    agent = tmp_path / "agent.py"
    agent.write_text(HANGING_AGENT)
    pid_file = tmp_path / "pids"
    harness = tmp_path / "harness.py"
    harness.write_text(
        textwrap.dedent(f"""
        import os, sys
        from pathlib import Path
        from consort.adapters.agents.command import Limits, run_agent_process
        run_agent_process(
            [sys.executable, {str(agent)!r}, {str(pid_file)!r}],
            cwd=Path({str(tmp_path)!r}),
            env={{"PATH": os.defpath}},
            stdout_path=Path({str(tmp_path / "out")!r}),
            stderr_path=Path({str(tmp_path / "err")!r}),
            limits=Limits(inactivity_s=600, grace_s=0.5),
        )
    """)
    )
    consort = subprocess.Popen([sys.executable, str(harness)], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not (pid_file.exists() and len(pid_file.read_text().split()) == 2):
            assert time.monotonic() < deadline, "the agent never started"
            time.sleep(0.05)
        leader, grandchild = (int(p) for p in pid_file.read_text().split())
        consort.send_signal(signal.SIGINT)
        _, stderr = consort.communicate(timeout=60)
        assert b"KeyboardInterrupt" in stderr
        assert wait_dead(leader)
        assert wait_dead(grandchild)
    finally:  # whatever failed, nothing of this test outlives it
        consort.kill()
        consort.wait()
        if pid_file.exists() and pid_file.read_text().split():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(int(pid_file.read_text().split()[0]), signal.SIGKILL)
