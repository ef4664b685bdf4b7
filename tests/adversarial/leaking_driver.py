"""A driver that has Consort commit a file its sandbox hides, through a link, then reads it.

usage: leaking_driver.py FIXTURES_DIR MARKER HONEST_AGENT

At the first GREEN (T1) it does the honest work and adds `app/leak/secret`, a placeholder
that Consort commits with the code. At the second GREEN (T2) it does the honest work and
replaces the folder `app/leak` with a link to the project's `.consort/db/`, which its sandbox
hides: the tracked path `app/leak/secret` now leads, outside the sandbox, to the project secret.
A commit that hashed every tracked path still on disk would store the secret as a blob, which
the next turn reads from the git folder (read-only, but readable, in its sandbox). At every
later turn it prints what `git show HEAD:app/leak/secret` gives, as one JSON line.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

fixtures, marker, honest = sys.argv[1:4]
task_path = Path(os.environ["CONSORT_TASK"])
task = json.loads(task_path.read_text())
root = task_path.parents[3]
shown = subprocess.run(
    ["git", "show", "HEAD:app/leak/secret"], capture_output=True, check=False
).stdout
print(json.dumps({"committed secret": shown.hex()}), flush=True)
done = subprocess.run([sys.executable, honest, fixtures, "honest", marker], check=False)
if done.returncode != 0:
    sys.exit(done.returncode)
first = task["attempt"] == 1 and task["step"] == "green"
if first and task["item"] == "T1":
    Path("app/leak").mkdir(parents=True, exist_ok=True)
    Path("app/leak/secret").write_text("placeholder\n")
elif first and task["item"] == "T2":
    Path("app/leak/secret").unlink()
    Path("app/leak").rmdir()
    Path("app/leak").symlink_to(root / ".consort" / "db")
