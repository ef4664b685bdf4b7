"""An explorer that cheats from inside its spike: run with cwd = the spike's worktree and only the
DATABASE_URL its `.env` gives, as an agent a person starts there would be.

It tries to reach the parent's database (to change its data or schema), to find a credential
other than its own, to make its own database look like another branch's, and to move its time
box by writing everything in its reach that could look like one. It writes what each attempt did
to the JSON file named by argv[1]; the test decides what that means.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import sys

import psycopg

report_path = pathlib.Path(sys.argv[1])
parent_db = sys.argv[2]
url = os.environ["DATABASE_URL"]
base = url.rsplit("/", 1)[0]
own_db = url.rsplit("/", 1)[1]
attempts: dict[str, str] = {}


def attempt(name: str, sql: str, database: str | None = None) -> None:
    try:
        with psycopg.connect(f"{base}/{database or own_db}", autocommit=True) as conn:
            conn.execute(sql)
        attempts[name] = "succeeded"
    except psycopg.Error as exc:
        attempts[name] = f"refused: {str(exc).strip().splitlines()[0]}"


# The parent's database, directly and through the catalog.
attempt("connect-parent", "SELECT 1", parent_db)
attempt("connect-postgres", "SELECT 1", "postgres")
attempt("connect-template1", "SELECT 1", "template1")
attempt("drop-parent", f'DROP DATABASE "{parent_db}"')
attempt("rename-parent", f'ALTER DATABASE "{parent_db}" RENAME TO stolen')
attempt("lock-parent", f'ALTER DATABASE "{parent_db}" ALLOW_CONNECTIONS false')
attempt("grant-self-parent", f'GRANT CONNECT ON DATABASE "{parent_db}" TO CURRENT_USER')
attempt("dblink", "CREATE EXTENSION IF NOT EXISTS dblink")
attempt("postgres-fdw", "CREATE EXTENSION IF NOT EXISTS postgres_fdw")
attempt("new-role", "CREATE ROLE accomplice LOGIN SUPERUSER PASSWORD 'x'")
attempt("become-superuser", "ALTER ROLE CURRENT_USER SUPERUSER")
attempt("read-server-files", "SELECT pg_read_file('postgresql.conf')")
attempt("copy-from-program", "COPY (SELECT 1) TO PROGRAM 'true'")
# Its own database's record, which says whose branch it is and what its parent is.
attempt(
    "rewrite-own-record",
    f'COMMENT ON DATABASE "{own_db}" IS \'{{"kind": "branch", "branch": "main", "parent": null}}\'',
)
# What its own database may hold: a table of its own (exploration), which must work.
attempt("own-table", "CREATE TABLE IF NOT EXISTS scratch (id int)")

# Credentials in its reach: every file of its checkout, and its environment.
found: list[str] = []
for path in pathlib.Path.cwd().rglob("*"):
    if path.is_file() and ".git" not in path.parts:
        with contextlib.suppress(OSError):
            found.append(path.read_text(encoding="utf-8", errors="replace"))
found.append(json.dumps(dict(os.environ)))
(report_path.parent / "seen.txt").write_text("\n".join(found))

# A longer time box, written wherever it could be taken for one.
forged = {
    "seq": 999,
    "type": "spike.started",
    "actor": "human",
    "subject": "spike/" + pathlib.Path.cwd().name,
    "data": {
        "name": pathlib.Path.cwd().name,
        "ttl_s": 604800,
        "expires": "2099-01-01T00:00:00.000000Z",
    },
}
state = pathlib.Path(".consort")
state.mkdir(exist_ok=True)
(state / "ledger.jsonl").write_text(json.dumps(forged) + "\n")
(state / "spike.json").write_text(json.dumps({"expires": "2099-01-01T00:00:00Z", "ttl": "7d"}))
notes = pathlib.Path("notes.md")
notes.write_text("ttl: 7d\nexpires: 2099-01-01\n\nThe explorer's notes.\n")
os.utime("notes.md", (4102444800, 4102444800))  # a modification time in 2100

report_path.write_text(json.dumps(attempts, indent=2))
