"""What `init` learns from a repository it adopts (a folder of files; no git needed)."""

import json

from consort.adapters.scope import glob_match
from consort.adapters.survey import survey
from consort.app.init import config_setup
from consort.core.config import DEFAULT_PROTECTED, RunnerKind, config_text, load_config


def _tree(root, files):
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def test_a_backend_folder_with_its_own_pytest_config_and_alembic(tmp_path):
    _tree(
        tmp_path,
        {
            "backend/pytest.ini": "[pytest]\ntestpaths = tests app/checks\n",
            "backend/tests/test_users.py": "",
            "backend/app/checks/test_rules.py": "",
            "backend/alembic.ini": "[alembic]\n",
            "backend/app/core/config.py": "POSTGRES_SERVER: str\nPOSTGRES_PORT: int = 5432\n",
            "frontend/src/main.ts": "",
        },
    )
    found = survey(tmp_path)
    assert found.test_cwd == "backend" and found.migrate_cwd == "backend"
    assert found.migrate_command == ["python", "-m", "alembic", "upgrade", "head"]
    assert found.db_variables == ["POSTGRES_SERVER", "POSTGRES_PORT"]
    assert "backend/app/checks/**" in found.protected
    assert found.unprotected_tests() == []
    setup, notes = config_setup(found)
    path = tmp_path / "consort.toml"
    path.write_text(config_text(setup))
    config = load_config(path)
    assert config.test.cwd == "backend"
    assert config.test.env == {"POSTGRES_SERVER": "{db.host}", "POSTGRES_PORT": "{db.port}"}
    assert config.migrate.env == config.test.env
    assert any("backend/" in note for note in notes)


def test_the_default_globs_protect_tests_anywhere():
    for path in (
        "tests/test_a.py",
        "backend/tests/test_a.py",
        "backend/pytest.ini",
        "services/api/tests/unit/test_b.py",
        "backend/conftest.py",
    ):
        assert any(glob_match(g, path) for g in DEFAULT_PROTECTED), path


def test_test_files_outside_any_tests_folder_get_globs_of_their_own(tmp_path):
    _tree(tmp_path, {"pkg/test_loose.py": "", "pkg/mod.py": ""})
    found = survey(tmp_path)
    assert found.unprotected_tests() == []
    assert "**/test_*.py" in found.protected


def test_a_vitest_project_gets_the_junit_runner(tmp_path):
    _tree(
        tmp_path,
        {
            "package.json": json.dumps({"devDependencies": {"vitest": "3.2.4"}}),
            "src/items.ts": "",
            "src/items.test.ts": "",
        },
    )
    found = survey(tmp_path)
    assert found.node_runner == "vitest" and found.unprotected_tests() == []
    setup, _ = config_setup(found)
    path = tmp_path / "consort.toml"
    path.write_text(config_text(setup))
    config = load_config(path)
    assert config.test.runner is RunnerKind.JUNIT
    assert any("{junit}" in part for part in config.test.command)
    assert config.test.dependencies == ["node_modules"] and config.migrate.command == []


def test_doctor_warns_about_test_files_no_protected_glob_matches(tmp_path):
    from consort.app.doctor import _protected_check
    from consort.core.project import Project

    _tree(
        tmp_path,
        {
            "consort.toml": '[build]\nprotected = ["tests/**"]\n',
            "tests/test_a.py": "",
            "backend/tests/test_b.py": "",
        },
    )
    check = _protected_check(Project(tmp_path))
    assert check.state.value == "warn" and "backend/tests/test_b.py" in check.detail
    (tmp_path / "consort.toml").write_text('[build]\nprotected = ["**/tests/**"]\n')
    assert _protected_check(Project(tmp_path)).state.value == "ok"


def test_the_names_a_dotenv_file_sets_are_read_in_order():
    from consort.adapters.survey import _env_names

    text = "# comment\nFASTAPI_ENV=development\nexport SECRET_KEY=x\n\n"
    text += 'PROJECT_NAME="A B"\nnot a line\n'
    assert _env_names(text + "FASTAPI_ENV=again\n") == ["FASTAPI_ENV", "SECRET_KEY", "PROJECT_NAME"]


def test_with_no_pytest_config_the_tests_run_from_their_own_python_project(tmp_path):
    """A uv workspace at the root, the backend a project of its own whose scripts run
    `pytest tests/` from backend/: the suite runs from there."""
    _tree(
        tmp_path,
        {
            "pyproject.toml": "[tool.uv.workspace]\nmembers = ['backend']\n",
            "backend/pyproject.toml": "[project]\nname = 'app'\n",
            "backend/app/__init__.py": "",
            "backend/tests/__init__.py": "",
            "backend/tests/api/test_users.py": "",
            "backend/alembic.ini": "[alembic]\n",
        },
    )
    assert survey(tmp_path).test_cwd == "backend"
    # tests outside that project: the root, as before
    _tree(tmp_path, {"tools/test_scripts.py": ""})
    assert survey(tmp_path).test_cwd == ""


def test_a_backend_virtual_environment_runs_the_tests_and_migrations(tmp_path):
    _tree(
        tmp_path,
        {
            "backend/pyproject.toml": "[project]\nname = 'app'\n",
            "backend/tests/test_users.py": "",
            "backend/alembic.ini": "[alembic]\n",
            "backend/.venv/pyvenv.cfg": "home = /opt/python/bin\n",
            "backend/.venv/bin/python": "",
        },
    )
    found = survey(tmp_path)
    assert found.venv == "backend/.venv"
    setup, notes = config_setup(found)
    path = tmp_path / "consort.toml"
    path.write_text(config_text(setup))
    config = load_config(path)
    assert config.test.command == [".venv/bin/python", "-m", "pytest"]
    assert config.test.dependencies == ["backend/.venv"]
    assert config.migrate.command == [".venv/bin/python", "-m", "alembic", "upgrade", "head"]
    assert any("virtual environment backend/.venv" in note for note in notes)


def test_a_run_sees_the_installation_a_dependency_venv_was_made_from(tmp_path):
    from consort.adapters.tdd.runbox import venv_interpreters

    base = tmp_path / "python-3.13"
    (base / "bin").mkdir(parents=True)
    venv = tmp_path / "backend" / ".venv"
    venv.mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(
        f"home = {base / 'bin'}\ninclude-system-site-packages = false\n"
    )
    assert venv_interpreters([venv, tmp_path / "node_modules"]) == [base.resolve()]
