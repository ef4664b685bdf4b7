"""The sandbox of an agent turn, with the real bubblewrap, run as root and as a normal user.

A cheating agent (tests/agents/reach_agent.py, a real child process) tries each reach beyond its
working tree from inside a turn; every one fails, and the daemon it leaves is gone with the turn.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from consort.adapters.agents.command import Limits, SandboxFailed, run_agent_process
from consort.adapters.sandbox.bwrap import BinarySource, Bwrap, support
from consort.adapters.sandbox.policy import SandboxedCommand, SandboxPolicy, TurnPaths
from consort.adapters.sandbox.spec import SandboxSpec
from consort.core.vocabulary import SandboxUse
from tests.helpers import processes_naming

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
REACH_AGENT = REPO / "tests" / "agents" / "reach_agent.py"
UNPRIVILEGED = "nobody"
AS_UNPRIVILEGED = ("setpriv", f"--reuid={UNPRIVILEGED}", "--regid=nogroup", "--clear-groups", "--")


def git(cwd: Path, *args: str) -> str:
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@localhost",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@localhost",
    )
    done = subprocess.run(
        ["git", "-c", "safe.directory=*", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


class Layout:
    """A main checkout with two story worktrees, Consort's secret and .env files, and a home."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.root = base / "proj"
        self.root.mkdir()
        git(self.root, "init", "-q", "-b", "main")
        (self.root / "README.md").write_text("main\n")
        git(self.root, "add", "README.md")
        git(self.root, "commit", "-q", "-m", "init")
        self.tree = self.root / ".consort" / "worktrees" / "F1" / "S1"
        self.other = self.root / ".consort" / "worktrees" / "F1" / "S2"
        git(self.root, "worktree", "add", "-q", "-b", "story/F1/S1", str(self.tree))
        git(self.root, "worktree", "add", "-q", "-b", "story/F1/S2", str(self.other))
        (self.other / "theirs.py").write_text("OTHER = 'story two'\n")
        (self.root / ".env").write_text("DATABASE_URL=postgresql://owner:pw@127.0.0.1:1/main\n")
        (self.tree / ".env").write_text("DATABASE_URL=postgresql://owner:pw@127.0.0.1:1/s1\n")
        secret = self.root / ".consort" / "db" / "secret"
        secret.parent.mkdir(parents=True)
        secret.write_text("the project secret\n")
        self.turn = self.root / ".consort" / "turns" / "0001-driver-green"
        (self.turn / "outputs").mkdir(parents=True)
        (self.turn / "task.json").write_text("{}\n")
        self.home = base / "home"
        self.home.mkdir()
        (self.home / ".pgpass").write_text("127.0.0.1:*:*:postgres:superpassword\n")
        self.heads = self.branch_heads()

    def branch_heads(self) -> dict[str, str]:
        lines = git(self.root, "for-each-ref", "--format=%(refname) %(objectname)").splitlines()
        return dict(line.split(" ", 1) for line in lines)

    def targets(self) -> dict[str, object]:
        return {
            "secret": str(self.root / ".consort" / "db" / "secret"),
            "main_env": str(self.root / ".env"),
            "tree_env": str(self.tree / ".env"),
            "other_worktree": str(self.other / "theirs.py"),
            "home_secret": str(self.home / ".pgpass"),
            "git_dir": str(self.root / ".git"),
            "branch": "story/F1/S1",
            "main": str(self.root),
            "task": str(self.turn / "task.json"),
            "starter_pid": os.getpid(),
            "daemon_delay": 1.5,
        }

    def spec(self) -> dict[str, object]:
        return {
            "root": str(self.root),
            "tree": str(self.tree),
            "turn": str(self.turn),
            "home": str(self.home),
            "argv": [sys.executable, str(REACH_AGENT), json.dumps(self.targets())],
        }


@pytest.fixture
def layout() -> Iterator[Layout]:
    # Under /tmp and open to all, so that the unprivileged run can reach it too.
    base = Path(tempfile.mkdtemp(prefix="consort-sandbox-"))
    base.chmod(0o755)
    try:
        yield Layout(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def run_turn(layout: Layout, prefix: tuple[str, ...] = ()) -> dict[str, object]:
    done = subprocess.run(
        [
            *prefix,
            sys.executable,
            "-m",
            "tests.integration.sandbox_turn",
            json.dumps(layout.spec()),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    if "unavailable" in report:
        pytest.fail(f"no sandbox can be made here: {report['unavailable']}")
    return report


def check_every_reach_failed(layout: Layout, report: dict[str, object]) -> None:
    assert report["exit_code"] == 0, (layout.turn / "stderr").read_text()
    assert report["sandbox"] == SandboxUse.BWRAP.value
    results = json.loads((layout.turn / "stdout").read_text())
    reached = {name: what for name, what in results.items() if what.startswith("REACHED")}
    assert not reached, reached
    expected = {
        "read secret",
        "read main_env",
        "read tree_env",
        "read other_worktree",
        "read home_secret",
        "write .pth into site-packages",
        "write a git hook",
        "move a branch ref",
        "repoint the worktree's .git",
        "write the main checkout",
        "write task.json",
        "see the process that started the turn",
        "read its environment",
    }
    assert expected <= set(results)
    assert int(results["processes visible"]) < 10  # its own namespace only
    # Nothing happened on the host either: files, branch heads, the worktree's link.
    assert not (layout.root / "planted.py").exists()
    assert not (layout.root / ".git" / "hooks" / "pre-commit").exists()
    assert (layout.turn / "task.json").read_text() == "{}\n"
    assert (layout.tree / ".git").read_text().startswith(f"gitdir: {layout.root / '.git'}")
    assert layout.branch_heads() == layout.heads
    site = Path(sys.prefix)
    assert not list(site.rglob("x.pth"))
    # The daemon it left: gone with the turn, so it never acts after it.
    assert not processes_naming(str(layout.base))
    time.sleep(2.5)
    assert not (layout.tree / "daemon-was-here").exists()
    assert not processes_naming(str(layout.base))


def test_every_reach_fails_in_the_sandbox(layout: Layout) -> None:
    check_every_reach_failed(layout, run_turn(layout))


def _unprivileged_problem() -> str | None:
    if os.geteuid() != 0:
        return "already unprivileged: the test above runs this path"
    if shutil.which("setpriv") is None:
        return "setpriv is missing"
    # The interpreter itself, where its links lead: a sandbox shows what its user can see.
    real = os.path.realpath(sys.executable)
    probe = subprocess.run(
        [
            *AS_UNPRIVILEGED,
            sys.executable,
            "-c",
            f"import consort, tests.integration, os; os.stat({real!r})",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        return f"this interpreter is not usable by {UNPRIVILEGED}: {probe.stderr.strip()[-200:]}"
    return None


def test_every_reach_fails_in_the_sandbox_of_an_unprivileged_user(layout: Layout) -> None:
    """Run by a normal user, bubblewrap makes a user namespace too; the same reaches fail."""
    problem = _unprivileged_problem()
    if problem is not None:
        # CI builds its environment from the system's Python, readable by everyone, so this
        # runs there; a root-only interpreter (under a 0700 /root) cannot serve another user.
        pytest.skip(problem)
    entry = pwd.getpwnam(UNPRIVILEGED)
    for folder, dirs, files in os.walk(layout.base):
        for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
            os.chown(name, entry.pw_uid, entry.pw_gid, follow_symlinks=False)
    report = run_turn(layout, AS_UNPRIVILEGED)
    assert report["uid"] == entry.pw_uid
    check_every_reach_failed(layout, report)


def test_a_turn_stopped_for_inactivity_takes_every_process_with_it(tmp_path: Path) -> None:
    found = support()
    assert found.available, found.describe()
    tree = tmp_path / "tree"
    tree.mkdir()
    marker = f"sleeper-{tmp_path.name}"
    script = (
        f"(exec -a {marker} sleep 300) & setsid sh -c '(exec -a {marker} sleep 300)' & sleep 300"
    )
    sandbox = SandboxPolicy(SandboxUse.BWRAP, found.bwrap, tmp_path / "project").for_turn(
        TurnPaths(tree, True, tmp_path, (), (), {"PATH": "/usr/bin:/bin"}, ("sh",))
    )
    outcome = run_agent_process(
        ["bash", "-c", script],
        cwd=tree,
        env={"PATH": "/usr/bin:/bin"},
        stdout_path=tmp_path / "stdout",
        stderr_path=tmp_path / "stderr",
        limits=Limits(inactivity_s=1, grace_s=1, poll_s=0.05),
        sandbox=sandbox,
    )
    assert outcome.killed is not None and outcome.killed.value == "inactivity"
    assert not processes_naming(marker)


def test_a_sandbox_that_cannot_be_made_is_consorts_problem_not_a_failed_attempt(
    tmp_path: Path,
) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: Creating new namespace failed: denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    command = SandboxedCommand(
        Bwrap(fake, BinarySource.CONFIGURED, "0"), SandboxSpec(workdir=tmp_path, private=())
    )
    with pytest.raises(SandboxFailed, match="Creating new namespace failed"):
        run_agent_process(
            ["true"],
            cwd=tmp_path,
            env={"PATH": "/usr/bin:/bin"},
            stdout_path=tmp_path / "stdout",
            stderr_path=tmp_path / "stderr",
            limits=Limits(grace_s=1),
            sandbox=command,
        )


HARDENED = (
    "bwrap",
    "--dev-bind",
    "/",
    "/",
    "--unshare-user",
    "--disable-userns",
    "--cap-drop",
    "ALL",
    "--",
)
# The command is a program that exists (`sh`): a missing one is a configuration error of its own.
REFUSAL_PROBE = """
import json, sys
from pathlib import Path
from consort.adapters.agents.config import adapter_for
from consort.adapters.sandbox.bwrap import support
from consort.core.errors import UsageError
from consort.core.project import Project
from consort.core.vocabulary import Role
root = Path(sys.argv[1])
result = {"support": support().describe(), "available": support().available}
for name, toml in (
    ("command", '[agents]\\ndefault = "command"\\ncommand = ["sh"]\\n'),
    ("replay", '[agents]\\ndefault = "replay"\\ndir = "rec"\\n'),
    ("off", '[agents]\\ndefault = "command"\\ncommand = ["sh"]\\nsandbox = "off"\\n'),
    ("on-replay", '[agents]\\ndefault = "replay"\\ndir = "rec"\\nsandbox = "on"\\n'),
):
    (root / "consort.toml").write_text(toml)
    try:
        adapter = adapter_for(Project(root), Role.DRIVER)
        result[name] = getattr(adapter, "sandbox", None) and adapter.sandbox.use.value or "replay"
    except UsageError as exc:
        result[name] = "refused: " + exc.message
print(json.dumps(result))
"""


def test_where_no_namespace_can_be_made_only_replay_runs_unless_sandbox_is_off(
    tmp_path: Path,
) -> None:
    """A host that forbids user namespaces, for real: Consort run inside a sandbox whose own
    user namespace may make no more (--disable-userns), with no capabilities."""
    (tmp_path / "rec").mkdir()
    done = subprocess.run(
        [*HARDENED, sys.executable, "-c", REFUSAL_PROBE, str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["available"] is False
    assert "cannot make namespaces" in result["support"]
    assert (
        result["command"].startswith("refused: ") and "must run in a sandbox" in result["command"]
    )
    assert result["replay"] == "replay"
    assert result["off"] == SandboxUse.OFF.value
    assert result["on-replay"].startswith("refused: ")


def test_a_test_run_sandbox_writes_its_export_and_report_and_reaches_nothing_else(
    layout: Layout,
) -> None:
    """The reusable sandbox for run-to-completion processes (test runs, the deploy app)."""
    from consort.adapters import proc
    from consort.adapters.sandbox.run import run_spec, sandboxed_argv

    export = layout.base / "export"
    reports = layout.base / "reports"
    export.mkdir()
    reports.mkdir()
    (export / ".env").write_text("SECRET=in the export\n")
    env = {"PATH": os.environ["PATH"], "HOME": str(layout.home)}
    spec = run_spec(workdir=export, writable=[export, reports], project_root=layout.root, env=env)
    script = (
        "import pathlib, sys\n"
        "pathlib.Path(sys.argv[1], 'junit.xml').write_text('<testsuites/>')\n"
        "seen = []\n"
        "for path in sys.argv[2:]:\n"
        "    try:\n"
        "        pathlib.Path(path).read_text()\n"
        "        seen.append(path)\n"
        "    except OSError:\n"
        "        pass\n"
        "print(seen)\n"
    )
    secrets = [
        str(layout.root / ".consort" / "db" / "secret"),
        str(layout.root / ".env"),
        str(export / ".env"),
        str(layout.home / ".pgpass"),
        str(layout.other / "theirs.py"),
    ]
    done = proc.run(
        sandboxed_argv(spec, [sys.executable, "-c", script, str(reports), *secrets]),
        cwd=export,
        env=env,
    )
    assert done.stdout.strip() == "[]"
    assert (reports / "junit.xml").read_text() == "<testsuites/>"
