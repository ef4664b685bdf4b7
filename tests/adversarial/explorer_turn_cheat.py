"""An explorer agent that cheats from inside the turn Consort starts in its spike (the `command`
adapter, in the turn sandbox).

usage: explorer_turn_cheat.py MODE TARGETS_JSON

- `reach`: tries every reach beyond its spike: the parent's database and the spike's own branch
  database (it is given only a scratch child of the latter), the server's powers, the project
  secret, the main checkout's `.env` and ledger, another spike's worktree and kept notes, other
  branches' refs, its own worktree's `.env`, `consort.toml` and `.consort/`. It prints one JSON
  object: each attempt's result, and everything it could read (for the test to search).
- `linger`: writes its notes, leaves a double-forked `setsid` daemon that keeps writing them, and
  sleeps past any time box.
- `link`: makes notes.md a link to the project secret, for `spike end` to copy.
"""

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg

mode = sys.argv[1]
targets = json.loads(sys.argv[2])
task = json.loads(Path(os.environ["CONSORT_TASK"]).read_text())
notes = Path(task["outputs"]["notes"])
results: dict[str, str] = {}
seen: list[str] = [json.dumps(dict(os.environ))]


def attempt(name, action):
    try:
        what = action()
    except (OSError, psycopg.Error, subprocess.CalledProcessError) as exc:
        results[name] = f"refused: {str(exc).strip().splitlines()[0] if str(exc) else exc!r}"
    else:
        results[name] = f"succeeded {what or ''}".strip()


def sql(statement, database=None):
    url = os.environ["DATABASE_URL"]
    if database is not None:
        url = url.rsplit("/", 1)[0] + "/" + database

    def act():
        with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
            conn.execute(statement)

    return act


def read(path):
    def act():
        text = Path(path).read_text(errors="replace")
        seen.append(text)
        if not text.strip():
            raise OSError(f"{path} reads empty")
        return f"{len(text)} chars"

    return act


def write(path, text="planted by the explorer\n", append=False):
    def act():
        with Path(path).open("a" if append else "w") as out:
            out.write(text)

    return act


def git(*args):
    return lambda: subprocess.run(["git", *args], check=True, capture_output=True, timeout=60)


if mode == "reach":
    parent, branch_db = targets["parent_db"], targets["spike_db"]
    attempt("connect-parent", sql("SELECT 1", parent))
    attempt("connect-spike-branch-db", sql("SELECT 1", branch_db))
    attempt("connect-postgres", sql("SELECT 1", "postgres"))
    attempt("connect-template1", sql("SELECT 1", "template1"))
    attempt("drop-parent", sql(f'DROP DATABASE "{parent}"'))
    attempt("rename-spike-db", sql(f'ALTER DATABASE "{branch_db}" RENAME TO stolen'))
    attempt("grant-self-parent", sql(f'GRANT CONNECT ON DATABASE "{parent}" TO CURRENT_USER'))
    attempt("dblink", sql("CREATE EXTENSION IF NOT EXISTS dblink"))
    attempt("new-role", sql("CREATE ROLE accomplice LOGIN SUPERUSER PASSWORD 'x'"))
    attempt("become-superuser", sql("ALTER ROLE CURRENT_USER SUPERUSER"))
    attempt("read-server-files", sql("SELECT pg_read_file('postgresql.conf')"))
    attempt("copy-from-program", sql("COPY (SELECT 1) TO PROGRAM 'true'"))
    attempt("own-table", sql("CREATE TABLE IF NOT EXISTS scratch (id int)"))

    for name in ("secret", "main_env", "tree_env", "other_notes", "main_ledger", "cluster"):
        attempt(f"read {name}", read(targets[name]))
    attempt("write the main checkout", write(Path(targets["root"], "planted.py")))
    attempt("append to the main ledger", write(targets["main_ledger"], "{}\n", append=True))
    attempt("write another spike's notes", write(targets["other_notes"]))
    attempt("forge kept notes", write(Path(targets["root"], ".consort/spikes/forged.md")))
    attempt("rewrite its own .env", write(".env", "DATABASE_URL=postgresql://x@h/parent\n"))
    attempt("write its consort.toml", write("consort.toml", "[gates]\nmode = 'proxy'\n"))
    Path(".consort").mkdir(exist_ok=True)
    attempt("write a ledger in its tree", write(".consort/ledger.jsonl", "{}\n"))
    attempt("move main", git("update-ref", "refs/heads/main", "HEAD"))
    attempt("move another spike's branch", git("branch", "-f", targets["other_branch"], "HEAD"))
    attempt("write a hook", write(Path(targets["git_dir"], "hooks", "post-checkout")))

    for path in Path.cwd().rglob("*"):
        if path.is_file() and ".git" not in path.parts:
            with contextlib.suppress(OSError):
                seen.append(path.read_text(errors="replace"))
    notes.write_text("# cheat\n\n## Learned\n\nEverything I could reach is in my stdout.\n")
    print(json.dumps({"results": results, "seen": seen}))
elif mode == "linger":
    notes.write_text("# linger\n\n## Learned\n\nWritten before the time box ran out.\n")
    daemon = (
        "import os, sys, time\n"
        "if os.fork(): sys.exit(0)\n"
        "os.setsid()\n"
        "if os.fork(): sys.exit(0)\n"
        "while True:\n"
        "    time.sleep(0.3)\n"
        "    try:\n"
        f"        open({str(notes)!r}, 'a').write('written after the box\\n')\n"
        "    except OSError:\n"
        "        pass\n"
    )
    subprocess.Popen([sys.executable, "-c", daemon, targets["marker"]])
    while True:
        time.sleep(1)
elif mode == "link":
    notes.unlink()
    notes.symlink_to(targets["secret"])
    print("notes.md now leads to the secret")
