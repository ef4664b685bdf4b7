"""The seal's git and process pieces with real git and real children: exports from objects,
commits of the bytes on disk, hooks off, and contained test processes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from consort.adapters import proc
from consort.adapters.tdd.export import exported
from consort.adapters.vcs import Git, commit_bytes
from consort.core.seal import SealRule
from tests.helpers import git

pytestmark = pytest.mark.integration


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "app").mkdir()
    (root / "app" / "code.py").write_text("ANSWER = 42\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_a.py").write_text("def test_a():\n    assert True\n")
    (root / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (root / "run.sh").chmod(0o755)
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    return root


def test_an_export_holds_the_commit_and_nothing_else(repo: Path):
    (repo / "conftest.py").write_text("raise SystemExit('planted')\n")  # untracked
    (repo / "app" / "code.py").write_text("ANSWER = 0\n")  # uncommitted
    head = Git(repo).out("rev-parse", "HEAD")
    with exported(repo, head) as export:
        root = export.root
        assert (root / "app" / "code.py").read_text() == "ANSWER = 42\n"
        assert not (root / "conftest.py").exists()
        assert os.access(root / "run.sh", os.X_OK)
        assert not str(root).startswith(str(repo))
        assert oct(root.stat().st_mode & 0o777) == "0o700"
        assert export.violations == ()
    assert not root.exists()


def test_export_ignore_and_smudge_filters_do_not_apply(repo: Path):
    (repo / ".git" / "info" / "attributes").write_text("tests/** export-ignore filter=weaken\n")
    git(repo, "config", "filter.weaken.smudge", "sed s/True/False/")
    head = Git(repo).out("rev-parse", "HEAD")
    with exported(repo, head) as export:
        assert (export.root / "tests" / "test_a.py").read_text().endswith("assert True\n")


def test_links_leading_out_are_not_written_and_are_violations(repo: Path, tmp_path: Path):
    (tmp_path / "outside.py").write_text("X = 1\n")
    (repo / "app" / "out.py").symlink_to(tmp_path / "outside.py")
    (repo / "app" / "ok.py").symlink_to("code.py")
    (repo / "gitcfg").symlink_to(".git/config")
    commit = commit_bytes(repo, "links")
    assert commit is not None
    with exported(repo, commit) as export:
        refused = {v.path for v in export.violations}
        assert refused == {"app/out.py", "gitcfg"}
        assert all(v.rule is SealRule.SYMLINK_ESCAPES for v in export.violations)
        assert not (export.root / "app" / "out.py").exists()
        assert (export.root / "app" / "ok.py").read_text() == "ANSWER = 42\n"


def test_a_commit_takes_the_bytes_on_disk_whatever_index_flags_and_filters_say(repo: Path):
    test = repo / "tests" / "test_a.py"
    git(repo, "update-index", "--assume-unchanged", "tests/test_a.py")
    test.write_text("def test_a():\n    assert 1 == 1  # weakened\n")
    (repo / ".git" / "info" / "attributes").write_text("app/** filter=hide\n")
    git(repo, "config", "filter.hide.clean", "sed s/0/42/")
    (repo / "app" / "code.py").write_text("ANSWER = 0\n")
    commit = commit_bytes(repo, "everything on disk")
    assert commit is not None
    assert "weakened" in git(repo, "show", f"{commit}:tests/test_a.py")
    assert git(repo, "show", f"{commit}:app/code.py") == "ANSWER = 0"
    assert commit_bytes(repo, "again", allow_empty=False) is None


def test_consorts_commits_run_no_hook(repo: Path):
    marker = repo.parent / "hook-ran"
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    (repo / "app" / "new.py").write_text("")
    Git(repo).commit_all("with a hook in place")
    Git(repo).run("commit", "--allow-empty", "-qm", "x", "--author", "t <t@t>", check=False)
    assert not marker.exists()


def test_a_contained_process_ends_with_everything_it_started(tmp_path: Path):
    script = tmp_path / "spawner.py"
    script.write_text(
        "import subprocess, sys\n"
        "sleep = [sys.executable, '-c', 'import time; time.sleep(3600)']\n"
        # a grandchild that holds the output open, and one that leaves the session
        "a = subprocess.Popen(sleep)\n"
        "b = subprocess.Popen(sleep, start_new_session=True,"
        " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "open(sys.argv[1], 'w').write(f'{a.pid} {b.pid}')\n"
        "print('main done', flush=True)\n"
    )
    pids = tmp_path / "pids"
    result = proc.run_contained(
        [sys.executable, str(script), str(pids)], cwd=tmp_path, env=dict(os.environ), timeout=600
    )
    # It returned although a grandchild held the output for an hour.
    assert result.returncode == 0 and "main done" in result.output
    assert result.leftovers == 2 and result.escaped == 1
    assert not result.output_held
    for pid in map(int, pids.read_text().split()):
        assert not _alive(pid), pid


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _can_unshare_pid() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-pf", "true"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.skipif(not _can_unshare_pid(), reason="no PID namespaces here (unshare -pf)")
def test_a_process_of_a_pid_namespace_below_ours_is_ended_but_did_not_escape(tmp_path: Path):
    """A sandbox's own init (bubblewrap, inside its PID namespace) carries the run's token and
    may still be on its way out after bubblewrap outside exited: it is ended with the run, but
    it left no session of ours. The process that made the namespace did leave the session."""
    script = (
        "setsid unshare -pf sh -c 'echo inside > ready; exec sleep 300' & "
        "while [ ! -s ready ]; do sleep 0.05; done"
    )
    result = proc.run_contained(
        ["sh", "-c", script], cwd=tmp_path, env=dict(os.environ), timeout=600
    )
    assert result.returncode == 0
    assert result.leftovers == 2  # unshare (our namespace) and sleep (the namespace's init)
    assert result.escaped == 1  # unshare left the session; the namespace's init did not


def test_a_contained_process_past_its_timeout_is_stopped(tmp_path: Path):
    result = proc.run_contained(
        [sys.executable, "-c", "import time; time.sleep(60)"],
        cwd=tmp_path,
        env=dict(os.environ),
        timeout=1,
    )
    assert result.timed_out and result.returncode is None


def test_the_side_channel_carries_what_the_child_wrote(tmp_path: Path):
    result = proc.run_contained(
        [
            sys.executable,
            "-c",
            "import sys; open(sys.argv[1], 'w').write('<report/>')",
            "{side_channel}",
        ],
        cwd=tmp_path,
        env=dict(os.environ),
        timeout=30,
        side_channel=True,
    )
    assert result.side_channel == b"<report/>"


def test_committed_env_files_are_left_out_of_an_export(repo: Path):
    (repo / ".env").write_text("DATABASE_URL=postgresql://developer@localhost/devdb\n")
    (repo / "app" / ".env.production").write_text("SECRET=1\n")
    git(repo, "add", "-f", ".env", "app/.env.production")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "env")
    head = Git(repo).out("rev-parse", "HEAD")
    with exported(repo, head) as export:
        assert not (export.root / ".env").exists()
        assert not (export.root / "app" / ".env.production").exists()
        assert (export.root / "app" / "code.py").exists()
