"""Consort's own runs of the tree under test in the sandbox, with the real bubblewrap.

A run is code the agents wrote, started by Consort: inside the sandbox it reads and writes its
export, reads what it was given, and reaches nothing of the project's checkout or state; the
report pipe still reaches Consort, and a daemon it starts ends with it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from consort.adapters import proc
from consort.adapters.sandbox.bwrap import Support, support
from consort.adapters.tdd.runbox import RunSandbox, run_sandbox
from consort.core.errors import UsageError
from consort.core.project import Project

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not support().available, reason="bubblewrap cannot make a sandbox here"),
]

# What the run tries, each printed as NAME=yes|no.
PROBE = textwrap.dedent(
    """
    import os, pathlib, subprocess, sys
    root = pathlib.Path(sys.argv[1])
    def attempt(name, action):
        try:
            action()
            print(name + "=yes")
        except OSError:
            print(name + "=no")
    attempt("reads-export", lambda: pathlib.Path("app.py").read_text())
    attempt("writes-export", lambda: pathlib.Path("made.txt").write_text("x"))
    attempt("reads-given", lambda: pathlib.Path(sys.argv[2], "given.txt").read_text())
    attempt("reads-secret", lambda: (root / ".consort" / "db" / "secret").read_bytes())
    attempt("reads-checkout", lambda: (root / "consort.toml").read_text())
    attempt("writes-checkout", lambda: (root / "planted.txt").write_text("x"))
    attempt("reads-env", lambda: (root / ".env").read_text())
    # what only Consort's runs carry, under any name it is read by
    marks = ("CONSORT_RUN_TOKEN", "CONSORT_OWNER", "PYTHONNOUSERSITE", "PYTHONDONTWRITEBYTECODE")
    print("run-markers=" + (",".join(m for m in marks if m in os.environ) or "none"))
    print("flags=%d%d" % (sys.flags.no_user_site, sys.flags.dont_write_bytecode))
    with open(sys.argv[3], "w") as report:
        report.write("<testsuite/>")
    subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)", sys.argv[4]],
        start_new_session=True,
    )
    """
)


def make_project(base: Path, sandbox: str) -> Project:
    root = base / "proj"
    (root / ".consort" / "db").mkdir(parents=True)
    (root / ".consort" / "db" / "secret").write_bytes(b"s3cret")
    (root / ".env").write_text("DATABASE_URL=postgresql://owner:pw@127.0.0.1/main\n")
    (root / "consort.toml").write_text(f'[agents]\nsandbox = "{sandbox}"\n')
    return Project(root)


def test_a_run_reaches_its_export_and_what_it_was_given_only(tmp_path: Path) -> None:
    project = make_project(tmp_path, "on")
    export = tmp_path / "export"
    export.mkdir()
    (export / "app.py").write_text("x = 1\n")
    (export / "probe.py").write_text(PROBE)
    given = tmp_path / "given"
    given.mkdir()
    (given / "given.txt").write_text("plugin")
    marker = f"consort-run-daemon-{uuid.uuid4().hex}"
    box = run_sandbox(project)
    assert box.sandboxed
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "PYTHONNOUSERSITE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    argv = box.wrap(
        [sys.executable, "probe.py", str(project.root), str(given), "{side_channel}", marker],
        workdir=export,
        env=env,
        read_only=[given],
    )

    result = proc.run_contained(argv, cwd=export, env=env, timeout=120, side_channel=True)

    assert result.returncode == 0, result.output
    seen = dict(line.split("=") for line in result.output.split() if "=" in line)
    assert seen == {
        "reads-export": "yes",
        "writes-export": "yes",
        "reads-given": "yes",
        "reads-secret": "no",
        "reads-checkout": "no",
        "writes-checkout": "no",
        "reads-env": "no",
        "run-markers": "none",
        "flags": "00",
    }, result.output
    assert result.side_channel == b"<testsuite/>"  # the report pipe reaches Consort
    assert (export / "made.txt").read_text() == "x"
    assert not (project.root / "planted.txt").exists()
    # The daemon it started in a session of its own ended with the run.
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True, check=False)
    assert left.stdout.strip() == ""


def test_sandbox_off_runs_as_given_and_on_is_the_default_where_it_can(tmp_path: Path) -> None:
    project = make_project(tmp_path / "a", "off")
    off = run_sandbox(project)
    assert not off.sandboxed
    export = tmp_path / "export"
    export.mkdir()
    (export / "app.py").write_text("x = 1\n")
    (export / "probe.py").write_text(PROBE)
    marker = f"consort-run-daemon-{uuid.uuid4().hex}"
    argv = [sys.executable, "probe.py", str(project.root), str(export), "{side_channel}", marker]
    assert off.wrap(argv, workdir=export, env={}) == argv
    # Unsandboxed (a person's choice), the same probe reaches the project: what the sandbox
    # takes away is real.
    result = proc.run_contained(argv, cwd=export, env={}, timeout=120, side_channel=True)
    assert "reads-secret=yes" in result.output and "writes-checkout=yes" in result.output
    assert run_sandbox(make_project(tmp_path / "b", "auto")).sandboxed


def test_a_required_sandbox_that_cannot_be_made_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from consort.adapters.tdd import runbox

    project = make_project(tmp_path, "on")
    monkeypatch.setattr(runbox, "support", lambda: Support(None, "no bubblewrap here"))
    with pytest.raises(UsageError, match="must be sandboxed"):
        run_sandbox(project)
    # "auto" where none can be made: the run goes on, contained but not sandboxed.
    (project.root / "consort.toml").write_text('[agents]\nsandbox = "auto"\n')
    assert run_sandbox(Project(project.root)) == RunSandbox(False, project.root)
