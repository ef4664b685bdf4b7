"""A turn's sandbox spec, the sandbox decision, and the configuration that drives both."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from consort.adapters.agents.config import adapter_for, agent_settings, sandbox_policy
from consort.adapters.sandbox import policy as policy_module
from consort.adapters.sandbox.bwrap import BinarySource, Bwrap, Support
from consort.adapters.sandbox.policy import SandboxPolicy, TurnPaths, decide, turn_spec
from consort.core.config import SandboxMode
from consort.core.errors import UsageError
from consort.core.project import Project
from consort.core.vocabulary import Role, SandboxUse

BWRAP = Bwrap(Path("/usr/bin/bwrap"), BinarySource.SYSTEM, "0.8.0")


def project_layout(root: Path) -> dict[str, Path]:
    """A main checkout with a linked worktree, a turn folder, a secret and .env files."""
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(
        ["git", "-C", str(root), "commit", "-q", "--allow-empty", "-m", "init"],
        check=True,
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
            "PATH": "/usr/bin:/bin",
        },
    )
    tree = root / ".consort" / "worktrees" / "F1" / "S1"
    subprocess.run(
        ["git", "-C", str(root), "worktree", "add", "-q", "-b", "story", str(tree)], check=True
    )
    (root / ".env").write_text("DATABASE_URL=postgresql://owner:pw@127.0.0.1/main\n")
    (tree / ".env").write_text("DATABASE_URL=postgresql://owner:pw@127.0.0.1/story\n")
    (tree / "app").mkdir()
    (tree / "app" / ".env.local").write_text("TOKEN=1\n")
    (root / ".consort" / "db").mkdir()
    (root / ".consort" / "db" / "secret").write_text("s3cret")
    turn = root / ".consort" / "turns" / "0003-driver-green"
    turn.mkdir(parents=True)
    (turn / "task.json").write_text("{}")
    spec = root / ".consort" / "features" / "F1" / "feature-spec.json"
    spec.parent.mkdir(parents=True)
    spec.write_text("{}")
    return {"root": root, "tree": tree, "turn": turn, "input": spec}


def build_turn(paths: dict[str, Path], *, writable: bool = True, home: Path) -> TurnPaths:
    return TurnPaths(
        workdir=paths["tree"],
        tree_writable=writable,
        turn_folder=paths["turn"],
        inputs=(paths["input"],),
        outputs=(paths["turn"] / "outputs" / "plan.json",),
        env={"PATH": "/usr/bin:/bin", "HOME": str(home)},
        command=("/usr/bin/python3", str(paths["root"] / "agent.py")),
    )


def test_a_build_turn_writes_its_tree_and_outputs_and_reads_its_inputs(tmp_path: Path) -> None:
    paths = project_layout(tmp_path / "proj")
    home = tmp_path / "home"
    policy = SandboxPolicy(SandboxUse.BWRAP, BWRAP, paths["root"], hidden=(tmp_path / "cache",))
    spec = turn_spec(policy, build_turn(paths, home=home))
    root, tree, turn = paths["root"], paths["tree"], paths["turn"]
    assert tree in spec.writable and turn / "outputs" in spec.writable
    assert (turn / "outputs").is_dir()  # made, so that it can be bound
    assert {turn, paths["input"], tree / ".git", root / ".git"} <= set(spec.read_only)
    assert {root, root / ".consort", tmp_path / "cache"} <= set(spec.hidden)
    # every .env of the tree is masked, whatever its depth
    assert {tree / ".env", tree / "app" / ".env.local"} <= set(spec.hidden)
    assert spec.home == home and spec.workdir == tree
    assert spec.env == {"TMPDIR": "/tmp"}
    # the agent script named in the command is readable, being a file of the project
    # (it does not exist here, so it is left out), and nothing shows the whole checkout
    assert root not in spec.read_only and root not in spec.writable


def test_a_turn_that_may_write_nothing_gets_its_tree_read_only(tmp_path: Path) -> None:
    paths = project_layout(tmp_path / "proj")
    policy = SandboxPolicy(SandboxUse.BWRAP, BWRAP, paths["root"])
    spec = turn_spec(policy, build_turn(paths, writable=False, home=tmp_path / "home"))
    assert paths["tree"] in spec.read_only and paths["tree"] not in spec.writable


def test_command_paths_never_show_the_project_or_its_state(tmp_path: Path) -> None:
    paths = project_layout(tmp_path / "proj")
    root = paths["root"]
    (root / "agent.py").write_text("print('hi')\n")
    outside = tmp_path / "agents"
    outside.mkdir()
    turn = build_turn(paths, home=tmp_path / "home")
    turn = TurnPaths(
        **{
            **vars(turn),
            "command": (
                "/usr/bin/python3",
                str(root / "agent.py"),  # a file of the checkout: readable
                str(outside),  # a folder outside it: readable
                str(root),  # the checkout itself: never
                str(root / ".consort" / "db" / "secret"),  # Consort's state: never
                str(root / ".env"),  # a .env: never
                str(tmp_path),  # a folder holding the checkout: never
            ),
        }
    )
    spec = turn_spec(SandboxPolicy(SandboxUse.BWRAP, BWRAP, root), turn)
    assert root / "agent.py" in spec.read_only and outside in spec.read_only
    for never in (root, root / ".consort" / "db" / "secret", root / ".env", tmp_path):
        assert never not in spec.read_only


def test_decide_runs_replay_anywhere_and_refuses_agents_without_a_sandbox(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    missing = Support(None, "bubblewrap (bwrap) is not installed")
    monkeypatch.setattr(policy_module, "support", lambda: missing)
    assert decide(SandboxMode.AUTO, False, who="replay") == (SandboxUse.NO_PROCESS, missing)
    with pytest.raises(UsageError, match="must run in a sandbox") as refused:
        decide(SandboxMode.AUTO, True, who="the driver role's command adapter")
    assert refused.value.fix is not None and 'sandbox = "off"' in refused.value.fix
    with pytest.raises(UsageError):
        decide(SandboxMode.ON, False, who="replay")
    assert decide(SandboxMode.OFF, True, who="x") == (SandboxUse.OFF, None)
    working = Support(BWRAP, None)
    monkeypatch.setattr(policy_module, "support", lambda: working)
    assert decide(SandboxMode.AUTO, True, who="x") == (SandboxUse.BWRAP, working)


def project_with(root: Path, agents: str) -> Project:
    root.mkdir(parents=True, exist_ok=True)
    (root / "consort.toml").write_text(agents)
    return Project(root)


def test_sandbox_state_and_read_only_come_from_consort_toml(tmp_path: Path) -> None:
    project = project_with(
        tmp_path / "p",
        """
[agents]
default = "command"
command = ["agent"]
sandbox = "off"
read_only = [".venv", "/opt/tools"]

[agents.driver]
state = ["~/.agent-state"]
read_only = ["~/.rustup"]
""",
    )
    driver = agent_settings(project, Role.DRIVER)
    assert driver.sandbox is SandboxMode.OFF
    assert driver.state == (Path.home() / ".agent-state",)
    assert driver.read_only == (
        tmp_path / "p" / ".venv",
        Path("/opt/tools"),
        Path.home() / ".rustup",
    )
    assert sandbox_policy(driver).use is SandboxUse.OFF
    assert agent_settings(project, Role.NAVIGATOR).state == ()


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('[agents]\ndefault = "command"\ncommand = ["a"]\nsandbox = "maybe"\n', "sandbox"),
        (
            '[agents]\ndefault = "command"\ncommand = ["a"]\n[agents.driver]\nsandbox = "off"\n',
            "sandbox",
        ),
        ('[agents]\ndefault = "command"\ncommand = ["a"]\nstate = ["rel/dir"]\n', "state"),
    ],
)
def test_bad_sandbox_settings_are_usage_errors(tmp_path: Path, toml: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        adapter_for(project_with(tmp_path / "p", toml), Role.DRIVER)


def test_an_npm_installed_program_brings_its_node_modules_folder(tmp_path: Path) -> None:
    # `node_modules/.bin/claude` is a link into its package, which needs its dependencies.
    paths = project_layout(tmp_path / "proj")
    modules = tmp_path / "tools" / "node_modules"
    package = modules / "@anthropic-ai" / "claude-code" / "bin"
    package.mkdir(parents=True)
    (package / "claude.exe").write_text("#!/bin/sh\n")
    (package / "claude.exe").chmod(0o755)
    (modules / ".bin").mkdir()
    (modules / ".bin" / "claude").symlink_to(package / "claude.exe")
    turn = TurnPaths(
        **{
            **vars(build_turn(paths, home=tmp_path / "home")),
            "command": (str(modules / ".bin" / "claude"), "-p"),
        }
    )
    spec = turn_spec(SandboxPolicy(SandboxUse.BWRAP, BWRAP, paths["root"]), turn)
    assert modules in spec.read_only
    assert tmp_path / "tools" not in spec.read_only
