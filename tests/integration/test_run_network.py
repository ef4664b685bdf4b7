"""A sandboxed run's network, with the real bubblewrap and the real embedded PostgreSQL.

A run reaches its own throwaway database at the address its URL names, and nothing else: not
another database on the same server (a developer's, under its own login), not the superuser's
login to its own database, not any other port of the machine. `[test] network = "host"` gives
the machine's network back; an unsandboxed run is as before.
"""

from __future__ import annotations

import json
import socket
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest

from consort.adapters import proc
from consort.adapters.db.cluster import SUPERUSER
from consort.adapters.db.secret import load_secret, password_for
from consort.adapters.sandbox.bwrap import support
from consort.adapters.tdd.runbox import run_sandbox
from consort.core.project import Project

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not support().available, reason="bubblewrap cannot make a sandbox here"),
]

# Each attempt printed as NAME=yes|no (and, for a refused login, the server's words).
PROBE = textwrap.dedent(
    """
    import socket, sys
    import psycopg
    run_url, other_url, superuser_url, port = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    def login(name, url):
        try:
            with psycopg.connect(url, connect_timeout=20) as conn:
                found = conn.execute("SELECT current_database()").fetchone()[0]
            print(name + "=yes:" + found)
        except psycopg.Error as exc:
            print(name + "=no:" + " ".join(str(exc).split()))
    login("own", run_url)
    login("other", other_url)
    login("superuser", superuser_url)
    try:
        socket.create_connection(("127.0.0.1", int(port)), timeout=20).close()
        print("listener=yes")
    except OSError:
        print("listener=no")
    """
)


def _superuser_url(root: Path) -> tuple[str, int]:
    record = json.loads((root / ".consort" / "db" / "cluster.json").read_text())
    password = password_for(load_secret(root / ".consort" / "db"), SUPERUSER)
    port = int(record["port"])
    return f"postgresql://{SUPERUSER}:{password}@127.0.0.1:{port}/postgres", port


@pytest.fixture(scope="module")
def databases(project: Path) -> Iterator[dict[str, str]]:
    """Two logins, each owning a database, on the project's server."""
    admin, port = _superuser_url(project)
    tag = uuid.uuid4().hex[:8]
    made = {}
    with psycopg.connect(admin, autocommit=True) as conn:
        for kind in ("run", "other"):
            user, name = f"net_{kind}_{tag}", f"net_{kind}_db_{tag}"
            conn.execute(f"CREATE ROLE {user} LOGIN PASSWORD 'pw-{tag}'")
            conn.execute(f"CREATE DATABASE {name} OWNER {user}")
            made[kind] = f"postgresql://{user}:pw-{tag}@127.0.0.1:{port}/{name}"
    made["superuser"] = admin.rsplit("/", 1)[0] + "/" + made["run"].rsplit("/", 1)[1]
    yield made
    with psycopg.connect(admin, autocommit=True) as conn:
        for kind in ("run", "other"):
            user, name = f"net_{kind}_{tag}", f"net_{kind}_db_{tag}"
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            conn.execute(f"DROP ROLE IF EXISTS {user}")


@pytest.fixture
def listener() -> Iterator[int]:
    """A port of the machine's, listening on loopback (as a developer's service would)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield sock.getsockname()[1]


def _project(base: Path, sandbox: str, network: str | None) -> Project:
    root = base / "proj"
    root.mkdir()
    table = f'\n[test]\nnetwork = "{network}"\n' if network else ""
    (root / "consort.toml").write_text(f'[agents]\nsandbox = "{sandbox}"\n{table}')
    return Project(root)


def _probe(project: Project, base: Path, urls: dict[str, str], port: int) -> dict[str, str]:
    export = base / "export"
    export.mkdir()
    (export / "probe.py").write_text(PROBE)
    argv = [sys.executable, "probe.py", urls["run"], urls["other"], urls["superuser"], str(port)]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(base / "home"), "DATABASE_URL": urls["run"]}
    box = run_sandbox(project)
    with box.boxed(argv, database=urls["run"], workdir=export, env=env) as boxed:
        done = proc.run_contained(boxed.argv, cwd=export, env=env, timeout=300)
        refused = boxed.refused
    assert done.returncode == 0, done.output
    found = dict(line.split("=", 1) for line in done.output.splitlines() if "=" in line)
    found["refused"] = ",".join(sorted(r.database for r in refused))
    return found


def test_an_isolated_run_reaches_its_own_database_and_nothing_else(
    tmp_path: Path, databases: dict[str, str], listener: int
) -> None:
    project = _project(tmp_path, "on", None)
    assert run_sandbox(project).network_isolated
    found = _probe(project, tmp_path, databases, listener)
    run_db = databases["run"].rsplit("/", 1)[1]
    other_db = databases["other"].rsplit("/", 1)[1]
    assert found["own"] == f"yes:{run_db}"
    assert found["other"].startswith("no:"), found
    assert "may reach only its throwaway database" in found["other"], found
    assert found["superuser"].startswith("no:"), found
    assert found["listener"] == "no"
    assert found["refused"] == ",".join(sorted([other_db, run_db]))


def test_host_network_and_no_sandbox_reach_the_machine_as_before(
    tmp_path: Path, databases: dict[str, str], listener: int
) -> None:
    for sandbox, network in (("on", "host"), ("off", None)):
        base = tmp_path / sandbox
        base.mkdir()
        project = _project(base, sandbox, network)
        assert not run_sandbox(project).network_isolated
        found = _probe(project, base, databases, listener)
        assert found["own"].startswith("yes:"), found
        assert found["other"].startswith("yes:"), found  # the machine's network: reachable
        assert found["listener"] == "yes"
        assert found["refused"] == ""


def test_the_run_cannot_end_its_bridge_to_reach_elsewhere(
    tmp_path: Path, databases: dict[str, str], listener: int
) -> None:
    """Killing the bridge inside frees the port, and nothing outside answers there either."""
    project = _project(tmp_path, "on", None)
    export = tmp_path / "export"
    export.mkdir()
    port = databases["run"].rsplit(":", 1)[1].split("/")[0]
    script = textwrap.dedent(
        f"""
        import os, signal, socket
        socket.create_connection(("127.0.0.1", {port}), timeout=20).close()  # the bridge is up
        killed = 0
        for pid in os.listdir("/proc"):
            if pid.isdigit() and int(pid) != os.getpid():
                try:
                    if b"bridge.py" in open(f"/proc/{{pid}}/cmdline", "rb").read():
                        os.kill(int(pid), signal.SIGKILL)
                        os.waitpid(int(pid), 0)  # the bridge was forked by this process
                        killed += 1
                except OSError:
                    pass
        print(f"killed={{killed}}")
        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=20).close()
            print("after=yes")
        except OSError:
            print("after=no")
        """
    )
    (export / "kill.py").write_text(script)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home")}
    with run_sandbox(project).boxed(
        [sys.executable, "kill.py"], database=databases["run"], workdir=export, env=env
    ) as boxed:
        done = proc.run_contained(boxed.argv, cwd=export, env=env, timeout=300)
    assert done.returncode == 0, done.output
    assert "killed=1" in done.output and "after=no" in done.output, done.output


def test_doctor_says_whether_runs_are_network_isolated(tmp_path: Path) -> None:
    from consort.app.doctor import CheckState, _run_network

    said = {}
    for sandbox, network in (("on", None), ("on", "host"), ("off", None)):
        base = tmp_path / f"{sandbox}-{network}"
        base.mkdir()
        check = _run_network(_project(base, sandbox, network))
        said[(sandbox, network)] = (check.state, check.detail)
    assert said[("on", None)][0] is CheckState.OK
    assert "runs are network-isolated" in said[("on", None)][1]
    assert said[("on", "host")] == (
        CheckState.WARN,
        '[test] network = "host": runs share the machine\'s network',
    )
    assert said[("off", None)][0] is CheckState.WARN
    assert "not sandboxed" in said[("off", None)][1]


# Connects once the host may look: `connecting` is written just before the connection is made.
HELD_PROBE = textwrap.dedent(
    """
    import pathlib, sys
    import psycopg
    pathlib.Path("connecting").write_text("now")
    try:
        with psycopg.connect(sys.argv[1], connect_timeout=120) as conn:
            started = conn.execute(
                "SELECT backend_start::text FROM pg_stat_activity WHERE pid = pg_backend_pid()"
            ).fetchone()[0]
            marks = conn.execute("SELECT count(*) FROM held_mark").fetchone()[0]
        print("backend_start=" + started)
        print(f"marks={marks}")
    except psycopg.Error as exc:
        print("failed=" + " ".join(str(exc).split()))
    """
)


class HeldProbe:
    """HELD_PROBE started in a sandbox whose gate is held, running in a thread of its own."""

    def __init__(self, project: Project, export: Path, url: str, opened: ExitStack) -> None:
        (export / "probe.py").write_text(HELD_PROBE)
        env = {"PATH": "/usr/bin:/bin", "HOME": str(export / "home"), "DATABASE_URL": url}
        argv = [sys.executable, "probe.py", url]
        self.boxed = opened.enter_context(
            run_sandbox(project).boxed(argv, database=url, workdir=export, env=env, held=True)
        )
        assert self.boxed.holds
        self.done: list[proc.Contained] = []
        self.thread = threading.Thread(
            target=lambda: self.done.append(
                proc.run_contained(self.boxed.argv, cwd=export, env=env, timeout=300)
            ),
            daemon=True,
        )
        self.thread.start()
        for _ in range(3000):  # up to 5 minutes: a loaded machine starts a sandbox late
            if (export / "connecting").exists():
                return
            time.sleep(0.1)
        raise AssertionError("the probe never started")

    def said(self) -> dict[str, str]:
        self.thread.join(300)
        output = self.done[0].output
        return dict(line.split("=", 1) for line in output.splitlines() if "=" in line)


def test_a_held_gate_carries_a_connection_only_once_released(
    tmp_path: Path, databases: dict[str, str]
) -> None:
    """What the held process sends waits for the release: its session begins after it, and it
    sees what was made in the database before it."""
    project = _project(tmp_path, "on", None)
    export = tmp_path / "export"
    export.mkdir()
    owner = urlsplit(databases["run"]).username
    with ExitStack() as opened:
        probe = HeldProbe(project, export, databases["run"], opened)
        with psycopg.connect(databases["superuser"], autocommit=True) as conn:
            conn.execute(f"CREATE TABLE held_mark (id int); ALTER TABLE held_mark OWNER TO {owner}")
            conn.execute("INSERT INTO held_mark VALUES (1), (2)")
            released = conn.execute("SELECT clock_timestamp()").fetchone()
        probe.boxed.release()
        said = probe.said()
    assert "backend_start" in said, said
    with psycopg.connect(databases["superuser"]) as conn:
        started = conn.execute("SELECT %s::timestamptz", (said["backend_start"],)).fetchone()
        conn.execute("DROP TABLE held_mark")
        conn.commit()
    assert released is not None and started is not None
    assert started[0] >= released[0], (started, released)
    assert said["marks"] == "2"


def test_closing_a_held_gate_ends_its_connections_uncarried(
    tmp_path: Path, databases: dict[str, str]
) -> None:
    """A run stopped before its release (its migrations failed) never reached its database."""
    project = _project(tmp_path, "on", None)
    export = tmp_path / "export"
    export.mkdir()
    user = urlsplit(databases["run"]).username
    with ExitStack() as opened:
        probe = HeldProbe(project, export, databases["run"], opened)
    said = probe.said()
    assert "failed" in said and "backend_start" not in said, said
    with psycopg.connect(databases["superuser"]) as conn:
        sessions = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE usename = %s", (user,)
        ).fetchone()
    assert sessions == (0,)
