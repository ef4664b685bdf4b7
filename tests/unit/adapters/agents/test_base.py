"""The environment agent processes get: built from nothing, never inherited wholesale."""

from __future__ import annotations

from pathlib import Path

import pytest

from consort.adapters.agents.base import build_agent_env
from consort.core.errors import UsageError
from consort.core.vocabulary import Role, Step

PARENT = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/me",
    "LANG": "en_US.UTF-8",
    "TERM": "xterm",
    "TMPDIR": "/tmp/me",
    "SECRET_TOKEN": "hunter2",
    "DATABASE_URL": "postgresql://admin:pw@localhost/parent",
    "PGPASSWORD": "pw",
    "CONSORT_DB_SECRET": "s3",
    "HTTPS_PROXY": "http://proxy:3128",
}


def test_only_the_base_and_protocol_variables_are_set() -> None:
    env = build_agent_env(
        Path("/p/.consort/turns/0001-driver-green/task.json"),
        Role.DRIVER,
        Step.GREEN,
        parent=PARENT,
    )
    assert env == {
        "PATH": "/usr/bin:/bin",
        "HOME": "/home/me",
        "LANG": "en_US.UTF-8",
        "TERM": "xterm",
        "TMPDIR": "/tmp/me",
        "CONSORT_TASK": "/p/.consort/turns/0001-driver-green/task.json",
        "CONSORT_ROLE": "driver",
        "CONSORT_STEP": "green",
    }


def test_database_url_is_the_one_given_never_the_parents() -> None:
    env = build_agent_env(
        Path("/t/task.json"),
        Role.NAVIGATOR,
        Step.RED,
        "postgresql://agent@localhost/branch_s1",
        parent=PARENT,
    )
    assert env["DATABASE_URL"] == "postgresql://agent@localhost/branch_s1"
    assert "PGPASSWORD" not in env


def test_allow_list_adds_named_variables_that_exist() -> None:
    env = build_agent_env(
        Path("/t/task.json"),
        Role.DRIVER,
        Step.GREEN,
        parent=PARENT,
        allow=["HTTPS_PROXY", "NOT_SET_ANYWHERE"],
    )
    assert env["HTTPS_PROXY"] == "http://proxy:3128"
    assert "NOT_SET_ANYWHERE" not in env
    assert "SECRET_TOKEN" not in env


@pytest.mark.parametrize("name", ["DATABASE_URL", "CONSORT_DB_SECRET", "PGPASSWORD", "A=B", ""])
def test_allow_list_refuses_database_and_consort_variables(name: str) -> None:
    with pytest.raises(UsageError, match="env_allow"):
        build_agent_env(Path("/t/task.json"), Role.DRIVER, Step.GREEN, parent=PARENT, allow=[name])


def test_sane_defaults_when_consort_itself_has_a_bare_environment(tmp_path: Path) -> None:
    env = build_agent_env(Path("task.json"), Role.DBA, Step.DB_DESIGN, parent={})
    assert env["LANG"] == "C.UTF-8"
    assert env["TERM"] == "dumb"
    assert env["PATH"]
    assert "HOME" not in env
    assert Path(env["CONSORT_TASK"]).is_absolute()
