"""The crash campaign's scripted project (bench/crash.py), for the tests that kill a drive or
its server at an exact step: one loader of the bench module, and the project it makes."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench" / "crash.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("crash_campaign", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


campaign = _load()


@contextmanager
def campaign_project(base: Path, *, driver: str = "honest") -> Iterator[Path]:
    """The campaign's project under `base`, its cluster destroyed afterwards."""
    root = campaign.make_project(base, driver=driver)
    try:
        yield root
    finally:
        campaign.destroy(root)
