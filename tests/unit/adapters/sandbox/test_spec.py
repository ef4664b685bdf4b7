"""The bubblewrap arguments a spec makes: what is shown, in which order, and what is masked."""

from __future__ import annotations

from pathlib import Path

import pytest

from consort.adapters.sandbox.host import SystemView
from consort.adapters.sandbox.spec import SandboxSpec, SpecError, bwrap_arguments

SYSTEM = SystemView(
    binds=(Path("/usr"), Path("/etc")),
    links=(("usr/bin", Path("/bin")),),
    masked_files=(Path("/etc/shadow"),),
    masked_folders=(),
    extra_files=(),
)


def mounts(args: list[str]) -> list[tuple[str, ...]]:
    """The mount operations, in order, as (flag, destination)."""
    found: list[tuple[str, ...]] = []
    i = 0
    while i < len(args):
        flag = args[i]
        if flag in {"--bind", "--ro-bind", "--symlink"}:
            found.append((flag, args[i + 2]))
            i += 3
        elif flag in {"--tmpfs", "--proc", "--dev", "--chdir", "--cap-drop"}:
            found.append((flag, args[i + 1]))
            i += 2
        elif flag == "--setenv":
            i += 3
        else:
            i += 1
    return found


def test_a_tree_inside_a_hidden_project_is_shown_and_the_rest_is_not(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    tree = project / ".consort" / "worktrees" / "F" / "S"
    turn = project / ".consort" / "turns" / "0001-driver-green"
    (turn / "outputs").mkdir(parents=True)
    tree.mkdir(parents=True)
    spec = SandboxSpec(
        workdir=tree,
        writable=(tree, turn / "outputs"),
        read_only=(turn,),
        hidden=(project, project / ".consort"),
        private=(tmp_path,),
    )
    found = mounts(bwrap_arguments(spec, SYSTEM, drop_capabilities=False))
    # the private folder first, then the turn's folder, its outputs over it, and the tree
    assert found.index(("--tmpfs", str(tmp_path))) < found.index(("--ro-bind", str(turn)))
    assert found.index(("--ro-bind", str(turn))) < found.index(("--bind", str(turn / "outputs")))
    assert ("--bind", str(tree)) in found
    # The project and its state hold the tree, so they are there, as empty folders made
    # read-only once every mount inside them is made: nothing of them shows, nothing is written.
    for folder in (project, project / ".consort"):
        assert found.index(("--tmpfs", str(folder))) < found.index(("--bind", str(tree)))
    args = bwrap_arguments(spec, SYSTEM, drop_capabilities=False)
    remounts = [args[i + 1] for i, a in enumerate(args) if a == "--remount-ro"]
    assert remounts == [str(project), str(project / ".consort"), "/"]
    assert args.index("--remount-ro") > args.index(str(tree))
    assert found[-1] == ("--chdir", str(tree))


def test_a_hidden_path_that_holds_nothing_shown_and_is_not_shown_is_left_absent(
    tmp_path: Path,
) -> None:
    hidden = tmp_path / "secret-folder"
    hidden.mkdir()
    spec = SandboxSpec(workdir=Path("/"), hidden=(hidden,), private=(tmp_path,))
    assert ("--tmpfs", str(hidden)) not in mounts(
        bwrap_arguments(spec, SYSTEM, drop_capabilities=False)
    )


def test_a_hidden_path_under_a_shown_folder_is_masked_after_it(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    env = tree / "sub" / ".env"
    env.write_text("SECRET=1\n")
    state = tree / ".consort"
    state.mkdir()
    spec = SandboxSpec(workdir=tree, read_only=(tree,), hidden=(env, state), private=())
    found = mounts(bwrap_arguments(spec, SYSTEM, drop_capabilities=False))
    tree_at = found.index(("--ro-bind", str(tree)))
    assert found.index(("--ro-bind", str(env))) > tree_at  # /dev/null over the file
    assert found.index(("--tmpfs", str(state))) > tree_at  # an empty folder over the folder


def test_the_system_comes_first_and_root_drops_its_capabilities(tmp_path: Path) -> None:
    spec = SandboxSpec(workdir=tmp_path, writable=(tmp_path,), private=())
    args = bwrap_arguments(spec, SYSTEM, drop_capabilities=True)
    found = mounts(args)
    assert found[0] == ("--cap-drop", "ALL")
    assert found[1:4] == [("--symlink", "/bin"), ("--ro-bind", "/usr"), ("--ro-bind", "/etc")]
    assert ("--ro-bind", "/etc/shadow") in found
    for flag in ("--die-with-parent", "--unshare-pid", "--new-session", "--unshare-ipc"):
        assert flag in args
    assert "--unshare-net" not in args  # agents call their APIs
    assert "--cap-drop" not in bwrap_arguments(spec, SYSTEM, drop_capabilities=False)


def test_read_only_wins_over_writable_at_the_same_path(tmp_path: Path) -> None:
    spec = SandboxSpec(workdir=tmp_path, writable=(tmp_path,), read_only=(tmp_path,), private=())
    found = mounts(bwrap_arguments(spec, SYSTEM, drop_capabilities=False))
    assert found.index(("--bind", str(tmp_path))) < found.index(("--ro-bind", str(tmp_path)))


def test_a_path_shown_by_its_folder_is_not_bound_again(tmp_path: Path) -> None:
    inner = tmp_path / "lib"
    inner.mkdir()
    spec = SandboxSpec(workdir=tmp_path, read_only=(tmp_path, inner, Path("/usr/bin")), private=())
    found = mounts(bwrap_arguments(spec, SYSTEM, drop_capabilities=False))
    assert ("--ro-bind", str(inner)) not in found
    assert ("--ro-bind", "/usr/bin") not in found


def test_a_missing_writable_path_is_an_error_a_missing_read_only_one_is_skipped(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "nowhere"
    quiet = SandboxSpec(workdir=tmp_path, read_only=(missing,), private=())
    assert ("--ro-bind", str(missing)) not in mounts(
        bwrap_arguments(quiet, SYSTEM, drop_capabilities=False)
    )
    loud = SandboxSpec(workdir=tmp_path, writable=(missing,), private=())
    with pytest.raises(SpecError, match="nowhere"):
        bwrap_arguments(loud, SYSTEM, drop_capabilities=False)
