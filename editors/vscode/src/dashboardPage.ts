// The dashboard's own page, fetched from the running dashboard and made into the webview's
// document: the extension shows exactly the page that dashboard serves, never a copy of its own.
import { DashboardRequest } from "./bridge";
import { Target, send } from "./dashboardClient";
import { PageError, makeNonce, webviewHtml } from "./webviewHtml";

function get(path: string, accept: string): DashboardRequest {
  return { method: "GET", path, accept, body: null, pageToken: null, decision: null };
}

async function text(target: Target, path: string, accept: string): Promise<string> {
  const answer = await send(target, get(path, accept));
  if (answer.status !== 200) throw new PageError(`the dashboard answered ${answer.status} for ${path}`);
  return answer.body;
}

/** The webview's HTML for the dashboard at `target`, with the bridge script the page needs. */
export async function dashboardDocument(target: Target, bridgeJs: string): Promise<string> {
  const [indexHtml, appJs, styleCss] = await Promise.all([
    text(target, "/", "text/html"),
    text(target, "/static/app.js", "*/*"),
    text(target, "/static/style.css", "text/css"),
  ]);
  return webviewHtml({ indexHtml, appJs, styleCss, bridgeJs }, makeNonce(), { holdsToken: target.token !== null });
}
