import stat

from consort.adapters.envfile import read_database_url, set_database_url


def test_database_url_replaced_other_lines_kept(tmp_path):
    env = tmp_path / ".env"
    env.write_text("SECRET_KEY=abc\nDATABASE_URL=postgresql://old\nDEBUG=1\n")
    set_database_url(env, "postgresql://new", "database of branch b")
    text = env.read_text()
    assert "SECRET_KEY=abc" in text and "DEBUG=1" in text
    assert read_database_url(env) == "postgresql://new"
    assert text.count("DATABASE_URL=") == 1
    assert stat.S_IMODE(env.stat().st_mode) == 0o600


def test_database_url_removed_when_none(tmp_path):
    env = tmp_path / ".env"
    set_database_url(env, "postgresql://x", "a")
    set_database_url(env, None, "detached HEAD")
    assert read_database_url(env) is None
    assert "# consort: detached HEAD" in env.read_text()
