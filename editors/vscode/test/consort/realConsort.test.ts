// The extension's modules against the real consort: `consort status --json` and `next --json`,
// and `consort dashboard --editor` as a child process, on a real project waiting at its design
// gate. tests/integration/test_vscode_extension.py makes that project and runs this file with
// CONSORT_BIN (the consort executable) and CONSORT_TEST_PROJECT (the project) set.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, test } from "node:test";

import { HostMessage } from "../../src/bridge";
import { readProjectStatus } from "../../src/consortCli";
import { dashboardDocument } from "../../src/dashboardPage";
import { RunningDashboard, startDashboard } from "../../src/dashboardProcess";
import { PageSession } from "../../src/session";
import { statusBarView } from "../../src/status";

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run these tests through tests/integration/test_vscode_extension.py`);
  return value;
}

const CONSORT = required("CONSORT_BIN");
const PROJECT = required("CONSORT_TEST_PROJECT");
const BRIDGE = fs.readFileSync(path.resolve(__dirname, "../../../media/pageBridge.js"), "utf8");
const WAIT_MS = 120_000; // only a hang fails

interface LedgerLine {
  seq: number;
  type: string;
  actor: string;
  subject: string;
}

function ledger(): LedgerLine[] {
  return fs.readFileSync(path.join(PROJECT, ".consort", "ledger.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
}

/** A page session whose answers are collected, as a webview would receive them. */
function session(dash: RunningDashboard, confirmed: boolean): { page: PageSession; seen: HostMessage[]; asked: string[] } {
  const seen: HostMessage[] = [];
  const asked: string[] = [];
  const page = new PageSession({ url: dash.url, token: dash.token }, {
    post: (message) => seen.push(message),
    confirm: async (decision) => {
      asked.push(`${decision.action} ${decision.gate} ${decision.subject}`);
      return confirmed;
    },
  });
  return { page, seen, asked };
}

async function until<T>(find: () => T | undefined): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error("nothing arrived in time");
    await new Promise((r) => setTimeout(r, 50));
  }
}

function answer(seen: HostMessage[], id: number): Extract<HostMessage, { type: "response" }> {
  const found = seen.find((m) => m.type === "response" && m.id === id);
  assert.ok(found && found.type === "response", `no answer to ${id}`);
  return found;
}

let dash: RunningDashboard;
const env = { ...process.env };
delete env.CONSORT_TASK;

before(async () => {
  dash = await startDashboard(CONSORT, PROJECT, { env });
});

after(async () => {
  assert.equal(await dash.stop(), 0, "the dashboard stops when its input closes");
});

test("the status bar shows the project's branch, lane and the gate waiting", async () => {
  const { status, next } = await readProjectStatus(CONSORT, PROJECT);
  const feature = status.features[0]!.id;
  assert.equal(next.kind, "await-gate");
  const view = statusBarView(status, next);
  assert.equal(view.text, `$(bell) main · design · await gate ${feature.split("-")[0]}`);
  assert.match(view.tooltip, new RegExp(`^run: consort approve design ${feature}$`, "m"));
});

test("the dashboard started for the editor hands it a token", () => {
  assert.match(dash.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
  assert.ok(dash.token !== null && dash.token.length >= 32, "a token");
  assert.equal(dash.readOnlyReason, null);
});

test("the webview's document is the dashboard's page under the strict policy", async () => {
  const html = await dashboardDocument({ url: dash.url, token: dash.token }, BRIDGE);
  assert.match(html, /<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'nonce-/);
  assert.match(html, /<div id="features"><\/div>/);
  assert.match(html, /function renderDecisions/); // the dashboard's own script, inlined
  assert.match(html, /EDITOR_HOLDS_TOKEN/);
  assert.doesNotMatch(html, / src=| href=/);
  assert.ok(!html.includes(dash.token!), "the token never enters the webview");
});

test("the page's reads and live feed go through the session", async () => {
  const { page, seen } = session(dash, false);
  try {
    await page.receive({ type: "fetch", id: 1, path: "/api/overview", init: { headers: { Accept: "application/json" } } });
    const overview = JSON.parse(answer(seen, 1).body);
    assert.equal(answer(seen, 1).status, 200);
    assert.equal(overview.decisions_allowed, true);
    assert.equal(overview.features[0].pending_gate.gate, "design");
    await page.receive({ type: "fetch", id: 2, path: "/api/db-url?branch=main" });
    assert.equal(answer(seen, 2).status, 400); // refused by the extension, never sent
    await page.receive({ type: "events-open", id: 3, path: "/api/events?since=0" });
    const first = await until(() => seen.find((m) => m.type === "event" && m.id === 3));
    assert.ok(first.type === "event");
    assert.equal(first.event, "ledger");
    assert.equal(JSON.parse(first.data).type, "project.initialised");
    assert.ok(seen.some((m) => m.type === "event-open" && m.id === 3));
  } finally {
    page.dispose();
  }
});

test("a decision the person does not confirm is never sent", async () => {
  const { page, seen, asked } = session(dash, false);
  const feature = ledger().find((e) => e.type === "feature.created")!.subject;
  const body = JSON.stringify({ gate: "design", subject: feature, note: "" });
  await page.receive({ type: "fetch", id: 9, path: "/api/approve", init: { method: "POST", headers: { "Content-Type": "application/json" }, body } });
  assert.deepEqual(asked, [`approve design ${feature}`]);
  assert.equal(answer(seen, 9).status, 409);
  assert.ok(!ledger().some((e) => e.type === "gate.approved"));
  page.dispose();
});

test("a confirmed approval is recorded as the person's", async () => {
  const { page, seen } = session(dash, true);
  const feature = ledger().find((e) => e.type === "feature.created")!.subject;
  const body = JSON.stringify({ gate: "design", subject: feature, note: "approved in the editor" });
  await page.receive({ type: "fetch", id: 10, path: "/api/approve", init: { method: "POST", headers: { "Content-Type": "application/json" }, body } });
  const outcome = answer(seen, 10);
  assert.equal(outcome.status, 200, outcome.body);
  assert.equal(JSON.parse(outcome.body).actor, "human");
  const approved = ledger().filter((e) => e.type === "gate.approved");
  assert.equal(approved.length, 1);
  assert.equal(approved[0]!.actor, "human");
  assert.equal(approved[0]!.subject, feature);
  page.dispose();
});
