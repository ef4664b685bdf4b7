// The Express application: routes are added here.
import express from "express";

import { db } from "./db.js";

export const app = express();
app.use(express.json());

// GET /health: the app answers and reaches its database.
app.get("/health", async (_request, response) => {
  await db().query("SELECT 1");
  response.json({ status: "ok" });
});
