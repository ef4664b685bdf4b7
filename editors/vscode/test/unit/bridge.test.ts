import assert from "node:assert/strict";
import { test } from "node:test";

import { RefusedMessage, allowedPath, confirmationOf, parsePageMessage } from "../../src/bridge";

const READS = { "/api/overview": [], "/api/branch-diff": ["name"] } as const;

test("the page's reads pass, rebuilt from their parts", () => {
  assert.equal(allowedPath("/api/overview", READS), "/api/overview");
  assert.equal(allowedPath("/api/branch-diff?name=story%2FF1%2FS1", READS), "/api/branch-diff?name=story%2FF1%2FS1");
  const message = parsePageMessage({ type: "fetch", id: 3, path: "/api/overview", init: { headers: { Accept: "application/json" } } });
  assert.deepEqual(message, {
    type: "fetch",
    id: 3,
    request: { method: "GET", path: "/api/overview", accept: "application/json", body: null, pageToken: null, decision: null },
  });
});

test("anything but the dashboard's own paths is refused", () => {
  for (const path of ["//evil.example/api/overview", "http://evil.example/", "/api/../../etc/passwd", "/api/db-url", "api/overview", "/api\\overview", "/api/overview?token=x"]) {
    assert.throws(() => allowedPath(path, READS), RefusedMessage, path);
  }
  assert.throws(() => parsePageMessage({ type: "fetch", id: 1, path: "/api/approve" }), RefusedMessage); // a GET of a decision
  assert.throws(() => parsePageMessage({ type: "fetch", id: 1, path: "/api/overview", init: { method: "DELETE" } }), /no DELETE/);
  assert.throws(() => parsePageMessage({ type: "spawn", id: 1 }), /no message of type spawn/);
  assert.throws(() => parsePageMessage({ type: "fetch", id: -1, path: "/" }), /valid id/);
  assert.throws(() => parsePageMessage("fetch"), /not an object/);
});

test("a decision is JSON naming its gate and subject; only its own fields are sent", () => {
  const message = parsePageMessage({
    type: "fetch",
    id: 7,
    path: "/api/approve",
    init: {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Consort-Token": "" },
      body: JSON.stringify({ gate: "design", subject: "F1-stock-visibility", note: "ok", actor: "proxy" }),
    },
  });
  assert.equal(message.type, "fetch");
  if (message.type !== "fetch") return;
  assert.equal(message.request.method, "POST");
  assert.equal(message.request.pageToken, null); // the page typed none
  assert.deepEqual(JSON.parse(message.request.body!), { gate: "design", subject: "F1-stock-visibility", note: "ok" });
  assert.deepEqual(message.request.decision, { action: "approve", gate: "design", subject: "F1-stock-visibility", note: "ok" });
  const post = (init: object) => () => parsePageMessage({ type: "fetch", id: 1, path: "/api/reject", init: { method: "POST", ...init } });
  assert.throws(post({ headers: { "content-type": "text/plain" }, body: "{}" }), /application\/json/);
  assert.throws(post({ headers: { "content-type": "application/json" }, body: "gate=design" }), /not JSON/);
  assert.throws(post({ headers: { "content-type": "application/json" }, body: JSON.stringify({ gate: "design" }) }), /gate and subject/);
  assert.throws(post({ headers: { "content-type": "application/json" }, body: JSON.stringify({ gate: "design", subject: ["F1"] }) }), /not text/);
});

test("a token typed on the page travels with its decision", () => {
  const message = parsePageMessage({
    type: "fetch",
    id: 2,
    path: "/api/reject",
    init: { method: "POST", headers: { "content-type": "application/json", "x-consort-token": "typed" }, body: JSON.stringify({ gate: "design", subject: "F1", note: "no" }) },
  });
  assert.equal(message.type === "fetch" && message.request.pageToken, "typed");
});

test("the live feed takes only its since parameter", () => {
  const message = parsePageMessage({ type: "events-open", id: 4, path: "/api/events?since=12" });
  assert.equal(message.type === "events-open" && message.request.path, "/api/events?since=12");
  assert.throws(() => parsePageMessage({ type: "events-open", id: 4, path: "/api/overview" }), RefusedMessage);
});

test("the person is asked in plain words, with the note", () => {
  const { question, button } = confirmationOf({ action: "approve", gate: "design", subject: "F1", note: " looks right " });
  assert.equal(button, "Approve");
  assert.match(question, /^Approve the design gate of F1\?/);
  assert.match(question, /Note: looks right$/);
  assert.equal(confirmationOf({ action: "reject", gate: "design", subject: "F1", note: "" }).button, "Reject");
});
