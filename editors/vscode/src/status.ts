// What the status bar shows, from `consort status --json` and `consort next --json`: the paired
// branch checked out, the lane of the feature that comes next, and the next action. Pure: no
// vscode API, no processes, so that Node's test runner covers it.

export interface BranchRow {
  name: string;
  database: string | null;
  parent: string | null;
  pairing: string;
  current: boolean;
}

export interface FeatureLine {
  id: string;
  title: string;
  lane: string;
  next: string;
  design_gate: string;
}

export interface StatusReport {
  features: FeatureLine[];
  branches: BranchRow[];
  branch_problem: string | null;
  escalations: { feature: string; step: string; reason: string; command: string }[];
}

export interface NextReport {
  kind: string;
  lane: string;
  feature: string | null;
  role: string | null;
  step: string | null;
  attempt: number;
  reason: string;
  command: string | null;
}

export class StatusFormatError extends Error {}

function record(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new StatusFormatError(`${what} is not a JSON object`);
  }
  return value as Record<string, unknown>;
}

function text(value: unknown, what: string): string {
  if (typeof value !== "string") throw new StatusFormatError(`${what} is not a string`);
  return value;
}

function textOrNull(value: unknown, what: string): string | null {
  return value === null || value === undefined ? null : text(value, what);
}

function list(value: unknown, what: string): unknown[] {
  if (!Array.isArray(value)) throw new StatusFormatError(`${what} is not a list`);
  return value;
}

function parseJson(raw: string, what: string): unknown {
  try {
    return JSON.parse(raw);
  } catch (error) {
    throw new StatusFormatError(`${what} is not JSON: ${(error as Error).message}`);
  }
}

/** `consort status --json`, checked field by field (only what the status bar uses). */
export function parseStatus(raw: string): StatusReport {
  const data = record(parseJson(raw, "consort status --json"), "the status");
  const branches = list(data.branches, "branches").map((row, i) => {
    const r = record(row, `branches[${i}]`);
    return {
      name: text(r.name, `branches[${i}].name`),
      database: textOrNull(r.database, `branches[${i}].database`),
      parent: textOrNull(r.parent, `branches[${i}].parent`),
      pairing: text(r.pairing, `branches[${i}].pairing`),
      current: r.current === true,
    };
  });
  const features = list(data.features, "features").map((line, i) => {
    const f = record(line, `features[${i}]`);
    return {
      id: text(f.id, `features[${i}].id`),
      title: text(f.title, `features[${i}].title`),
      lane: text(f.lane, `features[${i}].lane`),
      next: text(f.next, `features[${i}].next`),
      design_gate: text(f.design_gate, `features[${i}].design_gate`),
    };
  });
  const escalations = list(data.escalations ?? [], "escalations").map((line, i) => {
    const e = record(line, `escalations[${i}]`);
    return {
      feature: text(e.feature, `escalations[${i}].feature`),
      step: text(e.step, `escalations[${i}].step`),
      reason: text(e.reason, `escalations[${i}].reason`),
      command: text(e.command, `escalations[${i}].command`),
    };
  });
  return {
    features,
    branches,
    branch_problem: textOrNull(data.branch_problem, "branch_problem"),
    escalations,
  };
}

/** `consort next --json`. */
export function parseNext(raw: string): NextReport {
  const n = record(parseJson(raw, "consort next --json"), "the next action");
  return {
    kind: text(n.kind, "kind"),
    lane: text(n.lane, "lane"),
    feature: textOrNull(n.feature, "feature"),
    role: textOrNull(n.role, "role"),
    step: textOrNull(n.step, "step"),
    attempt: typeof n.attempt === "number" ? n.attempt : 1,
    reason: text(n.reason, "reason"),
    command: textOrNull(n.command, "command"),
  };
}

export interface StatusBarView {
  text: string; // may hold $(icon) names, which the status bar draws
  tooltip: string;
  attention: boolean; // a person is needed: a gate, an escalation
}

const SHORT_FEATURE = /^(F\d+)\b/;

function shortFeature(feature: string | null): string | null {
  if (feature === null) return null;
  const found = SHORT_FEATURE.exec(feature);
  return found ? found[1] : feature;
}

/** What the next action says in a few words: "design gate F1", "driver/green F1/S1", ... */
export function describeNext(next: NextReport): string {
  const feature = shortFeature(next.feature);
  const who = next.role && next.step ? `${next.role}/${next.step}` : next.kind.replace(/-/g, " ");
  return [who, feature].filter((part) => part !== null && part !== "").join(" ");
}

export function currentBranch(status: StatusReport): BranchRow | null {
  return status.branches.find((row) => row.current) ?? null;
}

// the places where Consort stops for a person (consort.core.vocabulary.ActionKind)
const ATTENTION_KINDS = new Set([
  "intake-needed",
  "fix-artifact",
  "await-escalation",
  "await-gate",
  "integrity-stop",
]);

/** The status bar item: `$(git-branch) story/F1/S1 · build · driver/green F1`. */
export function statusBarView(status: StatusReport, next: NextReport): StatusBarView {
  const branch = currentBranch(status);
  const branchText = branch === null ? "no paired branch" : branch.name;
  const attention = ATTENTION_KINDS.has(next.kind) || status.escalations.length > 0;
  const icon = attention ? "$(bell)" : "$(git-branch)";
  const parts = [`${icon} ${branchText}`, next.lane, describeNext(next)];
  const tooltip = [
    branch === null
      ? status.branch_problem ?? "no branch is checked out"
      : `branch ${branch.name} (${branch.pairing}, database ${branch.database ?? "none"}` +
        `${branch.parent ? `, from ${branch.parent}` : ""})`,
    `lane: ${next.lane}`,
    `next: ${next.reason}`,
    next.command ? `run: ${next.command}` : null,
    ...status.escalations.map((e) => `escalation ${e.feature} (${e.step}): ${e.reason}`),
  ].filter((line): line is string => line !== null);
  return { text: parts.join(" · "), tooltip: tooltip.join("\n"), attention };
}

/** What the item shows when consort cannot be asked (not a project, not installed, ...). */
export function statusBarProblem(message: string): StatusBarView {
  const first = message.split("\n").find((line) => line.trim() !== "") ?? message;
  return { text: "$(warning) consort", tooltip: first.trim(), attention: true };
}
