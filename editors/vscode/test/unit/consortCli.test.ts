// Real child processes: a small script answering like `consort status --json` / `next --json`.
import assert from "node:assert/strict";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";

import { ConsortFailed, readProjectStatus, runConsort } from "../../src/consortCli";

const FAKE = path.resolve(__dirname, "../../../test/fixtures/fake-consort");
const STATUS = { branch_problem: null, branches: [{ name: "feature/F1", database: "feature_f1", parent: "main", pairing: "paired", current: true }], escalations: [], features: [] };
const NEXT = { attempt: 1, command: null, feature: null, kind: "intake-needed", lane: "plan", reason: "no feature yet", role: null, step: null };

test("status and next are read from the command's JSON", async () => {
  process.env.FAKE_STATUS = JSON.stringify(STATUS);
  process.env.FAKE_NEXT = JSON.stringify(NEXT);
  delete process.env.FAKE_EXIT;
  const { status, next } = await readProjectStatus(FAKE, os.tmpdir());
  assert.equal(status.branches[0]!.name, "feature/F1");
  assert.equal(next.kind, "intake-needed");
});

test("a failing command's exit code and first line are kept", async () => {
  process.env.FAKE_EXIT = "2";
  await assert.rejects(readProjectStatus(FAKE, os.tmpdir()), (error: unknown) => {
    if (!(error instanceof ConsortFailed)) return false;
    assert.ok(error instanceof ConsortFailed);
    assert.equal(error.result.code, 2);
    assert.match(error.message, /exited 2: consort: error: (status|next) failed on purpose/);
    return true;
  });
  delete process.env.FAKE_EXIT;
});

test("a command that cannot run is not an exit code", async () => {
  const result = await runConsort("/nonexistent/consort", ["status", "--json"], os.tmpdir());
  assert.equal(result.code, null);
  assert.equal(result.error, "/nonexistent/consort: ENOENT");
});
