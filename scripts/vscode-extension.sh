#!/usr/bin/env bash
# Build the VS Code extension in editors/vscode: install its pinned tools (TypeScript, vsce; the
# lock is exact), compile it, run its Node tests that need no consort, and package it as
# editors/vscode/consort-vscode.vsix. Needs Node.js 20+ and npm; nothing is installed globally.
# Its tests against the real consort run in the Python suite (tests/integration/test_vscode_extension.py).
set -euo pipefail
cd "$(dirname "$0")/../editors/vscode"
if ! command -v npm >/dev/null; then
  echo "vscode-extension: npm is not installed (on Debian: apt-get install nodejs npm)" >&2
  exit 2
fi
# --ignore-scripts: no install script runs (vsce's optional keytar would try to fetch or build a
# native module, which packaging does not need)
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
npm run --silent build
npm test
npm run --silent package
ls -l consort-vscode.vsix
