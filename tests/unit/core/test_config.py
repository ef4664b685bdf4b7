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
