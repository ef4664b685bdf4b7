"""The pair for the node-express template (Express, pg, Knex, Vitest): the navigator writes
test/tN.test.js (ids as Vitest's JUnit report gives them: `<file>::<describe> > <test>`); the
driver adds a route to src/app.js and, for T2, a Knex migration creating the table the db-design
declares."""

import pathlib

from turn import RedTest, Turn, write

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


def red(turn: Turn) -> RedTest:
    source, name, expected = TESTS[turn.item]
    return RedTest(f"test/{turn.item}.test.js", source, name, expected)


def green(turn: Turn) -> None:
    text = APP.read_text()
    if ROUTES[turn.item] not in text:
        APP.write_text(text + "\n" + ROUTES[turn.item])
    if turn.item == "t2":
        write("migrations/0002_answers.js", MIGRATION)
