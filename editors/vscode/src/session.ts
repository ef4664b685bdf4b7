// One webview panel's traffic: each message the page posts is checked (bridge.ts), a decision
// is put to the person first (`confirm`, a modal dialog in the editor), and the request is sent
// to the dashboard (dashboardClient.ts); answers and live events go back through `post`. Plain:
// the vscode API comes in only as these two functions, so tests drive it with real dashboards.
import {
  HostMessage,
  PageMessage,
  RefusedMessage,
  localAnswer,
  parsePageMessage,
  Decision,
  DashboardRequest,
} from "./bridge";
import { EventStream, Target, openEvents, send } from "./dashboardClient";

export const RECONNECT_MS = 1_000; // as the dashboard's `retry:` line asks of a browser

export interface SessionHooks {
  post(message: HostMessage): void;
  confirm(decision: Decision): Promise<boolean>;
  log?(line: string): void; // never given a token: only paths, statuses and refusals
}

export class PageSession {
  private readonly streams = new Map<number, { stream: EventStream | null; timer: NodeJS.Timeout | null }>();
  private disposed = false;

  constructor(
    private readonly target: Target,
    private readonly hooks: SessionHooks,
  ) {}

  /** Handle one message from the webview; resolves once it is answered. */
  async receive(raw: unknown): Promise<void> {
    let message: PageMessage;
    try {
      message = parsePageMessage(raw);
    } catch (error) {
      const id = typeof (raw as { id?: unknown })?.id === "number" ? (raw as { id: number }).id : -1;
      this.log(`refused a message from the page: ${(error as Error).message}`);
      if (id >= 0) this.post(localAnswer(id, 400, (error as RefusedMessage).message));
      return;
    }
    if (message.type === "fetch") await this.fetch(message.id, message.request);
    else if (message.type === "events-open") this.open(message.id, message.request, message.request.path);
    else this.closeStream(message.id);
  }

  private async fetch(id: number, request: DashboardRequest): Promise<void> {
    if (request.decision !== null) {
      if (this.target.token === null && request.pageToken === null) {
        this.post(localAnswer(id, 403, "the editor holds no token for this dashboard: it is read-only"));
        return;
      }
      const confirmed = await this.hooks.confirm(request.decision);
      if (!confirmed) {
        this.log(`${request.decision.action} ${request.decision.gate} ${request.decision.subject}: not confirmed`);
        this.post(localAnswer(id, 409, "not confirmed in the editor: nothing was recorded"));
        return;
      }
    }
    try {
      const answer = await send(this.target, request);
      this.log(`${request.method} ${request.path} -> ${answer.status}`);
      this.post({ type: "response", id, ...answer });
    } catch (error) {
      this.post(localAnswer(id, 502, `the dashboard did not answer: ${(error as Error).message}`));
    }
  }

  private open(id: number, request: DashboardRequest, path: string): void {
    if (this.disposed) return;
    let lastId: string | null = null;
    const entry = { stream: null as EventStream | null, timer: null as NodeJS.Timeout | null };
    this.streams.set(id, entry);
    const connect = (at: string): void => {
      entry.timer = null;
      entry.stream = openEvents(this.target, { ...request, path: at }, {
        open: () => this.post({ type: "event-open", id }),
        event: (event) => {
          if (event.id !== null) lastId = event.id;
          this.post({ type: "event", id, event: event.event, data: event.data, lastEventId: event.id });
        },
        error: (why) => {
          this.post({ type: "event-error", id, message: why });
          if (this.disposed || !this.streams.has(id)) return;
          // as a browser's EventSource does: again after a while, from the last event seen
          const again = lastId !== null && /^\d+$/.test(lastId) ? `/api/events?since=${lastId}` : path;
          entry.timer = setTimeout(() => connect(again), RECONNECT_MS);
        },
      });
    };
    connect(path);
  }

  private closeStream(id: number): void {
    const entry = this.streams.get(id);
    if (entry === undefined) return;
    this.streams.delete(id);
    if (entry.timer !== null) clearTimeout(entry.timer);
    entry.stream?.close();
  }

  private post(message: HostMessage): void {
    if (!this.disposed) this.hooks.post(message);
  }

  private log(line: string): void {
    this.hooks.log?.(line);
  }

  dispose(): void {
    this.disposed = true;
    for (const id of [...this.streams.keys()]) this.closeStream(id);
  }
}
