"""When a run's migrate command would change nothing, and Consort leaves its process out.

A run's child is a copy of a branch database. Where Consort itself migrated that database
(`runner.migrate`, at a merge or a promote) it records, in the database's catalog comment (only
the administrator writes it), what it migrated with: a digest of the migrate section and of
every file the migrations are read from (`migration_inputs`), and the revisions the database
was at afterwards. A branch copied from it carries the record along. A run whose export has the
same inputs, on a child at the same revisions, would apply nothing: the migrate command's
interpreter is not started.

Everything is decided outside the sandbox from what Consort reads itself: the inputs from the
commit's git objects, the revisions from the child's catalog over an administrator's
connection. Applied migrations cannot change (the seal refuses it), so the inputs can only
match where no migration was added either. Only commands whose no-op Consort can tell are
left out: Alembic's `upgrade head`, its scripts in a folder its configuration file names;
anything else (a tool that also runs hooks after migrating, a configuration Consort cannot
read) always runs.
"""

from __future__ import annotations

import configparser
import hashlib
import json
import posixpath
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from consort.adapters.vcs import TreeEntry

if TYPE_CHECKING:
    from pathlib import Path

    import psycopg

    from consort.core.config import MigrateSection

ALEMBIC_INI = "alembic.ini"
VERSION_TABLE = "alembic_version"


@dataclass(frozen=True)
class MigratedRecord:
    """What a branch database was last migrated with by Consort, and the revisions it reached."""

    inputs: str
    revisions: tuple[str, ...]

    def as_data(self) -> dict[str, Any]:
        return {"inputs": self.inputs, "revisions": list(self.revisions)}

    @classmethod
    def from_data(cls, data: object) -> MigratedRecord | None:
        if not isinstance(data, dict):
            return None
        inputs, revisions = data.get("inputs"), data.get("revisions")
        if not isinstance(inputs, str) or not isinstance(revisions, list):
            return None
        return cls(inputs, tuple(str(r) for r in revisions))


def alembic_upgrade_head(command: Sequence[str]) -> tuple[str, ...] | None:
    """The arguments before `upgrade head` when `command` is Alembic's `upgrade head` (run as
    `alembic` or `python -m alembic`), else None."""
    parts = list(command)
    if parts[-2:] != ["upgrade", "head"]:
        return None
    head = parts[:-2]
    for index, part in enumerate(head):
        name = posixpath.basename(part)
        if name == "alembic" and (index == 0 or head[index - 1] == "-m"):
            return tuple(head[index + 1 :])
    return None


def _config_file(options: Sequence[str]) -> str | None:
    """The configuration file the options name (`-c F`, `--config F`, `--config=F`), the
    default `alembic.ini`; None for options Consort does not follow."""
    found = ALEMBIC_INI
    items = list(options)
    index = 0
    while index < len(items):
        item = items[index]
        if item in ("-c", "--config") and index + 1 < len(items):
            found = items[index + 1]
            index += 2
        elif item.startswith("--config="):
            found = item.split("=", 1)[1]
            index += 1
        else:
            return None  # -x, -n, --raiseerr...: a run Consort does not model
    return found


def migration_inputs(  # noqa: PLR0911 -- each way out is a case Consort does not model
    section: MigrateSection, entries: Mapping[str, TreeEntry], read: Callable[[str], bytes]
) -> str | None:
    """A digest of what an Alembic `upgrade head` reads from the commit `entries` (its
    configuration file, every file of its script folder) and of the migrate section; None
    when the command is not one Consort can tell a no-op of. `read(path)` gives a file's bytes
    as the commit has them (its export, before anything ran in it)."""
    options = alembic_upgrade_head(section.command)
    if options is None:
        return None
    name = _config_file(options)
    if name is None:
        return None
    ini = posixpath.normpath(posixpath.join(section.cwd or ".", name))
    entry = entries.get(ini)
    if entry is None or entry.is_link or entry.is_gitlink:
        return None
    try:
        data = read(ini)
    except OSError:
        return None
    folder = _script_folder(ini, data, section.cwd or ".")
    if folder is None:
        return None
    prefix = "" if folder == "." else folder + "/"
    files = sorted((p, e.sha) for p, e in entries.items() if p.startswith(prefix) or p == ini)
    if not any(p.startswith(prefix) for p, _ in files):
        return None
    text = json.dumps(
        {
            "section": section.model_dump(mode="json"),
            "files": files,
        },
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _script_folder(ini: str, data: bytes, cwd: str) -> str | None:
    """The script folder (a repository path) an Alembic configuration file names: relative to
    the folder Alembic runs in (`cwd`), or to the file's own through `%(here)s`. None where it
    names a package resource, extra version locations, or nothing Consort can read."""
    parser = configparser.ConfigParser()
    here = posixpath.dirname(ini) or "."
    try:
        parser.read_string(data.decode("utf-8"))
        raw = parser.get("alembic", "script_location", raw=True)
        location = parser.get("alembic", "script_location", vars={"here": here}).strip()
        extra = parser.get("alembic", "version_locations", fallback="", vars={"here": here})
    except (configparser.Error, UnicodeDecodeError):
        return None
    if not location or ":" in location or extra.strip() or location.startswith("/"):
        return None
    base = "." if "%(here)s" in raw else cwd
    folder = posixpath.normpath(posixpath.join(base, location))
    if folder.startswith("..") or folder.startswith("/"):
        return None
    return folder


def revisions(conn: psycopg.Connection[Any]) -> tuple[str, ...] | None:
    """The revisions Alembic's version table holds in the database `conn` is connected to
    (sorted); None when it has none."""
    row = conn.execute("SELECT to_regclass(%s)::text", (VERSION_TABLE,)).fetchone()
    if row is None or row[0] is None:
        return None
    found = conn.execute(f"SELECT version_num::text FROM {VERSION_TABLE}").fetchall()
    return tuple(sorted(str(r[0]) for r in found))


def export_reader(root: Path) -> Callable[[str], bytes]:
    """`read(path)` over an export Consort wrote from git objects, before anything ran in it."""

    def read(path: str) -> bytes:
        return (root / path).read_bytes()

    return read
