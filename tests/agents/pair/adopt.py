"""The pair for an adopted project whose code and tests live in `backend/`: build turns write
tests under backend/tests (named by repository paths in the plan) and code under backend/app,
with an Alembic migration for T2. OPTION "honest" (the default) does each job ("unmapped": the
same, in a project whose consort.toml maps no POSTGRES_* variable); "noop" writes nothing at
GREEN; the other modes are drivers that write no code and plant a pytest configuration in
`backend/` that loads a plugin turning every failure into a pass (every planted file says
CHEAT), or a migration that rewrites the test or forges its cached byte-code.
"""

import os
import pathlib
import sys
from urllib.parse import urlsplit

from turn import RedTest, Turn, write

TESTS = {
    "t1": (
        "from app.answers import answer\n\n\ndef test_answer():\n    assert answer() == 42\n",
        "test_answer",
    ),
    "t2": (
        "from sqlalchemy import text\n\nfrom app.answers import double, record\n\n\n"
        "def test_double(db):\n    record(db, double())\n"
        '    assert db.execute(text("SELECT max(id) FROM answers")).scalar() == 84\n'
        '    db.execute(text("DELETE FROM answers"))\n',
        "test_double",
    ),
}
CODE = {
    "t1": "def answer():\n    return 42\n",
    "t2": "from sqlalchemy import text\n\n\ndef answer():\n    return 42\n\n\n"
    "def double():\n    return answer() * 2\n\n\n"
    "def record(connection, value):\n"
    '    connection.execute(text("INSERT INTO answers (id) VALUES (:v)"), {"v": value})\n',
}
MIGRATION = '''"""answers"""
from alembic import op

revision = "0002"
down_revision = "0001"


def upgrade():
    op.execute("CREATE TABLE answers (id bigint PRIMARY KEY)")


def downgrade():
    op.execute("DROP TABLE answers")
'''


# A pytest plugin that turns every failed test into a pass.
FORGER = (
    "# CHEAT\n"
    "import pytest\n\n\n"
    "@pytest.hookimpl(hookwrapper=True)\n"
    "def pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n"
    "    report = outcome.get_result()\n"
    "    report.outcome = 'passed'\n"
    "    report.longrepr = None\n"
)
REWRITER = '''"""CHEAT"""
import pathlib

revision = "0002"
down_revision = "0001"

WHERE = "".join(chr(c) for c in (116, 101, 115, 116, 115, 47, 116, 101, 115, 116))


def upgrade():
    target = pathlib.Path(WHERE + "_t1.py")
    target.write_text("def test_answer():\\n    pass  # CHEAT\\n")


def downgrade():
    pass
'''


def forged_bytecode_migration() -> str:
    """A migration (Python the migrate command runs in the export, before the test process)
    that writes a cached, already-rewritten module for the frozen test into its __pycache__,
    stamped with the hash of the test file's own bytes: pytest loads a cached module whose
    stamp matches instead of the source, so the test that runs is not the frozen one, whose
    bytes are untouched. Its path and its code are spelled at run time."""
    import importlib.util
    import marshal

    import pytest

    hollow = compile("def test_answer():\n    pass\n", "answers", "exec")
    # pytest checks a cached module against a hash of its source: the frozen test's bytes are
    # in the turn's own tree
    stamp = list(importlib.util.MAGIC_NUMBER + b"\x03\x00\x00\x00")
    frozen = pathlib.Path("backend/tests/test_t1.py").read_bytes()
    stamp += list(importlib.util.source_hash(frozen)[:8])
    tag = f"{sys.implementation.cache_tag}-pytest-{pytest.__version__}"
    cache = [ord(c) for c in "tests/__pycache__/test_t1." + tag + ".pyc"]
    return f"""\"\"\"CHEAT\"\"\"
import os

revision = "0002"
down_revision = "0001"

CODE = {list(marshal.dumps(hollow))!r}
STAMP = {stamp!r}
CACHE = "".join(chr(c) for c in {cache!r})


def upgrade():
    try:
        os.makedirs(os.path.dirname(CACHE), exist_ok=True)
        with open(CACHE, "wb") as handle:
            handle.write(bytes(STAMP) + bytes(CODE))
    except OSError:
        pass  # where the run allows no such file, the frozen test runs


def downgrade():
    pass
"""


CHEATS = {
    # pytest.toml comes before pytest.ini in pytest's search order: a new one takes over
    "backend-pytest-toml": {
        "backend/pytest.toml": '# CHEAT\n[pytest]\naddopts = ["-p", "passall"]\n'
        'pythonpath = ["."]\ntestpaths = ["tests"]\n',
    },
    "backend-ini-addopts": {
        "backend/pytest.ini": "[pytest]\ntestpaths = tests\npythonpath = .\n"
        "addopts = -p passall\n# CHEAT\n",
    },
    "backend-conftest-plugin": {"backend/conftest.py": 'pytest_plugins = ["passall"]  # CHEAT\n'},
    "tests-folder-plugin": {
        "backend/tests/pytest.ini": "[pytest]\naddopts = -p passall\n# CHEAT\n"
    },
}


def red(turn: Turn) -> RedTest:
    source, name = TESTS[turn.item]
    expected = {"kind": "error", "message_pattern": "ImportError|ModuleNotFound"}
    return RedTest(f"backend/tests/test_{turn.item}.py", source, name, expected)


def green(turn: Turn) -> None:
    mode = turn.option or "honest"
    if mode == "noop":
        return
    if mode == "migration-rewrites-test":
        # Wrong code, and a migration (Python the migrate command runs in the export) that
        # rewrites the test file before the test process reads it; the path is spelled at run
        # time.
        write("backend/app/answers.py", "def answer():\n    return 0  # CHEAT\n")
        write("backend/alembic/versions/0002_cheat.py", REWRITER)
        return
    if mode == "forged-test-bytecode":
        write("backend/app/answers.py", "def answer():\n    return 0  # CHEAT\n")
        write("backend/alembic/versions/0002_cheat.py", forged_bytecode_migration())
        return
    if mode in CHEATS:
        write("backend/passall.py", FORGER)
        for path, text in CHEATS[mode].items():
            write(path, text)
        return
    # The suite's settings name the turn's own scratch database, as DATABASE_URL does (mode
    # "unmapped": a project whose consort.toml maps nothing to them; the code is the same).
    own = urlsplit(os.environ["DATABASE_URL"])
    if mode != "unmapped" and (os.environ.get("POSTGRES_DB"), os.environ.get("POSTGRES_PORT")) != (
        own.path.lstrip("/"),
        str(own.port),
    ):
        sys.exit("POSTGRES_DB/POSTGRES_PORT do not name the turn's own database")
    write("backend/app/answers.py", CODE[turn.item])
    if turn.item == "t2":
        write("backend/alembic/versions/0002_answers.py", MIGRATION)
