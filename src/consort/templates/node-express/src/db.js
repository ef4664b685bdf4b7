// The database: one pg pool for the process, on the database DATABASE_URL names.
import pg from "pg";

import { databaseUrl } from "./settings.js";

let pool;

export function db() {
  pool ??= new pg.Pool({ connectionString: databaseUrl(), max: 5 });
  return pool;
}

export async function closeDb() {
  if (pool) await pool.end();
  pool = undefined;
}
