"""Suite-wide setup."""

import contextlib
import json
import shutil
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# A suite started in the background (`cmd &` in a script, some CI runners) inherits SIGINT
# ignored, and so would every child it starts: the tests that press Ctrl-C on a child would
# then wait for an interrupt that is never delivered. Catching it here (pytest's own default)
# gives the children SIGINT's default disposition again.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Projects the tests adopt carry their own suites (run by Consort inside them, never by this one).
collect_ignore = ["fixtures"]


# Session fixtures too costly to make once per pytest-xdist worker: the tests that use one run on
# the same worker (the finished demo is minutes of work). The others (`project`, `browser`) are
# made by each worker that needs them.
SHARED_ONCE = ("demo",)
# Where each xdist worker writes which tests share a setup, for the controller's scheduler.
GROUPS_KEY = "shared_setups_file"
# Tests of minutes (`@pytest.mark.costly`, a whole demo of their own): the scheduler starts them,
# and the tests sharing a SHARED_ONCE setup, before everything else, so that no worker is left
# with one of them at the end while the other has nothing to do.
COSTLY = "costly"


_groups_folder: list[Path] = []  # the controller's, made for its first worker


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """The controller: tell each xdist worker where to write the groups it collects."""
    if not _groups_folder:
        _groups_folder.append(Path(tempfile.mkdtemp(prefix="consort-suite-groups-")))
    node.workerinput[GROUPS_KEY] = str(_groups_folder[0] / f"{node.gateway.id}.json")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under `--dist loadgroup` (as scripts/test.sh runs the suite), a test that shares a costly
    setup with others goes with them to one worker, so each setup is still made once: the tests
    of a module that share a module-scoped fixture (a built project, an adopted repository), and
    every test that uses a fixture of SHARED_ONCE, with the tests they share another such fixture
    with. Every other test goes to whichever worker is free. (xdist's own loadgroup renames the
    tests it groups, which pytest 9 no longer lets it do.)"""
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedSetupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        collected: Collected | None = None
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            if self.collected is None:
                self.collected = _collected_groups(self.nodes)
            return self.collected.groups.get(nodeid, nodeid)

        def _assign_work_unit(self, node: Any) -> None:
            if not self.ordered:  # the first assignment: the work queue is complete
                self.ordered = True
                costly = self.collected.costly if self.collected else frozenset()
                first = [scope for scope in self.workqueue if scope in costly]
                for scope in reversed(first):
                    self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    return SharedSetupScheduling(config, log)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The controller: remove the groups' folder, also where nothing was scheduled (a collection
    that differed between workers, --collect-only)."""
    for folder in _groups_folder:
        shutil.rmtree(folder, ignore_errors=True)


@dataclass(frozen=True)
class Collected:
    """What a worker wrote: each test's shared setup (tests of none are missing), and the scopes
    to start first."""

    groups: dict[str, str]
    costly: frozenset[str]


def _collected_groups(nodes: list[Any]) -> Collected:
    for node in nodes:
        path = Path(node.workerinput[GROUPS_KEY])
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            written = json.loads(path.read_text())
            collected = Collected(dict(written["groups"]), frozenset(written["costly"]))
            shutil.rmtree(path.parent, ignore_errors=True)
            return collected
    return Collected({}, frozenset())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """An xdist worker: write which tests share a setup (see pytest_xdist_make_scheduler)."""
    target = getattr(config, "workerinput", {}).get(GROUPS_KEY)
    if target is None:
        return
    parent: dict[str, str] = {}

    def root(key: str) -> str:
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key

    shared = {item.nodeid: _shared_setups(item) for item in items}
    for keys in shared.values():
        for key in keys[1:]:
            parent[root(key)] = root(keys[0])
    groups = {nodeid: root(keys[0]) for nodeid, keys in shared.items() if keys}
    costly = {
        groups.get(item.nodeid, item.nodeid)
        for item in items
        if item.get_closest_marker(COSTLY) is not None
        or any(key in SHARED_ONCE for key in shared[item.nodeid])
    }
    with contextlib.suppress(OSError):  # a restarted worker's: the controller has read them
        partial = Path(target + ".partial")
        partial.write_text(json.dumps({"groups": groups, "costly": sorted(costly)}))
        partial.replace(target)


def _shared_setups(item: pytest.Item) -> list[str]:
    """The shared fixtures `item` uses (directly or through others): module-scoped ones named
    with their module, and those of SHARED_ONCE."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    module = item.nodeid.split("::")[0]
    keys = []
    for name, definitions in sorted(info.name2fixturedefs.items()):
        if not definitions:
            continue
        if definitions[-1].scope == "module":
            keys.append(f"{module}::{name}")
        elif name in SHARED_ONCE:
            keys.append(name)
    return keys
