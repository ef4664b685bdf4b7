import assert from "node:assert/strict";
import { test } from "node:test";

import { AttachError, parseAttachUrl } from "../../src/attach";

test("the URL the dashboard printed is taken, always as 127.0.0.1", () => {
  assert.equal(parseAttachUrl(" http://127.0.0.1:8765/ "), "http://127.0.0.1:8765/");
  assert.equal(parseAttachUrl("http://localhost:8765"), "http://127.0.0.1:8765/");
});

test("another host, a path, a query or credentials are refused", () => {
  for (const raw of ["http://192.168.1.2:8765/", "https://127.0.0.1:8765/", "http://127.0.0.1/", "http://127.0.0.1:8765/api", "http://127.0.0.1:8765/?token=abc", "http://u:p@127.0.0.1:8765/", "127.0.0.1:8765"]) {
    assert.throws(() => parseAttachUrl(raw), AttachError, raw);
  }
});
