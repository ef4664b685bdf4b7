// Settings from the environment: DATABASE_URL (Consort keeps it in .env for the checked-out
// branch, and gives every run its own throwaway database by environment).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ENV_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", ".env");

function fromDotenv(name) {
  if (!fs.existsSync(ENV_FILE)) return undefined;
  for (const line of fs.readFileSync(ENV_FILE, "utf8").split("\n")) {
    const at = line.indexOf("=");
    if (at > 0 && line.slice(0, at).trim() === name) return line.slice(at + 1).trim();
  }
  return undefined;
}

export function databaseUrl() {
  const url = process.env.DATABASE_URL || fromDotenv("DATABASE_URL");
  if (!url) throw new Error("DATABASE_URL is not set (run `consort branch switch <branch>`)");
  return url;
}
