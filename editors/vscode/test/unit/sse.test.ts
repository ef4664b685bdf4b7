import assert from "node:assert/strict";
import { test } from "node:test";

import { SseParser } from "../../src/dashboardClient";

test("events split across chunks arrive whole, with their type and id", () => {
  const parser = new SseParser();
  const stream = 'retry: 1000\n\nid: 7\nevent: ledger\ndata: {"seq":7}\n\n: keep-alive\n\nid: 8\r\nevent: ledger\r\ndata: {"seq":\r\ndata: 8}\r\n\r\n';
  const events = [];
  for (let i = 0; i < stream.length; i += 5) events.push(...parser.push(stream.slice(i, i + 5)));
  assert.deepEqual(events, [
    { event: "ledger", data: '{"seq":7}', id: "7" },
    { event: "ledger", data: '{"seq":\n8}', id: "8" },
  ]);
});

test("an unnamed event is a message; an incomplete one waits", () => {
  const parser = new SseParser();
  assert.deepEqual(parser.push("data: x\n"), []);
  assert.deepEqual(parser.push("\n"), [{ event: "message", data: "x", id: null }]);
});
