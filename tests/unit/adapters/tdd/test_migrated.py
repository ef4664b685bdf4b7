"""What Consort reads to tell that a run's Alembic `upgrade head` would apply nothing: the
command, the configuration file it names, and every file of the script folder that file names.
Anything it cannot model has no digest, and its migrate command always runs."""

from __future__ import annotations

import hashlib

from consort.adapters.tdd.migrated import (
    MigratedRecord,
    alembic_upgrade_head,
    migration_inputs,
)
from consort.adapters.vcs import TreeEntry
from consort.core.config import MigrateSection

INI = b"[alembic]\nscript_location = %(here)s/migrations\n"


def _inputs(files: dict[str, bytes], section: MigrateSection | None = None) -> str | None:
    entries = {
        path: TreeEntry(path, "100644", hashlib.sha1(data).hexdigest())  # noqa: S324
        for path, data in files.items()
    }
    return migration_inputs(section or MigrateSection(), entries, files.__getitem__)


PROJECT = {
    "alembic.ini": INI,
    "migrations/env.py": b"# env\n",
    "migrations/versions/0001_items.py": b"revision = '0001'\n",
    "app/models.py": b"class Item: ...\n",
    "tests/test_items.py": b"def test_it(): ...\n",
}


def test_alembic_upgrade_head_is_recognised_however_it_is_started() -> None:
    assert alembic_upgrade_head(["alembic", "upgrade", "head"]) == ()
    assert alembic_upgrade_head(["/venv/bin/python", "-m", "alembic", "upgrade", "head"]) == ()
    assert alembic_upgrade_head(["alembic", "-c", "db.ini", "upgrade", "head"]) == ("-c", "db.ini")
    assert alembic_upgrade_head(["alembic", "upgrade", "+1"]) is None
    assert alembic_upgrade_head(["python", "manage.py", "migrate"]) is None
    assert alembic_upgrade_head(["python", "alembic", "upgrade", "head"]) is None  # a script


def test_code_and_tests_do_not_change_the_inputs_a_migration_does() -> None:
    before = _inputs(PROJECT)
    assert before is not None
    assert _inputs({**PROJECT, "app/models.py": b"class Item: name = 1\n"}) == before
    assert _inputs({**PROJECT, "tests/test_new.py": b"def test_new(): ...\n"}) == before
    added = {**PROJECT, "migrations/versions/0002_more.py": b"revision = '0002'\n"}
    assert _inputs(added) != before
    assert _inputs({**PROJECT, "migrations/env.py": b"# env, changed\n"}) != before
    assert _inputs({**PROJECT, "alembic.ini": INI + b"# changed\n"}) != before


def test_the_migrate_section_is_part_of_the_inputs() -> None:
    other = MigrateSection(env={"SCHEMA": "other"})
    assert _inputs(PROJECT, other) != _inputs(PROJECT)


def test_the_script_folder_is_the_one_the_configuration_file_names() -> None:
    files = {
        "backend/db.ini": b"[alembic]\nscript_location = %(here)s/schema\n",
        "backend/schema/versions/0001.py": b"revision = '0001'\n",
    }
    section = MigrateSection(command=["alembic", "-c", "db.ini", "upgrade", "head"], cwd="backend")
    before = _inputs(files, section)
    assert before is not None
    more = {**files, "backend/schema/versions/0002.py": b"revision = '0002'\n"}
    assert _inputs(more, section) != before


def test_what_consort_cannot_model_has_no_inputs() -> None:
    assert _inputs({k: v for k, v in PROJECT.items() if k != "alembic.ini"}) is None
    resource = {**PROJECT, "alembic.ini": b"[alembic]\nscript_location = myapp:migrations\n"}
    assert _inputs(resource) is None
    extra = {
        **PROJECT,
        "alembic.ini": INI + b"version_locations = %(here)s/elsewhere\n",
    }
    assert _inputs(extra) is None
    outside = {**PROJECT, "alembic.ini": b"[alembic]\nscript_location = ../shared\n"}
    assert _inputs(outside) is None
    assert _inputs(PROJECT, MigrateSection(command=["python", "migrate.py"])) is None
    named = MigrateSection(command=["alembic", "-x", "tenant=a", "upgrade", "head"])
    assert _inputs(PROJECT, named) is None


def test_a_record_reads_back_and_refuses_what_is_not_one() -> None:
    record = MigratedRecord("abc", ("0001",))
    assert MigratedRecord.from_data(record.as_data()) == record
    assert MigratedRecord.from_data(None) is None
    assert MigratedRecord.from_data({"inputs": 1, "revisions": []}) is None
    assert MigratedRecord.from_data({"inputs": "abc", "revisions": "0001"}) is None
