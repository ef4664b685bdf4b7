import pytest

from consort.core.config import DEFAULT_CONFIG_TEXT, DbBackendKind, load_config
from consort.core.errors import ExitCode, UsageError


def test_default_text_loads(tmp_path):
    path = tmp_path / "consort.toml"
    path.write_text(DEFAULT_CONFIG_TEXT)
    config = load_config(path)
    assert config.db.backend is DbBackendKind.EMBEDDED
    assert config.build.repair_attempts == 3
    assert "tests/**" in config.build.protected


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
def test_a_config_error_names_the_key_the_nearest_valid_one_and_a_fix(
    tmp_path, text, message, fix
):
    path = tmp_path / "consort.toml"
    path.write_text(text)
    with pytest.raises(UsageError) as caught:
        load_config(path)
    assert message in caught.value.message
    assert "Extra inputs are not permitted" not in caught.value.message
    assert caught.value.fix == fix
