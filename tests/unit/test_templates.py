"""The templates `consort init --template` lays down: each one's consort.toml is valid, and the
node-express one runs Vitest through the junit runner with its canaries."""

from importlib import resources

import pytest

from consort.core.config import CanaryKind, RunnerKind, load_config
from consort.templates import _files, apply, available


@pytest.mark.parametrize("name", ["python-fastapi", "node-express"])
def test_every_template_has_a_valid_consort_toml(name, tmp_path):
    assert name in available()
    written = apply(name, tmp_path, "shop")
    assert "consort.toml" in written
    config = load_config(tmp_path / "consort.toml")
    assert config.deploy.command and config.deploy.smoke == ["/health"]


def test_the_node_express_template_runs_vitest_on_its_pinned_packages(tmp_path):
    apply("node-express", tmp_path, "shop")
    config = load_config(tmp_path / "consort.toml")
    assert config.test.runner is RunnerKind.JUNIT and config.test.canary is CanaryKind.VITEST
    assert config.test.dependencies == ["node_modules"]
    assert config.migrate.command == ["npx", "knex", "migrate:latest"]
    assert (tmp_path / "package-lock.json").is_file()
    assert "node_modules" in (tmp_path / ".gitignore").read_text().split()
    names = [path for path, _ in _files(resources.files("consort.templates") / "node-express")]
    assert not any(path.startswith("node_modules") for path in names)
