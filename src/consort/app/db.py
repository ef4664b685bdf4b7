"""`consort db start|stop|status|url|destroy`: the project's database server."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from consort.adapters.db.backend import CLUSTER_FILE, EmbeddedBackend, open_backend
from consort.core.config import DbBackendKind
from consort.core.errors import UsageError
from consort.core.fsutil import file_lock
from consort.core.project import Project


@dataclass(frozen=True)
class ServerStatus:
    backend: DbBackendKind
    running: bool
    host: str
    port: int
    pid: int | None
    data_dir: str | None
    run_as: str | None
    copy_method: str | None

    def as_json(self) -> dict[str, object]:
        return {
            "backend": self.backend.value,
            "running": self.running,
            "host": self.host,
            "port": self.port,
            "pid": self.pid,
            "data_dir": self.data_dir,
            "run_as": self.run_as,
            "copy_method": self.copy_method,
        }


def _embedded(project: Project) -> EmbeddedBackend:
    backend = open_backend(project)
    if not isinstance(backend, EmbeddedBackend):
        raise UsageError(
            'this project uses backend = "postgres": its server is not Consort\'s to start or stop'
        )
    return backend


@dataclass(frozen=True)
class StartOutcome:
    started: bool  # False: it was running already
    status: ServerStatus

    def as_json(self) -> dict[str, object]:
        return {"started": self.started, **self.status.as_json()}


def start(project: Project, port: int | None = None) -> StartOutcome:
    """Start the server (a no-op when it runs). `port` moves it (0 picks a free port), and the
    checkout's .env follows it."""
    started = _start(project, port)
    if port is not None:
        from consort.adapters.paired import PairedBranches

        paired = PairedBranches(project)
        paired.refresh_env(paired.git.current_branch())
    return StartOutcome(started, status(project))


def _start(project: Project, port: int | None) -> bool:
    backend = _embedded(project)
    with file_lock(project.db_dir / "server.lock"):
        if port is not None:
            from consort.adapters.db.cluster import free_port

            if backend.cluster.state().running:
                raise UsageError("the server is running; stop it before moving it to another port")
            chosen = free_port() if port == 0 else port
            record = replace(backend.record, port=chosen)
            record.save(project.db_dir / CLUSTER_FILE)
            backend = _embedded(project)
            backend.cluster.configure(port=chosen)
        started = backend.cluster.start()
        if started:
            from consort.adapters.db.branching import BranchDatabases

            BranchDatabases(backend).heal()
    return started


def stop(project: Project) -> bool:
    backend = _embedded(project)
    with file_lock(project.db_dir / "server.lock"):
        return backend.cluster.stop()


@dataclass(frozen=True)
class DestroyOutcome:
    """What `consort db destroy` removed: an embedded cluster's folder, or, on a shared server,
    this project's own databases and roles (by name; never a URL or password)."""

    backend: DbBackendKind
    cluster: str | None  # the embedded cluster's folder (None on a shared server)
    dropped: tuple[str, ...]  # "database <name>" / "role <name>" on a shared server

    def as_json(self) -> dict[str, object]:
        return {
            "backend": self.backend.value,
            "cluster": self.cluster,
            "dropped": list(self.dropped),
        }


def destroy(project: Project, confirm: Callable[[str], bool] | None = None) -> DestroyOutcome:
    """Delete every database of the project. `confirm` asks the person at the terminal first
    (None: they said yes already).

    Embedded: stop the server and delete the cluster. The record (`.consort/db/cluster.json`)
    goes last, so an interruption leaves a project that `consort db destroy` can finish.
    A shared server (`backend = "postgres"`): drop this project's own namespaced databases
    (branches, snapshots, throwaway children) and their roles, after ending their sessions;
    nothing of another project's, nor anything Consort did not make. Running it again drops
    nothing.
    """
    import shutil

    if confirm is not None:
        from consort.lanes.humans import has_terminal

        if not has_terminal():
            raise UsageError("deleting every database needs a confirmation", fix="--yes")
        if not confirm(f"Delete every database of {project.root} (branches included)?"):
            raise UsageError("nothing deleted")
    backend = open_backend(project)
    if not isinstance(backend, EmbeddedBackend):
        from consort.adapters.db.teardown import drop_owned

        return DestroyOutcome(backend.kind, None, tuple(drop_owned(backend)))
    with file_lock(project.db_dir / "server.lock"):
        backend.cluster.stop()
        home = backend.cluster.home
        shutil.rmtree(home, ignore_errors=True)
        (project.db_dir / CLUSTER_FILE).unlink(missing_ok=True)
    return DestroyOutcome(backend.kind, str(home), ())


def status(project: Project) -> ServerStatus:
    backend = open_backend(project)
    if isinstance(backend, EmbeddedBackend):
        cluster = backend.cluster
        state = cluster.state()
        return ServerStatus(
            backend=backend.kind,
            running=state.running,
            host=backend.endpoint.host,
            port=backend.endpoint.port,
            pid=state.pid,
            data_dir=str(cluster.data_dir),
            run_as=backend.record.run_as,
            copy_method=cluster.copy_method().value if cluster.exists() else None,
        )
    return ServerStatus(
        backend=backend.kind,
        running=True,
        host=backend.endpoint.host,
        port=backend.endpoint.port,
        pid=None,
        data_dir=None,
        run_as=None,
        copy_method=None,
    )


def url(project: Project, branch: str | None) -> str:
    """The login URL of a branch's own role: it opens that branch's database and nothing else."""
    from consort.adapters.paired import PairedBranches

    paired = PairedBranches(project)
    name = branch or paired.git.current_branch()
    if name is None:
        raise UsageError("HEAD is detached: name the branch", fix="consort db url BRANCH")
    paired.backend.ensure_running()
    paired.database_of(name)  # refuses a branch without a database
    return paired.url(name)


@dataclass(frozen=True)
class CollectedCluster:
    """A cluster `consort db gc` stopped and removed: its project is gone."""

    home: str
    project: str | None
    done: tuple[str, ...]  # what was done, in words

    def as_json(self) -> dict[str, object]:
        return {"home": self.home, "project": self.project, "done": list(self.done)}


def gc() -> list[CollectedCluster]:
    """Stop and remove every cluster on this machine whose project is gone (or moved on to a
    new cluster). Needs no project: it is the machine's housekeeping."""
    from consort.adapters.db.machine import machine_clusters, stop_and_remove

    collected = []
    for cluster in machine_clusters():
        if not cluster.orphaned:
            continue
        done = stop_and_remove(cluster)
        project = str(cluster.project) if cluster.project else None
        collected.append(CollectedCluster(str(cluster.home), project, tuple(done)))
    return collected
