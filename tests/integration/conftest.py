"""Integration fixtures: one real Consort project with its embedded PostgreSQL per test session."""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import consort, ok


def destroy_project_cluster(root: Path) -> None:
    """Stop a test project's server and remove its cluster (it may live outside the project)."""
    consort("db", "stop", cwd=root)
    record = root / ".consort" / "db" / "cluster.json"
    with contextlib.suppress(FileNotFoundError, ValueError):
        shutil.rmtree(json.loads(record.read_text())["home"], ignore_errors=True)


@pytest.fixture(scope="session")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A project made by the real `consort init`, its server started once for the session."""
    root = tmp_path_factory.mktemp("proj") / "shop"
    try:
        ok(consort("init", str(root), cwd=root.parent))
        yield root
    finally:
        destroy_project_cluster(root)


@pytest.fixture
def fresh_project(tmp_path: Path) -> Iterator[Path]:
    """A project of the test's own, for tests that stop or reconfigure the server."""
    root = tmp_path / "app"
    try:
        ok(consort("init", str(root), cwd=tmp_path))
        yield root
    finally:
        destroy_project_cluster(root)
