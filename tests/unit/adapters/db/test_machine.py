"""Every cluster on the machine, with its project and whether it runs; `consort db gc` collects
those whose project is gone and nothing else."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from consort.adapters.db import machine
from consort.adapters.db.machine import OWNER_FILE, machine_clusters, stop_and_remove


def _cluster(root: Path, name: str, project: Path | None, *, pid: int | None = None) -> Path:
    home = root / "clusters" / name
    (home / "data").mkdir(parents=True)
    if project is not None:
        (home / OWNER_FILE).write_text(f"{project}\n")
    if pid is not None:
        (home / "data" / "postmaster.pid").write_text(f"{pid}\n/data\n0\n5433\n")
    return home


def _project(root: Path, name: str, home: Path | None) -> Path:
    project = root / "projects" / name
    (project / ".consort" / "db").mkdir(parents=True)
    if home is not None:
        record = {"home": str(home), "port": 5433, "run_as": "consort"}
        (project / ".consort" / "db" / "cluster.json").write_text(json.dumps(record))
    return project


@pytest.fixture
def machine_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(machine, "SYSTEM_HOME", tmp_path)
    return tmp_path


def test_every_cluster_is_listed_with_whether_it_runs_and_whose_it_is(machine_home: Path) -> None:
    kept = _cluster(machine_home, "shop-kept", machine_home / "projects" / "shop")
    _project(machine_home, "shop", kept)
    gone = _cluster(machine_home, "gone-1", machine_home / "projects" / "gone", pid=os.getpid())
    replaced = _cluster(machine_home, "shop-old", machine_home / "projects" / "shop")
    being_made = _cluster(machine_home, "new-1", _project(machine_home, "new", None))
    unknown = _cluster(machine_home, "unknown", None)
    found = {c.home: c for c in machine_clusters()}
    assert set(found) == {kept, gone, replaced, being_made, unknown}
    assert {h for h, c in found.items() if c.orphaned} == {gone, replaced}
    assert found[gone].state.running and found[gone].state.pid == os.getpid()
    assert not found[kept].state.running
    assert found[gone].described == (
        f"{gone}: running (pid {os.getpid()}), project {machine_home / 'projects' / 'gone'}, "
        "project gone"
    )
    assert found[unknown].described == f"{unknown}: stopped, no recorded project"


def test_gc_removes_only_the_orphans_and_says_what_it_did(machine_home: Path) -> None:
    from consort.app.db import gc

    kept = _cluster(machine_home, "shop-kept", machine_home / "projects" / "shop")
    _project(machine_home, "shop", kept)
    gone = _cluster(machine_home, "gone-1", machine_home / "projects" / "gone")
    (collected,) = gc()
    assert collected.home == str(gone)
    assert collected.done == (f"removed {gone}",)
    assert not gone.exists() and kept.exists()
    assert gc() == []


def test_a_stopped_orphan_is_removed_without_running_anything(tmp_path: Path) -> None:
    home = _cluster(tmp_path, "x", tmp_path / "nowhere")
    (cluster,) = machine_clusters(tmp_path / "clusters")
    assert stop_and_remove(cluster) == [f"removed {home}"]
    assert not home.exists()


def test_doctor_lists_every_cluster_and_names_db_gc_for_the_orphans(
    machine_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from consort.app import doctor

    monkeypatch.setattr(doctor.os, "geteuid", lambda: 0)
    kept = _cluster(machine_home, "shop-kept", machine_home / "projects" / "shop")
    _project(machine_home, "shop", kept)
    gone = _cluster(machine_home, "gone-1", machine_home / "projects" / "gone", pid=os.getpid())
    other = _cluster(machine_home, "unknown", None)
    summary, *each = doctor._orphan_checks()
    assert summary.detail == (
        "3 cluster(s) on this machine, 1 running; 1 whose project is gone: "
        "`consort db gc` stops and removes them"
    )
    assert summary.state is doctor.CheckState.WARN
    assert [c.detail.split(":")[0] for c in each] == [str(gone), str(kept), str(other)]
    assert "pg_ctl" not in summary.detail
