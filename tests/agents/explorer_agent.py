"""An honest spike explorer for the `command` adapter.

It reads its task (the question in inputs["question"]), tries an idea on the database it is given
(a table of bins, an index, a count), leaves a throwaway script in the tree, and writes what it
observed to outputs["notes"]: the facts a later turn can use, and nothing it did not see.

With the argument `wait`, it first writes `ready` in its tree and waits for a `go` file there (a
person working beside it meanwhile).
"""

import json
import os
import sys
import time
from pathlib import Path

import psycopg

if sys.argv[1:] == ["wait"]:
    Path("ready").write_text("waiting\n")
    for _ in range(1200):
        if Path("go").exists():
            break
        time.sleep(0.5)
    else:
        sys.exit("no go")

task = json.loads(Path(os.environ["CONSORT_TASK"]).read_text())
question = Path(task["inputs"]["question"]).read_text().strip()
url = os.environ["DATABASE_URL"]
database = url.rsplit("/", 1)[1]

with psycopg.connect(url, autocommit=True) as conn:
    conn.execute("CREATE TABLE bins (code text PRIMARY KEY, aisle text NOT NULL, qty int)")
    conn.execute(
        "INSERT INTO bins SELECT 'B-' || n, 'A' || (n % 7), n FROM generate_series(1, 500) n"
    )
    conn.execute("CREATE INDEX bins_aisle ON bins (aisle)")
    per_aisle = conn.execute("SELECT count(DISTINCT aisle) FROM bins").fetchone()[0]
    inherited = conn.execute("SELECT to_regclass('inherited') IS NOT NULL").fetchone()[0]
    seen = conn.execute("SELECT count(*) FROM inherited").fetchone()[0] if inherited else 0

Path("probe.py").write_text("# a throwaway probe of the bins idea\nprint('bins')\n")

notes = Path(task["outputs"]["notes"])
notes.write_text(
    f"# Spike notes\n\nQuestion: {question}\n\n"
    "## Tried\n\nA bins table of 500 rows with an index on aisle, on a scratch database.\n\n"
    f"## Learned\n\nBins spread over {per_aisle} aisles. The scratch copy held {seen} rows "
    f"of the parent's inherited table. Worked in database {database}.\n\n"
    "## Recommend\n\nKeep bins keyed by code; index aisle.\n"
)
print(f"explored {question!r} on {database}")
sys.exit(0)
