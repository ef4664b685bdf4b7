"""The rules that seal a verification, and one broken rule as a typed record.

A sealed verification proves the commit's own behaviour and nothing else. Each rule closes a
class of ways to make a run look green; a `SealViolation` names the rule, the file and (where it
has one) the line, so the agent's feedback and the ledger say exactly what was refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class SealRule(StrEnum):
    # the test process is configured by Consort, not by the tree under test
    TEST_CONFIG_CHANGED = "test-config-changed"  # a runner config source differs from RED
    SHADOWING_MODULE = "shadowing-module"  # pytest.py, sitecustomize.py, *.pth, uvicorn.py...
    # the code that runs is the source the rules read
    COMPILED_CODE = "compiled-code"  # byte-code, native code or an importable archive
    SOURCE_ENCODING = "source-encoding"  # a source Python decodes other than as UTF-8
    # production code does not reach into the test machinery
    TAMPERING = "tampering"
    # the report is the run's own
    CANARY_FORGED = "canary-forged"
    # Consort's files, git's machinery and history are Consort's
    CONSORT_FILE = "consort-file"
    GIT_MACHINERY = "git-machinery"
    REF_MOVED = "ref-moved"
    MERGE_CHANGED_PROTECTED = "merge-changed-protected"
    # links and paths
    SYMLINK_ESCAPES = "symlink-escapes"
    # the database
    MIGRATION_CHANGED = "migration-changed"
    SCHEMA_INCOMPLETE = "schema-incomplete"
    DATABASE_UNUSED = "database-unused"
    MIGRATION_ROWS = "migration-rows"  # rows a migration wrote where the design declares none
    MIGRATION_CODE = "migration-code"  # a view, function, trigger or rule a migration made
    MIGRATION_DEFAULT = "migration-default"  # a DEFAULT the db-design does not declare
    # a comment on an object, or an enum label the db-design does not declare: values kept in
    # the catalog, where code reads them back by SQL no rule reads
    MIGRATION_CATALOG = "migration-catalog"
    # the password or session defaults of the login a branch database was migrated with
    MIGRATION_LOGIN = "migration-login"
    # processes
    PROCESS_ESCAPED = "process-escaped"


@dataclass(frozen=True)
class SealViolation:
    rule: SealRule
    path: str  # the file it concerns, "" when none
    detail: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where + ': ' if where else ''}{self.detail} (rule {self.rule.value})"

    def as_data(self) -> dict[str, Any]:
        return {
            "rule": self.rule.value,
            "path": self.path,
            "line": self.line,
            "detail": self.detail,
        }
