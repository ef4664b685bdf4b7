#!/usr/bin/env bash
# Install the real agent CLIs the end-to-end tests drive (Claude Code and Codex), at the versions
# pinned in tests/e2e/agents/package.json and its lock, into tests/e2e/agents/node_modules.
# Needs Node.js and npm (on Debian: apt-get install nodejs npm). Nothing is installed globally.
set -euo pipefail
cd "$(dirname "$0")/../tests/e2e/agents"
if ! command -v npm >/dev/null; then
  echo "agent-clis: npm is not installed (on Debian: apt-get install nodejs npm)" >&2
  exit 2
fi
# npm ci installs exactly the lock; the CLIs' native binaries come as optional dependencies,
# and Claude Code's postinstall puts its binary in place.
npm ci --no-audit --no-fund --loglevel=error
node_modules/.bin/claude --version
node_modules/.bin/codex --version
