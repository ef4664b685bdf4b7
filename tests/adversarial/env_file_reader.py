"""A spec author that looks for the branch's login in the checkout before writing its spec.

usage: env_file_reader.py HONEST_AGENT FIXTURES_DIR ENV_FILE

A design turn's tree is the main checkout (read-only). Consort keeps the checked-out branch's
DATABASE_URL there in `[env] file` (ENV_FILE), whatever its name. The turn reads ENV_FILE and
`.env`, logs in with the URL it found, prints what happened to each as one JSON line on stdout
(kept in the turn folder), and then lets the honest agent (HONEST_AGENT) write the spec.
"""

import json
import os
import pathlib
import subprocess
import sys

honest, fixtures, env_file = sys.argv[1], sys.argv[2], sys.argv[3]
task = json.loads(pathlib.Path(os.environ["CONSORT_TASK"]).read_text())
if task["step"] == "spec":
    found = {}
    url = None
    for name in (env_file, ".env"):
        try:
            text = pathlib.Path(name).read_text()
        except OSError as exc:
            found[name] = f"refused: {exc}"
            continue
        found[name] = "REACHED"
        for line in text.splitlines():
            if line.startswith("DATABASE_URL="):
                url = line.split("=", 1)[1].strip()
    if url is not None:
        import psycopg

        try:
            with psycopg.connect(url, connect_timeout=10) as conn:
                found["login"] = f"REACHED {conn.execute('SELECT current_database()').fetchone()}"
        except psycopg.Error as exc:
            found["login"] = f"refused: {exc}"
    print(json.dumps(found), flush=True)
sys.exit(subprocess.run([sys.executable, honest, fixtures, "honest"], check=False).returncode)
