"""`[env] file` names the file Consort keeps the checked-out branch's DATABASE_URL in, and its
name need not look like a `.env` (`local.env`, `config/db.conf`). A design turn's tree is the
main checkout, where that file holds main's login: the sandbox hid every `.env`, `.env.*` and
`.envrc` by name, so a spec author (env_file_reader.py) read main's login from `local.env` and
logged in to main's database over the shared network. The configured env file is hidden in
every tree a turn is shown, whatever its name. Real project: the embedded PostgreSQL, real git,
real bubblewrap.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import MINI, TDD_AGENT, consort, git, ok
from tests.integration.conftest import destroy_project_cluster

pytestmark = pytest.mark.integration

READER = Path(__file__).with_name("env_file_reader.py")


@pytest.fixture(scope="module", params=["local.env", "config/db.conf"])
def spec_turn(request: pytest.FixtureRequest, tmp_path_factory) -> Iterator[tuple[Path, str]]:
    """The project after its spec author's turn; and the env file it was configured with."""
    env_file = request.param
    root = tmp_path_factory.mktemp("envfile") / "shop"
    try:
        ok(consort("init", str(root), cwd=root.parent))
        honest = [sys.executable, str(TDD_AGENT), str(MINI), "honest"]
        reader = [sys.executable, str(READER), str(TDD_AGENT), str(MINI), env_file]
        (root / "consort.toml").write_text(
            f"""
[test]
command = {json.dumps([sys.executable, "-m", "pytest", "-q"])}
[migrate]
command = []
[gates]
mode = "proxy"
[env]
file = "{env_file}"
[agents]
default = "command"
command = {json.dumps(honest)}
[agents.spec-author]
adapter = "command"
command = {json.dumps(reader)}
"""
        )
        (root / env_file).parent.mkdir(parents=True, exist_ok=True)
        ok(consort("branch", "switch", "main", cwd=root))  # writes the env file
        git(root, "add", "consort.toml")
        git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "configure")
        ok(consort("intake", "feature", "--title", "Counter", cwd=root, input_text="A counter."))
        ok(consort("drive", "--max-steps", "1", cwd=root, timeout=600))
        yield root, env_file
    finally:
        destroy_project_cluster(root)


def test_the_env_file_holds_mains_login(spec_turn: tuple[Path, str]) -> None:
    root, env_file = spec_turn
    assert "DATABASE_URL=postgresql://main_" in (root / env_file).read_text()


def test_the_spec_author_read_no_login_and_reached_no_database(
    spec_turn: tuple[Path, str],
) -> None:
    root, env_file = spec_turn
    (stdout,) = (root / ".consort" / "turns").glob("*-spec-author-spec/stdout")
    found = json.loads(stdout.read_text().splitlines()[0])
    assert found[env_file].startswith("refused"), found
    assert found[".env"].startswith("refused"), found
    assert "login" not in found, found
