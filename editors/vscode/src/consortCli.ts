// Running the consort command line: one child process per call, argv only (no shell), with a
// time limit; its stdout, stderr and exit code come back as they were.
import { execFile } from "node:child_process";

import { NextReport, StatusReport, parseNext, parseStatus } from "./status";

export interface CliResult {
  code: number | null; // null: it did not exit by itself (killed, or not started)
  stdout: string;
  stderr: string;
  error: string | null; // why it could not run at all (ENOENT...), or why it was killed
}

export const CLI_TIMEOUT_MS = 60_000; // generous: only a hang is an error

export function runConsort(
  command: string,
  args: readonly string[],
  cwd: string,
  timeoutMs: number = CLI_TIMEOUT_MS,
): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      command,
      [...args],
      { cwd, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024, windowsHide: true, encoding: "utf8" },
      (error, stdout, stderr) => {
        if (error === null) {
          resolve({ code: 0, stdout, stderr, error: null });
          return;
        }
        const failure = error as NodeJS.ErrnoException & { code?: number | string; killed?: boolean };
        const code = typeof failure.code === "number" ? failure.code : null;
        let why: string | null = null;
        if (typeof failure.code === "string") why = `${command}: ${failure.code}`; // ENOENT, EACCES
        else if (failure.killed) why = `${command} ${args.join(" ")} did not finish in ${timeoutMs} ms`;
        resolve({ code, stdout, stderr, error: why });
      },
    );
  });
}

export class ConsortFailed extends Error {
  constructor(message: string, readonly result: CliResult) {
    super(message);
  }
}

function describeFailure(args: readonly string[], result: CliResult): string {
  if (result.error !== null) return result.error;
  const said = (result.stderr.trim() || result.stdout.trim()).split("\n")[0] ?? "";
  return `consort ${args.join(" ")} exited ${result.code}${said ? `: ${said}` : ""}`;
}

async function json(command: string, args: readonly string[], cwd: string): Promise<string> {
  const result = await runConsort(command, args, cwd);
  if (result.code !== 0) throw new ConsortFailed(describeFailure(args, result), result);
  return result.stdout;
}

export interface ProjectStatus {
  status: StatusReport;
  next: NextReport;
}

/** `consort status --json` and `consort next --json`, run side by side in `cwd`. */
export async function readProjectStatus(command: string, cwd: string): Promise<ProjectStatus> {
  const [status, next] = await Promise.all([
    json(command, ["status", "--json"], cwd),
    json(command, ["next", "--json"], cwd),
  ]);
  return { status: parseStatus(status), next: parseNext(next) };
}
