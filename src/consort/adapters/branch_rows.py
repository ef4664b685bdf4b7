"""The branch table (`consort branch list`, `consort status`): git's branches beside the
databases Consort made for them, and the same table without asking the server.

A live table asks the server's catalog (`PairedBranches.rows`), which means loading the database
driver and logging in: most of `consort status`'s time. What the catalog says of a branch's
database (its name, parent, creation) changes only when a database is created or dropped, and
each database of the embedded cluster is one folder, `base/<oid>`, in the cluster's files. So
every live read keeps the catalog's part in `.consort/run/branches.json`, with each database's
oid; a later table is made from it, without a connection, while the cluster holds exactly those
folders (any database created or dropped since: the server is asked again). Branches and the
checked-out one come from git as always, and sizes from the folders themselves (what
`pg_database_size` adds up), so neither can be stale.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path

from consort.core.fsutil import replace_text
from consort.core.layout import PROCESS_DIR

CACHE_FILE = "branches.json"
CLUSTER_FILE = "cluster.json"  # the embedded cluster's record, in `.consort/db/`
DATA_DIR = "data"
FORMAT = 1


class Pairing(StrEnum):
    PAIRED = "paired"
    GIT_ONLY = "git only"  # a branch made with plain git: no database yet
    DB_ONLY = "database only"  # the git branch is gone: `consort branch gc` drops it


@dataclass(frozen=True)
class BranchRow:
    name: str
    database: str | None
    parent: str | None
    pairing: Pairing
    current: bool
    size_bytes: int | None
    created: str | None

    def as_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "database": self.database,
            "parent": self.parent,
            "pairing": self.pairing.value,
            "current": self.current,
            "size_bytes": self.size_bytes,
            "created": self.created,
        }


@dataclass(frozen=True)
class BranchDatabase:
    """What the catalog says of one branch's database."""

    branch: str
    database: str
    parent_branch: str | None
    created: str | None
    oid: int | None
    size_bytes: int | None = None


def branch_rows(
    git_branches: Iterable[str], current: str | None, databases: Sequence[BranchDatabase]
) -> list[BranchRow]:
    """Every branch git or the catalog knows, paired where both do."""
    on_git = set(git_branches)
    by_branch = {d.branch: d for d in databases}
    rows = []
    for name in sorted(on_git | set(by_branch)):
        db = by_branch.get(name)
        if db is not None and name in on_git:
            pairing = Pairing.PAIRED
        elif db is not None:
            pairing = Pairing.DB_ONLY
        else:
            pairing = Pairing.GIT_ONLY
        rows.append(
            BranchRow(
                name=name,
                database=db.database if db else None,
                parent=db.parent_branch if db else None,
                pairing=pairing,
                current=name == current,
                size_bytes=db.size_bytes if db else None,
                created=db.created if db else None,
            )
        )
    return rows


def remember(state_dir: Path, databases: Sequence[BranchDatabase]) -> None:
    """Keep what a live read of the catalog said, with the database folders the cluster held
    (sizes aside: they are read from the files). Renamed into place without waiting for the
    disk: a record a machine crash lost or damaged only sends the next table to the server."""
    home = _cluster_home(state_dir)
    if home is None or any(d.oid is None for d in databases):
        return
    kept = [asdict(d) | {"size_bytes": None} for d in databases]
    with contextlib.suppress(OSError):
        folders = sorted(_folders(home))
        path = state_dir / PROCESS_DIR / CACHE_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {"format": FORMAT, "home": str(home), "folders": folders, "databases": kept}
        replace_text(path, json.dumps(record))


def recall(state_dir: Path) -> list[BranchDatabase] | None:
    """The branch databases as the last live read saw them, with their sizes now, while the
    cluster holds exactly the database folders it held then; None when the server must be
    asked (any database created or dropped since, another server, no record)."""
    home = _cluster_home(state_dir)
    try:
        kept = json.loads((state_dir / PROCESS_DIR / CACHE_FILE).read_text(encoding="utf-8"))
        if home is None or kept.get("format") != FORMAT or kept.get("home") != str(home):
            return None
        if sorted(_folders(home)) != kept["folders"]:
            return None
        databases = [BranchDatabase(**entry) for entry in kept["databases"]]
        base = home / DATA_DIR / "base"
        return [_with_size(d, base / str(d.oid)) for d in databases]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def _folders(home: Path) -> list[int]:
    """The oids of the cluster's databases in the default tablespace: one folder each."""
    return [
        int(entry.name) for entry in os.scandir(home / DATA_DIR / "base") if entry.name.isdigit()
    ]


def _with_size(database: BranchDatabase, folder: Path) -> BranchDatabase:
    total = sum(entry.stat().st_size for entry in os.scandir(folder) if entry.is_file())
    return BranchDatabase(
        database.branch,
        database.database,
        database.parent_branch,
        database.created,
        database.oid,
        total,
    )


def _cluster_home(state_dir: Path) -> Path | None:
    """The embedded cluster's folder, or None for a project on another server."""
    try:
        record = json.loads((state_dir / "db" / CLUSTER_FILE).read_text(encoding="utf-8"))
        return Path(record["home"])
    except (OSError, ValueError, TypeError, KeyError):
        return None
