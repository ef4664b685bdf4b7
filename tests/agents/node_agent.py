"""A navigator/driver pair for a Node project tested with Vitest (ES modules) or Jest
(CommonJS).

usage: node_agent.py FIXTURES_DIR [vitest|jest]
Design turns copy the fixture artifacts; the navigator writes test/tN.test.js and names its
test ids as the JUnit report will (Vitest: `<file>::<describe> > <test>`; Consort's Jest
profile: `<file>::<test>`); the driver edits src/.
"""

import json
import os
import pathlib
import shutil
import sys

fixtures = pathlib.Path(sys.argv[1])
runner = sys.argv[2] if len(sys.argv) > 2 else "vitest"
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
JEST_TESTS = {
    "t1": (
        'const { answer } = require("../src/answers.js");\n\n'
        'describe("answer", () => {\n  it("is 42", () => {\n    expect(answer()).toBe(42);\n'
        "  });\n});\n",
        "is 42",
        {"kind": "assertion", "message_pattern": "Expected: 42"},
    ),
    "t2": (
        'const answers = require("../src/answers.js");\n\n'
        'describe("double", () => {\n  it("is 84", () => {\n'
        "    expect(answers.double()).toBe(84);\n  });\n});\n",
        "is 84",
        {"kind": "error", "message_pattern": "not a function"},
    ),
}
JEST_CODE = {
    "t1": "function answer() {\n  return 42;\n}\n\nmodule.exports = { answer };\n",
    "t2": "function answer() {\n  return 42;\n}\n\nfunction double() {\n  return answer() * 2;\n}\n"
    "\nmodule.exports = { answer, double };\n",
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
    source, name, expected = (JEST_TESTS if runner == "jest" else TESTS)[item]
    test_file = f"test/{item}.test.js"
    write(test_file, source)
    plan = {
        "test_files": [test_file],
        "test_ids": [f"{test_file}::{name}"],
        "expected_failure": expected,
    }
    pathlib.Path(task["outputs"]["cycle-plan"]).write_text(json.dumps(plan))
elif step in ("green", "repair"):
    write("src/answers.js", (JEST_CODE if runner == "jest" else CODE)[item])
elif step == "review":
    pathlib.Path(task["outputs"]["review"]).write_text(
        json.dumps({"verdict": "approve", "reasons": []})
    )
