#!/usr/bin/env bash
# Run Consort's test suite: installs Consort and its test tools into a virtual environment first.
#   CONSORT_VENV      where the environment lives (default: .venv in the repository)
#   CONSORT_PYTHON    the interpreter to build it from (default: python3)
#   CONSORT_EDITABLE  1 (default) for an editable install, 0 to install a copy
#   CONSORT_TEST_WORKERS  pytest-xdist workers (default 2; 0 runs every test in this one process,
#                         as `-x`, `--pdb` or reading one test's output in order want)
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${CONSORT_VENV:-.venv}"
python="${CONSORT_PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
fi
if [ "${CONSORT_EDITABLE:-1}" = "1" ]; then
  "$venv/bin/python" -m pip install --quiet -e ".[dev]"
else
  "$venv/bin/python" -m pip install --quiet ".[dev]"
fi
# Two workers by default: most of a test's time is spent waiting for its child processes (Consort,
# git, PostgreSQL, the projects' own suites), so two share two cores well. With `--dist
# loadgroup`, tests/conftest.py's scheduler sends the tests that share a costly setup (a module's
# built project, the finished demo) to one worker, so each is still made once.
workers="${CONSORT_TEST_WORKERS:-2}"
if [ "$workers" != "0" ]; then
  set -- -n "$workers" --dist loadgroup "$@"
fi
"$venv/bin/python" -m pytest "$@"
