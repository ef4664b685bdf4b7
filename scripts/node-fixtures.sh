#!/usr/bin/env bash
# Install the Node test fixtures' packages (Vitest and Vite, pinned in the fixture's
# package-lock.json) into tests/fixtures/node/project/node_modules, for the tests that adopt a
# Node project run with a JUnit reporter. Needs Node.js and npm; nothing is installed globally.
set -euo pipefail
cd "$(dirname "$0")/../tests/fixtures/node/project"
if ! command -v npm >/dev/null; then
  echo "node-fixtures: npm is not installed (on Debian: apt-get install nodejs npm)" >&2
  exit 2
fi
npm ci --no-audit --no-fund --loglevel=error
node_modules/.bin/vitest --version
