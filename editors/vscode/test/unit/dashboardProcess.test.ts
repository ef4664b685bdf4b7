// Real child processes: a small script behaving like `consort dashboard --editor` (see
// test/consort/ for the real one).
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";

import { AnnouncementError, FirstLine, parseAnnouncement, startDashboard } from "../../src/dashboardProcess";
import { send } from "../../src/dashboardClient";

const FAKE = path.resolve(__dirname, "../../../test/fixtures/fake-dashboard");

function env(mode: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...process.env, FAKE_DASHBOARD: mode, ...extra };
}

test("the first line is read whole, however it arrives", () => {
  const first = new FirstLine();
  assert.equal(first.push('{"a":'), null);
  assert.equal(first.push('1}\r\nlater'), '{"a":1}');
  assert.equal(first.push("more\n"), null);
});

test("an announcement names a dashboard on 127.0.0.1 and a token or none", () => {
  assert.deepEqual(parseAnnouncement('{"consort_dashboard":1,"url":"http://127.0.0.1:4321/","token":"abc","read_only_reason":null}'),
    { url: "http://127.0.0.1:4321/", token: "abc", readOnlyReason: null });
  assert.deepEqual(parseAnnouncement('{"consort_dashboard":1,"url":"http://127.0.0.1:4321/","token":null,"read_only_reason":"agent turn"}'),
    { url: "http://127.0.0.1:4321/", token: null, readOnlyReason: "agent turn" });
  for (const bad of [
    "Consort dashboard: http://127.0.0.1:4321/",
    '{"consort_dashboard":2,"url":"http://127.0.0.1:4321/","token":null,"read_only_reason":null}',
    '{"consort_dashboard":1,"url":"http://0.0.0.0:4321/","token":null,"read_only_reason":null}',
    '{"consort_dashboard":1,"url":"http://127.0.0.1:4321/?token=x","token":null,"read_only_reason":null}',
    '{"consort_dashboard":1,"url":"http://127.0.0.1:99999/","token":null,"read_only_reason":null}',
    '{"consort_dashboard":1,"url":"http://127.0.0.1:4321/","token":"","read_only_reason":null}',
  ]) {
    assert.throws(() => parseAnnouncement(bad), AnnouncementError, bad);
  }
});

test("a started dashboard is reached at its URL and stops when its input closes", async () => {
  const record = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "consort-ext-")), "argv.json");
  const dash = await startDashboard(FAKE, os.tmpdir(), { env: env("ok", { FAKE_DASHBOARD_ARGV: record }) });
  try {
    assert.equal(dash.token, "t0ken-for-the-editor");
    assert.deepEqual(JSON.parse(fs.readFileSync(record, "utf8")), ["dashboard", "--editor", "--port", "0"]);
    const answer = await send({ url: dash.url, token: dash.token }, { method: "GET", path: "/api/overview", accept: "application/json", body: null, pageToken: null, decision: null });
    const seen = JSON.parse(answer.body);
    assert.equal(seen.path, "/api/overview");
    assert.equal(seen.headers.host, new URL(dash.url).host);
    assert.equal(seen.headers["x-consort-token"], undefined, "a read carries no token");
    assert.equal(seen.headers.origin, undefined);
  } finally {
    assert.equal(await dash.stop(), 0);
  }
});

test("a decision carries the dashboard's own origin and the editor's token", async () => {
  const dash = await startDashboard(FAKE, os.tmpdir(), { env: env("ok") });
  try {
    const body = JSON.stringify({ gate: "design", subject: "F1", note: "" });
    const answer = await send({ url: dash.url, token: dash.token }, { method: "POST", path: "/api/approve", accept: "application/json", body, pageToken: "typed-on-the-page", decision: { action: "approve", gate: "design", subject: "F1", note: "" } });
    const seen = JSON.parse(answer.body);
    assert.equal(seen.headers.origin, new URL(dash.url).origin);
    assert.equal(seen.headers["content-type"], "application/json");
    assert.equal(seen.headers["x-consort-token"], "t0ken-for-the-editor"); // the editor's wins
  } finally {
    await dash.stop();
  }
});

test("a dashboard that fails says why, from its stderr", async () => {
  await assert.rejects(startDashboard(FAKE, os.tmpdir(), { env: env("fail") }), /exited 2: consort: error: no consort.toml/);
});

async function gone(pid: number): Promise<void> {
  const deadline = Date.now() + 60_000; // only a hang fails
  for (;;) {
    try {
      process.kill(pid, 0);
    } catch {
      return; // ESRCH: no such process
    }
    assert.ok(Date.now() < deadline, `process ${pid} is still running`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test("output that is not an announcement is refused, unshown, and the child stopped", async () => {
  const pidFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "consort-ext-")), "pid");
  await assert.rejects(startDashboard(FAKE, os.tmpdir(), { env: env("garbage", { FAKE_DASHBOARD_PID: pidFile }) }), (error: Error) => {
    assert.match(error.message, /^the first line \(\d+ characters\) is not an announcement/);
    assert.doesNotMatch(error.message, /127\.0\.0\.1/); // what was printed is not repeated
    return true;
  });
  await gone(Number(fs.readFileSync(pidFile, "utf8")));
  await assert.rejects(startDashboard(FAKE, os.tmpdir(), { env: env("remote") }), /not on 127\.0\.0\.1/);
});

test("a dashboard that never announces itself is given up on", async () => {
  await assert.rejects(startDashboard(FAKE, os.tmpdir(), { env: env("silent"), timeoutMs: 2_000 }), /did not start in 2000 ms/);
});

test("a missing command is said plainly", async () => {
  await assert.rejects(startDashboard("/nonexistent/consort", os.tmpdir()), /cannot run \/nonexistent\/consort/);
});
