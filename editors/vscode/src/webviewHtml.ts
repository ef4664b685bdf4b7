// The webview's document: the dashboard's own page (its body, stylesheet and script, fetched from
// the running dashboard so that they always match it), under a content security policy stricter
// than the dashboard's: nothing loads from anywhere, no connection is allowed, and only the two
// scripts and the stylesheet carrying this document's nonce run. Pure: no vscode API.
import { randomBytes } from "node:crypto";

export interface PageParts {
  indexHtml: string; // GET / of the dashboard
  appJs: string; // GET /static/app.js
  styleCss: string; // GET /static/style.css
  bridgeJs: string; // media/pageBridge.js of the extension
}

export class PageError extends Error {}

export function makeNonce(): string {
  return randomBytes(18).toString("base64").replace(/[^A-Za-z0-9]/g, "");
}

export function contentSecurityPolicy(nonce: string): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    "img-src data:",
    "connect-src 'none'",
    "frame-src 'none'",
    "form-action 'none'",
    "base-uri 'none'",
  ].join("; ");
}

/** The inside of the dashboard page's <body>, without any script or stylesheet element. */
export function pageBody(indexHtml: string): string {
  const open = /<body\b[^>]*>/i.exec(indexHtml);
  const close = indexHtml.toLowerCase().lastIndexOf("</body>");
  if (open === null || close < 0 || close < open.index) throw new PageError("the dashboard's page has no body");
  const body = indexHtml.slice(open.index + open[0].length, close);
  if (/<script\b|<link\b|<iframe\b|<object\b|<embed\b|<base\b|<meta\b/i.test(body)) {
    // the dashboard's body is plain markup; anything loading or running belongs to the head
    throw new PageError("the dashboard's page body holds an element that loads or runs something");
  }
  return body;
}

/** Text safe inside <script> and <style> elements: no way to close them early. */
function inert(text: string, element: "script" | "style"): string {
  return text.replace(new RegExp(`</(${element})`, "gi"), "<\\/$1");
}

/** JSON for a <script type="application/json"> data island. */
function dataIsland(value: unknown): string {
  return JSON.stringify(value).replace(/</g, "\\u003c").replace(/>/g, "\\u003e").replace(/&/g, "\\u0026");
}

export function webviewHtml(parts: PageParts, nonce: string, settings: { holdsToken: boolean }): string {
  if (!/^[A-Za-z0-9]{16,}$/.test(nonce)) throw new PageError("a nonce is 16 or more letters and digits");
  return [
    "<!doctype html>",
    '<html lang="en">',
    "<head>",
    '<meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${contentSecurityPolicy(nonce)}">`,
    '<meta name="referrer" content="no-referrer">',
    "<title>Consort dashboard</title>",
    `<style nonce="${nonce}">${inert(parts.styleCss, "style")}</style>`,
    "</head>",
    `<body>${pageBody(parts.indexHtml)}`,
    `<script type="application/json" id="consort-editor">${dataIsland(settings)}</script>`,
    `<script nonce="${nonce}">${inert(parts.bridgeJs, "script")}</script>`,
    `<script nonce="${nonce}">${inert(parts.appJs, "script")}</script>`,
    "</body>",
    "</html>",
  ].join("\n");
}
