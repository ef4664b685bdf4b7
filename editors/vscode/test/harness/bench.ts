// Timings for bench/vscode_extension.py, in the extension's own modules, as one JSON line each:
//   refresh N       the status bar's refresh (consort status --json and next --json, side by
//                   side), and its baseline: two bare interpreters (BENCH_PYTHON -c pass) side by side
//   start N         starting `consort dashboard --editor` until it has announced itself, and stopping it
//   events          a dashboard followed twice, directly (openEvents) and through a PageSession;
//                   prints {"ready"} and then each event's arrival time (ms since the epoch) per path
// CONSORT_BIN is the consort executable, CONSORT_TEST_PROJECT the project.
import { performance } from "node:perf_hooks";

import { readProjectStatus, runConsort } from "../../src/consortCli";
import { openEvents } from "../../src/dashboardClient";
import { startDashboard } from "../../src/dashboardProcess";
import { PageSession } from "../../src/session";

const CONSORT = process.env.CONSORT_BIN!;
const PROJECT = process.env.CONSORT_TEST_PROJECT!;
const PYTHON = process.env.BENCH_PYTHON!;

function say(data: object): void {
  process.stdout.write(`${JSON.stringify(data)}\n`);
}

async function timed(run: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await run();
  return (performance.now() - start) / 1000;
}

async function refresh(runs: number): Promise<void> {
  await readProjectStatus(CONSORT, PROJECT); // warm-up, untimed
  for (let i = 0; i < runs; i++) {
    const value = await timed(() => readProjectStatus(CONSORT, PROJECT));
    const baseline = await timed(() =>
      Promise.all([runConsort(PYTHON, ["-c", "pass"], PROJECT), runConsort(PYTHON, ["-c", "pass"], PROJECT)]),
    );
    say({ part: "refresh", value, baseline });
  }
}

async function start(runs: number): Promise<void> {
  for (let i = 0; i < runs; i++) {
    let stop: () => Promise<unknown> = async () => undefined;
    const value = await timed(async () => {
      const dash = await startDashboard(CONSORT, PROJECT);
      stop = () => dash.stop();
    });
    await stop();
    const baseline = await timed(() => runConsort(PYTHON, ["-c", "pass"], PROJECT));
    say({ part: "start", value, baseline });
  }
}

async function events(): Promise<void> {
  const dash = await startDashboard(CONSORT, PROJECT);
  const target = { url: dash.url, token: dash.token };
  const since = Number(process.env.BENCH_SINCE ?? "0");
  const path = `/api/events?since=${since}`;
  let opened = 0;
  const ready = (): void => {
    opened += 1;
    if (opened === 2) say({ ready: true });
  };
  openEvents(target, { method: "GET", path, accept: "text/event-stream", body: null, pageToken: null, decision: null }, {
    open: ready,
    event: (event) => say({ path: "direct", seq: Number(event.id), at: Date.now() }),
    error: (why) => say({ error: why }),
  });
  const session = new PageSession(target, {
    post: (message) => {
      if (message.type === "event-open") ready();
      if (message.type === "event") say({ path: "session", seq: Number(message.lastEventId), at: Date.now() });
    },
    confirm: async () => false,
  });
  await session.receive({ type: "events-open", id: 1, path });
  process.stdin.resume();
  process.stdin.on("end", async () => {
    session.dispose();
    await dash.stop();
    process.exit(0);
  });
}

const [what, count] = process.argv.slice(2);
const runs = Number(count ?? "10");
const jobs: Record<string, () => Promise<void>> = { refresh: () => refresh(runs), start: () => start(runs), events };
jobs[what!]!().catch((error: Error) => {
  process.stderr.write(`${error.stack ?? error.message}\n`);
  process.exit(1);
});
