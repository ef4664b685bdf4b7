"""`consort guard`, fed the hook JSON Claude Code and Codex send before a tool call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from consort.adapters.agents.task import Task, TurnDir
from consort.adapters.guard import DENY_EXIT, guard
from consort.core.vocabulary import Role, Step

PROTECTED = ("tests/**", "**/conftest.py", "pytest.ini")


class Turn:
    """A working tree with protected and writable files, and a driver turn's task.json."""

    def __init__(self, root: Path, *, state_outside: bool = False) -> None:
        self.tree = root / "tree"
        for relative in (
            "tests/test_a.py",
            "tests/unit/test_b.py",
            "src/app.py",
            "src/conftest.py",
        ):
            path = self.tree / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("original\n")
        (self.tree / "pytest.ini").write_text("[pytest]\n")
        (self.tree / "build").mkdir()
        (self.tree / "build" / "out.o").write_text("")
        state = root / "main" / ".consort" if state_outside else self.tree / ".consort"
        self.turn = TurnDir.allocate(state, Role.DRIVER, Step.GREEN)
        self.state = state
        self.output = self.turn.path / "outputs" / "notes.json"
        task = Task(
            turn=self.turn.number,
            role=Role.DRIVER,
            step=Step.GREEN,
            attempt=1,
            feature="F1",
            story="S1",
            item="T1",
            instructions="make it pass",
            inputs={},
            outputs={"notes": self.output},
            writable=("src/**",),
            protected=PROTECTED,
            feedback=None,
        )
        self.turn.write_task(task)
        self.env = {"CONSORT_TASK": str(self.turn.task_path), "HOME": str(root)}

    def hook(self, tool: str, tool_input: Any, cwd: Path | None = None) -> str:
        return json.dumps(
            {
                "session_id": "abc123",
                "transcript_path": "/tmp/abc123.jsonl",
                "cwd": str(cwd or self.tree),
                "permission_mode": "acceptEdits",
                "hook_event_name": "PreToolUse",
                "tool_name": tool,
                "tool_input": tool_input,
                "tool_use_id": "toolu_01",
            }
        )

    def bash(self, command: str, cwd: Path | None = None) -> tuple[bool, str]:
        decision = guard(self.hook("Bash", {"command": command}, cwd), self.env, self.tree)
        return decision.allowed, decision.reason


@pytest.fixture
def turn(tmp_path: Path) -> Turn:
    return Turn(tmp_path)


# ---- file tools -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "key", "path", "allowed"),
    [
        ("Write", "file_path", "{tree}/tests/test_new.py", False),
        ("Write", "file_path", "tests/test_new.py", False),  # relative to cwd
        ("Edit", "file_path", "{tree}/tests/unit/test_b.py", False),
        ("MultiEdit", "file_path", "{tree}/src/conftest.py", False),
        ("Write", "file_path", "{tree}/src/deep/er/conftest.py", False),
        ("Edit", "file_path", "{tree}/pytest.ini", False),
        ("NotebookEdit", "notebook_path", "{tree}/tests/explore.ipynb", False),
        ("Write", "file_path", "{tree}/src/../tests/test_a.py", False),  # .. is resolved
        ("Write", "file_path", "{tree}/.consort/ledger.jsonl", False),  # state: always
        ("Write", "file_path", "{tree}/.consort/turns/0001-driver-green/task.json", False),
        ("Write", "file_path", "{tree}/.consort/turns/0001-driver-green/outputs/notes.json", True),
        ("Write", "file_path", "{tree}/src/app.py", True),
        ("Edit", "file_path", "src/app.py", True),
        ("Write", "file_path", "{tree}/sub/pytest.ini", True),  # pytest.ini: the root one only
        ("Write", "file_path", "{tree}/testsuite/x.py", True),
        ("Write", "file_path", "/tmp/scratch.txt", True),  # outside the tree
        ("NotebookEdit", "notebook_path", "{tree}/notebooks/a.ipynb", True),
    ],
)
def test_file_tools(turn: Turn, tool: str, key: str, path: str, allowed: bool) -> None:
    tool_input = {key: path.format(tree=turn.tree), "content": "x"}
    decision = guard(turn.hook(tool, tool_input), turn.env, turn.tree)
    assert decision.allowed is allowed, decision.reason
    assert decision.exit_code == (0 if allowed else DENY_EXIT)
    if not allowed:
        assert decision.reason.startswith("consort guard: ")
        assert "refused" in decision.reason


def test_the_reason_names_the_path_and_the_rule(turn: Turn) -> None:
    decision = guard(
        turn.hook("Write", {"file_path": str(turn.tree / "tests" / "test_a.py")}), turn.env
    )
    assert "Write to tests/test_a.py refused: it is protected by `tests/**`" in decision.reason
    assert "a person can approve an amendment" in decision.reason


def test_a_symlink_into_a_protected_folder_does_not_get_around_it(turn: Turn) -> None:
    (turn.tree / "src" / "link").symlink_to(turn.tree / "tests")
    decision = guard(
        turn.hook("Write", {"file_path": str(turn.tree / "src" / "link" / "test_a.py")}), turn.env
    )
    assert not decision.allowed
    assert "tests/test_a.py" in decision.reason


def test_reads_searches_and_other_tools_are_allowed(turn: Turn) -> None:
    for tool, tool_input in [
        ("Read", {"file_path": str(turn.tree / "tests" / "test_a.py")}),
        ("Grep", {"pattern": "x", "path": "tests"}),
        ("Glob", {"pattern": "tests/**"}),
        ("TodoWrite", {"todos": []}),
        ("WebFetch", {"url": "https://example.com"}),
    ]:
        assert guard(turn.hook(tool, tool_input), turn.env).allowed, tool


# ---- Bash -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "echo x > tests/test_a.py",
        "echo x >> tests/test_a.py",
        "echo x >| tests/test_a.py",
        "echo x &> tests/log.txt",
        "make 2>&1 > pytest.ini",
        "cat src/app.py | tee tests/test_a.py",
        "cat src/app.py | tee -a /dev/null tests/unit/test_b.py",
        "sed -i 's/a/b/' tests/test_a.py",
        "sed -i.bak -e 's/a/b/' tests/test_a.py",
        "sed --in-place 's/a/b/' src/conftest.py",
        "perl -pi -e 's/a/b/' tests/test_a.py",
        "mv tests/test_a.py /tmp/",
        "mv src/app.py tests/",
        "mv tests tests_old",
        "cp src/app.py tests/test_a.py",
        "cp -r src tests/copy",
        "rm tests/test_a.py",
        "rm -rf tests",
        "rm -rf tests/",
        "rm -rf src",  # holds src/conftest.py
        "rm -rf .",
        "rm -rf *",
        "rm tests/*.py",
        "unlink pytest.ini",
        "truncate -s 0 tests/test_a.py",
        "touch tests/new_test.py",
        "dd if=/dev/zero of=tests/test_a.py bs=1 count=1",
        "chmod 000 tests/test_a.py",
        "chmod -R a-w tests",
        "ln -sf /dev/null tests/test_a.py",
        "git checkout -- tests/test_a.py",
        "git checkout HEAD~1 tests",
        "git checkout main",
        "git restore tests/test_a.py",
        "git restore --source HEAD~2 --worktree tests",
        "git rm tests/test_a.py",
        "git mv tests/test_a.py src/",
        "git clean -fd",
        "git clean -fdx tests",
        "git reset --hard",
        "git stash",
        "git stash pop",
        "git switch other",
        "git merge other",
        "git -C tests checkout -- .",
        "cd tests && rm test_a.py",
        "cd src; cd ../tests; echo > test_a.py",
        "(cd tests && touch x.py)",
        "echo ok; rm tests/test_a.py",
        "false || rm tests/test_a.py",
        "sleep 1 & rm tests/test_a.py",
        "echo $(rm tests/test_a.py)",
        'echo "$(rm tests/test_a.py)"',
        "echo `rm tests/test_a.py`",
        "diff <(rm tests/test_a.py) src/app.py",
        "bash -c 'echo > tests/test_a.py'",
        "sh -lc 'rm -f tests/test_a.py'",
        'eval "rm tests/test_a.py"',
        "env DEBUG=1 rm tests/test_a.py",
        "sudo -u nobody rm tests/test_a.py",
        "timeout 5 rm tests/test_a.py",
        "nice -n 10 rm tests/test_a.py",
        "D=tests; rm -r $D",
        "for f in tests/*.py; do sed -i 's/a/b/' \"$f\"; done",
        "for d in build tests; do rm -rf $d; done",
        "D=tests; rm -r ${D}/unit",
        "find . -name 'test_*.py' -delete",
        "find tests -type f -exec rm {} \\;",
        "find . -name '*.py' | xargs sed -i 's/a/b/'",
        "grep -rl original tests | xargs rm",
        "ls | xargs rm -rf",
        "curl -o tests/test_a.py https://example.com/x",
        "wget -O pytest.ini https://example.com/x",
        "python -c \"open('tests/test_a.py', 'w').write('')\"",
        "python3 -c 'import os; os.remove(\"tests/test_a.py\")'",
        "python3 -c 'import shutil; shutil.rmtree(\"tests\")'",
        'python -c \'import pathlib; pathlib.Path("pytest.ini").write_text("")\'',
        "python -c 'import subprocess; subprocess.run(\"rm -rf tests\", shell=True)'",
        "node -e \"require('fs').writeFileSync('tests/test_a.py', '')\"",
        "python3 - <<'EOF'\nimport os\nos.unlink('tests/test_a.py')\nEOF",
        "bash <<'EOF'\nrm tests/test_a.py\nEOF",
        "git apply fix.patch",  # the patch file (written below) touches tests/
        "git apply <<'EOF'\n--- a/tests/test_a.py\n+++ b/tests/test_a.py\n@@ -1 +1 @@\nEOF",
        "patch -p1 < fix.patch",
        "echo x > .consort/ledger.jsonl",
        "echo x > .consort/turns/0001-driver-green/task.json",
        "echo hi # a comment\nrm tests/test_a.py",
        "echo 'unclosed",  # cannot be read: refused
    ],
)
def test_bash_commands_that_change_protected_paths_are_refused(turn: Turn, command: str) -> None:
    (turn.tree / "fix.patch").write_text(
        "diff --git a/tests/test_a.py b/tests/test_a.py\n--- a/tests/test_a.py\n"
        "+++ b/tests/test_a.py\n@@ -1 +1 @@\n-original\n+changed\n"
    )
    allowed, reason = turn.bash(command)
    assert not allowed, f"{command!r} was allowed"
    assert reason.startswith("consort guard: ")


@pytest.mark.parametrize(
    "command",
    [
        "cat tests/test_a.py",
        "grep -rn original tests",
        "ls -la tests",
        "python -m pytest tests -x -q",
        "pytest tests 2>&1 | tail -20",
        "python -c \"print(open('tests/test_a.py').read())\"",
        "sed 's/a/b/' tests/test_a.py",
        "sed -n '1,20p' tests/test_a.py > /tmp/head.txt",
        "echo x > src/app.py",
        "cp tests/test_a.py src/copy_of_test.py",
        "cp tests/test_a.py /tmp/",
        "rm -rf build",
        "rm -rf /tmp/scratch",
        "find . -name '*.pyc' -delete",
        "find . -name '__pycache__' -exec rm -rf {} +",
        "grep -rl original src/app.py build | xargs sed -i 's/original/new/'",
        "git status && git diff -- tests",
        "git log --oneline -5",
        "git add -A && git commit -m wip",
        "git checkout -b experiment",
        "git stash list",
        "git restore --staged tests/test_a.py",
        "git rm --cached tests/test_a.py",
        "git clean -n",
        "git reset HEAD~1",
        "cat > src/new.py <<'EOF'\nif a > b:\n    rm = 'tests/test_a.py'\nEOF",
        "echo 'rm tests/test_a.py' > src/notes.txt",
        "echo hi >&2",
        "npm test > /tmp/log.txt 2>&1",
        "mkdir -p src/pkg && touch src/pkg/__init__.py",
        "echo x > .consort/turns/0001-driver-green/outputs/notes.json",
        "python script.py",  # programs run from files are not read (the diff catches them)
        "alembic upgrade head",
        "cd tests && ls",
        "for f in src/a*.py; do sed -i 's/a/b/' \"$f\"; done",
        "echo hi # > tests/test_a.py",
    ],
)
def test_reads_and_writes_elsewhere_are_allowed(turn: Turn, command: str) -> None:
    allowed, reason = turn.bash(command)
    assert allowed, f"{command!r} was refused: {reason}"


def test_bash_reasons_quote_the_command_and_the_protected_file(turn: Turn) -> None:
    allowed, reason = turn.bash("pytest; rm -rf src")
    assert not allowed
    assert (
        "`rm -rf src` refused: it would delete src (src/conftest.py); "
        "protected by `**/conftest.py`" in reason
    )
    allowed, reason = turn.bash("ls && rm -r tests")
    assert "it would delete tests; it holds paths protected by `tests/**`" in reason


def test_relative_paths_are_relative_to_the_hook_cwd(turn: Turn) -> None:
    assert not turn.bash("rm test_a.py", cwd=turn.tree / "tests")[0]
    assert turn.bash("rm app.py", cwd=turn.tree / "src")[0]
    assert not turn.bash("rm ../pytest.ini", cwd=turn.tree / "src")[0]


def test_codex_shell_calls_as_argv_lists(turn: Turn) -> None:
    denied = guard(turn.hook("Bash", {"command": ["bash", "-lc", "rm tests/test_a.py"]}), turn.env)
    assert not denied.allowed
    allowed = guard(turn.hook("Bash", {"command": ["bash", "-lc", "ls tests"]}), turn.env)
    assert allowed.allowed


def test_codex_apply_patch(turn: Turn) -> None:
    def patch(*paths: str) -> bool:
        body = "".join(f"*** Update File: {p}\n@@\n-a\n+b\n" for p in paths)
        text = f"*** Begin Patch\n{body}*** End Patch\n"
        return guard(turn.hook("apply_patch", {"command": text}), turn.env).allowed

    assert patch("src/app.py")
    assert not patch("src/app.py", "tests/test_a.py")
    assert not patch(str(turn.tree / "src" / "conftest.py"))
    moved = "*** Begin Patch\n*** Update File: src/app.py\n*** Move to: tests/app.py\n*** End Patch"
    assert not guard(turn.hook("apply_patch", {"command": moved}), turn.env).allowed


def test_the_state_folder_is_protected_when_it_lies_outside_the_worktree(tmp_path: Path) -> None:
    turn = Turn(tmp_path, state_outside=True)
    ledger = turn.state / "ledger.jsonl"
    assert not guard(turn.hook("Write", {"file_path": str(ledger)}), turn.env, turn.tree).allowed
    assert not turn.bash(f"echo x >> {ledger}")[0]
    assert not turn.bash(f"rm -rf {turn.state.parent}")[0]
    allowed = guard(turn.hook("Write", {"file_path": str(turn.output)}), turn.env, turn.tree)
    assert allowed.allowed  # the turn's own output


def test_a_story_worktree_inside_the_state_folder_is_the_agents_to_change(tmp_path: Path) -> None:
    # The build lane's layout: the worktree is .consort/worktrees/<F>/<S>, inside the state.
    state = tmp_path / "project" / ".consort"
    tree = state / "worktrees" / "F1" / "S1"
    (tree / "src").mkdir(parents=True)
    (tree / "tests").mkdir()
    (tree / ".consort").mkdir()
    turn_dir = TurnDir.allocate(state, Role.DRIVER, Step.GREEN)
    task = Task(
        turn=turn_dir.number, role=Role.DRIVER, step=Step.GREEN, attempt=1, feature="F1",
        story="S1", item="T1", instructions="x", inputs={}, outputs={}, writable=("src/**",),
        protected=PROTECTED, feedback=None,
    )  # fmt: skip
    turn_dir.write_task(task)
    env = {"CONSORT_TASK": str(turn_dir.task_path)}

    def allowed(tool: str, tool_input: dict[str, str]) -> bool:
        payload = {"tool_name": tool, "tool_input": tool_input, "cwd": str(tree)}
        return guard(json.dumps(payload), env, tree).allowed

    assert allowed("Write", {"file_path": str(tree / "src" / "app.py")})
    assert allowed("Bash", {"command": "echo x >> src/app.py"})
    assert allowed("Bash", {"command": "rm -rf src"})
    assert not allowed("Write", {"file_path": str(tree / "tests" / "test_a.py")})
    assert not allowed("Write", {"file_path": str(tree / ".consort" / "ledger.jsonl")})
    assert not allowed("Write", {"file_path": str(state / "ledger.jsonl")})
    assert not allowed("Write", {"file_path": str(state / "worktrees" / "F1" / "S2" / "a.py")})
    assert not allowed("Write", {"file_path": str(turn_dir.task_path)})
    assert not allowed("Bash", {"command": f"rm -rf {state / 'worktrees'}"})
    assert not allowed("Bash", {"command": "rm -rf ../S2"})


# ---- failing closed, and outside a turn --------------------------------------------------------


def test_outside_a_turn_everything_is_allowed(turn: Turn) -> None:
    assert guard("not even json", {}).allowed
    assert guard(turn.hook("Bash", {"command": "rm -rf tests"}), {"HOME": "/"}).allowed


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "no tool_name"),
        ('{"tool_input": {}}', "no tool_name"),
        ('{"tool_name": "Write", "tool_input": "x"}', "no tool_input object"),
        ('{"tool_name": "Write", "tool_input": {}}', "names no file_path"),
        ('{"tool_name": "Bash", "tool_input": {"command": 3}}', "has no command"),
    ],
)
def test_malformed_input_in_a_turn_is_refused(turn: Turn, stdin: str, message: str) -> None:
    decision = guard(stdin, turn.env, turn.tree)
    assert not decision.allowed
    assert message in decision.reason


def test_an_unreadable_task_file_is_refused(turn: Turn) -> None:
    turn.turn.task_path.write_text("{broken")
    decision = guard(turn.hook("Write", {"file_path": "src/app.py"}), turn.env, turn.tree)
    assert not decision.allowed
    assert "cannot read this turn's task file" in decision.reason


# ---- the command ------------------------------------------------------------------------------


def run_guard(stdin: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "CONSORT_TASK"}
    environment.update(env)
    return subprocess.run(
        [sys.executable, "-m", "consort", "guard", *args],
        input=stdin,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_consort_guard_exits_2_with_the_reason_on_stderr(turn: Turn) -> None:
    denied = run_guard(
        turn.hook("Bash", {"command": "sed -i s/x/y/ tests/test_a.py"}),
        turn.env,
        "--tree",
        str(turn.tree),
    )
    assert denied.returncode == 2
    assert "consort guard: `sed -i s/x/y/ tests/test_a.py` refused" in denied.stderr
    assert denied.stdout == ""

    allowed = run_guard(turn.hook("Edit", {"file_path": "src/app.py"}), turn.env)
    assert allowed.returncode == 0, allowed.stderr
    assert allowed.stderr == ""

    malformed = run_guard("{", turn.env)
    assert malformed.returncode == 2
    assert "not JSON" in malformed.stderr

    outside = run_guard("{", {})
    assert outside.returncode == 0


# ---- programs that read commands from the terminal (Codex's write_stdin feeds them) -------------


@pytest.mark.parametrize(
    "command",
    ["bash", "sh -l", "bash -i", "exec bash", "env bash", "python3", "python3 -", "python -i x.py",
     "node", "perl", "ipython", "psql", "vim", "nano src/app.py", "cd src && sh", "sudo -u x bash"],
)  # fmt: skip
def test_terminal_programs_are_refused_when_asked(turn: Turn, command: str) -> None:
    payload = turn.hook("Bash", {"command": command})
    decision = guard(payload, turn.env, turn.tree, terminal_programs=False)
    assert not decision.allowed
    assert "interactive program" in decision.reason
    assert guard(payload, turn.env, turn.tree).allowed or command.startswith(("vim", "nano"))


@pytest.mark.parametrize(
    "command",
    ["bash -c 'ls'", "bash run.sh", "sh <<EOF\nls\nEOF", "echo ls | bash", "python3 x.py",
     "python3 -c 'print(1)'", "python3 -m pytest", "node x.js", "psql -c 'select 1'", "ls -la"],
)  # fmt: skip
def test_commands_given_in_full_are_not_terminal_programs(turn: Turn, command: str) -> None:
    payload = turn.hook("Bash", {"command": command})
    assert guard(payload, turn.env, turn.tree, terminal_programs=False).allowed


def test_an_editor_on_a_protected_file_is_refused_for_every_cli(turn: Turn) -> None:
    assert not turn.bash("vim tests/test_a.py")[0]
    assert turn.bash("vim src/app.py")[0]
