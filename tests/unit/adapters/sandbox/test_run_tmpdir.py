"""A sandboxed run names its private temporary folder only where its environment names one:
most machines set no TMPDIR, and a run that always had one would be told from them by it."""

from __future__ import annotations

from pathlib import Path

from consort.adapters.sandbox.run import run_spec


def _spec(tmp_path: Path, env: dict[str, str]):
    export = tmp_path / "export"
    export.mkdir()
    return run_spec(workdir=export, writable=[export], project_root=tmp_path / "p", env=env)


def test_a_run_without_a_temporary_folder_gets_none_named(tmp_path: Path) -> None:
    spec = _spec(tmp_path, {"PATH": "/usr/bin", "HOME": str(tmp_path)})
    assert "TMPDIR" not in spec.env


def test_a_run_whose_environment_names_one_gets_its_private_tmp(tmp_path: Path) -> None:
    spec = _spec(tmp_path, {"PATH": "/usr/bin", "HOME": str(tmp_path), "TMPDIR": "/var/x"})
    assert spec.env["TMPDIR"] == "/tmp"
