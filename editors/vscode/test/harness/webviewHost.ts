// The extension's side of a panel, without VS Code, for the browser test
// (tests/e2e/test_vscode_webview_browser.py): it starts the real `consort dashboard --editor`
// (CONSORT_BIN, in CONSORT_TEST_PROJECT), builds the webview's document as the extension does,
// and runs a PageSession whose messages travel as JSON lines: the page's on stdin, the host's on
// stdout. Decisions are confirmed or not by HARNESS_CONFIRM ("no,yes": one answer a decision).
// The token stays in this process: asked {"type": "holds-token?", "text": ...}, it answers
// whether that text contains it, so the test can check the page without ever holding it.
import * as fs from "node:fs";
import * as path from "node:path";
import * as readline from "node:readline";

import { dashboardDocument } from "../../src/dashboardPage";
import { startDashboard } from "../../src/dashboardProcess";
import { PageSession } from "../../src/session";

function say(message: object): void {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

async function main(): Promise<void> {
  const env = { ...process.env };
  delete env.CONSORT_TASK;
  const dash = await startDashboard(process.env.CONSORT_BIN!, process.env.CONSORT_TEST_PROJECT!, { env });
  const answers = (process.env.HARNESS_CONFIRM ?? "yes").split(",");
  const bridge = fs.readFileSync(path.resolve(__dirname, "../../../media/pageBridge.js"), "utf8");
  const target = { url: dash.url, token: dash.token };
  const session = new PageSession(target, {
    post: (message) => say({ type: "host", message }),
    confirm: async (decision) => {
      const answer = answers.shift() ?? "no";
      say({ type: "asked", decision, answer });
      return answer === "yes";
    },
  });
  say({ type: "document", html: await dashboardDocument(target, bridge), holdsToken: dash.token !== null });
  const lines = readline.createInterface({ input: process.stdin });
  lines.on("line", (line) => {
    const data = JSON.parse(line);
    if (data.type === "holds-token?") say({ type: "holds-token", answer: dash.token !== null && String(data.text).includes(dash.token) });
    else void session.receive(data.message);
  });
  lines.on("close", async () => {
    session.dispose();
    say({ type: "stopped", code: await dash.stop() });
    process.exit(0);
  });
}

main().catch((error: Error) => {
  process.stderr.write(`${error.stack ?? error.message}\n`);
  process.exit(1);
});
