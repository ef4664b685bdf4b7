"""A navigator/driver pair for a Node project tested with Vitest.

usage: node_agent.py FIXTURES_DIR
Design turns copy the fixture artifacts; the navigator writes test/tN.test.js and names its
test ids as the JUnit report will (`<file>::<describe> > <test>`); the driver edits src/.
"""

import json
import os
import pathlib
import shutil
import sys

fixtures = pathlib.Path(sys.argv[1])
task = json.loads(pathlib.Path(os.environ["CONSORT_TASK"]).read_text())
step, item = task["step"], (task.get("item") or "").lower()

TESTS = {
    "t1": (
        'import { describe, expect, it } from "vitest";\n'
        'import { answer } from "../src/answers.js";\n\n'
        'describe("answer", () => {\n  it("is 42", () => {\n    expect(answer()).toBe(42);\n'
        "  });\n});\n",
        "answer > is 42",
        {"kind": "assertion", "message_pattern": "to be 42"},
    ),
    "t2": (
        'import { describe, expect, it } from "vitest";\n'
        'import * as answers from "../src/answers.js";\n\n'
        'describe("double", () => {\n  it("is 84", () => {\n'
        "    expect(answers.double()).toBe(84);\n  });\n});\n",
        "double > is 84",
        {"kind": "error", "message_pattern": "not a function"},
    ),
}
CODE = {
    "t1": "export function answer() {\n  return 42;\n}\n",
    "t2": "export function answer() {\n  return 42;\n}\n\n"
    "export function double() {\n  return answer() * 2;\n}\n",
}


def write(path, text):
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


if step in ("spec", "architecture", "db-design", "test-list", "ux"):
    for name, out in task["outputs"].items():
        shutil.copy(fixtures / f"{name}.json", out)
elif step == "red":
    source, name, expected = TESTS[item]
    test_file = f"test/{item}.test.js"
    write(test_file, source)
    plan = {
        "test_files": [test_file],
        "test_ids": [f"{test_file}::{name}"],
        "expected_failure": expected,
    }
    pathlib.Path(task["outputs"]["cycle-plan"]).write_text(json.dumps(plan))
elif step in ("green", "repair"):
    write("src/answers.js", CODE[item])
elif step == "review":
    pathlib.Path(task["outputs"]["review"]).write_text(
        json.dumps({"verdict": "approve", "reasons": []})
    )
