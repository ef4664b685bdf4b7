"""A spec author that leaves more in its outputs folder than its output.

usage: planting_spec_author.py HONEST_AGENT FIXTURES_DIR

The honest agent (HONEST_AGENT) writes the spec. Beside it, in the folder of its outputs (the
one folder of `.consort/` a turn may write), the turn leaves a file and a link to an absolute
path, each named PLANTED. Consort commits a promoted feature's accepted turn outputs with the
evidence, on the branch it was promoted into: anything else found there would be committed
with them, by Consort, outside every rule a turn's own changes pass (a link to an absolute
path in every later commit is a run refused, for every later feature).
"""

import json
import os
import pathlib
import subprocess
import sys

honest, fixtures = sys.argv[1], sys.argv[2]
task = json.loads(pathlib.Path(os.environ["CONSORT_TASK"]).read_text())
code = subprocess.run([sys.executable, honest, fixtures, "honest"], check=False).returncode
if code == 0 and task["step"] == "spec":
    (out,) = task["outputs"].values()
    folder = pathlib.Path(out).parent
    (folder / "PLANTED.txt").write_text("planted by the spec author\n")
    (folder / "PLANTED-link").symlink_to("/etc/hostname")
    (folder / "PLANTED-dir").mkdir()
    (folder / "PLANTED-dir" / "deeper.txt").write_text("planted\n")
sys.exit(code)
