// The extension's side of the webview's network: the page in the webview has none (its content
// security policy allows no connection), so each request it makes arrives here as a message and
// is sent from here to the dashboard on 127.0.0.1, as the dashboard's own page sends it (its Host,
// and for a decision its Origin and the token). The dashboard's checks are unchanged: a request
// from any other origin, the webview's own included, is still refused.
import * as http from "node:http";

import { DashboardRequest } from "./bridge";

export const TOKEN_HEADER = "x-consort-token";
export const REQUEST_TIMEOUT_MS = 120_000; // verify re-reads every artifact: slow, never hung

export interface DashboardResponse {
  status: number;
  statusText: string;
  contentType: string;
  body: string;
}

export interface Target {
  url: string; // http://127.0.0.1:PORT/
  token: string | null;
}

/** The headers a request to the dashboard carries: those of its own page. */
export function requestHeaders(target: Target, request: DashboardRequest): Record<string, string> {
  const base = new URL(target.url);
  const headers: Record<string, string> = { host: base.host, accept: request.accept };
  if (request.method === "POST") {
    headers.origin = base.origin;
    headers["content-type"] = "application/json";
    const token = target.token ?? request.pageToken;
    if (token) headers[TOKEN_HEADER] = token;
  }
  return headers;
}

export function send(
  target: Target,
  request: DashboardRequest,
  timeoutMs: number = REQUEST_TIMEOUT_MS,
): Promise<DashboardResponse> {
  const url = new URL(request.path, target.url);
  return new Promise((resolve, reject) => {
    const outgoing = http.request(
      url,
      { method: request.method, headers: requestHeaders(target, request), timeout: timeoutMs },
      (incoming) => {
        const chunks: Buffer[] = [];
        incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
        incoming.on("error", reject);
        incoming.on("end", () =>
          resolve({
            status: incoming.statusCode ?? 0,
            statusText: incoming.statusMessage ?? "",
            contentType: String(incoming.headers["content-type"] ?? ""),
            body: Buffer.concat(chunks).toString("utf8"),
          }),
        );
      },
    );
    outgoing.on("timeout", () => outgoing.destroy(new Error(`no answer from ${url.pathname} in ${timeoutMs} ms`)));
    outgoing.on("error", reject);
    if (request.body !== null) outgoing.write(request.body);
    outgoing.end();
  });
}

export interface ServerSentEvent {
  event: string; // "message" unless the server named it
  data: string;
  id: string | null;
}

/** Server-sent events, parsed as the EventSource standard says, from chunks of text. */
export class SseParser {
  private buffer = "";
  private event = "";
  private data: string[] = [];
  private id: string | null = null;

  push(chunk: string): ServerSentEvent[] {
    this.buffer += chunk;
    const out: ServerSentEvent[] = [];
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      if (match === null) break;
      if (match[0] === "\r" && match.index === this.buffer.length - 1) break; // maybe \r\n
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      const dispatched = this.line(line);
      if (dispatched !== null) out.push(dispatched);
    }
    return out;
  }

  private line(line: string): ServerSentEvent | null {
    if (line === "") {
      if (this.data.length === 0) {
        this.event = "";
        return null;
      }
      const dispatched = { event: this.event || "message", data: this.data.join("\n"), id: this.id };
      this.event = "";
      this.data = [];
      return dispatched;
    }
    if (line.startsWith(":")) return null; // a comment: keep-alive
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.event = value;
    else if (field === "data") this.data.push(value);
    else if (field === "id" && !value.includes("\0")) this.id = value;
    return null;
  }
}

export interface EventStream {
  close(): void;
}

export interface StreamHandlers {
  open(): void;
  event(event: ServerSentEvent): void;
  error(message: string): void; // the stream ended or failed; the page reconnects as it would
}

/** GET an event stream of the dashboard (`/api/events?since=N`) and hand over each event. */
export function openEvents(target: Target, request: DashboardRequest, on: StreamHandlers): EventStream {
  const url = new URL(request.path, target.url);
  let closed = false;
  const outgoing = http.request(url, { method: "GET", headers: requestHeaders(target, request) }, (incoming) => {
    if (incoming.statusCode !== 200) {
      incoming.resume();
      on.error(`the event stream answered ${incoming.statusCode}`);
      return;
    }
    on.open();
    const parser = new SseParser();
    incoming.setEncoding("utf8");
    incoming.on("data", (chunk: string) => {
      for (const event of parser.push(chunk)) if (!closed) on.event(event);
    });
    incoming.on("end", () => {
      if (!closed) on.error("the event stream ended");
    });
    incoming.on("error", (error) => {
      if (!closed) on.error(error.message);
    });
  });
  outgoing.on("error", (error) => {
    if (!closed) on.error(error.message);
  });
  outgoing.end();
  return {
    close() {
      closed = true;
      outgoing.destroy();
    },
  };
}
