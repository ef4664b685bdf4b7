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
if ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)'; then
  echo "vscode-extension: Node.js 20 or later is needed (found $(node --version)): @vscode/vsce 3.9 requires it" >&2
  exit 2
fi
# --ignore-scripts: no install script runs (vsce's optional keytar would try to fetch or build a
# native module, which packaging does not need)
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
npm run --silent build
npm test
npm run --silent package
# the package holds what the extension loads: its entry point, every compiled module, the
# webview's bridge script (a .vscodeignore mistake would leave one out, and vsce would not mind)
python3 - <<'PY'
import json, pathlib, zipfile
names = set(zipfile.ZipFile("consort-vscode.vsix").namelist())
main = json.loads(pathlib.Path("package.json").read_text())["main"].removeprefix("./")
needed = {f"extension/{main}", "extension/media/pageBridge.js", "extension/package.json"}
needed |= {f"extension/{p.as_posix()}" for p in pathlib.Path("out/src").glob("*.js")}
missing = sorted(needed - names)
assert not missing, f"consort-vscode.vsix lacks {missing}"
assert not [n for n in names if "/test/" in n or n.endswith(".ts")], "tests or sources packaged"
print(f"consort-vscode.vsix: {len(names)} files, the extension's {len(needed)} among them")
PY
