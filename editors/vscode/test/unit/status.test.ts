import assert from "node:assert/strict";
import { test } from "node:test";

import { StatusFormatError, parseNext, parseStatus, statusBarProblem, statusBarView } from "../../src/status";

// the shapes `consort status --json` and `consort next --json` print (see test/consort/ for the
// same modules against a real project)
const STATUS = {
  branch_problem: null,
  branches: [
    { created: "2026-12-01T17:04:46+00:00", current: false, database: "main", name: "main", pairing: "paired", parent: null, size_bytes: 1 },
    { created: "2026-12-01T17:05:00+00:00", current: true, database: "story_f1_s1", name: "story/F1/S1", pairing: "paired", parent: "feature/F1", size_bytes: 1 },
  ],
  escalations: [],
  features: [
    { artifacts: {}, deploy_gate: "not reached", design_gate: "approved", id: "F1-stock-visibility", lane: "build", next: "run-turn", promote_gate: "not reached", title: "Stock visibility" },
  ],
  spikes: [],
  stories: [],
  unsandboxed_turns: [],
};
const NEXT = { attempt: 1, command: null, feature: "F1-stock-visibility", kind: "run-turn", lane: "build", reason: "T2 has no failing test yet", role: "navigator", step: "red" };

test("the status bar names the checked-out branch, the lane and the next turn", () => {
  const view = statusBarView(parseStatus(JSON.stringify(STATUS)), parseNext(JSON.stringify(NEXT)));
  assert.equal(view.text, "$(git-branch) story/F1/S1 · build · navigator/red F1");
  assert.equal(view.attention, false);
  assert.match(view.tooltip, /^branch story\/F1\/S1 \(paired, database story_f1_s1, from feature\/F1\)$/m);
  assert.match(view.tooltip, /^next: T2 has no failing test yet$/m);
});

test("a gate waiting for a person draws attention and says the command", () => {
  const next = { ...NEXT, kind: "await-gate", lane: "design", role: null, step: null, command: "consort approve design F1" };
  const view = statusBarView(parseStatus(JSON.stringify(STATUS)), parseNext(JSON.stringify(next)));
  assert.equal(view.text, "$(bell) story/F1/S1 · design · await gate F1");
  assert.equal(view.attention, true);
  assert.match(view.tooltip, /^run: consort approve design F1$/m);
});

test("an escalation draws attention whatever comes next", () => {
  const status = { ...STATUS, escalations: [{ feature: "F1-stock-visibility", step: "green", reason: "3 attempts failed", command: 'consort retry F1 --note "..."' }] };
  const view = statusBarView(parseStatus(JSON.stringify(status)), parseNext(JSON.stringify(NEXT)));
  assert.equal(view.attention, true);
  assert.match(view.tooltip, /escalation F1-stock-visibility \(green\): 3 attempts failed/);
});

test("no current branch is said, with the branch problem", () => {
  const status = { ...STATUS, branches: [], branch_problem: "the database server is not running" };
  const view = statusBarView(parseStatus(JSON.stringify(status)), parseNext(JSON.stringify(NEXT)));
  assert.equal(view.text, "$(git-branch) no paired branch · build · navigator/red F1");
  assert.match(view.tooltip, /^the database server is not running$/m);
});

test("output that is not the status is refused, not guessed at", () => {
  assert.throws(() => parseStatus("consort: error: no consort.toml"), StatusFormatError);
  assert.throws(() => parseStatus("[]"), /not a JSON object/);
  assert.throws(() => parseStatus(JSON.stringify({ ...STATUS, branches: {} })), /branches is not a list/);
  assert.throws(() => parseNext(JSON.stringify({ ...NEXT, lane: 3 })), /lane is not a string/);
});

test("a problem shows its first line", () => {
  const view = statusBarProblem("\nconsort: ENOENT\nmore detail");
  assert.equal(view.text, "$(warning) consort");
  assert.equal(view.tooltip, "consort: ENOENT");
});
