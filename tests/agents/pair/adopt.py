"""The pair for an adopted project whose code and tests live in `backend/`: build turns write
tests under backend/tests (named by repository paths in the plan) and code under backend/app,
with an Alembic migration for T2. OPTION "honest" (the default) does each job; "noop" writes
nothing at GREEN; the other modes are drivers that write no code and plant a pytest
configuration in `backend/` that loads a plugin turning every failure into a pass (every planted
file says CHEAT), or a migration that rewrites the test.
"""

import os
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
    if mode in CHEATS:
        write("backend/passall.py", FORGER)
        for path, text in CHEATS[mode].items():
            write(path, text)
        return
    # The suite's settings name the turn's own scratch database, as DATABASE_URL does.
    own = urlsplit(os.environ["DATABASE_URL"])
    if (os.environ.get("POSTGRES_DB"), os.environ.get("POSTGRES_PORT")) != (
        own.path.lstrip("/"),
        str(own.port),
    ):
        sys.exit("POSTGRES_DB/POSTGRES_PORT do not name the turn's own database")
    write("backend/app/answers.py", CODE[turn.item])
    if turn.item == "t2":
        write("backend/alembic/versions/0002_answers.py", MIGRATION)
