#!/usr/bin/env bash
# Install Consort into .venv and try it on a new project: embedded PostgreSQL, paired branches.
#   usage: bash scripts/try.sh [PROJECT_DIR]     (default: a new folder under /tmp)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
venv="${CONSORT_VENV:-$here/.venv}"
if [ ! -x "$venv/bin/consort" ]; then
  echo "==> installing Consort into $venv"
  "${CONSORT_PYTHON:-python3}" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet -e "$here"
fi
consort="$venv/bin/consort"
project="${1:-$(mktemp -d /tmp/consort-try.XXXXXX)/shop}"

echo "==> consort init $project"
"$consort" init "$project"
cd "$project"
echo "==> a table on main, through the branch URL in .env"
url="$(grep '^DATABASE_URL=' .env | cut -d= -f2-)"
"$venv/bin/python" - "$url" <<'PY'
import sys, psycopg
with psycopg.connect(sys.argv[1]) as conn:
    conn.execute("CREATE TABLE IF NOT EXISTS stock (sku text PRIMARY KEY, qty int NOT NULL)")
    conn.execute("INSERT INTO stock VALUES ('A-1', 5) ON CONFLICT DO NOTHING")
PY
echo "==> consort branch create feature/locations (git branch + its own database copy)"
"$consort" branch create feature/locations
"$consort" branch switch feature/locations
url="$(grep '^DATABASE_URL=' .env | cut -d= -f2-)"
"$venv/bin/python" - "$url" <<'PY'
import sys, psycopg
with psycopg.connect(sys.argv[1]) as conn:
    conn.execute("CREATE TABLE locations (id int PRIMARY KEY, name text UNIQUE NOT NULL)")
    conn.execute("ALTER TABLE stock ADD COLUMN location_id int REFERENCES locations (id)")
PY
"$consort" branch list
echo "==> consort branch diff feature/locations"
"$consort" branch diff feature/locations
"$consort" branch switch main
"$consort" doctor
echo
echo "Project: $project   (stop its database with: cd $project && $consort db stop)"
