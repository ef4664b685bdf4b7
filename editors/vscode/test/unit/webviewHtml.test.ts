import assert from "node:assert/strict";
import { test } from "node:test";

import { PageError, contentSecurityPolicy, makeNonce, pageBody, webviewHtml } from "../../src/webviewHtml";

const INDEX = `<!doctype html><html><head><script src="/static/app.js" defer></script>
<link rel="stylesheet" href="/static/style.css"></head>
<body>
  <header><h1>Consort</h1></header><main id="m"></main>
</body></html>`;

test("a nonce is fresh each time and made of letters and digits", () => {
  const a = makeNonce();
  assert.match(a, /^[A-Za-z0-9]{16,}$/);
  assert.notEqual(a, makeNonce());
});

test("the policy allows no source, no connection, and only this nonce's scripts and styles", () => {
  const csp = contentSecurityPolicy("N0nceN0nceN0nce00");
  const directives = new Map(csp.split("; ").map((d) => [d.split(" ")[0], d.split(" ").slice(1).join(" ")]));
  assert.equal(directives.get("default-src"), "'none'");
  assert.equal(directives.get("script-src"), "'nonce-N0nceN0nceN0nce00'");
  assert.equal(directives.get("style-src"), "'nonce-N0nceN0nceN0nce00'");
  assert.equal(directives.get("connect-src"), "'none'");
  assert.doesNotMatch(csp, /unsafe|https?:|\*/);
});

test("the document is the page's body with the inlined parts under the policy", () => {
  const nonce = makeNonce();
  const html = webviewHtml({ indexHtml: INDEX, appJs: "start();", styleCss: "h1{}", bridgeJs: "bridge();" }, nonce, { holdsToken: true });
  assert.match(html, new RegExp(`<meta http-equiv="Content-Security-Policy" content="${contentSecurityPolicy(nonce)}">`));
  assert.match(html, /<main id="m"><\/main>/);
  assert.doesNotMatch(html, /src=|href=/); // nothing loads from anywhere
  const scripts = [...html.matchAll(/<script([^>]*)>/g)].map((m) => m[1]);
  assert.deepEqual(scripts, [' type="application/json" id="consort-editor"', ` nonce="${nonce}"`, ` nonce="${nonce}"`]);
  assert.ok(html.indexOf("bridge();") < html.indexOf("start();"), "the bridge runs before the page");
  assert.match(html, /\{"holdsToken":true\}/);
});

test("text from the dashboard cannot close its element early", () => {
  const html = webviewHtml({ indexHtml: INDEX, appJs: 'const s = "</script><script>alert(1)</script>";', styleCss: "</style><script>x</script>", bridgeJs: "" }, makeNonce(), { holdsToken: false });
  assert.ok(html.includes('const s = "<\\/script><script>alert(1)<\\/script>";'));
  assert.ok(html.includes("<style nonce=") && html.includes("<\\/style><script>x</script></style>"));
  assert.equal((html.match(/<\/style>/g) ?? []).length, 1); // the stylesheet ends where it should
  assert.equal((html.match(/<script nonce=/g) ?? []).length, 2); // the bridge and the page, nothing more
});

test("a page body that loads or runs something is refused", () => {
  assert.throws(() => pageBody("<html><body><script>x()</script></body></html>"), PageError);
  assert.throws(() => pageBody('<html><body><iframe src="x"></iframe></body></html>'), PageError);
  assert.throws(() => pageBody("<html><head></head></html>"), /no body/);
  assert.throws(() => webviewHtml({ indexHtml: INDEX, appJs: "", styleCss: "", bridgeJs: "" }, "short", { holdsToken: false }), /nonce/);
});
