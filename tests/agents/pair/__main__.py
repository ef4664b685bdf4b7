"""A navigator/driver pair for the tests that build a story through command agents: one module
per project shape, all played on the same turn frame (`turn.py`).

usage: python tests/agents/pair KIND FIXTURES_DIR [OPTION]
  express  the node-express template (Express, pg, Knex, Vitest)
  node     an adopted Node project; OPTION vitest (the default) or jest
  adopt    an adopted Python project whose code and tests live in backend/; OPTION its mode
The folder is run whole (`tests.helpers.pair_agent` names it), so that a sandboxed turn, which
may read what its command names, sees every module of it.
"""

import importlib
import sys

from turn import play

play(importlib.import_module(sys.argv[1]), sys.argv[2:])
