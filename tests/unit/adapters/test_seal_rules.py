"""The seal's pure rules: tamper findings, canary checks, shadowing, links, frozen config."""

from __future__ import annotations

import pytest

from consort.adapters.smells.tamper import Capability, findings, tamper_violations
from consort.adapters.tdd.canary import Canaries, check_canaries
from consort.adapters.tdd.export import link_problem
from consort.adapters.tdd.junit import CaseResult, JUnitReport, Outcome
from consort.adapters.tdd.testconfig import _pytest_sections, module_of_command, shadowing
from consort.adapters.vcs import TreeEntry
from consort.core.seal import SealRule


def caps(source: str) -> set[Capability]:
    return {f.capability for f in findings(source)}


@pytest.mark.parametrize(
    ("source", "capability"),
    [
        ("import _pytest.reports\n", Capability.RUNNER),
        ("from tests import helpers\n", Capability.RUNNER),
        ("import sys\nsys.meta_path.insert(0, object())\n", Capability.IMPORT_SYSTEM),
        ("import sys\nif 'x' in sys.modules: pass\n", Capability.IMPORT_SYSTEM),
        ("import builtins\nbuiltins.open = None\n", Capability.BUILTINS),
        ("x = __builtins__\n", Capability.BUILTINS),
        ("import atexit\n", Capability.ATEXIT),
        ("import gc\ngc.get_objects()\n", Capability.INTROSPECTION),
        ("import sys\nsys._getframe(1)\n", Capability.INTROSPECTION),
        ("import os\nos.environ.get('PYTEST_CURRENT_TEST')\n", Capability.RUNNER_ENVIRONMENT),
        ("import os\nos.fork()\n", Capability.PROCESS),
        ("from os import setsid\nsetsid()\n", Capability.PROCESS),
        (
            "import subprocess\nsubprocess.Popen(['x'], start_new_session=True)\n",
            Capability.PROCESS,
        ),
        ("exec('print(1)')\n", Capability.DYNAMIC_CODE),
        ("locals()['pytest_' + NAME] = hook\n", Capability.DYNAMIC_CODE),
        ("import traceback\ntraceback.extract_stack()[-2].line\n", Capability.INTROSPECTION),
        ("import linecache\n", Capability.INTROSPECTION),
        ("import glob\nglob.glob('**/test_*.py', recursive=True)\n", Capability.RUNNER_ENVIRONMENT),
        ("__import__('s' + 'ys')\n", Capability.DYNAMIC_CODE),
        ("import sys\ngetattr(sys, 'meta' + '_path')\n", Capability.DYNAMIC_CODE),
        ("import sys\ngetattr(sys, 'meta_path')\n", Capability.IMPORT_SYSTEM),
        ("def f(g):\n    return g.__globals__\n", Capability.DYNAMIC_CODE),
        ("import ctypes\n", Capability.NATIVE),
        ("open('/proc/self/cmdline')\n", Capability.RUNNER_ENVIRONMENT),
        # telling Consort's run from production without naming the runner
        ("import os\nos.environ.get('CONSORT_RUN_TOKEN')\n", Capability.RUNNER_ENVIRONMENT),
        (
            "import os\n'eph' in os.environ['DATABASE_URL'].split('consort_')[-1]\n",
            Capability.RUNNER_ENVIRONMENT,
        ),
        ("import os\n'CONS' + 'ORT' in os.getcwd()\n", Capability.RUNNER_ENVIRONMENT),
        ("import os\nos.environ.get('PYTHONNOUSERSITE')\n", Capability.RUNNER_ENVIRONMENT),
        ("import os\nos.path.isdir('./tests')\n", Capability.RUNNER_ENVIRONMENT),
        (
            "import pathlib\npathlib.Path('tests/test_t1.py').exists()\n",
            Capability.RUNNER_ENVIRONMENT,
        ),
        ("import os\nos.environ.get('APP_ENV') == 'test'\n", Capability.RUNNER_ENVIRONMENT),
        (
            "import os\nany(k.endswith('TOKEN') for k in os.environ)\n",
            Capability.RUNNER_ENVIRONMENT,
        ),
        ("import os\nfor k, v in os.environ.items():\n    pass\n", Capability.RUNNER_ENVIRONMENT),
        ("from os import environ\nnames = sorted(environ)\n", Capability.RUNNER_ENVIRONMENT),
        # the environment taken whole by other means than a scan: copied and kept, counted
        ("import os\nCOPY = dict(os.environ)\n", Capability.RUNNER_ENVIRONMENT),
        ("import os\nn = len(os.environ)\n", Capability.RUNNER_ENVIRONMENT),
        ("import os\nraw = os.environ._data\n", Capability.RUNNER_ENVIRONMENT),
        ("import os\nE = os.environ\n", Capability.RUNNER_ENVIRONMENT),
        (
            "import os\nENV = os.environ.copy()\nprint(len(ENV))\n",
            Capability.RUNNER_ENVIRONMENT,
        ),
        ("import posix\nkeys = list(posix.environ)\n", Capability.RUNNER_ENVIRONMENT),
        # ... or reached by another way than its name: getattr, the module's namespace, a
        # child process that prints it, a path joined from pieces
        (
            "import os\nE = getattr(os, 'environ')\nkeys = [k for k in E]\n",
            Capability.RUNNER_ENVIRONMENT,
        ),
        ("import os\nE = os.__dict__['environ']\n", Capability.DYNAMIC_CODE),
        (
            "import subprocess\nsubprocess.run(['env'], capture_output=True)\n",
            Capability.RUNNER_ENVIRONMENT,
        ),
        ("import os\nos.popen('printenv').read()\n", Capability.RUNNER_ENVIRONMENT),
        (
            "import os\nopen(os.path.join('/', 'proc', 'self', 'environ')).read()\n",
            Capability.RUNNER_ENVIRONMENT,
        ),
        (
            "import pathlib\npathlib.Path('/', 'proc', 'self', 'environ').read_text()\n",
            Capability.RUNNER_ENVIRONMENT,
        ),
        ("import sys\nsys.pycache_prefix = '/tmp/x'\n", Capability.IMPORT_SYSTEM),
        # where the code runs from: a run's export is a folder of its own
        ("def f():\n    return '/tmp/' in __file__\n", Capability.RUNNER_ENVIRONMENT),
        ("import os\nx = os.getcwd().startswith('/home')\n", Capability.RUNNER_ENVIRONMENT),
        # ... by the variable a shell sets for the working folder, read by its name
        (
            "import os\nx = os.environ.get('PWD', '').startswith('/tmp/')\n",
            Capability.RUNNER_ENVIRONMENT,
        ),
        (
            "import os\nWHERE = os.getenv('PWD') or ''\nx = len(WHERE) > 30\n",
            Capability.RUNNER_ENVIRONMENT,
        ),
        ("import os\nx = 'run-' in os.environ['OLDPWD']\n", Capability.RUNNER_ENVIRONMENT),
        (
            "from importlib.metadata import distributions\nx = [d.name for d in distributions()]\n",
            Capability.RUNNER_ENVIRONMENT,
        ),
        (
            "import __main__\nx = getattr(__main__, '__package__', None)\n",
            Capability.RUNNER_ENVIRONMENT,
        ),
        (
            "from pathlib import Path\nHERE = Path(__file__).resolve().parent\n"
            "ok = str(HERE).find('run') >= 0\n",
            Capability.RUNNER_ENVIRONMENT,
        ),
        (
            "import tempfile\nt = __file__.startswith(tempfile.gettempdir())\n",
            Capability.RUNNER_ENVIRONMENT,
        ),
        # the home, temporary or a system folder listed, a filesystem measured
        ("import os\nn = os.listdir(os.path.expanduser('~'))\n", Capability.RUNNER_ENVIRONMENT),
        (
            "from pathlib import Path\nn = list(Path('/tmp').iterdir())\n",
            Capability.RUNNER_ENVIRONMENT,
        ),
        ("import glob\nn = glob.glob('/home/*')\n", Capability.RUNNER_ENVIRONMENT),
        ("import shutil\nfree = shutil.disk_usage('/tmp')\n", Capability.RUNNER_ENVIRONMENT),
        # the caller's file and line, from logging or a kept warning
        (
            "import logging\nwhere = logging.getLogger().findCaller(stacklevel=2)\n",
            Capability.INTROSPECTION,
        ),
        ("import logging\nframe = logging.currentframe()\n", Capability.INTROSPECTION),
        (
            "import warnings\nwith warnings.catch_warnings(record=True) as seen:\n"
            "    warnings.warn('x', stacklevel=2)\n",
            Capability.INTROSPECTION,
        ),
        ("import warnings\nwarnings.showwarning = print\n", Capability.INTROSPECTION),
        # the process id, small in a sandboxed run's own PID namespace
        ("import os\nSANDBOXED = os.getpid() < 1000\n", Capability.RUNNER_ENVIRONMENT),
        (
            "import os\npid = os.getppid()\nfirst = pid == 1\n",
            Capability.RUNNER_ENVIRONMENT,
        ),
        # an inherited descriptor copied, or a pipe of its own put in its place
        ("import os\nsaved = os.dup(5)\n", Capability.PROCESS),
        ("import os\nr, w = os.pipe()\n", Capability.PROCESS),
        ("import fcntl\nfcntl.fcntl(5, fcntl.F_DUPFD, 100)\n", Capability.PROCESS),
        # Python's start-up flags, which a run outside the sandbox sets
        ("import sys\nsys.flags.dont_write_bytecode\n", Capability.RUNNER_ENVIRONMENT),
        ("import sys\nsys.dont_write_bytecode\n", Capability.RUNNER_ENVIRONMENT),
        # the server asked which database it is, or for its catalog of databases and records
        ("q = 'SELECT current_database()'\n", Capability.RUNNER_ENVIRONMENT),
        (
            "q = 'SELECT shobj_description(oid, %s) FROM pg_database'\n",
            Capability.RUNNER_ENVIRONMENT,
        ),
        ("q = 'select xact_commit from PG_STAT_DATABASE'\n", Capability.RUNNER_ENVIRONMENT),
        ("q = 'SELECT ' + 'current_' + 'catalog'\n", Capability.RUNNER_ENVIRONMENT),
        # values the migrations keep outside the code's tables: comments, enum labels, history
        ("q = \"SELECT col_description('items'::regclass, 1)\"\n", Capability.RUNNER_ENVIRONMENT),
        ("q = 'SELECT obj_description(%s::regclass)'\n", Capability.RUNNER_ENVIRONMENT),
        ("q = 'SELECT unnest(enum_range(NULL::kind))'\n", Capability.RUNNER_ENVIRONMENT),
        ("q = 'SELECT enumlabel FROM pg_enum'\n", Capability.RUNNER_ENVIRONMENT),
        ("q = 'SELECT version_num FROM alembic_version'\n", Capability.RUNNER_ENVIRONMENT),
        ("q = 'SELECT count(*) FROM schema_migrations'\n", Capability.RUNNER_ENVIRONMENT),
        ("q = 'SELECT name FROM public.migrations WHERE x'\n", Capability.RUNNER_ENVIRONMENT),
    ],
)
def test_each_reach_into_the_test_machinery_is_found(source, capability):
    assert capability in caps(source), source


def test_ordinary_application_code_has_no_finding():
    source = (
        "import os\nfrom fastapi import FastAPI\nfrom sqlalchemy import text\n\n"
        "app = FastAPI()\nURL = os.environ.get('DATABASE_URL')\n\n"
        "@app.get('/health')\ndef health():\n    return {'ok': True}\n\n"
        "ENV = dict(os.environ.copy(), LANG='C')\nMODE = os.environ.get('APP_ENV', 'prod')\n"
        "LATEST = 'latest_version.py'\n"
        "def convert(path):\n    import subprocess\n"
        "    subprocess.run(['convert', path], env=ENV, check=True)\n"
        "    subprocess.run(['x'], env={**os.environ, 'A': '1'})\n"
        "    return 'SHELL' in os.environ and os.environ['SHELL']\n"
        "COUNT = 'SELECT count(*) FROM items JOIN pg_user_mappings_x ON true'\n"
        "BIRDS = 'SELECT species FROM bird_migrations'\n"
        "LOG = f'worker {os.getpid()} started'\n"
        "import logging, warnings\nlogging.getLogger(__name__).info('ready')\n"
        "warnings.warn('old', DeprecationWarning, stacklevel=2)\n"
        "with warnings.catch_warnings():\n    warnings.simplefilter('ignore')\n"
        "from pathlib import Path\nHERE = Path(__file__).parent\nT = HERE / 'templates'\n"
        "for p in HERE.glob('*.sql'):\n    if p.suffix == '.sql' and (T / p.name).exists():\n"
        "        pass\nHOME = os.path.expanduser('~')\nif HOME is None:\n    pass\n"
        "CONF = os.path.join(os.path.expanduser('~'), '.myapp.toml')\n"
        "UPLOADS = os.listdir(os.environ.get('UPLOADS', 'uploads'))\n"
        "NOTE = 'the migrations folder holds the schema'\n"
    )
    assert findings(source) == []


def test_only_new_occurrences_count_and_the_allow_list_is_honoured():
    base = "import atexit\n"
    head = "import atexit\nimport os\nos.fork()\n"
    found = tamper_violations("app/x.py", head, base, ())
    assert [(v.rule, v.line) for v in found] == [(SealRule.TAMPERING, 3)]
    assert "app/x.py" in str(found[0]) and "process" in str(found[0])
    assert tamper_violations("app/x.py", head, base, ("process",)) == []
    assert tamper_violations("app/x.py", head, base, ("process:other/*.py",)) != []


def _case(node: str, outcome: Outcome, message: str = "") -> CaseResult:
    return CaseResult(node, outcome, "", message)


def _report(*cases: CaseResult) -> JUnitReport:
    return JUnitReport({c.node_id: c for c in cases}, "sha")


CANARIES = Canaries(name="abc123", nonce="n0nce")


def test_canaries_that_came_out_right_are_split_off():
    report = _report(
        _case("tests/test_a.py::test_a", Outcome.PASSED),
        _case("../p/x.py::test_abc123_passes", Outcome.PASSED),
        _case("../p/x.py::test_abc123_fails", Outcome.FAILED, "AssertionError: n0nce"),
    )
    check = check_canaries(report, CANARIES)
    assert check.violations == ()
    assert set(check.report.cases) == {"tests/test_a.py::test_a"}
    assert check.as_data() == {
        "passing": "passed",
        "failing": "failed",
        "nonce_seen": True,
        "holds": True,
    }


@pytest.mark.parametrize(
    "cases",
    [
        (),  # both missing
        (_case("x::test_abc123_passes", Outcome.PASSED),),
        (
            _case("x::test_abc123_passes", Outcome.PASSED),
            _case("x::test_abc123_fails", Outcome.PASSED),
        ),
        (
            _case("x::test_abc123_passes", Outcome.PASSED),
            _case("x::test_abc123_fails", Outcome.FAILED, "forged"),
        ),
        (
            _case("x::test_abc123_passes", Outcome.SKIPPED),
            _case("x::test_abc123_fails", Outcome.FAILED, "n0nce"),
        ),
    ],
)
def test_a_report_with_wrong_or_missing_canaries_is_forged(cases):
    check = check_canaries(_report(_case("t::test_a", Outcome.PASSED), *cases), CANARIES)
    assert check.violations
    assert all(v.rule is SealRule.CANARY_FORGED for v in check.violations)


def _entries(*paths: str) -> dict[str, TreeEntry]:
    return {p: TreeEntry(p, "100644", "0" * 40) for p in paths}


def test_modules_that_shadow_the_runner_server_stdlib_or_startup_are_refused():
    entries = _entries(
        "pytest.py",
        "_pytest/__init__.py",
        "uvicorn.py",
        "sitecustomize.py",
        "lib/evil.pth",
        "json.py",
        "app/pytest.py",  # app.pytest: shadows nothing
        "app/__init__.py",
        "test/__init__.py",  # a common test folder
    )
    found = {v.path for v in shadowing(entries, ("",), ["uvicorn"])}
    assert found == {
        "pytest.py",
        "_pytest/__init__.py",
        "uvicorn.py",
        "sitecustomize.py",
        "lib/evil.pth",
        "json.py",
    }


def test_the_server_module_comes_from_the_command():
    assert module_of_command(["python", "-m", "uvicorn", "app.main:app"]) == ["uvicorn"]
    assert module_of_command(["gunicorn", "app:app"]) == ["gunicorn"]


@pytest.mark.parametrize(
    ("path", "target", "refused"),
    [
        ("app/link.py", "../lib/real.py", False),
        ("app/link.py", "/etc/passwd", True),
        ("app/link.py", "../../outside", True),
        ("link", ".git/config", True),
        ("app/l", "../.consort/ledger.jsonl", True),
        ("a/b/c", "../../d", False),
    ],
)
def test_links_out_of_the_repository_or_into_git_or_consort_are_refused(path, target, refused):
    assert (link_problem(path, target) is not None) is refused


def test_only_the_pytest_part_of_shared_config_files_is_frozen():
    before = b'[project]\nname = "a"\n[tool.pytest.ini_options]\naddopts = "-q"\n'
    after_deps = b'[project]\nname = "b"\n[tool.pytest.ini_options]\naddopts = "-q"\n'
    after_opts = b'[project]\nname = "a"\n[tool.pytest.ini_options]\naddopts = "-p app.x"\n'
    sections = _pytest_sections("pyproject.toml", before)
    assert sections == _pytest_sections("pyproject.toml", after_deps)
    assert sections != _pytest_sections("pyproject.toml", after_opts)
    cfg = b"[metadata]\nname = a\n[tool:pytest]\naddopts = -q\n"
    assert _pytest_sections("setup.cfg", cfg) == {"tool:pytest": {"addopts": "-q"}}


def test_sql_kept_in_a_data_file_is_judged_like_a_string_in_the_code():
    from consort.adapters.smells.tamper import data_file_violations

    sql = "SELECT count(*) FROM items;\nSELECT obj_description('items'::regclass);\n"
    found = data_file_violations("app/queries.sql", sql, None, ())
    assert [(v.rule, v.line) for v in found] == [(SealRule.TAMPERING, 2)]
    assert "data file" in str(found[0])
    asks = data_file_violations("app/q.txt", "select current_database()\n", None, ())
    assert asks != []
    # what was there before, a plain query, and the same SQL in a migration: no finding
    assert data_file_violations("app/queries.sql", sql, sql, ()) == []
    assert data_file_violations("app/queries.sql", "SELECT 1 FROM items\n", None, ()) == []
    assert data_file_violations("migrations/versions/0002.sql", sql, None, ()) == []
    # a test file named where the code reads a path from
    named = data_file_violations("app/where.txt", "../tests/test_t1.py\n", None, ())
    assert [v.line for v in named] == [1]
    assert data_file_violations("app/cfg.json", '{"fixture": "conftest.py"}\n', None, ())
    plain = '{"kind": "report", "path": "static/app.css", "latest": "latest_version.py"}\n'
    assert data_file_violations("app/cfg.json", plain, None, ()) == []
    from consort.adapters.smells.tamper import is_data_file

    assert is_data_file("app/where") and is_data_file("app/q.sql")
    assert not is_data_file(".gitignore") and not is_data_file(".github/workflows/ci.yml")
    assert not is_data_file("Makefile") and not is_data_file("README.md")


def test_a_migration_may_read_the_catalog_and_its_history_the_code_may_not():
    source = "q = 'SELECT 1 FROM pg_enum WHERE enumlabel = %s'\n"
    assert tamper_violations("migrations/versions/0002_kind.py", source, None, ()) == []
    assert tamper_violations("app/kinds.py", source, None, ()) != []


def test_the_strings_refused_in_the_code_are_refused_in_a_data_file_too():
    from consort.adapters.smells.tamper import data_file_violations

    # the process's own command line, and the runner's name to search it for
    found = data_file_violations("app/names.txt", "/proc/self/cmdline\npytest\n", None, ())
    assert [v.line for v in found] == [1, 2]
    assert data_file_violations("app/names", "CONSORT_RUN_TOKEN\n", None, ())
    assert data_file_violations("app/cfg.json", '{"flag": "PYTHONNOUSERSITE"}\n', None, ())
    # manifests and documents name the runner honestly; a plain data file names nothing
    manifests = ("requirements-dev.txt", "requirements/test.txt", "pyproject.toml", "pytest.ini")
    for manifest in (*manifests, "docker-compose.yml", "README"):
        assert data_file_violations(manifest, "pytest>=8\n", None, ()) == [], manifest
    plain = '{"name": "widget", "count": 3, "path": "static/app.css"}\n'
    assert data_file_violations("app/data.json", plain, None, ()) == []
