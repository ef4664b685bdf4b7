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


def test_a_tracked_env_file_is_never_written(tmp_path):
    import subprocess

    from consort.adapters.envfile import point_at_branch

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    env = tmp_path / ".env"
    env.write_text("DATABASE_URL=postgresql://dev@localhost/devdb\n")
    subprocess.run(["git", "-C", str(tmp_path), "add", ".env"], check=True)
    assert not point_at_branch(tmp_path, ".env", "postgresql://branch", "database of main")
    assert env.read_text() == "DATABASE_URL=postgresql://dev@localhost/devdb\n"
    assert point_at_branch(tmp_path, ".env.local", "postgresql://branch", "database of main")
    assert read_database_url(tmp_path / ".env.local") == "postgresql://branch"
