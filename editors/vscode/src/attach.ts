// Attaching to a dashboard someone started at a terminal: its URL, as `consort dashboard` printed
// it, and nothing else (127.0.0.1 or localhost, http, a port, no path, no credentials).

export class AttachError extends Error {}

/** The dashboard's base URL (`http://127.0.0.1:PORT/`) from what the person typed. */
export function parseAttachUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new AttachError("not a URL: paste the one `consort dashboard` printed");
  }
  if (url.protocol !== "http:") throw new AttachError("the dashboard speaks http on 127.0.0.1");
  if (url.hostname !== "127.0.0.1" && url.hostname !== "localhost") {
    throw new AttachError("the dashboard listens on 127.0.0.1 only");
  }
  if (url.port === "") throw new AttachError("the URL names no port");
  if (url.username || url.password) throw new AttachError("a dashboard URL holds no credentials");
  if ((url.pathname !== "/" && url.pathname !== "") || url.search || url.hash) {
    throw new AttachError("give the dashboard's address only, without a path or query (and never a token)");
  }
  return `http://127.0.0.1:${url.port}/`; // localhost may resolve to ::1, where nothing listens
}
