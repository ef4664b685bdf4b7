// Test helpers: the app on a free port, and the database DATABASE_URL names (Consort runs the
// suite on a throwaway copy of the branch's database, already migrated).
import { afterAll, beforeAll } from "vitest";

import { app } from "../src/app.js";
import { closeDb } from "../src/db.js";

export function served() {
  const server = { base: "" };
  let listening;
  beforeAll(async () => {
    listening = app.listen(0, "127.0.0.1");
    await new Promise((resolve) => listening.once("listening", resolve));
    server.base = `http://127.0.0.1:${listening.address().port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => listening.close(resolve));
    await closeDb();
  });
  return server;
}
