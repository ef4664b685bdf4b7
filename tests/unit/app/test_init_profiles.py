"""`init` on a Go module and on a Maven project: the junit profile each gets, in a real git
repository, and what `doctor` says when the runner is not installed."""

import subprocess
from pathlib import Path

import pytest

from consort.adapters.scope import glob_match
from consort.app.doctor import _command_checks
from consort.app.init import init, step_config, step_git
from consort.core.config import CanaryKind, RunnerKind
from consort.core.project import Project


def _repository(root: Path, files: dict[str, str]) -> Path:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(root),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-q",
            "-m",
            "the project",
        ],
        check=True,
    )
    return root


GO_MODULE = {
    "go.mod": "module example.com/shop\n\ngo 1.23\n",
    "go.sum": "",
    "cart/cart.go": "package cart\n",
    "cart/cart_test.go": 'package cart\n\nimport "testing"\n\nfunc TestAdd(t *testing.T) {}\n',
    "cart/testdata/basket.json": "{}\n",
}
MAVEN_PROJECT = {
    "pom.xml": "<project><modelVersion>4.0.0</modelVersion></project>\n",
    "src/main/java/com/example/shop/Cart.java": "package com.example.shop;\nclass Cart {}\n",
    "src/test/java/com/example/shop/CartTest.java": "package com.example.shop;\nclass T {}\n",
    "src/test/resources/carts.csv": "id\n",
}


def _adopted(root: Path) -> tuple[Project, list[str]]:
    report = init(root, steps=(step_git, step_config))
    project = Project(root)
    assert project.config.test.runner is RunnerKind.JUNIT
    assert project.config.test.canary is CanaryKind.NONE
    return project, report.done


def test_a_go_module_gets_the_gotestsum_profile(tmp_path):
    project, done = _adopted(_repository(tmp_path / "shop", GO_MODULE))
    test = project.config.test
    assert test.command == ["gotestsum", "--junitfile", "{junit}", "--", "./..."]
    assert test.junit_dir == "" and test.cwd == "" and "GOMODCACHE" in test.pass_env
    assert project.config.migrate.command == []
    protected = project.config.build.protected
    for path in ("cart/cart_test.go", "cart/testdata/basket.json", "go.mod", "go.sum"):
        assert any(glob_match(g, path) for g in protected), path
    assert not any(glob_match(g, "cart/cart.go") for g in protected)
    assert any("gotestsum" in line for line in done)


def test_a_maven_project_gets_the_surefire_profile(tmp_path):
    project, done = _adopted(_repository(tmp_path / "shop", MAVEN_PROJECT))
    test = project.config.test
    assert test.command == ["mvn", "-B", "test"]
    assert test.junit_dir == "target/surefire-reports" and "JAVA_HOME" in test.pass_env
    protected = project.config.build.protected
    for path in (
        "src/test/java/com/example/shop/CartTest.java",
        "src/test/resources/carts.csv",
        "pom.xml",
    ):
        assert any(glob_match(g, path) for g in protected), path
    assert not any(glob_match(g, "src/main/java/com/example/shop/Cart.java") for g in protected)
    assert any("Surefire" in line for line in done)


def test_a_maven_module_in_a_subfolder_runs_from_there(tmp_path):
    files = {f"service/{path}": text for path, text in MAVEN_PROJECT.items()}
    project, _ = _adopted(_repository(tmp_path / "mono", files))
    assert project.config.test.cwd == "service"
    assert any(glob_match(g, "service/pom.xml") for g in project.config.build.protected)


@pytest.mark.parametrize(("files", "program"), [(GO_MODULE, "gotestsum"), (MAVEN_PROJECT, "mvn")])
def test_doctor_says_when_the_runner_is_not_installed(tmp_path, monkeypatch, files, program):
    project, _ = _adopted(_repository(tmp_path / "shop", files))
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    test_check = next(c for c in _command_checks(project) if c.name == "test command")
    assert test_check.state.value == "fail"
    assert f"{program} is not on PATH" in test_check.detail
