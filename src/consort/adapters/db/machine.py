"""Every embedded cluster on this machine, with its project and whether its server runs; and the
collection of those whose project is gone.

When Consort runs as root, each project's cluster lives under `/var/lib/consort/clusters/`
(owned by the `consort` account) and records the project that made it in an `owner` file. A
project folder deleted or re-made leaves its cluster there, sometimes with its server still
running; `consort db gc` stops and removes those, and `consort doctor` lists them all. (A normal
user's clusters live inside their projects and go with them.)
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from consort.adapters.db.account import SYSTEM_HOME, SYSTEM_USER, ServerAccount
from consort.adapters.db.backend import CLUSTER_FILE
from consort.adapters.db.cluster import LocalCluster, ServerState, server_state
from consort.core.layout import Layout

OWNER_FILE = "owner"  # in a cluster's home: the root of the project that made it


@dataclass(frozen=True)
class MachineCluster:
    home: Path
    project: Path | None  # the project that made it, when it says
    state: ServerState
    orphaned: bool  # its project is gone, or has moved on to another cluster

    @property
    def described(self) -> str:
        running = f"running (pid {self.state.pid})" if self.state.running else "stopped"
        whose = f"project {self.project}" if self.project else "no recorded project"
        gone = ", project gone" if self.orphaned else ""
        return f"{self.home}: {running}, {whose}{gone}"


def clusters_root() -> Path:
    return SYSTEM_HOME / "clusters"


def _project_of(home: Path) -> Path | None:
    try:
        return Path((home / OWNER_FILE).read_text(encoding="utf-8").strip())
    except OSError:
        return None


def _is_orphaned(project: Path, home: Path) -> bool:
    """Whether the project that made `home` is gone, or names another cluster as its own now.

    A project folder whose record is missing or unreadable does not make an orphan: `init` writes
    the owner file just before the record, and a cluster being set up is never collected.
    """
    if not project.exists():
        return True
    record = Layout.of(project).db / CLUSTER_FILE  # which cluster is the project's own
    try:
        current = json.loads(record.read_text(encoding="utf-8")).get("home")
    except (OSError, ValueError, AttributeError):
        return False
    return current is not None and current != str(home)


def machine_clusters(root: Path | None = None) -> list[MachineCluster]:
    """Every cluster folder under `root` (default: the machine's), Consort's or not recorded."""
    folder = root if root is not None else clusters_root()
    try:
        homes = sorted(p for p in folder.iterdir() if p.is_dir())
    except OSError:
        return []
    found = []
    for home in homes:
        project = _project_of(home)
        orphaned = project is not None and _is_orphaned(project, home)
        found.append(MachineCluster(home, project, server_state(home), orphaned))
    return found


def stop_and_remove(cluster: MachineCluster) -> list[str]:
    """Stop the cluster's server (with the embedded `pg_ctl`, as the account that owns it) and
    delete its folder; returns what was done, in words."""
    done = []
    if cluster.state.running:
        _stop(cluster)
        done.append(f"stopped the server of {cluster.home} (pid {cluster.state.pid})")
    shutil.rmtree(cluster.home, ignore_errors=True)
    done.append(f"removed {cluster.home}")
    return done


def _stop(cluster: MachineCluster) -> None:
    from consort.adapters.db.account import reachable_binaries
    from consort.adapters.db.binaries import find_binaries

    account = ServerAccount(SYSTEM_USER if os.geteuid() == 0 else None)
    binaries = reachable_binaries(find_binaries(), account)
    LocalCluster(cluster.home, cluster.state.port or 0, binaries, account).stop()
