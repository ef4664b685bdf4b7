#!/usr/bin/env bash
# Install Consort into .venv (a plain install: no extras) and run the StockFlow demo.
#   usage: bash scripts/demo.sh [DIR]      (default: a new ./stockflow-demo folder)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
venv="${CONSORT_VENV:-$here/.venv}"
if [ ! -x "$venv/bin/consort" ]; then
  echo "==> installing Consort into $venv"
  "${CONSORT_PYTHON:-python3}" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet -e "$here"
fi
exec "$venv/bin/consort" demo "$@"
