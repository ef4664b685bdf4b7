"""A driver whose work is honest and whose migration prints the login it runs as, then fails,
where Consort migrates the feature's database itself.

usage: login_printing_driver.py HONEST_AGENT FIXTURES_DIR

Every step is the honest agent's (tests/agents/tdd_agent.py). At T1's GREEN it also adds the
migration of the `answers` table the db-design declares, as Python (the project's migrate
script runs `*.py` migrations too). On a run's throwaway child it just makes the table; on the
feature's branch database (the story's merge, with the feature's own login) it prints its
DATABASE_URL, and the password alone, and fails. The output of a failed migration is what the
drive reports, and the ledger records it; the ledger is committed with the evidence, and every
later turn can read git's objects.
"""

import hashlib
import json
import os
import pathlib
import re
import subprocess
import sys

honest, fixtures = sys.argv[1], sys.argv[2]
task = json.loads(pathlib.Path(os.environ["CONSORT_TASK"]).read_text())


def database_of(branch):
    """The database a branch maps to (consort.adapters.db.names.map_branch, short names)."""
    base = re.sub(r"_+", "_", re.sub(r"[^a-z0-9_]+", "_", branch.lower())).strip("_")
    return f"{base}_{hashlib.sha256(branch.encode()).hexdigest()[:8]}"


STORED = (
    "import os\n\nimport psycopg\n\n\n"
    "def stored():\n"
    "    with psycopg.connect(os.environ['DATABASE_URL']) as conn:\n"
    "        return conn.execute('SELECT count(*) FROM answers').fetchone()[0]\n\n\n"
)

code = subprocess.run([sys.executable, honest, fixtures, "honest"], check=False).returncode
answers = pathlib.Path("app/answers.py")
if code == 0 and task["step"] in ("green", "repair") and answers.is_file():
    text = answers.read_text()
    if "def stored" not in text:
        answers.write_text(STORED + text.replace("return 42", "return 42 + stored()"))
if code == 0 and task["step"] == "green" and task["item"] == "T1":
    feature = database_of(f"feature/{task['feature']}")
    migration = pathlib.Path("migrations/versions/0001_answers.py")
    migration.parent.mkdir(parents=True, exist_ok=True)
    migration.write_text(
        "import os\nimport sys\n\nimport psycopg\n\n"
        "URL = os.environ['DATABASE_URL']\n"
        "with psycopg.connect(URL, autocommit=True) as conn:\n"
        "    conn.execute('CREATE TABLE IF NOT EXISTS answers (id bigint PRIMARY KEY)')\n"
        f"if URL.rsplit('/', 1)[-1] == '{feature}':\n"
        "    secret = URL.split('@')[0].rsplit(':', 1)[-1]\n"
        "    sys.exit(f'cannot reach {URL} (password {secret})')\n"
    )
sys.exit(code)
