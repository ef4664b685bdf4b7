"""A spec author whose output is a link to a file its sandbox hides, then honest work.

usage: linking_agent.py FIXTURES_DIR MARKER HONEST_AGENT TARGET

At its first turn (the first `spec` attempt) it writes no spec: it makes its output path a
symbolic link to TARGET, a file the sandbox does not show it (in the project's `.consort/db/`,
beside the secret). Inside the sandbox the link leads nowhere; Consort, outside, would read the
file it names: as the artifact when it validates, and as feedback (whether the file exists,
where its JSON breaks, the names of its keys) when it does not. Every other turn is the honest
agent's (HONEST_AGENT: tests/agents/tdd_agent.py).
"""

import json
import os
import sys
from pathlib import Path

fixtures, marker, honest, target = sys.argv[1:5]
task = json.loads(Path(os.environ["CONSORT_TASK"]).read_text())
if task["step"] == "spec" and task["attempt"] == 1:
    out = Path(task["outputs"]["feature-spec"])
    seen = "visible" if Path(target).exists() else "hidden"
    print(json.dumps({"target inside the sandbox": seen}), flush=True)
    out.unlink(missing_ok=True)
    out.symlink_to(target)
    sys.exit(0)
os.execv(sys.executable, [sys.executable, honest, fixtures, "honest", marker])  # noqa: S606
