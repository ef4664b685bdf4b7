// Starting `consort dashboard --editor` as a child process and reading what it announces: one
// JSON line on its standard output with the URL and the token. The token travels only through
// that pipe into this process's memory: never a file, never an argument, never a URL. Closing
// the child's standard input stops it, so the dashboard never outlives the editor.
import { ChildProcess, spawn } from "node:child_process";

export interface Announcement {
  url: string; // http://127.0.0.1:PORT/
  token: string | null; // null: the dashboard is read-only
  readOnlyReason: string | null;
}

export class AnnouncementError extends Error {}

const LOOPBACK_URL = /^http:\/\/127\.0\.0\.1:(\d{1,5})\/$/;
const MAX_LINE = 64 * 1024; // an announcement is ~200 bytes: anything longer is not one

/** One announcement line, checked: a dashboard on 127.0.0.1 only, the token a plain string. */
export function parseAnnouncement(line: string): Announcement {
  let data: unknown;
  try {
    data = JSON.parse(line);
  } catch {
    // the line itself is not shown: whatever printed it, it may hold a token
    throw new AnnouncementError(`the first line (${line.length} characters) is not an announcement from consort dashboard --editor`);
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    throw new AnnouncementError("the announcement is not a JSON object");
  }
  const a = data as Record<string, unknown>;
  if (a.consort_dashboard !== 1) throw new AnnouncementError("not an announcement of version 1");
  if (typeof a.url !== "string" || !LOOPBACK_URL.test(a.url)) {
    throw new AnnouncementError(`the dashboard's URL is not on 127.0.0.1: ${String(a.url)}`);
  }
  const port = Number(LOOPBACK_URL.exec(a.url)![1]);
  if (port < 1 || port > 65535) throw new AnnouncementError(`no such port: ${port}`);
  if (a.token !== null && (typeof a.token !== "string" || a.token === "")) {
    throw new AnnouncementError("the token is neither a string nor null");
  }
  const reason = a.read_only_reason;
  if (reason !== null && typeof reason !== "string") {
    throw new AnnouncementError("read_only_reason is neither a string nor null");
  }
  return { url: a.url, token: a.token as string | null, readOnlyReason: reason as string | null };
}

/** Collects a stream's chunks until the first whole line; later bytes are left alone. */
export class FirstLine {
  private buffer = "";
  private done = false;

  /** The first line once it is complete (without its newline), else null. */
  push(chunk: string): string | null {
    if (this.done) return null;
    this.buffer += chunk;
    const end = this.buffer.indexOf("\n");
    if (end < 0) {
      if (this.buffer.length > MAX_LINE) throw new AnnouncementError("no announcement line");
      return null;
    }
    this.done = true;
    const line = this.buffer.slice(0, end).replace(/\r$/, "");
    this.buffer = "";
    return line;
  }
}

export interface RunningDashboard extends Announcement {
  child: ChildProcess;
  /** Ask it to stop (closes its standard input); killed if it has not gone after `graceMs`. */
  stop(graceMs?: number): Promise<number | null>;
  exited: Promise<number | null>;
}

export const START_TIMEOUT_MS = 120_000; // a loaded machine starts Python slowly; only a hang fails
const STDERR_KEPT = 8 * 1024;

/** `consort dashboard --editor --port 0` in `cwd`, resolved once it has announced itself. */
export function startDashboard(
  command: string,
  cwd: string,
  options: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<RunningDashboard> {
  const timeoutMs = options.timeoutMs ?? START_TIMEOUT_MS;
  const child = spawn(command, ["dashboard", "--editor", "--port", "0"], {
    cwd,
    env: options.env ?? process.env,
    stdio: ["pipe", "pipe", "pipe"],
    windowsHide: true,
  });
  const exited = new Promise<number | null>((resolve) => {
    child.once("exit", (code) => resolve(code));
    child.once("error", () => resolve(null));
  });
  let stderr = "";
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (chunk: string) => {
    stderr = (stderr + chunk).slice(-STDERR_KEPT);
  });

  const stop = async (graceMs = 10_000): Promise<number | null> => {
    if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
    child.stdin!.end();
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
    try {
      return await exited;
    } finally {
      clearTimeout(timer);
    }
  };

  return new Promise((resolve, reject) => {
    const first = new FirstLine();
    let settled = false;
    const fail = (error: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void stop(2_000);
      reject(error);
    };
    const timer = setTimeout(
      () => fail(new AnnouncementError(`consort dashboard did not start in ${timeoutMs} ms`)),
      timeoutMs,
    );
    child.once("error", (error) => fail(new AnnouncementError(`cannot run ${command}: ${error.message}`)));
    child.once("exit", async (code) => {
      await new Promise((r) => setImmediate(r)); // let stderr's last chunk arrive
      fail(new AnnouncementError(`consort dashboard exited ${code}: ${stderr.trim() || "(no output)"}`));
    });
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (chunk: string) => {
      if (settled) return;
      let line: string | null;
      try {
        line = first.push(chunk);
        if (line === null) return;
        const announced = parseAnnouncement(line);
        settled = true;
        clearTimeout(timer);
        resolve({ ...announced, child, stop, exited });
      } catch (error) {
        fail(error as Error);
      }
    });
  });
}
