"""A navigator/driver pair for the node-express template (Express, pg, Knex, Vitest).

usage: express_agent.py FIXTURES_DIR
Design turns copy the fixture artifacts; the navigator writes test/tN.test.js (ids as Vitest's
JUnit report gives them: `<file>::<describe> > <test>`); the driver edits src/app.js and, for
T2, adds a Knex migration creating the table the db-design declares.
"""

import json
import os
import pathlib
import shutil
import sys

fixtures = pathlib.Path(sys.argv[1])
task = json.loads(pathlib.Path(os.environ["CONSORT_TASK"]).read_text())
step, item = task["step"], (task.get("item") or "").lower()

HEAD = (
    'import { describe, expect, it } from "vitest";\n\n'
    'import { db } from "../src/db.js";\nimport { served } from "./helpers.js";\n\n'
    "const server = served();\n\n"
)
TESTS = {
    "t1": (
        HEAD + 'describe("GET /answer", () => {\n  it("is 42", async () => {\n'
        "    const response = await fetch(`${server.base}/answer`);\n"
        "    expect(response.status).toBe(200);\n"
        "    expect(await response.json()).toEqual({ answer: 42 });\n  });\n});\n",
        "GET /answer > is 42",
        {"kind": "assertion", "message_pattern": "expected 404 to be 200"},
    ),
    "t2": (
        HEAD + 'describe("POST /answers", () => {\n  it("stores the double", async () => {\n'
        '    const response = await fetch(`${server.base}/answers`, { method: "POST" });\n'
        "    expect(response.status).toBe(201);\n"
        '    const { rows } = await db().query("SELECT id FROM answers");\n'
        "    expect(rows.map((row) => Number(row.id))).toEqual([84]);\n  });\n});\n",
        "POST /answers > stores the double",
        {"kind": "assertion", "message_pattern": "expected 404 to be 201"},
    ),
}
APP = pathlib.Path("src/app.js")
ROUTES = {
    "t1": 'app.get("/answer", (_request, response) => {\n  response.json({ answer: 42 });\n});\n',
    "t2": 'app.post("/answers", async (_request, response) => {\n'
    '  await db().query("INSERT INTO answers (id) VALUES ($1)", [84]);\n'
    "  response.status(201).json({ id: 84 });\n});\n",
}
MIGRATION = """\
export async function up(knex) {
  await knex.schema.createTable("answers", (table) => {
    table.bigInteger("id").primary();
  });
}

export async function down(knex) {
  await knex.schema.dropTable("answers");
}
"""


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
    text = APP.read_text()
    if ROUTES[item] not in text:
        APP.write_text(text + "\n" + ROUTES[item])
    if item == "t2":
        write("migrations/0002_answers.js", MIGRATION)
elif step == "review":
    pathlib.Path(task["outputs"]["review"]).write_text(
        json.dumps({"verdict": "approve", "reasons": []})
    )
