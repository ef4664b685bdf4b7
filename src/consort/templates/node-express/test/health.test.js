import { describe, expect, it } from "vitest";

import { served } from "./helpers.js";

const server = served();

describe("GET /health", () => {
  it("answers ok", async () => {
    const response = await fetch(`${server.base}/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "ok" });
  });
});
