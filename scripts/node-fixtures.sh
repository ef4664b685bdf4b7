#!/usr/bin/env bash
# Install the Node test fixtures' packages, each pinned in its fixture's package-lock.json, into
# the fixture's own node_modules, for the tests that adopt a Node project run with a JUnit
# reporter: Vitest and Vite (tests/fixtures/node/project), Jest and jest-junit
# (tests/fixtures/node/jest-project), and the node-express template's packages (Express, pg,
# Knex, Vitest: its package.json and lock are copied to tests/fixtures/node/express first).
# Needs Node.js and npm; nothing is installed globally.
set -euo pipefail
cd "$(dirname "$0")/../tests/fixtures/node"
if ! command -v npm >/dev/null; then
  echo "node-fixtures: npm is not installed (on Debian: apt-get install nodejs npm)" >&2
  exit 2
fi
(cd project && npm ci --no-audit --no-fund --loglevel=error && node_modules/.bin/vitest --version)
(cd jest-project && npm ci --no-audit --no-fund --loglevel=error && node_modules/.bin/jest --version)
template="$(pwd)/../../../src/consort/templates/node-express"
mkdir -p express
cp "$template/package.json" "$template/package-lock.json" express/
(cd express && npm ci --no-audit --no-fund --loglevel=error && node_modules/.bin/knex --version)
