"""The pair for an adopted Node project tested with Vitest (ES modules; OPTION vitest, the
default) or Jest (CommonJS; OPTION jest): the navigator writes test/tN.test.js and names its test
ids as the JUnit report will (Vitest: `<file>::<describe> > <test>`; Consort's Jest profile:
`<file>::<test>`); the driver writes src/answers.js."""

from turn import RedTest, Turn, write

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


def red(turn: Turn) -> RedTest:
    source, name, expected = (JEST_TESTS if turn.option == "jest" else TESTS)[turn.item]
    return RedTest(f"test/{turn.item}.test.js", source, name, expected)


def green(turn: Turn) -> None:
    write("src/answers.js", (JEST_CODE if turn.option == "jest" else CODE)[turn.item])
