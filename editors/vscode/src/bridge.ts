// The messages between the webview and the extension. The page's requests are checked here
// against the few the dashboard's page makes (its reads, its live feed, its two decisions) and
// rebuilt from their parts: a message naming anything else, another host, or a decision that is
// not JSON never reaches the dashboard. Pure: no vscode API, no network.

export type Method = "GET" | "POST";

export interface Decision {
  action: "approve" | "reject";
  gate: string;
  subject: string;
  note: string;
}

export interface DashboardRequest {
  method: Method;
  path: string; // rebuilt: an allowed path and its allowed query parameters only
  accept: string;
  body: string | null;
  pageToken: string | null; // a token typed on the page (when the editor holds none)
  decision: Decision | null;
}

export type PageMessage =
  | { type: "fetch"; id: number; request: DashboardRequest }
  | { type: "events-open"; id: number; request: DashboardRequest }
  | { type: "events-close"; id: number };

export class RefusedMessage extends Error {}

const READS: Record<string, readonly string[]> = {
  "/": [],
  "/api/overview": [],
  "/api/verify": [],
  "/api/branch-diff": ["name"],
  "/api/cycle": ["subject"],
};
const EVENTS = "/api/events";
const DECISIONS: Record<string, Decision["action"]> = { "/api/approve": "approve", "/api/reject": "reject" };
const TOKEN_HEADER = "x-consort-token";
const MAX_BODY = 64 * 1024;

function record(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new RefusedMessage(`${what} is not an object`);
  }
  return value as Record<string, unknown>;
}

function messageId(value: unknown): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new RefusedMessage("a message without a valid id");
  }
  return value;
}

/** The path, rebuilt from an allowed pathname and its allowed parameters, or a refusal. */
export function allowedPath(raw: unknown, allowed: Record<string, readonly string[]>): string {
  if (typeof raw !== "string" || !raw.startsWith("/") || raw.startsWith("//") || raw.includes("\\")) {
    throw new RefusedMessage(`not a path of the dashboard: ${String(raw).slice(0, 100)}`);
  }
  const url = new URL(raw, "http://dashboard.invalid");
  if (url.host !== "dashboard.invalid") throw new RefusedMessage(`not a path of the dashboard: ${raw}`);
  const names = allowed[url.pathname];
  if (names === undefined) throw new RefusedMessage(`the page does not ask for ${url.pathname}`);
  const kept = new URLSearchParams();
  for (const [name, value] of url.searchParams) {
    if (!names.includes(name)) throw new RefusedMessage(`${url.pathname} takes no ${name}`);
    kept.append(name, value);
  }
  const query = kept.toString();
  return query ? `${url.pathname}?${query}` : url.pathname;
}

function headerValue(headers: unknown, name: string): string | null {
  if (headers === undefined || headers === null) return null;
  const h = record(headers, "headers");
  for (const [key, value] of Object.entries(h)) {
    if (key.toLowerCase() === name && typeof value === "string") return value;
  }
  return null;
}

function parseDecision(action: Decision["action"], body: unknown): { body: string; decision: Decision } {
  if (typeof body !== "string" || body.length > MAX_BODY) throw new RefusedMessage("a decision's body is JSON text");
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new RefusedMessage("a decision's body is not JSON");
  }
  const fields = record(parsed, "a decision");
  const field = (name: string): string => {
    const value = fields[name];
    if (value === undefined || value === null) return "";
    if (typeof value !== "string") throw new RefusedMessage(`a decision's ${name} is not text`);
    return value;
  };
  const decision = { action, gate: field("gate"), subject: field("subject"), note: field("note") };
  if (!decision.gate || !decision.subject) throw new RefusedMessage("a decision names its gate and subject");
  const sent: Record<string, string> = { gate: decision.gate, subject: decision.subject, note: decision.note };
  const artifact = field("artifact");
  if (artifact) sent.artifact = artifact;
  return { body: JSON.stringify(sent), decision };
}

function fetchRequest(raw: Record<string, unknown>): DashboardRequest {
  const init = raw.init === undefined ? {} : record(raw.init, "the request");
  const method = init.method === undefined ? "GET" : String(init.method).toUpperCase();
  if (method === "GET") {
    return {
      method: "GET",
      path: allowedPath(raw.path, READS),
      accept: headerValue(init.headers, "accept") === "application/json" ? "application/json" : "*/*",
      body: null,
      pageToken: null,
      decision: null,
    };
  }
  if (method !== "POST") throw new RefusedMessage(`the page sends no ${method}`);
  const path = allowedPath(raw.path, Object.fromEntries(Object.keys(DECISIONS).map((p) => [p, []])));
  const contentType = (headerValue(init.headers, "content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (contentType !== "application/json") throw new RefusedMessage("a decision is sent as application/json");
  const { body, decision } = parseDecision(DECISIONS[path]!, init.body);
  const typed = headerValue(init.headers, TOKEN_HEADER);
  return { method: "POST", path, accept: "application/json", body, pageToken: typed || null, decision };
}

/** A message the webview posted, checked and rebuilt; anything else is refused. */
export function parsePageMessage(message: unknown): PageMessage {
  const raw = record(message, "the message");
  switch (raw.type) {
    case "fetch":
      return { type: "fetch", id: messageId(raw.id), request: fetchRequest(raw) };
    case "events-open":
      return {
        type: "events-open",
        id: messageId(raw.id),
        request: {
          method: "GET",
          path: allowedPath(raw.path, { [EVENTS]: ["since"] }),
          accept: "text/event-stream",
          body: null,
          pageToken: null,
          decision: null,
        },
      };
    case "events-close":
      return { type: "events-close", id: messageId(raw.id) };
    default:
      throw new RefusedMessage(`no message of type ${String(raw.type)}`);
  }
}

/** The question the person answers in the editor before a decision is sent. */
export function confirmationOf(decision: Decision): { question: string; button: string } {
  const what = `the ${decision.gate} gate of ${decision.subject}`;
  const note = decision.note.trim() ? `\n\nNote: ${decision.note.trim()}` : "";
  if (decision.action === "approve") {
    return {
      question: `Approve ${what}? It is recorded in the ledger as your decision, as at the terminal.${note}`,
      button: "Approve",
    };
  }
  return { question: `Reject ${what} and send it back?${note}`, button: "Reject" };
}

// ---- what the extension answers -------------------------------------------------------------

export type HostMessage =
  | { type: "response"; id: number; status: number; statusText: string; contentType: string; body: string }
  | { type: "event-open"; id: number }
  | { type: "event"; id: number; event: string; data: string; lastEventId: string | null }
  | { type: "event-error"; id: number; message: string };

/** A JSON answer made by the extension itself (a refusal, an unconfirmed decision). */
export function localAnswer(id: number, status: number, error: string): HostMessage {
  return {
    type: "response",
    id,
    status,
    statusText: error,
    contentType: "application/json",
    body: JSON.stringify({ error }),
  };
}
