import pytest

from consort.core.config import DEFAULT_CONFIG_TEXT, DbBackendKind, load_config
from consort.core.errors import ExitCode, UsageError


def test_default_text_loads(tmp_path):
    path = tmp_path / "consort.toml"
    path.write_text(DEFAULT_CONFIG_TEXT)
    config = load_config(path)
    assert config.db.backend is DbBackendKind.EMBEDDED
    assert config.build.repair_attempts == 3
    assert "**/tests/**" in config.build.protected


def test_malformed_toml_names_the_file(tmp_path):
    path = tmp_path / "consort.toml"
    path.write_text("[test\ncommand = 1")
    with pytest.raises(UsageError) as caught:
        load_config(path)
    assert "consort.toml is not valid TOML" in caught.value.message
    assert caught.value.code is ExitCode.USAGE


def test_unknown_key_is_an_error_not_a_silent_default(tmp_path):
    path = tmp_path / "consort.toml"
    path.write_text("[build]\nrepair_atempts = 5\n")
    with pytest.raises(UsageError) as caught:
        load_config(path)
    assert "build.repair_atempts" in caught.value.message


def test_postgres_backend_needs_a_url(tmp_path):
    path = tmp_path / "consort.toml"
    path.write_text('[db]\nbackend = "postgres"\n')
    with pytest.raises(UsageError) as caught:
        load_config(path)
    assert "url" in caught.value.message


@pytest.mark.parametrize(
    ("text", "message", "fix"),
    [
        (
            "[build]\nrepair_atempts = 5\n",
            "build.repair_atempts: unknown key, did you mean repair_attempts?",
            "in [build], rename repair_atempts to repair_attempts (or remove it)",
        ),
        (
            '[tset]\ncommand = ["pytest"]\n',
            "tset: unknown key, did you mean test?",
            "in the top level, rename tset to test (or remove it)",
        ),
        (
            "[gates]\ncolour = 1\n",
            "gates.colour: unknown key",
            "remove colour from [gates]; the keys it may hold are: mode",
        ),
        (
            "[turns]\nretries = -4\n",
            "turns.retries: Input should be greater than or equal to 0 (it is -4)",
            "correct retries in [turns]",
        ),
        (
            '[db]\nbackend = "postgres"\n',
            'db: Value error, backend = "postgres" needs',
            "correct [db]",
        ),
    ],
)
def test_a_config_error_names_the_key_the_nearest_valid_one_and_a_fix(tmp_path, text, message, fix):
    path = tmp_path / "consort.toml"
    path.write_text(text)
    with pytest.raises(UsageError) as caught:
        load_config(path)
    assert message in caught.value.message
    assert "Extra inputs are not permitted" not in caught.value.message
    assert caught.value.fix == fix


def _load(tmp_path, text):
    path = tmp_path / "consort.toml"
    path.write_text(text)
    return load_config(path)


def test_commands_have_a_folder_and_an_environment_with_database_placeholders(tmp_path):
    config = _load(
        tmp_path,
        '[test]\ncwd = "backend/"\n[test.env]\nPOSTGRES_SERVER = "{db.host}"\n'
        'FASTAPI_ENV = "development"\n[migrate]\ncwd = "backend"\npass_env = ["HOME"]\n'
        '[deploy]\ncwd = "backend"\n[deploy.env]\nURL = "{db.url}"\n',
    )
    assert config.test.cwd == "backend" and config.migrate.cwd == "backend"
    assert config.test.env == {"POSTGRES_SERVER": "{db.host}", "FASTAPI_ENV": "development"}
    assert config.migrate.pass_env == ["HOME"] and config.deploy.env["URL"] == "{db.url}"


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('[test]\ncwd = "../elsewhere"\n', "test.cwd"),
        ('[migrate]\ncwd = "/abs"\n', "migrate.cwd"),
        ('[test.env]\nX = "{db.hostname}"\n', "db.hostname"),
        ('[test]\nrunner = "junit"\ncommand = ["npx", "vitest"]\n', "{junit}"),
        ('[test]\nrunner = "mocha"\n', "test.runner"),
        ('[env]\nfile = "../.env"\n', "env.file"),
    ],
)
def test_bad_command_settings_are_named(tmp_path, text, named):
    with pytest.raises(UsageError) as caught:
        _load(tmp_path, text)
    assert named in caught.value.message


def test_the_junit_runner_takes_its_report_path_from_the_command_or_the_environment(tmp_path):
    from consort.core.config import RunnerKind

    vitest = _load(
        tmp_path, '[test]\nrunner = "junit"\ncommand = ["npx", "vitest", "--outputFile={junit}"]\n'
    )
    assert vitest.test.runner is RunnerKind.JUNIT
    jest = _load(
        tmp_path,
        '[test]\nrunner = "junit"\ncommand = ["npx", "jest"]\n'
        '[test.env]\nJEST_JUNIT_OUTPUT_FILE = "{junit}"\n',
    )
    assert jest.test.env["JEST_JUNIT_OUTPUT_FILE"] == "{junit}"


def test_an_adopted_projects_text_loads(tmp_path):
    from consort.core.config import CommandSetup, ConfigSetup, config_text

    text = config_text(
        ConfigSetup(
            test=CommandSetup(
                ("python", "-m", "pytest"), cwd="backend", env=(("POSTGRES_PORT", "{db.port}"),)
            ),
            migrate=CommandSetup(("python", "-m", "alembic", "upgrade", "head"), cwd="backend"),
            env_file=".env.local",
            env_file_note=".env is tracked",
        )
    )
    config = _load(tmp_path, text)
    assert config.test.env == {"POSTGRES_PORT": "{db.port}"} and config.env.file == ".env.local"
    assert config.migrate.cwd == "backend"
