"""Finding the extensions migrations create, and the server's word that one is missing."""

from consort.adapters.db.extensions import created_extensions, fix_for, missing_in_output


def test_extensions_created_by_migrations_are_found_by_name(tmp_path):
    files = {
        "backend/alembic/versions/0001_init.py": (
            "op.execute('CREATE EXTENSION IF NOT EXISTS \"uuid-ossp\"')"
        ),
        "db/migrations/002.sql": (
            "create extension pgcrypto;\ncreate extension if not exists citext;"
        ),
        "src/app.py": "CREATE EXTENSION not_a_migration",
    }
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    found = created_extensions(tmp_path, sorted(files))
    assert found == {
        "uuid-ossp": "backend/alembic/versions/0001_init.py",
        "pgcrypto": "db/migrations/002.sql",
        "citext": "db/migrations/002.sql",
    }


def test_the_servers_message_names_the_missing_extension():
    output = (
        "sqlalchemy.exc.FeatureNotSupported: (psycopg.errors.FeatureNotSupported) extension "
        '"uuid-ossp" is not available\nDETAIL:  Could not open extension control file '
        '"/x/share/extension/uuid-ossp.control": No such file or directory.'
    )
    assert missing_in_output(output) == ["uuid-ossp"]
    assert missing_in_output("ERROR: relation users does not exist") == []
    assert "--db-binaries system" in fix_for(["uuid-ossp"])
